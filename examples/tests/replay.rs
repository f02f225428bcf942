//! Replays the Go captures (`testdata/vectors/capture-frisbee-*.json`) over real TCP:
//! - the Go client's bytes written to our capture service must get back exactly the Go
//!   server's bytes (a second EOF after the first is optional for us);
//! - our generated client, talking to a peer that answers with the Go server's bytes, must
//!   write exactly the Go client's bytes.

use std::time::Duration;

use bytes::BytesMut;
use frpc::{ClientConfig, Concurrency, Framing};
use frpc_examples::capture::{self, pb};
use frpc_wire::{Packet, PacketCodec, op};
use futures_util::{SinkExt, StreamExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::codec::{Encoder, Framed};

#[derive(Debug, Clone)]
struct Captured {
    scenario: String,
    from_client: bool,
    packet: Packet,
    wire: Vec<u8>,
}

fn load(file: &'static str) -> (Framing, Vec<Captured>) {
    let capture = frpc_testdata::Capture::load(file);
    let framing = if capture.header_size == 10 {
        Framing::Frisbee
    } else {
        Framing::Legacy
    };
    let packets = capture
        .packets()
        .map(|(scenario, p)| Captured {
            scenario: scenario.name.clone(),
            from_client: p.from_client,
            packet: Packet::new(p.id, p.op, p.content.clone()),
            wire: p.wire(),
        })
        .collect();
    (framing, packets)
}

const CAPTURES: [&str; 2] = frpc_testdata::CAPTURES;

fn wire_bytes(framing: Framing, packet: &Packet) -> Vec<u8> {
    let mut buf = BytesMut::new();
    PacketCodec::new(framing).encode(packet, &mut buf).unwrap();
    buf.to_vec()
}

fn quiet(mut config: frpc::ConnectionConfig) -> frpc::ConnectionConfig {
    // Our own heartbeats would interleave with the scripted packets.
    config.ping_interval = Duration::from_secs(3600);
    config.idle_timeout = Duration::from_secs(7200);
    config
}

async fn next_packet(framed: &mut Framed<TcpStream, PacketCodec>, scenario: &str) -> Packet {
    tokio::time::timeout(Duration::from_secs(5), framed.next())
        .await
        .unwrap_or_else(|_| panic!("{scenario}: no packet within 5 s"))
        .unwrap_or_else(|| panic!("{scenario}: connection closed"))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_client_bytes_get_go_server_bytes_back() {
    for file in CAPTURES {
        let (framing, packets) = load(file);
        for concurrency in [Concurrency::PerRpc, Concurrency::Inline] {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let mut config = frpc::ServerConfig::default();
            config.connection = quiet(config.connection);
            config.connection.framing = framing;
            config.concurrency = concurrency;
            let server = frpc::Server::builder()
                .config(config)
                .add_service(pb::EchoServiceServer::new(capture::CaptureService))
                .build()
                .unwrap();
            tokio::spawn(async move { server.serve_listener(listener).await });
            let stream = TcpStream::connect(addr).await.unwrap();
            let mut framed = Framed::new(stream, PacketCodec::new(framing));
            let mut last_eof: Option<Vec<u8>> = None;
            for captured in &packets {
                let what = format!("{file} {concurrency:?} {}", captured.scenario);
                if captured.from_client {
                    framed.send(captured.packet.clone()).await.unwrap();
                    continue;
                }
                if captured.packet.op == op::PING {
                    continue; // the Go server's own heartbeat; ours is off here
                }
                if last_eof.as_deref() == Some(&captured.wire[..]) {
                    continue; // Go's duplicate EOF: optional for us
                }
                let got = next_packet(&mut framed, &what).await;
                assert_eq!(
                    hex::encode(wire_bytes(framing, &got)),
                    hex::encode(&captured.wire),
                    "{what}: server bytes differ"
                );
                last_eof = (captured.packet.content[..] == *frpc_wire::polyglot::EOF_MESSAGE)
                    .then(|| captured.wire.clone());
            }
        }
    }
}

/// The next packet our client writes that is not a Frisbee stream close (op 2, no content),
/// noting the closes' stream ids in `closed`: each stream our client opened toward a Go server
/// ends with one once its handles are gone (Go keeps a stream until it is closed, and the
/// Go client never closes one: its ids wrap onto streams Go still holds), the only packet it
/// writes that the Go client did not.
async fn next_unclosing(
    framed: &mut Framed<TcpStream, PacketCodec>,
    scenario: &str,
    closed: &mut Vec<u16>,
) -> Packet {
    loop {
        let packet = next_packet(framed, scenario).await;
        if packet.op != frpc_wire::op::STREAM || !packet.content.is_empty() {
            return packet;
        }
        closed.push(packet.id);
    }
}

/// Plays the Go server's side of a capture: checks each packet our client writes against the
/// Go client's bytes (past our stream closes, see [`next_unclosing`]) and answers with the Go
/// server's bytes. With `offer`, the client's first
/// packet must be its extension offer (docs/extensions.md), which a Go server ignores, then a
/// PING whose PONG tells the client so (its first call waits for the answer to the offer, as a
/// Go server gives it): nothing after them differs from what the Go client wrote.
async fn scripted_go_server(listener: TcpListener, framing: Framing, packets: Vec<Captured>, offer: bool) {
    let (stream, _) = listener.accept().await.unwrap();
    let mut framed = Framed::new(stream, PacketCodec::new(framing));
    if offer {
        let got = next_packet(&mut framed, "offer").await;
        // Every extension of docs/extensions.md, protobuf (0x10), byte windows (0x80),
        // reflection (0x100), the drain notice (0x200) and cancel answers (0x400) included.
        let offer = Packet::new(1, 0xFFFF, &[1u8, 0, 0, 7, 0xff][..]);
        assert_eq!(
            hex::encode(wire_bytes(framing, &got)),
            hex::encode(wire_bytes(framing, &offer)),
            "the extension offer"
        );
        let probe = next_packet(&mut framed, "the offer's probe").await;
        assert_eq!(
            wire_bytes(framing, &probe),
            wire_bytes(framing, &Packet::ping()),
            "a PING"
        );
        framed.send(Packet::pong()).await.unwrap();
    }
    let (mut opened, mut closed) = (Vec::new(), Vec::new());
    for captured in packets.iter().filter(|c| !c.scenario.starts_with("idle")) {
        if captured.from_client {
            let got = next_unclosing(&mut framed, &captured.scenario, &mut closed).await;
            if got.op == frpc_wire::op::STREAM && got.content.first() == Some(&0x09) {
                assert!(
                    !closed.contains(&got.id),
                    "{}: opened after its close",
                    captured.scenario
                );
                opened.push(got.id);
            }
            assert_eq!(
                hex::encode(wire_bytes(framing, &got)),
                hex::encode(&captured.wire),
                "{}: client bytes differ",
                captured.scenario
            );
        } else {
            framed.send(captured.packet.clone()).await.unwrap();
        }
    }
    // The heartbeat: our client answers a PING with a PONG.
    framed.send(Packet::ping()).await.unwrap();
    let pong = next_unclosing(&mut framed, "idle", &mut closed).await;
    assert_eq!(wire_bytes(framing, &pong), wire_bytes(framing, &Packet::pong()));
    // The streams dropped before the next opened were closed, and nothing else was.
    assert!(
        closed.iter().all(|id| opened.contains(id)),
        "{closed:?} of {opened:?}"
    );
    assert!(closed.len() + 1 >= opened.len(), "{closed:?} of {opened:?}");
}

/// With extensions off our client writes exactly the Go client's bytes, and a Frisbee close at
/// the end of each stream; with them on (the default) it writes its offer first and then the
/// same.
#[tokio::test]
async fn our_client_writes_the_go_client_bytes() {
    for extensions in [false, true] {
        for file in CAPTURES {
            let (framing, packets) = load(file);
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let peer = tokio::spawn(scripted_go_server(listener, framing, packets, extensions));
            let mut config = ClientConfig::default();
            config.connection = quiet(config.connection);
            config.connection.framing = framing;
            config.extensions = extensions;
            let client = pb::EchoServiceClient::new(frpc::Client::connect_with(addr, config).await.unwrap());
            run_capture_client(&client).await;
            peer.await.unwrap();
        }
    }
}

/// The calls the Go client made while the captures were recorded, with the answers it got.
async fn run_capture_client(client: &pb::EchoServiceClient) {
    let first = client
        .echo(pb::Request {
            message: "hi".into(),
            corpus: pb::request::Corpus::Web as i32,
        })
        .await
        .unwrap();
    assert_eq!(first.message, "hi");
    assert_eq!(first.test.unwrap().checker, pb::Test::Monkey as i32);
    let second = client.echo(pb::Request::default()).await.unwrap();
    assert_eq!(second.message, "");

    let testy = pb::SearchResponse {
        results: vec![pb::search_response::Result {
            url: "u".into(),
            ..Default::default()
        }],
        snippets: vec!["a".into()],
        ..Default::default()
    };
    let err = client.testy(testy).await.unwrap_err();
    assert_eq!(err.status().map(|s| s.message()), Some("boom"));

    let mut search = client.search(pb::SearchResponse::default()).await.unwrap();
    assert_eq!(search.message().await.unwrap().unwrap().message, "r0");
    assert_eq!(search.message().await.unwrap().unwrap().message, "r1");
    assert!(search.message().await.unwrap().is_none());
    drop(search);

    let failing = pb::SearchResponse {
        snippets: vec!["fail".into()],
        ..Default::default()
    };
    let mut search = client.search(failing).await.unwrap();
    assert_eq!(search.message().await.unwrap().unwrap().message, "partial");
    let err = search.message().await.unwrap_err();
    assert_eq!(
        err.status().map(|s| s.message()),
        Some("search failed"),
        "surfaced, unlike Go"
    );
    drop(search);

    let mut upload = client.upload().await.unwrap();
    upload
        .send(pb::Data {
            message: "a".into(),
            checker: 0,
        })
        .await
        .unwrap();
    upload
        .send(pb::Data {
            message: "b".into(),
            checker: pb::Test::Monkey as i32,
        })
        .await
        .unwrap();
    assert_eq!(upload.close_and_recv().await.unwrap().message, "got 2");

    let mut chat = client.echo_stream().await.unwrap();
    chat.send(pb::Request {
        message: "x".into(),
        corpus: 0,
    })
    .await
    .unwrap();
    assert_eq!(chat.message().await.unwrap().unwrap().message, "x");
    chat.send(pb::Request {
        message: "y".into(),
        corpus: 0,
    })
    .await
    .unwrap();
    assert_eq!(chat.message().await.unwrap().unwrap().message, "y");
    chat.close_send().await.unwrap();
    assert!(chat.message().await.unwrap().is_none());
}

#[tokio::test]
async fn generated_client_and_capture_server_agree() {
    for framing in [Framing::Frisbee, Framing::Legacy] {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(capture::serve(listener, framing, Concurrency::PerRpc));
        let mut config = ClientConfig::default();
        config.connection.framing = framing;
        let client = pb::EchoServiceClient::new(frpc::Client::connect_with(addr, config).await.unwrap());
        run_capture_client(&client).await;
    }
}

#[test]
fn the_compiled_proto_is_the_captures_schema() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let compiled = std::fs::read(format!("{root}/proto/capture.proto")).unwrap();
    let schema = std::fs::read(format!("{root}/testdata/vectors/capture.proto")).unwrap();
    assert!(
        compiled == schema,
        "proto/capture.proto drifted from testdata/vectors/capture.proto"
    );
}
