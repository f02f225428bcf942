//! Rust-first messages marked `#[frpc(protobuf)]` over prost's derive keep -0.0 too: frpc
//! writes their protobuf bytes from the fields' prost attributes (frpc-codegen's encoder, not
//! the derive, which drops -0.0), the bytes Go's protobuf library writes for `values.Floats`
//! (`codegen-tests/tests/vectors/values.json`, made by `interop/go/pbvectors`), and a unary
//! call between two frpc peers (protobuf negotiated) gives the values back to the bit.
// The services are `#[frpc::service]`s: without the `macros` feature there is nothing to test.
#![cfg(feature = "macros")]

use std::collections::HashMap;

use frpc::codegen::{Bytes, Message};

/// `values.Point` (`codegen-tests/proto/values/values.proto`), Rust-first.
#[derive(Clone, PartialEq, frpc::Message, prost::Message)]
#[frpc(protobuf)]
pub struct RustPoint {
    #[prost(double, tag = "1")]
    pub x: f64,
    #[prost(float, tag = "2")]
    pub y: f32,
}

/// The first eleven fields of `values.Floats`, Rust-first.
#[derive(Clone, PartialEq, frpc::Message, prost::Message)]
#[frpc(protobuf)]
pub struct RustFloats {
    #[prost(double, tag = "1")]
    pub d: f64,
    #[prost(float, tag = "2")]
    pub f: f32,
    #[prost(double, optional, tag = "3")]
    pub od: Option<f64>,
    #[prost(float, optional, tag = "4")]
    pub of: Option<f32>,
    #[prost(double, repeated, tag = "5")]
    pub rd: Vec<f64>,
    #[prost(float, repeated, packed = "false", tag = "6")]
    pub rf: Vec<f32>,
    #[prost(map = "string, double", tag = "7")]
    pub md: HashMap<String, f64>,
    #[prost(map = "int32, float", tag = "8")]
    pub mf: HashMap<i32, f32>,
    #[prost(message, optional, tag = "9")]
    pub point: Option<RustPoint>,
    #[prost(message, repeated, tag = "10")]
    pub points: Vec<RustPoint>,
    #[prost(map = "string, message", tag = "11")]
    pub mp: HashMap<String, RustPoint>,
}

const NEG: f64 = -0.0;
const NEG32: f32 = -0.0;

fn point(x: f64, y: f32) -> RustPoint {
    RustPoint { x, y }
}

/// Values and the hex Go writes for them (the vectors of the same names in values.json).
fn cases() -> Vec<(&'static str, RustFloats, &'static str)> {
    let d = RustFloats::default;
    vec![
        (
            "singular",
            RustFloats {
                d: NEG,
                f: NEG32,
                ..d()
            },
            "0900000000000000801500000080",
        ),
        (
            "optional",
            RustFloats {
                od: Some(NEG),
                of: Some(0.0),
                ..d()
            },
            "1900000000000000802500000000",
        ),
        (
            "repeated",
            RustFloats {
                rd: vec![NEG, 1.5, 0.0],
                rf: vec![NEG32, 0.0],
                ..d()
            },
            "2a180000000000000080000000000000f83f000000000000000035000000803500000000",
        ),
        (
            "maps",
            RustFloats {
                md: HashMap::from([("a".into(), NEG)]),
                mf: HashMap::from([(0, NEG32)]),
                ..d()
            },
            "3a0c0a0161110000000000000080420708001500000080",
        ),
        (
            "nested",
            RustFloats {
                mp: HashMap::from([("k".into(), point(NEG, 0.0))]),
                point: Some(point(NEG, NEG32)),
                points: vec![point(NEG, 0.0), point(0.0, NEG32), point(0.0, 0.0)],
                ..d()
            },
            "4a0e090000000000000080150000008052090900000000000000805205150000008052005a0e0a016b1209090000000000000080",
        ),
    ]
}

/// Equal to the bit: polyglot writes every float's bits (maps here have one entry).
fn assert_same_bits(a: &RustFloats, b: &RustFloats, what: &str) {
    assert_eq!(a.to_polyglot(), b.to_polyglot(), "{what}");
}

#[test]
fn rust_first_protobuf_writes_gos_bytes() {
    for (name, value, go) in cases() {
        let mut ours = Vec::new();
        value.encode_protobuf(&mut ours);
        assert_eq!(ours.len(), value.protobuf_len(), "{name}: protobuf_len");
        let hex: String = ours.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, go, "{name}");
        let back = RustFloats::decode_protobuf(Bytes::from(ours)).unwrap();
        assert_same_bits(&back, &value, name);
    }
}

#[frpc::service(package = "rf")]
pub trait FloatEcho {
    async fn echo(&self, ctx: &frpc::Context, request: RustFloats) -> Result<RustFloats, frpc::Status>;
}

struct Svc;

impl FloatEcho for Svc {
    async fn echo(&self, _: &frpc::Context, request: RustFloats) -> Result<RustFloats, frpc::Status> {
        Ok(request)
    }
}

#[tokio::test]
async fn rust_first_values_cross_frpc_peers_exactly() {
    let bound = frpc::Server::builder()
        .add_service(FloatEchoServer::new(Svc))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    let raw = frpc::Client::connect(addr).await.unwrap();
    assert!(raw.negotiated().await);
    assert!(raw.protobuf_accepted(), "protobuf is negotiated");
    let client = FloatEchoClient::new(raw);
    for (name, value, _) in cases() {
        let back = client.echo(value.clone()).await.unwrap();
        assert_same_bits(&back, &value, name);
    }
}

/// A recursive message as prost-build writes it (`boxed`), Rust-first.
#[derive(Clone, PartialEq, frpc::Message, prost::Message)]
#[frpc(protobuf)]
pub struct RustNode {
    #[prost(message, optional, boxed, tag = "1")]
    pub next: Option<Box<RustNode>>,
    #[prost(double, tag = "2")]
    pub d: f64,
}

/// Lists of strings and bytes, which protobuf never packs.
#[derive(Clone, PartialEq, frpc::Message, prost::Message)]
#[frpc(protobuf)]
pub struct RustTags {
    #[prost(string, repeated, tag = "1")]
    pub tags: Vec<String>,
    #[prost(bytes = "vec", repeated, tag = "2")]
    pub blobs: Vec<Vec<u8>>,
}

/// `boxed` fields keep frpc's encoder (-0.0 at every level; `boxed` sent the whole type to
/// prost's derive, which wrote `0a 00`), and lists of strings and bytes compile (they asked
/// for packed encoders that do not exist) and write prost's bytes.
#[test]
fn boxed_fields_and_lists_of_strings_use_frpcs_encoder() {
    let node = RustNode {
        next: Some(Box::new(RustNode { next: None, d: NEG })),
        d: NEG,
    };
    let mut ours = Vec::new();
    node.encode_protobuf(&mut ours);
    assert_eq!(ours.len(), node.protobuf_len());
    let hex: String = ours.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, "0a09110000000000000080110000000000000080");
    let back = RustNode::decode_protobuf(Bytes::from(ours)).unwrap();
    assert!(back.d.is_sign_negative() && back.next.unwrap().d.is_sign_negative());

    let tags = RustTags {
        tags: vec!["a".into(), String::new(), "ccc".into()],
        blobs: vec![vec![1, 2], Vec::new()],
    };
    let mut ours = Vec::new();
    tags.encode_protobuf(&mut ours);
    assert_eq!(ours, prost::Message::encode_to_vec(&tags), "prost's bytes");
    assert_eq!(ours.len(), tags.protobuf_len());
    assert!(RustTags::decode_protobuf(Bytes::from(ours)).unwrap() == tags);
}
