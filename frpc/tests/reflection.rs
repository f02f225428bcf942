//! The reflection extension (docs/extensions.md §13): the server answers REFLECT with the
//! descriptor sets of its services, byte for byte as the spec's examples show, and
//! `Client::reflect` reads them; peers that did not accept bit 8 are never asked.
// Some tests here use `#[frpc::service]`s or `frpc::health`: without `macros` the file is left out.
#![cfg(feature = "macros")]

use std::time::Duration;

use bytes::Bytes;
use frpc::codegen::{self, BoxFuture, MethodDesc, ServerStream};
use frpc::{ClientConfig, Context, Framing, ServerConfig, Status};
use futures_util::{SinkExt, StreamExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::codec::Framed;

mod spec_bytes;
use spec_bytes::{Spec, unhex, wire_hex};

/// The set of the spec's example: one empty file, `a.proto`.
const A_PROTO: &[u8] = &[0x0a, 0x09, 0x0a, 0x07, b'a', b'.', b'p', b'r', b'o', b't', b'o'];
/// Another set: one empty file, `b.proto`.
const B_PROTO: &[u8] = &[0x0a, 0x09, 0x0a, 0x07, b'b', b'.', b'p', b'r', b'o', b't', b'o'];

/// A service with no methods whose descriptor set is `set` (as frpc-codegen's servers return
/// their package's `FILE_DESCRIPTOR_SET`).
struct Described(&'static str, &'static [u8]);

impl codegen::Service for Described {
    fn name(&self) -> &'static str {
        self.0
    }
    fn methods(&self) -> &'static [MethodDesc] {
        &[]
    }
    fn call_unary(&self, op: u16, _: Context, _: Bytes) -> BoxFuture<Result<Bytes, Status>> {
        codegen::unimplemented_unary(op)
    }
    fn call_streaming(&self, op: u16, _: Context, _: ServerStream) -> BoxFuture<Result<(), Status>> {
        codegen::unimplemented_streaming(op)
    }
    fn file_descriptor_set(&self) -> &'static [u8] {
        self.1
    }
}

async fn serve(config: ServerConfig, services: Vec<Described>) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut builder = frpc::Server::builder().config(config);
    for service in services {
        builder = builder.add_service(service);
    }
    let server = builder.build().unwrap();
    tokio::spawn(async move { server.serve_listener(listener).await });
    addr
}

type Raw = Framed<TcpStream, frpc::wire::PacketCodec>;

/// The next packet that is not a heartbeat.
async fn next(raw: &mut Raw) -> frpc::wire::Packet {
    loop {
        let packet = tokio::time::timeout(Duration::from_secs(5), raw.next())
            .await
            .expect("a packet within 5 s")
            .expect("the connection stays open")
            .unwrap();
        if packet.op > frpc::wire::op::PONG {
            return packet;
        }
    }
}

/// What the frpc server writes is the spec's REFLECTION; what a raw client writes from the
/// spec (OFFER with bit 8, REFLECT) is all it takes.
#[tokio::test]
async fn the_spec_examples_are_the_bytes() {
    let spec = Spec::load();
    let offer = spec.bytes(&["00 0f 00 01 ff ff 00 00 00 05 01 00 00 03 ff"]);
    let reflect = spec.bytes(&["00 0f 00 07 ff ff 00 00 00 00"]);
    let empty = spec.bytes(&["00 0f 00 08 ff ff 00 00 00 00"]);
    let a_proto = spec.bytes(&["00 0f 00 08 ff ff 00 00 00 0b 0a 09 0a 07 61 2e 70 72 6f 74 6f"]);

    for (services, answer) in [
        (vec![Described("a.A", A_PROTO)], &a_proto),
        (vec![Described("x.X", &[])], &empty),
    ] {
        let addr = serve(ServerConfig::default(), services).await;
        let mut raw = Framed::new(
            TcpStream::connect(addr).await.unwrap(),
            frpc::wire::PacketCodec::new(Framing::Frisbee),
        );
        raw.send(packet(&offer)).await.unwrap();
        let accept = next(&mut raw).await;
        assert_eq!((accept.id, accept.op), (2, 0xFFFF));
        assert_ne!(
            accept.content[3] & 0x01,
            0,
            "bit 8 accepted: {:?}",
            accept.content
        );
        raw.send(packet(&reflect)).await.unwrap();
        assert_eq!(&wire_hex(&next(&mut raw).await), answer);
    }
}

fn packet(hex: &str) -> frpc::wire::Packet {
    let bytes = unhex(hex);
    let content = Bytes::copy_from_slice(&bytes[10..]);
    let id = u16::from_be_bytes([bytes[2], bytes[3]]);
    let op = u16::from_be_bytes([bytes[4], bytes[5]]);
    frpc::wire::Packet::new(id, op, content)
}

/// The client gets the distinct sets of every service, concatenated (services sharing a set
/// send it once); twice on one connection, each request its answer.
#[tokio::test]
async fn client_reflects_every_service() {
    let services = vec![
        Described("a.A", A_PROTO),
        Described("a.A2", A_PROTO),
        Described("r.Rust", &[]),
        Described("b.B", B_PROTO),
    ];
    let addr = serve(ServerConfig::default(), services).await;
    let client = frpc::Client::connect(addr).await.unwrap();
    let expected = [A_PROTO, B_PROTO].concat();
    let (first, second) = tokio::join!(client.reflect(), client.reflect());
    assert_eq!(first.unwrap().as_deref(), Some(&expected[..]));
    assert_eq!(second.unwrap().as_deref(), Some(&expected[..]));
}

/// The health service is reflected beside services with descriptors (its file, then its
/// operations 0xFF00 and 0xFF01), but alone makes no answer: a server of Rust-first services
/// answers as it would without health, so clients ask for `.proto` files.
#[tokio::test]
async fn health_is_reflected_only_beside_described_services() {
    use prost::Message as _;
    let (_, health) = frpc::health::service();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = frpc::Server::builder()
        .add_service(Described("a.A", A_PROTO))
        .add_service(health)
        .build()
        .unwrap();
    tokio::spawn(async move { server.serve_listener(listener).await });
    let client = frpc::Client::connect(addr).await.unwrap();
    let answer = client.reflect().await.unwrap().unwrap();
    let set = frpc::codegen::prost_types::FileDescriptorSet::decode(answer.clone()).unwrap();
    let files: Vec<_> = set.file.iter().map(|f| f.name().to_string()).collect();
    assert_eq!(files, ["a.proto", "frpc/health/v1/health.proto"]);
    let check = unhex("c2 3e 21 0a 1b"); // 33 bytes: `frpc.health.v1.Health.Check`, 0xFF00
    assert!(
        answer.windows(check.len()).any(|w| w == check),
        "Check's operation follows"
    );
    assert!(answer.ends_with(&unhex("10 81 fe 03")), "then Watch's: 0xFF01");

    let rust_only = serve(ServerConfig::default(), vec![Described("r.Rust", &[])]).await;
    let without_health = frpc::Client::connect(rust_only)
        .await
        .unwrap()
        .reflect()
        .await
        .unwrap();
    let (_, health) = frpc::health::service();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = frpc::Server::builder()
        .add_service(Described("r.Rust", &[]))
        .add_service(health)
        .build()
        .unwrap();
    tokio::spawn(async move { server.serve_listener(listener).await });
    let client = frpc::Client::connect(addr).await.unwrap();
    assert_eq!(client.reflect().await.unwrap(), without_health);
}

/// No reflection without the extension, on either side: `Ok(None)` at once, nothing sent.
#[tokio::test]
async fn no_reflection_without_the_extension() {
    let plain_server = ServerConfig::default().extensions(false);
    let addr = serve(plain_server, vec![Described("a.A", A_PROTO)]).await;
    let client = frpc::Client::connect(addr).await.unwrap();
    assert_eq!(client.reflect().await.unwrap(), None);

    let addr = serve(ServerConfig::default(), vec![Described("a.A", A_PROTO)]).await;
    let plain_client = ClientConfig::default().extensions(false);
    let client = frpc::Client::connect_with(addr, plain_client).await.unwrap();
    assert_eq!(client.reflect().await.unwrap(), None);
}

/// A described service whose one method, `M`, is served on operation 12 (not 10, as the
/// method's place in its file would say: numbered across files).
struct Numbered;

impl codegen::Service for Numbered {
    fn name(&self) -> &'static str {
        "a.S"
    }
    fn methods(&self) -> &'static [MethodDesc] {
        &[MethodDesc {
            name: "M",
            op: 12,
            kind: codegen::MethodKind::Unary,
        }]
    }
    fn call_unary(&self, op: u16, _: Context, _: Bytes) -> BoxFuture<Result<Bytes, Status>> {
        codegen::unimplemented_unary(op)
    }
    fn call_streaming(&self, op: u16, _: Context, _: ServerStream) -> BoxFuture<Result<(), Status>> {
        codegen::unimplemented_streaming(op)
    }
    fn file_descriptor_set(&self) -> &'static [u8] {
        A_PROTO
    }
}

/// Each described method's operation number follows the sets, in field 1000 of the answer
/// (`c2 3e`, which `FileDescriptorSet` readers skip): `pkg.Service.Method` (1) and the number
/// (2), so a client can call servers that number across files.
#[tokio::test]
async fn operation_numbers_follow_the_sets() {
    use prost::Message as _;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = frpc::Server::builder().add_service(Numbered).build().unwrap();
    tokio::spawn(async move { server.serve_listener(listener).await });
    let client = frpc::Client::connect(addr).await.unwrap();
    let answer = client.reflect().await.unwrap().unwrap();
    let operation = unhex("c2 3e 09 0a 05 61 2e 53 2e 4d 10 0c");
    assert_eq!(answer[..], [A_PROTO, &operation].concat()[..]);
    let set = frpc::codegen::prost_types::FileDescriptorSet::decode(answer).unwrap();
    assert_eq!(set.file.len(), 1);
}

/// A peer that closes without answering anything (not a Frisbee peer, the other framing, TLS
/// on its side only) is the connection's error, with its hints, not "no reflection".
#[tokio::test]
async fn a_peer_that_closes_at_once_is_an_error_not_no_reflection() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            drop(stream);
        }
    });
    let client = frpc::Client::connect(addr).await.unwrap();
    let err = client.reflect().await.unwrap_err();
    assert!(matches!(err, frpc::Error::ConnectionClosed { .. }), "{err}");
    assert!(err.to_string().contains("before sending a valid packet"), "{err}");
}
