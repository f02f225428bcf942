//! Hostile and broken peers against the capture server, while a well-behaved client keeps
//! calling Echo and must see zero errors throughout.

mod support;

use std::time::Duration;

use bytes::BytesMut;
use frpc_examples::capture::pb;
use frpc_wire::polyglot::Message;
use frpc_wire::{Framing, Packet, PacketCodec};
use futures_util::{SinkExt, StreamExt};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::codec::{Encoder, Framed};

/// Reads until the server closes the connection (PINGs and replies are drained); fails if it
/// does not close within `limit`.
async fn closes_within(stream: &mut TcpStream, limit: Duration) {
    let mut sink = Vec::new();
    let read = tokio::time::timeout(limit, stream.read_to_end(&mut sink)).await;
    assert!(
        read.is_ok(),
        "the server did not close the connection within {limit:?}"
    );
}

fn header(id: u16, op: u16, len: u32) -> Vec<u8> {
    let mut out = vec![0x00, 0x0f];
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(&op.to_be_bytes());
    out.extend_from_slice(&len.to_be_bytes());
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_peers_only_lose_their_own_connection() {
    let running = start(config(Duration::from_secs(1))).await;
    let good = GoodClient::start(running.addr).await;

    // Bad magic: a legacy header sent to a v0.11 server.
    let mut bad_magic = TcpStream::connect(running.addr).await.unwrap();
    bad_magic
        .write_all(&[0, 1, 0, 10, 0, 0, 0, 2, 8, 0])
        .await
        .unwrap();
    closes_within(&mut bad_magic, Duration::from_secs(3)).await;

    // A header announcing 4 GiB: refused as soon as the header is parsed, nothing allocated.
    let mut huge = TcpStream::connect(running.addr).await.unwrap();
    huge.write_all(&header(1, 10, u32::MAX)).await.unwrap();
    closes_within(&mut huge, Duration::from_secs(3)).await;

    // A truncated packet, then the peer closes.
    let mut truncated = TcpStream::connect(running.addr).await.unwrap();
    let mut bytes = header(1, 10, 100);
    bytes.extend_from_slice(&[8, 0, 5]);
    truncated.write_all(&bytes).await.unwrap();
    truncated.shutdown().await.unwrap();
    closes_within(&mut truncated, Duration::from_secs(3)).await;

    // 1 MiB of random garbage.
    let mut garbage = TcpStream::connect(running.addr).await.unwrap();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let noise: Vec<u8> = (0..1 << 20)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    let _ = garbage.write_all(&noise).await; // the server may close before all is written
    closes_within(&mut garbage, Duration::from_secs(3)).await;

    // Half a header, then silence: dropped by the idle timeout.
    let mut half = TcpStream::connect(running.addr).await.unwrap();
    half.write_all(&[0x00, 0x0f, 0x00, 0x01]).await.unwrap();
    closes_within(&mut half, Duration::from_secs(4)).await;

    good.finish().await;
    // And the server still accepts and serves.
    let again = pb::EchoServiceClient::connect(running.addr).await.unwrap();
    assert_eq!(
        again
            .echo(pb::Request {
                message: "ok".into(),
                corpus: 0
            })
            .await
            .unwrap()
            .message,
        "ok"
    );
}

async fn next_reply(framed: &mut Framed<TcpStream, PacketCodec>) -> Packet {
    loop {
        let packet = tokio::time::timeout(Duration::from_secs(5), framed.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        if packet.op > frpc_wire::op::PONG {
            return packet;
        }
        if packet.op == frpc_wire::op::PING {
            framed.send(Packet::pong()).await.unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undecodable_requests_and_unknown_operations_keep_the_connection_usable() {
    let running = start(config(Duration::from_secs(5))).await;
    let good = GoodClient::start(running.addr).await;
    let stream = TcpStream::connect(running.addr).await.unwrap();
    let mut framed = Framed::new(stream, PacketCodec::new(Framing::Frisbee));
    let request = pb::Request {
        message: "fine".into(),
        corpus: 0,
    }
    .to_polyglot();
    // A truncated varint, a wrong kind, a string that is not UTF-8: each gets an Error reply.
    // (An enum index our enum lacks is kept, not refused: see frpc-codegen's README.)
    for (id, content) in [
        (1u16, &b"\x08\x00\x05\x0a\xff"[..]),
        (2, &b"\x08\x00\x07\x01"[..]),
        (3, &b"\x08\x00\x05\x0a\x02\xff\xfe"[..]),
    ] {
        framed.send(Packet::new(id, 10, content)).await.unwrap();
        let reply = next_reply(&mut framed).await;
        assert_eq!(
            (reply.id, reply.op, reply.content[0]),
            (id, 10, 0x06),
            "an Error reply"
        );
    }
    // Unknown operations (and reserved ones) are ignored.
    for op in [3u16, 9, 999, 65535] {
        framed.send(Packet::new(7, op, &b"\x08\x00"[..])).await.unwrap();
    }
    framed.send(Packet::new(4, 10, request)).await.unwrap();
    let reply = next_reply(&mut framed).await;
    assert_eq!(
        (reply.id, reply.op),
        (4, 10),
        "no reply to the unknown operations came first"
    );
    let decoded = pb::Response::from_polyglot(&reply.content).unwrap();
    assert_eq!(decoded.message, "fine");
    good.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_opened_and_abandoned_drain_the_stream_tables() {
    let running = start(config(Duration::from_secs(5))).await;
    let good = GoodClient::start(running.addr).await;
    // Our client: handles dropped mid-stream end the streams on both sides.
    let client = pb::EchoServiceClient::connect(running.addr).await.unwrap();
    for i in 0..300 {
        let mut chat = client.echo_stream().await.unwrap();
        chat.send(pb::Request {
            message: format!("{i}"),
            corpus: 0,
        })
        .await
        .unwrap();
        if i % 2 == 0 {
            chat.message().await.unwrap();
        }
    }
    assert_eq!(client.client().open_streams(), 0);
    assert!(eventually(Duration::from_secs(5), || running.server.open_streams() == 0).await);

    // A Go-style peer that opens streams and never ends them: they live until it disconnects.
    let mut raw = TcpStream::connect(running.addr).await.unwrap();
    let mut codec = PacketCodec::new(Framing::Frisbee);
    let mut out = BytesMut::new();
    for id in 1..=100u16 {
        codec
            .encode(Packet::new(id, 2, &b"\x09\x0b"[..]), &mut out)
            .unwrap();
    }
    raw.write_all(&out).await.unwrap();
    assert!(eventually(Duration::from_secs(5), || running.server.open_streams() == 100).await);
    drop(raw);
    assert!(eventually(Duration::from_secs(5), || running.server.open_streams() == 0).await);
    good.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_over_the_limit_are_refused_with_an_error() {
    let mut cfg = config(Duration::from_secs(5));
    cfg.connection.max_streams = 4;
    let running = start(cfg).await;
    let client = pb::EchoServiceClient::connect(running.addr).await.unwrap();
    let mut open = Vec::new();
    for _ in 0..4 {
        let mut chat = client.echo_stream().await.unwrap();
        chat.send(pb::Request {
            message: "x".into(),
            corpus: 0,
        })
        .await
        .unwrap();
        chat.message().await.unwrap();
        open.push(chat);
    }
    // Between frpc peers the open is acknowledged, so the call itself fails, with the code.
    let err = client.echo_stream().await.unwrap_err();
    assert!(err.to_string().contains("too many open streams"), "{err}");
    assert_eq!(err.code(), frpc::Code::ResourceExhausted);
    drop(open);
    assert!(eventually(Duration::from_secs(5), || running.server.open_streams() == 0).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_under_load_answers_or_fails_every_call() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = frpc_examples::capture::server(Framing::Frisbee, frpc::Concurrency::PerRpc);
    let (stop, signal) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(async move {
        server
            .serve_listener_with_shutdown(listener, async { signal.await.unwrap_or(()) })
            .await
    });
    let mut workers = Vec::new();
    for c in 0..64 {
        let client = pb::EchoServiceClient::connect(addr).await.unwrap();
        for k in 0..10 {
            let client = client.clone();
            workers.push(tokio::spawn(async move {
                let (mut ok, mut failed) = (0, 0);
                loop {
                    let message = format!("{c}-{k}");
                    let call = client.echo(pb::Request {
                        message: message.clone(),
                        corpus: 0,
                    });
                    match tokio::time::timeout(Duration::from_secs(10), call)
                        .await
                        .expect("no call hangs")
                    {
                        Ok(reply) => {
                            assert_eq!(reply.message, message);
                            ok += 1;
                        }
                        // The server gone, or a call started during its drain, refused
                        // at once as after HTTP/2's GOAWAY.
                        Err(frpc::Error::ConnectionClosed { .. }) => {
                            failed += 1;
                            return (ok, failed);
                        }
                        Err(frpc::Error::Status(status))
                            if status.code() == frpc::Code::Unavailable
                                && status.message() == "the server is shutting down" =>
                        {
                            failed += 1;
                            return (ok, failed);
                        }
                        Err(other) => panic!("unclear error {other}"),
                    }
                }
            }));
        }
    }
    // Let load build up, then shut down.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = tokio::time::Instant::now();
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(5), serving)
        .await
        .expect("exits within 5 s")
        .unwrap()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    let mut answered = 0;
    for worker in workers {
        let (ok, failed) = worker.await.unwrap();
        answered += ok;
        assert_eq!(
            failed, 1,
            "each worker's last call failed cleanly: refused, or the server gone"
        );
    }
    assert!(answered > 0);
}
