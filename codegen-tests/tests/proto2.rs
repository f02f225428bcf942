//! proto2 (`proto/two/two.proto`): frpc's protobuf encoding is prost's byte for byte (required
//! fields written even at their zero value, a required message held by value, defaults,
//! packed and unpacked repeated scalars), both encodings round-trip, and a call carries the
//! message over TCP in each.

use frpc::codegen::{Bytes, Message};
use frpc::{Context, Status};
use frpc_codegen_tests::default::two::{
    Inner, Level, Req, T, Tag, Tee, TeeClient, TeeServer, Two, TwoClient, TwoServer,
};

fn full() -> Req {
    Req {
        name: "n".into(),
        count: -3,
        level: Level::High as i32,
        ratio: -0.0,
        blob: vec![1, 2],
        flag: true,
        note: Some("note".into()),
        big: Some(i64::MIN),
        nums: vec![1, -1],
        packed_nums: vec![300, 0],
        inner: Inner { n: Some(0) },
        maybe: Some(Inner { n: None }),
    }
}

/// frpc's protobuf bytes of `m`, checked against its length.
fn protobuf(m: &Req) -> Vec<u8> {
    let mut buf = Vec::new();
    m.encode_protobuf(&mut buf);
    assert_eq!(buf.len(), m.protobuf_len());
    buf
}

#[test]
fn protobuf_bytes_are_prosts() {
    for m in [Req::default(), full()] {
        let ours = protobuf(&m);
        assert_eq!(ours, frpc::codegen::prost::Message::encode_to_vec(&m), "{m:?}");
        let back = Req::decode_protobuf(Bytes::from(ours)).unwrap();
        assert_eq!(back, m);
    }
    // Every required field is there at its zero value: name, count, level, ratio, blob, flag
    // and the inner message (empty).
    assert_eq!(
        protobuf(&Req::default()),
        [
            0x0a, 0, 0x10, 0, 0x18, 0, 0x21, 0, 0, 0, 0, 0, 0, 0, 0, 0x2a, 0, 0x30, 0, 0x5a, 0
        ]
    );
    // Defaults are what prost's accessors give for unset optional fields.
    assert_eq!((Req::default().note(), Req::default().big()), ("hi", -1));
}

/// A message of required strings and bytes only: prost's bytes, empty values written, and no
/// part of it handed over on its own (it owns none).
#[test]
fn required_strings_alone_are_written_into_the_buffer() {
    const { assert!(!Tag::PROTOBUF_OWNED_PARTS) };
    for m in [
        Tag::default(),
        Tag {
            label: "l".into(),
            raw: vec![7],
        },
    ] {
        let mut ours = Vec::new();
        m.encode_protobuf(&mut ours);
        assert_eq!(ours, frpc::codegen::prost::Message::encode_to_vec(&m), "{m:?}");
    }
    let mut empty = Vec::new();
    Tag::default().encode_protobuf(&mut empty);
    assert_eq!(empty, [0x0a, 0, 0x12, 0]);
}

#[test]
fn polyglot_round_trips() {
    let m = full();
    let back = Req::from_polyglot(&m.to_polyglot()).unwrap();
    assert_eq!(back.ratio.to_bits(), m.ratio.to_bits());
    assert_eq!(back, m);
}

struct Echo;

impl Two for Echo {
    async fn echo(&self, _: &Context, request: Req) -> Result<Req, Status> {
        Ok(request)
    }
}

#[tokio::test]
async fn calls_carry_proto2_messages_in_both_encodings() {
    let server = frpc::Server::builder()
        .add_service(TwoServer::new(Echo))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = server.local_addr();
    let serving = tokio::spawn(server.serve());
    for protobuf in [true, false] {
        let raw = frpc_codegen_tests::client_in(addr, protobuf).await;
        let client = TwoClient::new(raw);
        assert_eq!(client.echo(full()).await.unwrap(), full(), "protobuf: {protobuf}");
        assert_eq!(client.echo(Req::default()).await.unwrap(), Req::default());
    }
    serving.abort();
}

struct Mirror;

impl Tee for Mirror {
    async fn r#do(&self, _: &Context, request: T) -> Result<T, Status> {
        Ok(request)
    }
}

/// A message named `T`, like the generated server's and client's type parameter, is served and
/// called (it resolved to the parameter: the generated code did not compile).
#[tokio::test]
async fn a_message_named_t_is_served_and_called() {
    let bound = frpc::Server::builder()
        .add_service(TeeServer::new(Mirror))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    let client = TeeClient::connect(addr).await.unwrap();
    let t = T {
        a: Some("tee".into()),
    };
    assert_eq!(client.r#do(t.clone()).await.unwrap(), t);
}
