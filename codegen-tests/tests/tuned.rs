//! The `tuned` configuration: tonic-build's and prost-build's `boxed`, `skip_debug` and
//! `disable_comments`. Boxed fields are the same bytes in both encodings as unboxed ones, and
//! travel over TCP; a `skip_debug` message keeps the crate's own `Debug`; a `boxed` path that
//! matches a non-message is refused. (`disable_comments` is checked in tests/comments.rs.)

use frpc::codegen::{Bytes, Message};
use frpc::{Context, Status, StreamSender};
use frpc_codegen_tests::default::kitchen as plain;
use frpc_codegen_tests::tuned::kitchen::{self as tuned, edge};
use frpc_codegen_tests::tuned::twosvc::{B, BClient, BServer};

fn inner(name: &str, n: i32) -> tuned::Inner {
    tuned::Inner { name: name.into(), n }
}

/// An `Edge` with its boxed fields set: `first_msg`, and `c_msg` in the `choice` oneof.
fn edge(n: i32) -> tuned::Edge {
    tuned::Edge {
        first_msg: Some(Box::new(inner("first", n))),
        name: "edge".into(),
        choice: Some(edge::Choice::CMsg(Box::new(inner("chosen", n + 1)))),
        ..Default::default()
    }
}

/// A `Wkt` with its boxed fields set: a `Timestamp`, an `Empty` and a message of another
/// package.
fn wkt() -> tuned::Wkt {
    tuned::Wkt {
        at: Some(Box::new(frpc::codegen::prost_types::Timestamp {
            seconds: 1_700_000_000,
            nanos: 5,
        })),
        nothing: Some(Box::new(())),
        remote: Some(Box::new(tuned::other::Remote {
            name: "far".into(),
            ..Default::default()
        })),
        label: Some("label".into()),
        ..Default::default()
    }
}

/// Both encodings of a message: polyglot, then protobuf.
fn encodings<M: Message>(m: &M) -> [Vec<u8>; 2] {
    let mut protobuf = Vec::new();
    m.encode_protobuf(&mut protobuf);
    [m.to_polyglot().to_vec(), protobuf]
}

/// Decodes both encodings of `bytes` into `M`.
fn decode_both<M: Message>([polyglot, protobuf]: [Vec<u8>; 2]) -> [M; 2] {
    [
        M::from_polyglot(&Bytes::from(polyglot)).expect("polyglot decodes"),
        M::decode_protobuf(Bytes::from(protobuf)).expect("protobuf decodes"),
    ]
}

#[test]
fn boxed_fields_are_the_bytes_of_unboxed_ones() {
    let boxed = edge(7);
    let unboxed = plain::Edge {
        first_msg: Some(plain::Inner {
            name: "first".into(),
            n: 7,
        }),
        name: "edge".into(),
        choice: Some(plain::edge::Choice::CMsg(plain::Inner {
            name: "chosen".into(),
            n: 8,
        })),
        ..Default::default()
    };
    assert_eq!(encodings(&boxed), encodings(&unboxed));
    for back in decode_both::<tuned::Edge>(encodings(&unboxed)) {
        assert_eq!(back, boxed);
    }

    let boxed = wkt();
    let unboxed = plain::Wkt {
        at: boxed.at.as_deref().copied(),
        nothing: Some(()),
        remote: Some(plain::other::Remote {
            name: "far".into(),
            ..Default::default()
        }),
        label: Some("label".into()),
        ..Default::default()
    };
    assert_eq!(encodings(&boxed), encodings(&unboxed));
    for back in decode_both::<tuned::Wkt>(encodings(&unboxed)) {
        assert_eq!(back, boxed);
    }
}

/// Serves `B` of the tuned configuration: `B1` answers `edge(1)`, `B2` streams the edge's two
/// boxed messages back.
struct Edges;

impl B for Edges {
    async fn b1(&self, _: &Context, _: ()) -> Result<tuned::Edge, Status> {
        Ok(edge(1))
    }

    async fn b2(
        &self,
        _: &Context,
        request: tuned::Edge,
        out: StreamSender<tuned::Inner>,
    ) -> Result<(), Status> {
        let first = request
            .first_msg
            .ok_or_else(|| Status::invalid_argument("no first_msg"))?;
        out.send(*first)
            .await
            .map_err(|e| Status::internal(e.to_string()))?;
        if let Some(edge::Choice::CMsg(chosen)) = request.choice {
            out.send(*chosen)
                .await
                .map_err(|e| Status::internal(e.to_string()))?;
        }
        Ok(())
    }
}

#[tokio::test]
async fn boxed_messages_travel_over_tcp_in_both_encodings() {
    let server = frpc::Server::builder()
        .add_service(BServer::new(Edges))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = server.local_addr();
    let serving = tokio::spawn(server.serve());
    for protobuf in [false, true] {
        let raw = frpc_codegen_tests::client_in(addr, protobuf).await;
        let client = BClient::new(raw);

        assert_eq!(client.b1(()).await.unwrap(), edge(1));
        let mut stream = client.b2(edge(5)).await.unwrap();
        let mut got = Vec::new();
        while let Some(message) = stream.message().await.unwrap() {
            got.push(message);
        }
        assert_eq!(
            got,
            [inner("first", 5), inner("chosen", 6)],
            "protobuf: {protobuf}"
        );
    }
    serving.abort();
}

#[test]
fn skip_debug_keeps_the_crates_own_debug() {
    assert_eq!(
        format!("{:?}", inner("secret", 3)),
        r#"Inner { name: "<redacted>", n: 3 }"#
    );
    // Messages that hold it derive `Debug` as usual, through it.
    let text = format!("{:?}", edge(3));
    assert!(text.contains(r#"Inner { name: "<redacted>", n: 3 }"#), "{text}");
    assert!(!text.contains(r#""first""#), "{text}");
}

#[test]
fn boxing_a_field_that_is_not_a_message_fails_the_build() {
    for (path, field) in [
        (".kitchen.Scalars.s", "kitchen.Scalars.s"),
        (".kitchen.Edge.choice.c_str", "kitchen.Edge.choice.c_str"),
        (".kitchen.Wkt.label", "kitchen.Wkt.label"),
        (".kitchen.Edge.sp", "kitchen.Edge.sp"),
    ] {
        let err = frpc_codegen::configure()
            .boxed([path])
            .generate(&["proto/kitchen/kitchen.proto"], &["proto"])
            .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains(&format!(
                "`boxed` matches the field `{field}`, which is not a message"
            )),
            "{text}"
        );
    }
}
