//! Flow control in bytes (docs/extensions.md §9.1) and the buffered-bytes budgets, over real
//! TCP in both framings: byte windows hold a producer back in both directions whatever the
//! message window; a peer sending past its byte credit gets its stream failed; the spec's
//! examples are the bytes; and hostile peers flooding streams (many unread messages on a few
//! streams, or thousands of stuck streams on many connections) keep the server within its
//! budgets while a good client on another connection is served.
// The services are `#[frpc::service]`s: without the `macros` feature there is nothing to test.
#![cfg(feature = "macros")]

use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use frpc::wire::Packet;
use frpc::{Code, Framing};
use futures_util::SinkExt;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_util::codec::Framed;

mod flow_support;
mod spec_bytes;
use flow_support::*;
use spec_bytes::{Spec, unhex, wire_hex};

/// A 64 KiB byte window: a few 16 KiB messages fill it.
const WINDOW_BYTES: u32 = 64 << 10;
const BLOB: usize = 16_000;

/// How many messages of `len` bytes a sender gets out with `window` bytes of credit: it sends
/// while its credit is above zero.
fn lead(window: u32, len: usize) -> usize {
    (window as usize).div_ceil(len)
}

/// Server streaming to a client that reads nothing, with a message window far larger than the
/// byte window: the producer stops once the bytes are out, then everything arrives in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_byte_window_holds_the_server_producer() {
    for framing in FRAMINGS {
        let running = serve(server_config(framing, 1024)).await;
        let mut config = client_config(framing, 1024);
        config.connection.stream_window_bytes = WINDOW_BYTES;
        let flow = connect(&running, config).await;
        let request = text(&format!("40,{BLOB}"));
        let mut slow = bounded("blobs", flow.blobs(request)).await.unwrap();
        let lead = lead(WINDOW_BYTES, encoded(&blob(BLOB).value).len());
        running.produced(lead).await;
        the_connection_flows(&flow).await;
        assert_eq!(
            running.state.produced.load(Ordering::SeqCst),
            lead,
            "{framing:?}: the producer waits for byte credit"
        );
        for _ in 0..40 {
            let got = bounded("blob", slow.message()).await.unwrap().unwrap();
            assert_eq!(got.value.len(), BLOB, "{framing:?}");
        }
        assert!(slow.message().await.unwrap().is_none());
    }
}

/// Client streaming to a handler that reads only when let through: the client's `send` stops
/// once the server's byte window is out, and everything arrives once the handler reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_byte_window_holds_the_client_producer() {
    for framing in FRAMINGS {
        let mut config = server_config(framing, 1024);
        config.connection.stream_window_bytes = WINDOW_BYTES;
        let running = serve(config).await;
        let flow = connect(&running, client_config(framing, 1024)).await;
        let mut call = bounded("sink", flow.sink()).await.unwrap();
        let (sent, mut progress) = mpsc::unbounded_channel();
        let producer = tokio::spawn(async move {
            for i in 0..30 {
                call.send(blob(BLOB)).await.unwrap();
                sent.send(i).unwrap();
            }
            call.close_and_recv().await
        });
        let lead = lead(WINDOW_BYTES, encoded(&blob(BLOB).value).len());
        for i in 0..lead {
            assert_eq!(bounded("client send", progress.recv()).await, Some(i));
        }
        the_connection_flows(&flow).await;
        assert!(
            progress.try_recv().is_err(),
            "{framing:?}: send {} waits for byte credit",
            lead + 1
        );
        running.state.gate.add_permits(31);
        let joined = bounded("sink result", producer).await.unwrap().unwrap();
        assert_eq!(joined.value, vec![blob(BLOB).value; 30].join(","), "{framing:?}");
    }
}

/// A message larger than the whole byte window still passes, one at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_larger_than_the_byte_window_pass() {
    for framing in FRAMINGS {
        let running = serve(server_config(framing, 1024)).await;
        let mut config = client_config(framing, 1024);
        config.connection.stream_window_bytes = 1024;
        let flow = connect(&running, config).await;
        let mut big = bounded("blobs", flow.blobs(text("5,100000"))).await.unwrap();
        for _ in 0..5 {
            let got = bounded("big", big.message()).await.unwrap().unwrap();
            assert_eq!(got.value.len(), 100_000, "{framing:?}");
        }
        assert!(big.message().await.unwrap().is_none());
    }
}

/// The OPEN header field with a byte window: messages (u32), bytes (u32).
fn open_with_window(messages: u32, bytes: u32, method: u16) -> Vec<u8> {
    let mut open = vec![0xfe, 0x04, 0, 0, 0, 8];
    open.extend_from_slice(&messages.to_be_bytes());
    open.extend_from_slice(&bytes.to_be_bytes());
    open.extend_from_slice(&[0x00, 0x09, method as u8]);
    open
}

/// A client that ignores its byte credit gets its stream failed with RESOURCE_EXHAUSTED (and
/// `EOF`), with message credit to spare; the connection stays up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_exceeding_its_byte_credit_gets_its_stream_failed() {
    for framing in FRAMINGS {
        let mut config = server_config(framing, 1024);
        config.connection.stream_window_bytes = 1024;
        let running = serve(config).await;
        let stream = TcpStream::connect(running.addr).await.unwrap();
        let mut raw = Framed::new(stream, frpc::wire::PacketCodec::new(framing));
        send(&mut raw, 1, 0xFFFF, &[1, 0, 0, 0, 0xef]).await;
        let accept = next(&mut raw).await;
        assert_eq!((accept.id, &accept.content[..]), (2, &[1u8, 0, 0, 0, 0xef][..]));
        send(&mut raw, 1, 2, &open_with_window(1024, 1024, SINK)).await;
        let opened = next(&mut raw).await;
        assert_eq!(
            (opened.id, opened.op, &opened.content[..]),
            (5, 0xFFFF, &[0u8, 1, 0, 0, 4, 0, 0, 0, 4, 0][..]),
            "{framing:?}: OPENED with the server's windows"
        );
        // 600 + 600 bytes use up 1,024 (the second goes while 424 are left); the third is
        // past the credit.
        for _ in 0..3 {
            send(&mut raw, 1, 2, &encoded(&"x".repeat(597))).await;
        }
        let failed = next(&mut raw).await;
        assert_eq!((failed.id, failed.op), (1, 2), "{framing:?}");
        assert_eq!(
            failed.content[..9],
            [0xfe, 0x03, 0, 0, 0, 1, 8, 0, 0x06],
            "{framing:?}: RESOURCE_EXHAUSTED"
        );
        assert_eq!(next(&mut raw).await.content[..], *EOF, "{framing:?}");
        send(&mut raw, 7, 10, &encoded("after")).await;
        let reply = next(&mut raw).await;
        assert_eq!((reply.id, &reply.content[..]), (7, &encoded("after")[..]));
    }
}

/// The byte-window example of docs/extensions.md §9.1 is what frpc writes (the client's open
/// and CREDIT) and reads (the server's OPENED), against a raw server.
#[tokio::test]
async fn the_byte_window_spec_examples_are_the_bytes() {
    let spec = Spec::load();
    let in_doc = |fragments: &[&str]| spec.bytes(fragments);
    let open = in_doc(&[
        "00 0f 00 01 00 02 00 00 00 11",
        "fe 04 00 00 00 08 00 00 00 04 00 01 00 00 00",
        "09 0b",
    ]);
    let opened = in_doc(&["00 0f 00 05 ff ff 00 00 00 0a 00 01 00 00 00 08 00 10 00 00"]);
    let credit = in_doc(&["00 0f 00 04 ff ff 00 00 00 0a 00 01 00 00 00 01 00 00 40 00"]);
    // Messages of 16 KiB each: the first is a quarter of the window in messages and in bytes
    // at once.
    let quarter = (16_300..16_384)
        .map(|len| "m".repeat(len))
        .find(|value| encoded(value).len() == 16_384)
        .unwrap();

    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let sent = quarter.clone();
    let peer = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let mut raw = Framed::new(stream, frpc::wire::PacketCodec::new(Framing::Frisbee));
        let _offer = next(&mut raw).await;
        send(&mut raw, 2, 0xFFFF, &[1, 0, 0, 0, 0xef]).await;
        assert_eq!(wire_hex(&next(&mut raw).await), open);
        let _request = next(&mut raw).await;
        raw.get_mut().write_all(&unhex(&opened)).await.unwrap();
        for _ in 0..2 {
            send(&mut raw, 1, 2, &encoded(&sent)).await;
        }
        assert_eq!(wire_hex(&next(&mut raw).await), credit);
        send(&mut raw, 1, 2, EOF).await;
    });
    let mut config = client_config(Framing::Frisbee, 4);
    config.connection.stream_window_bytes = 64 << 10;
    let flow = FlowClient::new(frpc::Client::connect_with(addr, config).await.unwrap());
    let mut produce = bounded("produce", flow.produce(text("2"))).await.unwrap();
    for _ in 0..2 {
        assert_eq!(
            produce.message().await.unwrap().unwrap().value.len(),
            quarter.len()
        );
    }
    assert!(produce.message().await.unwrap().is_none());
    bounded("raw server", peer).await.unwrap();
}

/// How a hostile client talks: plain fRPC (no offer), frpc flow control in messages only, or
/// in messages and bytes (which it then ignores).
#[derive(Debug, Clone, Copy)]
enum Offer {
    Plain,
    Messages,
    Bytes,
}

impl Offer {
    const ALL: [Offer; 3] = [Offer::Plain, Offer::Messages, Offer::Bytes];

    /// Offers (and reads the ACCEPT), then returns the content of a sink stream's open.
    async fn start(self, raw: &mut Raw) -> Vec<u8> {
        let bits = match self {
            Offer::Plain => return vec![0x09, SINK as u8],
            Offer::Messages => 0x6f,
            Offer::Bytes => 0xef,
        };
        send(raw, 1, 0xFFFF, &[1, 0, 0, 0, bits]).await;
        assert_eq!(next(raw).await.id, 2, "ACCEPT");
        match self {
            Offer::Messages => vec![0xfe, 0x04, 0, 0, 0, 4, 0, 0, 4, 0, 0x00, 0x09, SINK as u8],
            _ => open_with_window(1024, 1 << 20, SINK),
        }
    }
}

/// Writes `packets` until done or until the server stops reading (a write that does not
/// complete within a second: its budget is full); returns how many went out.
async fn flood(raw: &mut Raw, packets: impl Iterator<Item = Packet>) -> usize {
    let mut sent = 0;
    for packet in packets {
        match tokio::time::timeout(Duration::from_secs(1), raw.send(packet)).await {
            Ok(result) => result.unwrap(),
            Err(_) => break,
        }
        sent += 1;
    }
    sent
}

/// Attack 4a of issue #23: 4 streams × 1,000 unread 64 KiB messages on one connection (once
/// +322 MiB). Whatever the attacker negotiated, the server holds at most its connection's
/// budget (16 MiB) and stops reading it; a good client on another connection is served
/// meanwhile; the peak stays within the budget + 64 MiB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unread_messages_on_a_few_streams_stay_within_the_budget() {
    let _alone = MEMORY.lock().await;
    let message = Bytes::from(encoded(&blob(64 << 10).value));
    for framing in FRAMINGS {
        for offer in Offer::ALL {
            let running = serve(server_config(framing, 1024)).await;
            let good = connect(&running, client_config(framing, 1024)).await;
            let before = reset_peak();
            let stream = TcpStream::connect(running.addr).await.unwrap();
            let mut raw = Framed::new(stream, frpc::wire::PacketCodec::new(framing));
            let open = offer.start(&mut raw).await;
            for id in 1..=4 {
                send(&mut raw, id, 2, &open).await;
            }
            let packets = (0..4_000u16).map(|i| Packet::new(1 + i % 4, 2, message.clone()));
            let sent = flood(&mut raw, packets).await;
            assert_eq!(
                bounded("good client", good.echo(text("ok"))).await.unwrap().value,
                "ok",
                "{framing:?} {offer:?}"
            );
            let growth = peak_memory().saturating_sub(before);
            eprintln!(
                "{framing:?} {offer:?}: {sent} of 4,000 messages written, peak +{} MiB",
                growth >> 20
            );
            assert!(
                growth <= (16 << 20) + (64 << 20),
                "{framing:?} {offer:?}: the server grew by {} MiB",
                growth >> 20
            );
        }
    }
}

/// Tiny unread messages, each behind 65,000 bytes of padding (an extension packet nobody
/// reads): a message cut from the read buffer would hold the whole chunk it came in (the
/// budgets charge its 4 bytes), and 16 streams held 1 GiB this way (2026-11-29). Each message
/// waits in a buffer of its own: 2,048 of them (130 MB of padding) grow the server by at most
/// 48 MiB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiny_messages_between_padding_keep_no_read_buffer_alive() {
    let _alone = MEMORY.lock().await;
    let message = Bytes::from(encoded("x"));
    let pad = Bytes::from(vec![0u8; 65_000]);
    for (framing, offer) in [
        (Framing::Frisbee, Offer::Messages),
        (Framing::Legacy, Offer::Bytes),
    ] {
        let running = serve(server_config(framing, 1024)).await;
        let good = connect(&running, client_config(framing, 1024)).await;
        let before = reset_peak();
        let stream = TcpStream::connect(running.addr).await.unwrap();
        let mut raw = Framed::new(stream, frpc::wire::PacketCodec::new(framing));
        let open = offer.start(&mut raw).await;
        for id in 1..=16 {
            send(&mut raw, id, 2, &open).await;
        }
        let packets = (0..2_048u16).flat_map(|i| {
            [
                Packet::new(1 + i % 16, 2, message.clone()),
                Packet::new(9, 0xFFFF, pad.clone()),
            ]
        });
        let sent = flood(&mut raw, packets).await;
        assert_eq!(sent, 4_096, "{framing:?} {offer:?}: the server kept reading");
        assert_eq!(
            bounded("good client", good.echo(text("ok"))).await.unwrap().value,
            "ok",
            "{framing:?} {offer:?}"
        );
        let growth = peak_memory().saturating_sub(before);
        eprintln!(
            "{framing:?} {offer:?}: 2,048 padded messages, peak +{} MiB",
            growth >> 20
        );
        assert!(
            growth <= 48 << 20,
            "{framing:?} {offer:?}: the server grew by {} MiB",
            growth >> 20
        );
    }
}

/// Attack 4b of issue #23: 8 connections × 4,096 streams, each opened with one message nobody
/// reads (once +290 MiB). Streams beyond `max_open_streams` (8,192) are refused with
/// RESOURCE_EXHAUSTED; the peak stays within their cost (about 12 KiB each: 96 MiB) + 32 MiB,
/// and a good client's unary calls are served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_stuck_streams_stay_within_the_budget() {
    let _alone = MEMORY.lock().await;
    for framing in FRAMINGS {
        let running = serve(server_config(framing, 1024)).await;
        let good = connect(&running, client_config(framing, 1024)).await;
        let before = reset_peak();
        let mut attackers = Vec::new();
        for _ in 0..8 {
            let stream = TcpStream::connect(running.addr).await.unwrap();
            let mut raw = Framed::new(stream, frpc::wire::PacketCodec::new(framing));
            let open = Offer::Bytes.start(&mut raw).await;
            for id in 1..=4096u16 {
                raw.feed(Packet::new(id, 2, Bytes::from(open.clone())))
                    .await
                    .unwrap();
                raw.feed(Packet::new(id, 2, Bytes::from(encoded("stuck"))))
                    .await
                    .unwrap();
            }
            SinkExt::<Packet>::flush(&mut raw).await.unwrap();
            attackers.push(raw);
        }
        // Every stream is answered: OPENED (accepted, its handler waiting) or a refusal.
        let (mut accepted, mut refused) = (0, 0);
        for raw in &mut attackers {
            let mut answered = 0;
            while answered < 4096 {
                let packet = next(raw).await;
                match (packet.op, packet.id) {
                    (0xFFFF, 5) => accepted += 1,
                    (2, _) if packet.content[..] == *EOF => refused += 1,
                    _ => continue,
                }
                answered += 1;
            }
        }
        assert_eq!(accepted, 8_192, "{framing:?}: max_open_streams");
        assert_eq!(refused, 8 * 4096 - 8_192, "{framing:?}");
        assert_eq!(
            bounded("good client", good.echo(text("ok"))).await.unwrap().value,
            "ok"
        );
        let growth = peak_memory().saturating_sub(before);
        eprintln!("{framing:?}: 8,192 stuck streams, peak +{} MiB", growth >> 20);
        assert!(
            growth <= (64 << 20) + (64 << 20),
            "{framing:?}: the server grew by {} MiB",
            growth >> 20
        );
        let err = bounded("good stream", good.sink()).await.unwrap_err();
        assert_eq!(err.code(), Code::ResourceExhausted, "{framing:?}: {err}");
        drop(attackers);
    }
}

/// A server that accepted byte windows but announces none in OPENED does not count bytes: the
/// client's sends are held to the message window only (they would otherwise stall after the
/// first message, the one byte of credit an opener starts with).
#[tokio::test]
async fn an_opened_without_bytes_turns_byte_counting_off() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let peer = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let mut raw = Framed::new(stream, frpc::wire::PacketCodec::new(Framing::Frisbee));
        let _offer = next(&mut raw).await;
        send(&mut raw, 2, 0xFFFF, &[1, 0, 0, 0, 0xef]).await;
        let open = next(&mut raw).await;
        assert_eq!(
            open.content[..6],
            [0xfe, 0x04, 0, 0, 0, 8],
            "OPEN with a byte window"
        );
        send(&mut raw, 5, 0xFFFF, &[0, 1, 0, 0, 0, 8]).await; // OPENED: 8 messages, no bytes
        let mut got = Vec::new();
        while got.len() < 3 {
            let packet = next(&mut raw).await;
            if packet.op == 2 {
                got.push(packet.content);
            }
        }
        got
    });
    let flow = FlowClient::new(
        frpc::Client::connect_with(addr, client_config(Framing::Frisbee, 8))
            .await
            .unwrap(),
    );
    let mut call = bounded("sink", flow.sink()).await.unwrap();
    for _ in 0..3 {
        bounded("send", call.send(blob(1_000))).await.unwrap();
    }
    let got = bounded("raw server", peer).await.unwrap();
    assert!(
        got.iter()
            .all(|content| content[..] == encoded(&blob(1_000).value)[..])
    );
}

/// A server that stopped reading a connection because its streams' messages fill the budget
/// does not take it for idle: the peer's packets (its PINGs) wait unread, so the silence is the
/// server's. Handlers slower than the idle timeout to read closed their connection, and every
/// call on it failed (session 30's probe: 80 honest 1 MB uploads, none served). Plain fRPC,
/// the budget's peers; the test waits five idle timeouts before letting the handler read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_waiting_for_its_budget_keeps_the_connection() {
    for framing in FRAMINGS {
        let mut config = server_config(framing, 1024);
        config.connection.max_buffered_bytes = 32 << 10;
        config.connection.idle_timeout = Duration::from_millis(200);
        config.connection.ping_interval = Duration::from_millis(50);
        let running = serve(config).await;
        let mut client = client_config(framing, 1024);
        client.extensions = false;
        let flow = connect(&running, client).await;
        let mut call = bounded("sink", flow.sink()).await.unwrap();
        let producer = tokio::spawn(async move {
            for _ in 0..8 {
                call.send(blob(BLOB)).await?;
            }
            call.close_and_recv().await
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
        running.state.gate.add_permits(9);
        let joined = bounded("sink result", producer).await.unwrap().unwrap();
        assert_eq!(joined.value, vec![blob(BLOB).value; 8].join(","), "{framing:?}");
    }
}

/// The same on a client: a consumer slower than the client's idle timeout to read what fills
/// its budget keeps its connection and gets every message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_waiting_for_its_budget_keeps_the_connection() {
    for framing in FRAMINGS {
        let mut server = server_config(framing, 1024);
        server.connection.ping_interval = Duration::from_millis(50);
        let running = serve(server).await;
        let mut config = client_config(framing, 1024);
        config.extensions = false;
        config.connection.max_buffered_bytes = 32 << 10;
        config.connection.idle_timeout = Duration::from_millis(200);
        config.connection.ping_interval = Duration::from_millis(50);
        let flow = connect(&running, config).await;
        let mut slow = bounded("blobs", flow.blobs(text(&format!("8,{BLOB}"))))
            .await
            .unwrap();
        running.produced(8).await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        for _ in 0..8 {
            let got = bounded("blob", slow.message()).await.unwrap().unwrap();
            assert_eq!(got.value.len(), BLOB, "{framing:?}");
        }
        assert!(slow.message().await.unwrap().is_none());
    }
}

/// A raw server that accepted byte windows and answered the client's stream open with OPENED
/// (`opened` its content: stream 1, then the window), then does what `then` does.
async fn raw_stream_server<T, F>(
    opened: &'static [u8],
    then: impl FnOnce(Raw) -> F + Send + 'static,
) -> (std::net::SocketAddr, tokio::task::JoinHandle<T>)
where
    T: Send + 'static,
    F: Future<Output = T> + Send,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let peer = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let mut raw = Framed::new(stream, frpc::wire::PacketCodec::new(Framing::Frisbee));
        let _offer = next(&mut raw).await;
        send(&mut raw, 2, 0xFFFF, &[1, 0, 0, 0, 0xef]).await;
        let _open = next(&mut raw).await;
        let _request = next(&mut raw).await;
        send(&mut raw, 5, 0xFFFF, opened).await;
        then(raw).await
    });
    (addr, peer)
}

/// A server that announces a window of 0 in OPENED (no flow control on the stream) on a
/// connection with byte windows leaves that stream to the client's connection budget, as a
/// plain server's are: the client stops reading once its consumer is `max_buffered_bytes`
/// behind. (It skipped the budget and buffered every message: 1,156 MiB for 300 of 4 MB.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_opened_window_of_zero_leaves_the_stream_to_the_budget() {
    let message = Bytes::from(encoded(&blob(64_000).value));
    let (addr, peer) = raw_stream_server(&[0, 1, 0, 0, 0, 0], move |mut raw| async move {
        flood(&mut raw, (0..1000).map(|_| Packet::new(1, 2, message.clone()))).await
    })
    .await;
    let mut config = client_config(Framing::Frisbee, 1024);
    config.connection.max_buffered_bytes = 256 << 10;
    let flow = FlowClient::new(frpc::Client::connect_with(addr, config).await.unwrap());
    let _unread = bounded("blobs", flow.blobs(text("1,1"))).await.unwrap();
    let sent = bounded("raw server", peer).await.unwrap();
    assert!(sent < 1000, "the client read all {sent} messages of 64 KB");
}

/// Stream data behind an (empty) extension header takes flow-control credit as any data
/// does: a server that sent it so took none, and windows held nothing back. Past the
/// client's window of 4 the stream fails, and the client CANCELs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_behind_an_extension_header_takes_credit() {
    let opened = &[0, 1, 0, 0, 0, 8, 0, 0x10, 0, 0];
    let (addr, peer) = raw_stream_server(opened, |mut raw| async move {
        let mut behind_a_header = vec![0xfe, 0x00];
        behind_a_header.extend(encoded("x"));
        for _ in 0..10 {
            send(&mut raw, 1, 2, &behind_a_header).await;
        }
        next(&mut raw).await
    })
    .await;
    let config = client_config(Framing::Frisbee, 4);
    let flow = FlowClient::new(frpc::Client::connect_with(addr, config).await.unwrap());
    let mut unread = bounded("blobs", flow.blobs(text("1,1"))).await.unwrap();
    let notice = bounded("raw server", peer).await.unwrap();
    assert_eq!(
        (notice.op, notice.id, &notice.content[..]),
        (0xFFFF, 3, &[0, 2, 0, 1][..]),
        "CANCEL of stream 1"
    );
    let mut got = 0;
    let err = loop {
        match bounded("message", unread.message()).await {
            Ok(Some(_)) => got += 1,
            Ok(None) => panic!("all {got} messages read"),
            Err(err) => break err,
        }
    };
    assert_eq!((got, err.code()), (4, Code::ResourceExhausted), "{err}");
}
