//! Answers to CANCEL (extension bit 10, `docs/extensions.md` §15): the server answers each
//! CANCEL of a call or stream it was running, once nothing more follows for it, and the client
//! holds an id it gave up until that answer instead of for a guessed 10 s. Before, a client
//! giving up calls by the thousand (timeouts at an overloaded server) ran out of a method's ids
//! for 10 s (session 31's soak: 8.6 s of refusals after a burst of give-ups).

mod support;

use std::time::Duration;

use bytes::Bytes;
use frpc::wire::{Packet, PacketCodec};
use frpc::{ClientConfig, Framing, ServerConfig};
use futures_util::{SinkExt, StreamExt};
use support::*;
use tokio::net::TcpListener;
use tokio_util::codec::Framed;

const DOC: &str = include_str!("../../docs/extensions.md");

/// The bytes of `lines` (hex, each shown in docs/extensions.md), as one packet.
fn in_doc(lines: &[&str]) -> Packet {
    let bytes: Vec<u8> = lines
        .iter()
        .inspect(|line| assert!(DOC.contains(*line), "docs/extensions.md shows `{line}`"))
        .flat_map(|line| line.split_whitespace())
        .map(|byte| u8::from_str_radix(byte, 16).unwrap())
        .collect();
    let id = u16::from_be_bytes([bytes[2], bytes[3]]);
    let op = u16::from_be_bytes([bytes[4], bytes[5]]);
    Packet::new(id, op, Bytes::copy_from_slice(&bytes[10..]))
}

/// The next packet that is not an extension packet (an OPENED).
async fn next_not_ext(raw: &mut Raw) -> Packet {
    loop {
        let packet = raw.next().await.expect("a packet");
        if packet.op != 0xFFFF {
            return packet;
        }
    }
}

/// The next `n` packets that are not extension packets.
async fn next_packets(raw: &mut Raw, n: usize) -> Vec<Packet> {
    let mut packets = Vec::with_capacity(n);
    for _ in 0..n {
        packets.push(next_not_ext(raw).await);
    }
    packets
}

fn parts(packet: &Packet) -> (u16, u16, &[u8]) {
    (packet.id, packet.op, &packet.content[..])
}

/// A server answers the CANCEL of a unary call it was running (its one reply, CANCELLED) and
/// of a stream it had not ended (its `EOF`), byte for byte as §15 shows them; toward a client
/// without bit 10 it answers nothing (the next packet is another call's reply).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_answers_the_cancels_of_what_it_was_running() {
    let call_answer = in_doc(&[
        "00 0f 00 02 00 0d 00 00 00 23",
        "fe 03 00 00 00 01 01 00",
        "06 05 0a 17 63 61 6e 63 65 6c 6c 65 64 20 62 79",
        "20 74 68 65 20 63 6c 69 65 6e 74",
    ]);
    let stream_answer = in_doc(&["00 0f 00 01 00 02 00 00 00 07 06 05 0a 03 45 4f 46"]);
    // The CANCEL of §4, for the held call (op 13, id 2) and for stream 1.
    assert!(DOC.contains("cancel unary call op 10, id 2   00 0f 00 03 ff ff 00 00 00 04 00 0a 00 02"));
    let cancel_call = "00 0f 00 03 ff ff 00 00 00 04 00 0d 00 02";
    let cancel_stream = in_doc(&["00 0f 00 03 ff ff 00 00 00 04 00 02 00 01"]);
    let server = start(ServerConfig::default()).await;
    for (answers, offer) in [
        (true, "00 0f 00 01 ff ff 00 00 00 05 01 00 00 07 ff"),
        (false, "00 0f 00 01 ff ff 00 00 00 05 01 00 00 03 ff"),
    ] {
        assert!(DOC.contains(offer));
        let mut raw = Raw::connect(server.addr, offer).await;
        let accept = raw.next().await.unwrap();
        let bits = if answers { 7 } else { 3 };
        // Every bit offered but protobuf (whose messages the test service's are not).
        assert_eq!(parts(&accept), (2, 0xFFFF, &[1, 0, 0, bits, 0xef][..]));
        let started = server
            .service
            .state
            .gated_started
            .load(std::sync::atomic::Ordering::SeqCst);
        raw.call(GATED, 2, "held").await;
        gated_started(&server, started + 1).await;
        raw.send_bytes(cancel_call).await;
        raw.call(ECHO, 3, "after the call").await;
        // The answer comes from the call's task, the echo from the reader: in either order.
        let got = next_packets(&mut raw, if answers { 2 } else { 1 }).await;
        assert!(
            got.iter().any(|packet| (packet.id, packet.op) == (3, ECHO)),
            "{got:?}"
        );
        if answers {
            assert!(
                got.iter().any(|packet| parts(packet) == parts(&call_answer)),
                "{got:?}"
            );
        }
        // A bidi stream whose handler runs (it echoed), then is cancelled.
        let open = Bytes::from(vec![0x09, CHAT as u8]);
        raw.0.send(Packet::new(1, 2, open)).await.unwrap();
        raw.call(2, 1, "a").await;
        let echoed = next_not_ext(&mut raw).await;
        assert_eq!((echoed.id, echoed.op), (1, 2));
        raw.0.send(cancel_stream.clone()).await.unwrap();
        raw.call(ECHO, 4, "after the stream").await;
        let got = next_packets(&mut raw, if answers { 2 } else { 1 }).await;
        assert!(
            got.iter().any(|packet| (packet.id, packet.op) == (4, ECHO)),
            "{got:?}"
        );
        if answers {
            assert!(
                got.iter().any(|packet| parts(packet) == parts(&stream_answer)),
                "{got:?}"
            );
        }
    }
}

/// A client that gave up all 65,536 ids of a method has them back as soon as the server's
/// answers to its CANCELs are read, not 10 s later: the next call goes out and is answered. (A
/// client that does not offer bit 10 gets no answers from this server, and its next call is
/// refused, RESOURCE_EXHAUSTED.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_has_the_ids_it_gave_up_back_once_answered() {
    use futures_util::stream::FuturesUnordered;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (answered, all_answered) = tokio::sync::oneshot::channel();
    // Takes cancellation with answers; answers every CANCEL with CANCELLED, then (once the
    // client has read them all: its PONG to a PING sent behind them) echoes calls.
    tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let mut framed = Framed::new(stream, PacketCodec::new(Framing::Frisbee));
        let (mut cancels, mut answered, mut answers) = (0u32, Some(answered), false);
        let cancelled = in_doc(&[
            "fe 03 00 00 00 01 01 00",
            "06 05 0a 17 63 61 6e 63 65 6c 6c 65 64 20 62 79",
            "20 74 68 65 20 63 6c 69 65 6e 74",
        ]);
        while let Some(Ok(packet)) = framed.next().await {
            match (packet.op, packet.id) {
                (frpc::wire::op::PING, _) => framed.send(Packet::pong()).await.unwrap(),
                (frpc::wire::op::PONG, _) => {
                    let _ = answered.take().map(|answered| answered.send(()));
                }
                (0xFFFF, 1) => {
                    // Cancellation and its answers, as far as the client offered them.
                    let offered = u32::from_be_bytes(packet.content[1..5].try_into().unwrap());
                    let bits = offered & 0x401;
                    answers = bits == 0x401;
                    let accept = [&[1u8][..], &bits.to_be_bytes()].concat();
                    framed.send(Packet::new(2, 0xFFFF, accept)).await.unwrap();
                }
                (0xFFFF, 3) => {
                    let (op, id) = (
                        u16::from_be_bytes([packet.content[0], packet.content[1]]),
                        u16::from_be_bytes([packet.content[2], packet.content[3]]),
                    );
                    if answers {
                        framed
                            .feed(Packet::new(id, op, cancelled.content.clone()))
                            .await
                            .unwrap();
                    }
                    cancels += 1;
                    if cancels == 65_536 {
                        framed
                            .send(Packet::new(0, frpc::wire::op::PING, Bytes::new()))
                            .await
                            .unwrap();
                    }
                }
                (ECHO, _) if answered.is_none() => framed.send(packet).await.unwrap(),
                _ => {}
            }
        }
    });
    let mut config = ClientConfig::default();
    config.connection.ping_interval = Duration::from_secs(3600);
    let client = frpc::Client::connect_with(addr, config).await.unwrap();
    assert!(client.negotiated().await);
    let mut calls: FuturesUnordered<_> = (0..65_536).map(|_| call(&client, ECHO, "x")).collect();
    // Each call registers on its first poll (a few thousand a turn); none is answered.
    while client.inflight() < 65_536 {
        let next = calls.next();
        let answered = tokio::time::timeout(Duration::from_millis(1), next).await;
        assert!(answered.is_err(), "no answer: {answered:?}");
    }
    drop(calls);
    tokio::time::timeout(Duration::from_secs(60), all_answered)
        .await
        .expect("the server answered every CANCEL")
        .unwrap();
    assert_eq!(call(&client, ECHO, "one more").await.unwrap().value, "one more");
}
