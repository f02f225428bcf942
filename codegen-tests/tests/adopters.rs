//! The builder options tonic-build users reach for, on the `adopters` configuration of
//! `build.rs` (generated with `compile_fds`): extern types, attributes, the descriptor set and
//! the include file.

use std::collections::BTreeSet;

use frpc::codegen::Message as _;
use frpc::codegen::prost::Message as _;
use frpc::{Context, Status};
use frpc_codegen_tests::adopters::{kitchen, shop, twosvc};
use frpc_codegen_tests::money::{Money, Side};
use frpc_codegen_tests::{adopters, default};

const MANIFEST: &str = env!("CARGO_MANIFEST_DIR");

fn generated(file: &str) -> String {
    std::fs::read_to_string(format!("{}/adopters/{file}", env!("OUT_DIR"))).unwrap()
}

/// The attribute lines (and doc comments) right above the line starting with `item`.
fn attributes_of<'a>(text: &'a str, item: &str) -> Vec<&'a str> {
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with(item))
        .unwrap_or_else(|| panic!("no `{item}` in:\n{text}"));
    lines[..at]
        .iter()
        .rev()
        .take_while(|l| {
            l.starts_with("#[") || l.starts_with("///") || l.starts_with(' ') || l.starts_with(')')
        })
        .copied()
        .collect()
}

fn order() -> shop::Order {
    let usd = |units| Money {
        units,
        currency: "USD".into(),
    };
    shop::Order {
        id: "o-1".into(),
        price: Some(usd(12)),
        fees: vec![usd(1), usd(2)],
        side: Side::Sell as i32,
        by_name: [("tip".to_string(), usd(3))].into(),
        sides: vec![Side::Sell as i32, Side::Buy as i32],
    }
}

/// The generated twin of [`order`] (default configuration: `Money` and `Side` generated).
fn generated_order() -> default::shop::Order {
    let usd = |units| default::shop::Money {
        units,
        currency: "USD".into(),
    };
    default::shop::Order {
        id: "o-1".into(),
        price: Some(usd(12)),
        fees: vec![usd(1), usd(2)],
        side: default::shop::Side::Sell as i32,
        by_name: [("tip".to_string(), usd(3))].into(),
        sides: vec![default::shop::Side::Sell as i32, default::shop::Side::Buy as i32],
    }
}

/// A message holding hand-written extern types encodes exactly like the fully generated one,
/// in polyglot and in protobuf.
#[test]
fn extern_types_keep_the_wire() {
    let polyglot = order().to_polyglot();
    assert_eq!(polyglot, generated_order().to_polyglot());
    assert_eq!(shop::Order::from_polyglot(&polyglot).unwrap(), order());
    assert_eq!(order().encode_to_vec(), generated_order().encode_to_vec());
    // The extern types are used, not generated.
    let shop_rs = generated("shop.rs");
    assert!(!shop_rs.contains("pub struct Money"), "{shop_rs}");
    assert!(shop_rs.contains("crate::money::Money"), "{shop_rs}");
    assert!(!shop_rs.contains("EnumIndex for Side"), "{shop_rs}");
}

/// A whole extern package: `kitchen` uses the default configuration's `shared.v1` types.
#[test]
fn extern_package_is_used_not_generated() {
    let remote = kitchen::other::Remote {
        tag: Some(default::shared::v1::Tag {
            key: "k".into(),
            weight: 2,
        }),
        ..Default::default()
    };
    assert_eq!(
        kitchen::other::Remote::from_polyglot(&remote.to_polyglot()).unwrap(),
        remote
    );
    assert!(!generated("shared.v1.rs").contains("pub struct Tag"));
}

struct Shop;

impl shop::Shop for Shop {
    async fn buy(&self, _: &Context, order: shop::Order) -> Result<Money, Status> {
        let price = order.price.unwrap_or_default();
        let fees: i64 = order
            .fees
            .iter()
            .chain(order.by_name.values())
            .map(|m| m.units)
            .sum();
        Ok(Money {
            units: price.units + fees,
            currency: price.currency,
        })
    }
}

/// Extern types as a request field and as a response, over loopback.
#[tokio::test]
async fn extern_types_in_a_service() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = frpc::Server::builder()
        .add_service(shop::ShopServer::new(Shop))
        .build()
        .unwrap();
    let serving = tokio::spawn(async move { server.serve_listener(listener).await });
    let client = shop::ShopClient::connect(addr).await.unwrap();
    let total = client.buy(order()).await.unwrap();
    assert_eq!(
        total,
        Money {
            units: 18,
            currency: "USD".into()
        }
    );
    serving.abort();
}

#[test]
fn message_and_enum_attributes() {
    // `#[derive(PartialOrd, Ord)]` on `kitchen.Inner`.
    let set: BTreeSet<kitchen::Inner> = [kitchen::Inner::default(), kitchen::Inner::default()].into();
    assert_eq!(set.len(), 1);
    let kitchen_rs = generated("kitchen.rs");
    assert!(attributes_of(&kitchen_rs, "pub enum Sparse").contains(&"#[doc(alias = \"SparseAlias\")]"));
    assert_eq!(kitchen_rs.matches("SparseAlias").count(), 1, "on nothing else");
}

/// A `#[cfg]` type attribute removes the struct and frpc's impl with it (or this crate would
/// not compile); on an enum it gates the `EnumIndex` impl.
#[test]
fn cfg_type_attribute_reaches_frpc_impls() {
    let kitchen_rs = generated("kitchen.rs");
    assert!(attributes_of(&kitchen_rs, "pub struct Empty").contains(&"#[cfg(any())]"));
    assert!(attributes_of(&kitchen_rs, "impl ::frpc::codegen::Message for Empty").contains(&"#[cfg(any())]"));
    // On an enum: prost's enum and frpc's `EnumIndex` impl.
    let other_rs = generated("kitchen.other.rs");
    assert!(attributes_of(&other_rs, "pub enum Color").contains(&"#[cfg(all())]"));
    assert!(attributes_of(&other_rs, "impl ::frpc::codegen::EnumIndex for Color").contains(&"#[cfg(all())]"));
}

struct Nothing;

impl twosvc::A for Nothing {
    async fn a1(&self, _: &Context, request: kitchen::Inner) -> Result<kitchen::Inner, Status> {
        Ok(request)
    }
    async fn a2(&self, _: &Context, _: frpc::Streaming<kitchen::Inner>) -> Result<(), Status> {
        Ok(())
    }
}

impl Default for Nothing {
    fn default() -> Self {
        Nothing
    }
}

#[test]
fn server_and_client_attributes() {
    use frpc::codegen::Service;
    // `server_attribute(".twosvc.A", "#[derive(Default)]")`.
    let server = twosvc::AServer::<Nothing>::default();
    assert_eq!(server.name(), "twosvc.A");
    let services = generated("twosvc.rs");
    // `client_attribute("twosvc.B", "#[cfg(any())]")`: on the client and its impl only.
    assert!(attributes_of(&services, "pub struct BClient").contains(&"#[cfg(any())]"));
    assert_eq!(attributes_of(&services, "impl BClient"), ["#[cfg(any())]"]);
    assert!(!attributes_of(&services, "pub struct BServer").contains(&"#[cfg(any())]"));
    assert!(!attributes_of(&services, "pub struct AClient").contains(&"#[cfg(any())]"));
    // `client_attribute(".", ..)` on every client (A's, B's and Clock's), no server.
    assert_eq!(services.matches("#[doc(alias = \"AnyClient\")]").count(), 3);
    let _: fn(frpc::Client) -> twosvc::AClient = twosvc::AClient::new;
}

#[test]
fn descriptor_set_is_written() {
    let fds = frpc::codegen::prost_types::FileDescriptorSet::decode(adopters::DESCRIPTORS).unwrap();
    let names: Vec<&str> = fds.file.iter().map(|f| f.name()).collect();
    for name in [
        "kitchen/kitchen.proto",
        "kitchen/services.proto",
        "shop/shop.proto",
        "google/protobuf/empty.proto",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    let shop = fds.file.iter().find(|f| f.name() == "shop/shop.proto").unwrap();
    assert!(shop.source_code_info.is_some(), "source info kept");
}

#[test]
fn include_file_nests_every_package() {
    let text = generated("protos.rs");
    assert!(
        text.contains("pub mod kitchen {\n    include!(\"kitchen.rs\");\n    pub mod other {"),
        "{text}"
    );
    assert!(text.contains("pub mod shared {\n    pub mod v1 {"), "{text}");
    // Every package is reachable through it (this compiles).
    let _ = (
        kitchen::other::Color::Green,
        shop::Order::default(),
        twosvc::a::A1,
    );
}

/// `compile_fds` on protox's descriptor set generates what `compile` does from the files.
#[test]
fn compile_fds_matches_compile() {
    let protos = [format!("{MANIFEST}/proto/shop/shop.proto")];
    let includes = [format!("{MANIFEST}/proto")];
    let builder = frpc_codegen::configure().extern_path(".shop.Money", "crate::money::Money");
    let from_files = builder.generate(&protos, &includes).unwrap();
    let fds = protox::compile(&protos, &includes).unwrap();
    let from_fds = builder.generate_fds(fds).unwrap();
    assert_eq!(from_files, from_fds);
    assert_eq!(from_fds.len(), 1);
}
