//! Replies the server's reader sends while it has more requests buffered are corked: they wait
//! in the write side's cork and leave together once the reader runs out of input, or as soon as
//! a handler has to wait. Checked with a bare Frisbee client that pipelines its requests in
//! large writes: every reply arrives whole and in order (small ones corked, large ones written
//! at once with the cork ahead of them), in both framings, also when the client reads slowly at
//! first, so those writes come out partial; a reply corked before a waiting handler is not held
//! up by it, nor by a request whose bytes are still arriving.

mod support;

use std::time::Duration;

use bytes::BytesMut;
use frpc::codegen::Message;
use frpc::{Concurrency, Framing, ServerConfig};
use frpc_wire::{Header, Packet, PacketCodec};
use futures_util::StreamExt;
use support::*;
use tokio::io::{AsyncRead, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::codec::FramedRead;

/// A server whose heartbeat never fires during the test (a PING would write a stuck cork and
/// hide it).
fn quiet(concurrency: Concurrency, framing: Framing) -> ServerConfig {
    let mut config = config(concurrency);
    config.connection.framing = framing;
    config.connection.ping_interval = Duration::from_secs(600);
    config.connection.idle_timeout = Duration::from_secs(1200);
    config
}

/// Request `i`'s text: mostly small, every `every`th one `large` bytes (32 KiB or more:
/// written at once, with the cork ahead of it).
fn text(i: u16, (large, every): (usize, u16)) -> String {
    let len = if i % every == every - 1 {
        large
    } else {
        1 + usize::from(i) % 300
    };
    format!("{i}:")
        .chars()
        .chain(std::iter::repeat_n('x', len))
        .collect()
}

fn encode(framing: Framing, id: u16, op: u16, value: &str, into: &mut BytesMut) {
    let content = Text::new(value).to_polyglot();
    Header {
        id,
        op,
        len: content.len() as u32,
    }
    .encode(framing, into);
    into.extend_from_slice(&content);
}

/// The next reply (skipping heartbeats), within 10 s so a stuck reply fails instead of hanging.
async fn next_reply(replies: &mut FramedRead<impl AsyncRead + Unpin, PacketCodec>) -> Packet {
    loop {
        let next = tokio::time::timeout(Duration::from_secs(10), replies.next());
        let packet = next
            .await
            .expect("a reply within 10 s")
            .expect("a packet")
            .expect("a valid packet");
        if packet.op > frpc_wire::op::PONG {
            return packet;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_requests_get_every_reply_whole_and_in_order() {
    for framing in [Framing::Frisbee, Framing::Legacy] {
        for concurrency in [Concurrency::Inline, Concurrency::PerRpc] {
            pipelined_replies(framing, concurrency, false).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_replies_through_a_full_socket_arrive_whole_and_in_order() {
    for concurrency in [Concurrency::Inline, Concurrency::PerRpc] {
        pipelined_replies(Framing::Frisbee, concurrency, true).await;
    }
}

/// A thousand pipelined requests, their replies read whole and in order; `slow` reads the
/// first 256 KiB 64 bytes at a time through a small receive buffer, so the server's socket
/// fills and its writes (corks, and large replies with a cork ahead of them) come out partial.
async fn pipelined_replies(framing: Framing, concurrency: Concurrency, slow: bool) {
    const REQUESTS: u16 = 1_000;
    // Slow: 40 MiB of replies in all, more than the server's socket holds (each large one
    // still written at once, not queued).
    let large = if slow { (200 * 1024, 5) } else { (40 * 1024, 50) };
    let server = start(quiet(concurrency, framing)).await;
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    if slow {
        // A small receive window keeps the server's send buffer small too.
        socket.set_recv_buffer_size(8 * 1024).unwrap();
    }
    let stream = socket.connect(server.addr).await.unwrap();
    let (read, mut write) = stream.into_split();
    // Ten writes of a hundred requests each: the reader finds many in its buffer.
    let sender = tokio::spawn(async move {
        for batch in 0..10u16 {
            let mut bytes = BytesMut::new();
            for i in batch * 100..(batch + 1) * 100 {
                encode(framing, i, ECHO, &text(i, large), &mut bytes);
            }
            write.write_all(&bytes).await.unwrap();
        }
        write
    });
    let read = slow_at_first(read, if slow { 256 * 1024 } else { 0 }).await;
    let mut replies = FramedRead::new(read, PacketCodec::new(framing));
    for i in 0..REQUESTS {
        let reply = next_reply(&mut replies).await;
        let what = format!("{framing:?} {concurrency:?} reply {i}");
        assert_eq!((reply.op, reply.id), (ECHO, i), "{what}: out of order");
        let value = Text::from_polyglot(&reply.content).expect("a Text").value;
        assert!(value == text(i, large), "{what}: content differs");
    }
    drop(sender.await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_corked_before_a_waiting_handler_leaves_without_waiting_for_it() {
    for framing in [Framing::Frisbee, Framing::Legacy] {
        // Inline: the reader itself runs the waiting handler.
        let server = start(quiet(Concurrency::Inline, framing)).await;
        let stream = TcpStream::connect(server.addr).await.unwrap();
        let (read, mut write) = stream.into_split();
        let mut bytes = BytesMut::new();
        encode(framing, 1, ECHO, "first", &mut bytes);
        encode(framing, 2, GATED, "second", &mut bytes);
        // One write: ECHO's reply is corked, as the reader has GATED buffered behind it.
        write.write_all(&bytes).await.unwrap();
        let mut replies = FramedRead::new(read, PacketCodec::new(framing));
        let reply = next_reply(&mut replies).await;
        assert_eq!((reply.op, reply.id), (ECHO, 1), "{framing:?}");
        assert_eq!(Text::from_polyglot(&reply.content).unwrap().value, "first");
        // GATED was waiting all along; let it through.
        server.service.state.gate.add_permits(1);
        let reply = next_reply(&mut replies).await;
        assert_eq!((reply.op, reply.id), (GATED, 2), "{framing:?}");
        assert_eq!(Text::from_polyglot(&reply.content).unwrap().value, "second");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_is_not_held_for_a_request_still_arriving() {
    for framing in [Framing::Frisbee, Framing::Legacy] {
        let server = start(quiet(Concurrency::Inline, framing)).await;
        let stream = TcpStream::connect(server.addr).await.unwrap();
        let (read, mut write) = stream.into_split();
        let mut bytes = BytesMut::new();
        encode(framing, 1, ECHO, "whole", &mut bytes);
        let whole = bytes.len();
        encode(framing, 2, ECHO, "split in two", &mut bytes);
        // The first request and half of the second: the reader has input left over (the half)
        // when it replies to the first, and then has to wait for the rest.
        let half = whole + (bytes.len() - whole) / 2;
        write.write_all(&bytes[..half]).await.unwrap();
        let mut replies = FramedRead::new(read, PacketCodec::new(framing));
        let reply = next_reply(&mut replies).await;
        assert_eq!((reply.op, reply.id), (ECHO, 1), "{framing:?}");
        write.write_all(&bytes[half..]).await.unwrap();
        let reply = next_reply(&mut replies).await;
        assert_eq!((reply.op, reply.id), (ECHO, 2), "{framing:?}");
        assert_eq!(Text::from_polyglot(&reply.content).unwrap().value, "split in two");
    }
}
