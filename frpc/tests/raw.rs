//! Custom messaging beside RPCs (raw routes and packets) and connection takeover.

mod support;

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use frpc::{Client, ClientConfig, Concurrency, Error, Server};
use frpc_wire::polyglot::Message;
use frpc_wire::{Framing, Packet, PacketCodec};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_util::codec::Encoder;

const PUSH: u16 = 60;
const ASK: u16 = 61;

/// A server with the test service plus two raw routes: ASK answers with its content reversed
/// and then pushes three PUSH packets to the same client.
async fn raw_server() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = Server::builder()
        .add_service(TestService::default())
        .route(ASK, |ctx, packet| async move {
            let sender = ctx.packet_sender();
            tokio::spawn(async move {
                for i in 0..3u8 {
                    sender.send(PUSH, u16::from(i), vec![i]).await.unwrap();
                }
            });
            let mut reversed = packet.content.to_vec();
            reversed.reverse();
            Some(Bytes::from(reversed))
        })
        .build()
        .unwrap();
    tokio::spawn(async move { server.serve_listener(listener).await });
    addr
}

#[tokio::test]
async fn raw_route_replies_and_pushes_beside_rpcs() {
    let addr = raw_server().await;
    let client = Client::connect(addr).await.unwrap();
    let mut answers = client.raw_packets(ASK).unwrap();
    let mut pushes = client.raw_packets(PUSH).unwrap();
    client.send_packet(ASK, 9, &b"abc"[..]).await.unwrap();
    let answer = answers.next_packet().await.unwrap();
    assert_eq!((answer.id, answer.op, &answer.content[..]), (9, ASK, &b"cba"[..]));
    for i in 0..3u8 {
        let push = pushes.next_packet().await.unwrap();
        assert_eq!((push.id, &push.content[..]), (u16::from(i), &[i][..]));
    }
    assert_eq!(call(&client, ECHO, "rpc too").await.unwrap().value, "rpc too");
}

#[tokio::test]
async fn reserved_operations_are_refused_for_raw_packets() {
    let addr = raw_server().await;
    let client = Client::connect(addr).await.unwrap();
    for op in [0, 1, 2, 9] {
        assert!(matches!(
            client.send_packet(op, 0, Bytes::new()).await,
            Err(Error::Config(_))
        ));
        assert!(client.raw_packets(op).is_err());
    }
    let err = Server::builder()
        .route(5, |_, _| async { None })
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("reserved"), "{err}");
    let err = Server::builder()
        .add_service(TestService::default())
        .route(ECHO, |_, _| async { None })
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("operation 10"), "{err}");
}

fn quiet_client() -> ClientConfig {
    let mut config = ClientConfig::default();
    // No heartbeat may cross the switch to raw bytes in these tests.
    config.connection.ping_interval = Duration::from_secs(3600);
    config.connection.idle_timeout = Duration::from_secs(7200);
    config
}

fn quiet_server(concurrency: Concurrency) -> frpc::ServerConfig {
    let mut config = support::config(concurrency);
    config.connection.ping_interval = Duration::from_secs(3600);
    config.connection.idle_timeout = Duration::from_secs(7200);
    config
}

/// Reads exactly `n` bytes: first from what frpc handed back unparsed, then from the socket.
async fn read_exact_after(stream: &mut tokio::net::TcpStream, unparsed: &mut BytesMut, n: usize) -> Vec<u8> {
    let take = n.min(unparsed.len());
    let mut out = unparsed.split_to(take).to_vec();
    let mut rest = vec![0u8; n - take];
    stream.read_exact(&mut rest).await.unwrap();
    out.extend_from_slice(&rest);
    out
}

#[tokio::test]
async fn client_takeover_loses_no_byte_in_either_direction() {
    for mode in [Concurrency::PerRpc, Concurrency::Inline] {
        let server = start(quiet_server(mode)).await;
        let client = Client::connect_with(server.addr, quiet_client()).await.unwrap();
        assert_eq!(call(&client, ECHO, "before").await.unwrap().value, "before");
        client.arm_takeover();
        // The server writes its greeting right behind the reply, so both usually arrive in one
        // segment: the greeting must come back as unparsed bytes, not be lost or misparsed.
        assert_eq!(
            call(&client, UPGRADE, "server-hello").await.unwrap().value,
            "upgraded"
        );
        let (mut stream, mut unparsed) = client.into_raw().await.unwrap();
        let greeting = read_exact_after(&mut stream, &mut unparsed, 12).await;
        assert_eq!(greeting, b"server-hello", "{mode:?}");
        let payload: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let (mut reader, mut writer) = stream.split();
        let send = async {
            writer.write_all(&payload).await.unwrap();
        };
        let receive = async {
            let mut echoed = unparsed.to_vec();
            let mut buf = vec![0u8; 64 * 1024];
            while echoed.len() < payload.len() {
                let n = reader.read(&mut buf).await.unwrap();
                assert!(n > 0, "server closed early");
                echoed.extend_from_slice(&buf[..n]);
            }
            echoed
        };
        let ((), echoed) = tokio::join!(send, receive);
        assert!(echoed == payload, "{mode:?}: echo differs");
    }
}

/// A takeover waits for the calls still running on the connection for at most the shutdown
/// grace, as `Context::take_connection` says: then they are dropped (no reply) and the socket
/// is handed back. (It waited for them without limit.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_takeover_waits_for_running_calls_at_most_the_grace() {
    let mut config = quiet_server(Concurrency::PerRpc);
    config.shutdown_grace = Duration::from_millis(300);
    let server = start(config).await;
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let mut codec = PacketCodec::new(Framing::Frisbee);
    let mut out = BytesMut::new();
    // A call that never finishes (its gate never opens), then the takeover.
    let gated = Packet::new(1, GATED, Text::new("waits").to_polyglot());
    codec.encode(&gated, &mut out).unwrap();
    stream.write_all(&out).await.unwrap();
    tokio::time::timeout(Duration::from_secs(20), gated_started(&server, 1))
        .await
        .unwrap();
    let mut out = BytesMut::new();
    let upgrade = Packet::new(2, UPGRADE, Text::new("hello").to_polyglot());
    codec.encode(&upgrade, &mut out).unwrap();
    stream.write_all(&out).await.unwrap();

    let mut expected = BytesMut::new();
    let reply = Packet::new(2, UPGRADE, Text::new("upgraded").to_polyglot());
    codec.encode(&reply, &mut expected).unwrap();
    expected.extend_from_slice(b"hello");
    let mut got = vec![0u8; expected.len()];
    tokio::time::timeout(Duration::from_secs(20), stream.read_exact(&mut got))
        .await
        .expect("the socket is handed back within the grace")
        .unwrap();
    assert_eq!(
        got,
        &expected[..],
        "the takeover's reply, then its greeting; no reply to the gated call"
    );
}

#[tokio::test]
async fn server_takeover_keeps_bytes_that_arrived_with_the_request() {
    let server = start(quiet_server(Concurrency::Inline)).await;
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let mut codec = PacketCodec::new(Framing::Frisbee);
    let mut out = BytesMut::new();
    let request = Packet::new(1, UPGRADE, Text::new("hi!").to_polyglot());
    codec.encode(&request, &mut out).unwrap();
    // Raw bytes pipelined in the same write as the request: frpc has read them already.
    out.extend_from_slice(b"RAW-BYTES-RIGHT-BEHIND");
    stream.write_all(&out).await.unwrap();

    let reply = Text::new("upgraded").to_polyglot();
    let mut expected_reply = BytesMut::new();
    codec
        .encode(&Packet::new(1, UPGRADE, reply), &mut expected_reply)
        .unwrap();
    let mut got = vec![0u8; expected_reply.len() + 3 + 22];
    stream.read_exact(&mut got).await.unwrap();
    assert_eq!(
        &got[..expected_reply.len()],
        &expected_reply[..],
        "the reply, flushed before the switch"
    );
    assert_eq!(&got[expected_reply.len()..], b"hi!RAW-BYTES-RIGHT-BEHIND");
    // And the raw conversation goes on.
    stream.write_all(b"more").await.unwrap();
    let mut more = [0u8; 4];
    stream.read_exact(&mut more).await.unwrap();
    assert_eq!(&more, b"more");
}

#[tokio::test]
async fn into_raw_without_arming_still_hands_the_socket_back() {
    let server = start(quiet_server(Concurrency::PerRpc)).await;
    let client = Client::connect_with(server.addr, quiet_client()).await.unwrap();
    assert_eq!(call(&client, ECHO, "x").await.unwrap().value, "x");
    let (stream, unparsed) = client.into_raw().await.unwrap();
    assert!(unparsed.is_empty());
    assert_eq!(stream.peer_addr().unwrap(), server.addr);
}

/// `into_raw` on a connection already closed (by this side, or by the server) fails at once;
/// it waited for ever on a writer that had finished (session 31's shutdown probe).
#[tokio::test]
async fn into_raw_on_a_closed_connection_fails_at_once() {
    for closed_here in [true, false] {
        let server = start(quiet_server(Concurrency::PerRpc)).await;
        let client = Client::connect_with(server.addr, quiet_client()).await.unwrap();
        assert_eq!(call(&client, ECHO, "x").await.unwrap().value, "x");
        match closed_here {
            true => client.close(),
            false => {
                server.shutdown.notify_one();
                server.done.await.unwrap().unwrap();
            }
        }
        client.closed().await;
        let taken = tokio::time::timeout(Duration::from_secs(10), client.into_raw()).await;
        let Ok(Err(err)) = taken else {
            panic!("closed_here {closed_here}: not an error at once: {taken:?}");
        };
        assert!(
            matches!(err, Error::ConnectionClosed { .. } | Error::Io(_)),
            "{err:?}"
        );
    }
}
