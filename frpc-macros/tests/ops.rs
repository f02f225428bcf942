//! Operation numbers across two services of one file: `first_op` continues where the first
//! service stopped, as in `codegen-tests/proto/kitchen/services.proto` (`twosvc`).

use frpc::codegen::{MethodKind, Service};
use frpc::{Context, Status, StreamSender, Streaming};
use frpc_codegen_tests::twosvc;

#[derive(frpc::Message, Clone, Debug, Default, PartialEq)]
pub struct Item {
    pub name: String,
}

#[frpc::service(package = "twosvc")]
pub trait A {
    async fn a1(&self, ctx: &Context, request: Item) -> Result<Item, Status>;
    async fn a2(&self, ctx: &Context, inbound: Streaming<Item>) -> Result<(), Status>;
}

#[frpc::service(package = "twosvc", first_op = 12)]
pub trait B {
    async fn b1(&self, ctx: &Context, request: ()) -> Result<Item, Status>;
    async fn b2(&self, ctx: &Context, request: Item, outbound: StreamSender<Item>) -> Result<(), Status>;
}

struct Nothing;

impl A for Nothing {
    async fn a1(&self, _: &Context, request: Item) -> Result<Item, Status> {
        Ok(request)
    }
    async fn a2(&self, _: &Context, _: Streaming<Item>) -> Result<(), Status> {
        Ok(())
    }
}

impl B for Nothing {
    async fn b1(&self, _: &Context, _: ()) -> Result<Item, Status> {
        Ok(Item::default())
    }
    async fn b2(&self, _: &Context, _: Item, _: StreamSender<Item>) -> Result<(), Status> {
        Ok(())
    }
}

struct Generated;

impl twosvc::A for Generated {
    async fn a1(
        &self,
        _: &Context,
        request: frpc_codegen_tests::kitchen::Inner,
    ) -> Result<frpc_codegen_tests::kitchen::Inner, Status> {
        Ok(request)
    }
    async fn a2(&self, _: &Context, _: Streaming<frpc_codegen_tests::kitchen::Inner>) -> Result<(), Status> {
        Ok(())
    }
}

impl twosvc::B for Generated {
    async fn b1(&self, _: &Context, _: ()) -> Result<frpc_codegen_tests::kitchen::Edge, Status> {
        Ok(Default::default())
    }
    async fn b2(
        &self,
        _: &Context,
        _: frpc_codegen_tests::kitchen::Edge,
        _: StreamSender<frpc_codegen_tests::kitchen::Inner>,
    ) -> Result<(), Status> {
        Ok(())
    }
}

fn table(service: &dyn Service) -> (&'static str, Vec<(&'static str, u16, MethodKind)>) {
    let methods = service.methods().iter().map(|m| (m.name, m.op, m.kind)).collect();
    (service.name(), methods)
}

#[test]
fn two_services_number_like_codegen() {
    assert_eq!((a::A1, a::A2, b::B1, b::B2), (10, 11, 12, 13));
    assert_eq!(
        table(&AServer::new(Nothing)),
        (
            "twosvc.A",
            vec![
                ("A1", 10, MethodKind::Unary),
                ("A2", 11, MethodKind::ClientStreaming)
            ]
        )
    );
    assert_eq!(
        table(&AServer::new(Nothing)),
        table(&twosvc::AServer::new(Generated))
    );
    assert_eq!(
        table(&BServer::new(Nothing)),
        table(&twosvc::BServer::new(Generated))
    );
}

/// A second service numbered from 10 as well collides with the first on one server: the
/// refusal names both methods and the way out (`first_op`); numbered past the first, both serve.
#[frpc::service(package = "twosvc")]
pub trait Clash {
    async fn c1(&self, ctx: &Context, request: Item) -> Result<Item, Status>;
}

impl Clash for Nothing {
    async fn c1(&self, _: &Context, request: Item) -> Result<Item, Status> {
        Ok(request)
    }
}

#[test]
fn services_numbered_alike_are_refused_naming_both_and_first_op() {
    let err = frpc::Server::builder()
        .add_service(AServer::new(Nothing))
        .add_service(ClashServer::new(Nothing))
        .build()
        .unwrap_err();
    assert!(matches!(err, frpc::Error::Config(_)), "{err:?}");
    let text = err.to_string();
    for part in ["operation 10", "twosvc.A.A1", "twosvc.Clash.C1", "first_op = N"] {
        assert!(text.contains(part), "{part}: {text}");
    }
    frpc::Server::builder()
        .add_service(AServer::new(Nothing))
        .add_service(BServer::new(Nothing))
        .build()
        .expect("numbered apart, they serve together");
}
