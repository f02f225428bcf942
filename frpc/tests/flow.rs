//! Stream flow control and open acknowledgement between frpc peers (docs/extensions.md §8, §9)
//! over real TCP, both framings: a slow consumer slows its producer (in both directions) while
//! unary calls and other streams on the connection go on; the configured windows are the
//! producers' exact lead; a peer exceeding its credit gets its stream failed; a streaming call
//! resolves once the server's handler started (watch, then put: the watcher sees the put) or
//! fails with the server's status; credit waits end at the stream idle timeout; the bytes of the
//! spec's examples are what frpc writes.
// The services are `#[frpc::service]`s: without the `macros` feature there is nothing to test.
#![cfg(feature = "macros")]

use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use frpc::{Code, Error, Framing, Status};
use futures_util::SinkExt;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_util::codec::Framed;

mod spec_bytes;
use spec_bytes::{Spec, unhex, wire_hex};
mod flow_support;
use flow_support::*;

/// Server streaming to a client that reads nothing: the server's producer stops at the client's
/// window (8) until the client reads, then everything arrives in order, no overflow.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_client_slows_the_server_producer() {
    for framing in FRAMINGS {
        let running = serve(server_config(framing, 1024)).await;
        let flow = connect(&running, client_config(framing, 8)).await;
        let mut slow = bounded("produce", flow.produce(text("80"))).await.unwrap();
        running.produced(8).await;
        the_connection_flows(&flow).await;
        assert_eq!(
            running.state.produced.load(Ordering::SeqCst),
            8,
            "{framing:?}: the producer waits for credit"
        );
        for i in 0..80 {
            let got = bounded("slow message", slow.message()).await;
            assert_eq!(got.unwrap().unwrap().value, i.to_string(), "{framing:?}");
        }
        assert!(slow.message().await.unwrap().is_none());
        assert_eq!(running.state.produced.load(Ordering::SeqCst), 80);
    }
}

/// Client streaming to a handler that reads only when let through: the client's `send` stops
/// at the server's window (4), unary calls and other streams go on, and once the handler reads
/// everything arrives in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_server_slows_the_client_producer() {
    for framing in FRAMINGS {
        let running = serve(server_config(framing, 4)).await;
        let flow = connect(&running, client_config(framing, 1024)).await;
        let mut call = bounded("sink", flow.sink()).await.unwrap();
        let (sent, mut progress) = mpsc::unbounded_channel();
        let producer = tokio::spawn(async move {
            for i in 0..40 {
                call.send(text(&i.to_string())).await.unwrap();
                sent.send(i).unwrap();
            }
            call.close_and_recv().await
        });
        for i in 0..4 {
            assert_eq!(bounded("client send", progress.recv()).await, Some(i));
        }
        the_connection_flows(&flow).await;
        assert!(
            progress.try_recv().is_err(),
            "{framing:?}: the 5th send waits for credit"
        );
        running.state.gate.add_permits(41);
        let joined = bounded("sink result", producer).await.unwrap().unwrap();
        let expected: Vec<String> = (0..40).map(|i| i.to_string()).collect();
        assert_eq!(joined.value, expected.join(","), "{framing:?}");
    }
}

/// Bidi: the same from the client's side of a bidi call, reading the echoes afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_bidi_handler_slows_the_client() {
    for framing in FRAMINGS {
        let running = serve(server_config(framing, 4)).await;
        let flow = connect(&running, client_config(framing, 1024)).await;
        let mut call = bounded("pipe", flow.pipe()).await.unwrap();
        let (sent, mut progress) = mpsc::unbounded_channel();
        let producer = tokio::spawn(async move {
            for i in 0..40 {
                call.send(text(&i.to_string())).await.unwrap();
                sent.send(i).unwrap();
            }
            call.close_send().await.unwrap();
            let mut echoes = Vec::new();
            while let Some(echo) = call.message().await.unwrap() {
                echoes.push(echo.value);
            }
            echoes
        });
        for i in 0..4 {
            assert_eq!(bounded("client send", progress.recv()).await, Some(i));
        }
        the_connection_flows(&flow).await;
        assert!(
            progress.try_recv().is_err(),
            "{framing:?}: the 5th send waits for credit"
        );
        running.state.gate.add_permits(41);
        let echoes = bounded("echoes", producer).await.unwrap();
        let expected: Vec<String> = (0..40).map(|i| i.to_string()).collect();
        assert_eq!(echoes, expected, "{framing:?}");
    }
}

/// A handler that drops its inbound stream and keeps sending: its own sends stay flow
/// controlled (the client's small window holds), and the client's further sends get their
/// credit back instead of stalling.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_that_stops_reading_keeps_both_directions_flowing() {
    for framing in FRAMINGS {
        let running = serve(server_config(framing, 4)).await;
        let flow = connect(&running, client_config(framing, 4)).await;
        let mut call = bounded("drain", flow.drain()).await.unwrap();
        bounded("first send", call.send(text("20"))).await.unwrap();
        for i in 0..30 {
            bounded("ignored send", call.send(text(&i.to_string())))
                .await
                .unwrap();
        }
        bounded("close_send", call.close_send()).await.unwrap();
        for n in 0..20 {
            let got = bounded("drained", call.message()).await.unwrap().unwrap();
            assert_eq!(got.value, n.to_string(), "{framing:?}");
        }
        assert!(call.message().await.unwrap().is_none());
    }
}

/// A credit wait ends at the client's stream idle timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_credit_wait_ends_at_the_idle_timeout() {
    let running = serve(server_config(Framing::Frisbee, 2)).await;
    let mut config = client_config(Framing::Frisbee, 1024);
    config.stream_idle_timeout = Some(Duration::from_millis(200));
    let flow = connect(&running, config).await;
    let mut call = bounded("sink", flow.sink()).await.unwrap();
    call.send(text("a")).await.unwrap();
    call.send(text("b")).await.unwrap();
    let err = bounded("third send", call.send(text("c"))).await.unwrap_err();
    assert!(matches!(err, Error::Timeout(_)), "{err}");
}

/// A credit wait ends when the connection closes: the send fails, it does not hang.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_credit_wait_ends_when_the_connection_closes() {
    let running = serve(server_config(Framing::Frisbee, 2)).await;
    let client = frpc::Client::connect_with(running.addr, client_config(Framing::Frisbee, 1024))
        .await
        .unwrap();
    let mut call = bounded("sink", FlowClient::new(client.clone()).sink())
        .await
        .unwrap();
    call.send(text("a")).await.unwrap();
    call.send(text("b")).await.unwrap();
    let waiting = tokio::spawn(async move { call.send(text("c")).await });
    client.close();
    let result = bounded("the waiting send", waiting).await.unwrap();
    assert!(
        matches!(result, Err(Error::ConnectionClosed { .. })),
        "{result:?}"
    );
}

/// Open acknowledgement: a watch opened right after connecting, then a put on the same client:
/// the watcher sees the put, every time (without it the put could run before the handler
/// subscribed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_sees_the_put_made_right_after_it() {
    for framing in FRAMINGS {
        let running = serve(server_config(framing, 1024)).await;
        for round in 0..20 {
            let flow = connect(&running, client_config(framing, 1024)).await;
            let mut watch = bounded("watch", flow.watch(text("1"))).await.unwrap();
            let value = format!("put {round}");
            bounded("put", flow.put(text(&value))).await.unwrap();
            let seen = bounded("watched", watch.message()).await.unwrap().unwrap();
            assert_eq!(seen.value, value, "{framing:?}");
            assert!(watch.message().await.unwrap().is_none());
        }
    }
}

/// The server's refusals fail the streaming call itself, with the server's status: an unknown
/// method (`Unimplemented`), too many streams, a handler failing at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_fail_the_call_at_open() {
    for framing in FRAMINGS {
        let mut config = server_config(framing, 1024);
        config.connection.max_streams = 1;
        let running = serve(config).await;
        let connect = || frpc::Client::connect_with(running.addr, client_config(framing, 1024));
        // One connection at its limit of streams (per connection).
        let flow = FlowClient::new(connect().await.unwrap());
        let held = bounded("sink", flow.sink()).await.unwrap();
        let err = flow.sink().await.unwrap_err();
        assert_eq!(err.code(), Code::ResourceExhausted, "{framing:?}: {err}");
        assert!(err.to_string().contains("too many open streams"), "{err}");
        drop(held);
        assert_eq!(flow.echo(text("still")).await.unwrap().value, "still");

        // Another: an unknown method, and a handler failing before its first wait.
        let client = connect().await.unwrap();
        let err = frpc::codegen::call_bidi::<Text, Text>(&client, 99)
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::Unimplemented, "{framing:?}: {err}");
        assert!(err.to_string().contains("unknown streaming method 99"), "{err}");
        let err = FlowClient::new(client)
            .produce(text("not a number"))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{framing:?}: {err}");
        assert!(err.to_string().contains("not a number"), "{err}");
    }
}

/// A hand-written service whose streaming handlers return without ending their streams.
#[derive(Clone)]
struct Bare;

static BARE: &[frpc::codegen::MethodDesc] = &[
    frpc::codegen::MethodDesc {
        name: "Refuse",
        op: 10,
        kind: frpc::codegen::MethodKind::Bidi,
    },
    frpc::codegen::MethodDesc {
        name: "Quiet",
        op: 11,
        kind: frpc::codegen::MethodKind::Bidi,
    },
];

impl frpc::codegen::Service for Bare {
    fn name(&self) -> &'static str {
        "flow.Bare"
    }
    fn methods(&self) -> &'static [frpc::codegen::MethodDesc] {
        BARE
    }
    fn call_unary(
        &self,
        op: u16,
        _: frpc::Context,
        _: Bytes,
    ) -> frpc::codegen::BoxFuture<Result<Bytes, Status>> {
        frpc::codegen::unimplemented_unary(op)
    }
    fn call_streaming(
        &self,
        op: u16,
        _: frpc::Context,
        stream: frpc::codegen::ServerStream,
    ) -> frpc::codegen::BoxFuture<Result<(), Status>> {
        match op {
            10 => frpc::codegen::unimplemented_streaming(op),
            _ => Box::pin(async move {
                drop(stream);
                Ok(())
            }),
        }
    }
}

/// A handler that returns without ending its stream (a hand-written service, a refusing layer)
/// still ends it: with its error (the call fails at open) or with `EOF`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_that_does_not_end_its_stream_still_answers_the_open() {
    for framing in FRAMINGS {
        let bound = frpc::Server::builder()
            .config(server_config(framing, 1024))
            .add_service(Bare)
            .bind("127.0.0.1:0")
            .await
            .unwrap();
        let addr = bound.local_addr();
        tokio::spawn(bound.serve());
        let client = frpc::Client::connect_with(addr, client_config(framing, 1024))
            .await
            .unwrap();
        let err = bounded("refused", frpc::codegen::call_bidi::<Text, Text>(&client, 10))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::Unimplemented, "{framing:?}: {err}");
        let mut quiet = bounded("quiet", frpc::codegen::call_bidi::<Text, Text>(&client, 11))
            .await
            .unwrap();
        assert!(bounded("end", quiet.message()).await.unwrap().is_none());
    }
}

// ---- Raw peers: hostile credit, and the spec's bytes ----------------------------------------

/// A client that sends past the credit the server granted gets its stream failed with
/// RESOURCE_EXHAUSTED (and `EOF`); the server keeps nothing more and the connection stays up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_exceeding_its_credit_gets_its_stream_failed() {
    for framing in FRAMINGS {
        let running = serve(server_config(framing, 4)).await;
        let stream = TcpStream::connect(running.addr).await.unwrap();
        let mut raw = Framed::new(stream, frpc::wire::PacketCodec::new(framing));
        send(&mut raw, 1, 0xFFFF, &[1, 0, 0, 0, 0x6f]).await;
        let accept = next(&mut raw).await;
        assert_eq!((accept.id, &accept.content[..]), (2, &[1u8, 0, 0, 0, 0x6f][..]));
        // Open the sink (its handler reads nothing: the gate is shut), window 4.
        let open = [0xfe, 0x04, 0, 0, 0, 4, 0, 0, 0, 4, 0x00, 0x09, SINK as u8];
        send(&mut raw, 1, 2, &open).await;
        let opened = next(&mut raw).await;
        assert_eq!(
            (opened.id, opened.op, &opened.content[..]),
            (5, 0xFFFF, &[0u8, 1, 0, 0, 0, 4][..]),
            "{framing:?}: OPENED with the server's window"
        );
        for i in 0..5 {
            send(&mut raw, 1, 2, &encoded(&i.to_string())).await;
        }
        let failed = next(&mut raw).await;
        assert_eq!((failed.id, failed.op), (1, 2), "{framing:?}");
        assert_eq!(
            failed.content[..9],
            [0xfe, 0x03, 0, 0, 0, 1, 8, 0, 0x06],
            "{framing:?}: RESOURCE_EXHAUSTED"
        );
        let eof = next(&mut raw).await;
        assert_eq!((eof.id, &eof.content[..]), (1, EOF), "{framing:?}");
        // Hostile credit and acknowledgement packets are ignored: short ones, unknown streams,
        // huge grants (capped), an OPENED sent to a server.
        for (id, content) in [
            (4u16, &[0u8, 1, 0][..]),
            (4, &[0, 9, 0xff, 0xff, 0xff, 0xff]),
            (4, &[0, 1, 0xff, 0xff, 0xff, 0xff]),
            (4, &[0, 1, 0xff, 0xff, 0xff, 0xff]),
            (5, &[0, 1, 0, 0, 0, 1]),
        ] {
            send(&mut raw, id, 0xFFFF, content).await;
        }
        send(&mut raw, 7, 10, &encoded("after")).await;
        let reply = next(&mut raw).await;
        assert_eq!(
            (reply.id, reply.op, &reply.content[..]),
            (7, 10, &encoded("after")[..])
        );
    }
}

/// A server that sends past the client's window: the client fails the stream (its reader gets
/// what the window held, then RESOURCE_EXHAUSTED) and tells the server: with CANCEL where the
/// server takes cancellation (its handler is dropped, as when the client drops the stream),
/// else with the error and `EOF`.
#[tokio::test]
async fn a_server_exceeding_its_credit_gets_its_stream_failed() {
    // ACCEPTed extensions: flow control, open acknowledgement, codes, metadata, deadlines,
    // with and without cancellation.
    for accepted in [0x6f, 0x6e] {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let peer = tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let mut raw = Framed::new(stream, frpc::wire::PacketCodec::new(Framing::Frisbee));
            let _offer = next(&mut raw).await;
            send(&mut raw, 2, 0xFFFF, &[1, 0, 0, 0, accepted]).await;
            let open = next(&mut raw).await;
            assert_eq!(open.content[..10], [0xfe, 0x04, 0, 0, 0, 4, 0, 0, 0, 4]);
            let _request = next(&mut raw).await;
            send(&mut raw, 0xFFFF, 0xFFFF, &[]).await; // an unknown extension packet id: ignored
            send(&mut raw, 5, 0xFFFF, &[0, 1, 0, 0, 0, 8]).await;
            for n in 0..6 {
                send(&mut raw, 1, 2, &encoded(&n.to_string())).await;
            }
            let told = next(&mut raw).await;
            if accepted & 1 != 0 {
                // CANCEL (packet id 3) of stream 1 (docs/extensions.md §4).
                assert_eq!(
                    (told.id, told.op, &told.content[..]),
                    (3, 0xFFFF, &[0, 2, 0, 1][..])
                );
                return;
            }
            assert_eq!((told.id, told.op), (1, 2));
            assert_eq!(told.content[..9], [0xfe, 0x03, 0, 0, 0, 1, 8, 0, 0x06]);
            let eof = next(&mut raw).await;
            assert_eq!((eof.id, &eof.content[..]), (1, EOF));
        });
        let flow = FlowClient::new(
            frpc::Client::connect_with(addr, client_config(Framing::Frisbee, 4))
                .await
                .unwrap(),
        );
        let mut produce = bounded("produce", flow.produce(text("6"))).await.unwrap();
        // Read nothing until the server got the client's verdict.
        bounded("raw server", peer).await.unwrap();
        for n in 0..4 {
            assert_eq!(produce.message().await.unwrap().unwrap().value, n.to_string());
        }
        let err = produce.message().await.unwrap_err();
        assert_eq!(err.code(), Code::ResourceExhausted, "{err}");
        assert!(err.to_string().contains("flow-control credit"), "{err}");
    }
}

/// Every flow-control example of docs/extensions.md is what frpc writes (the client's stream
/// open and CREDIT) or reads (the server's OPENED), against a raw server.
#[tokio::test]
async fn the_flow_spec_examples_are_the_bytes() {
    let spec = Spec::load();
    let in_doc = |fragments: &[&str]| spec.bytes(fragments);
    let offer = in_doc(&["00 0f 00 01 ff ff 00 00 00 05 01 00 00 07 ff"]);
    let accept = in_doc(&["00 0f 00 02 ff ff 00 00 00 05 01 00 00 00 6f"]);
    let open = in_doc(&[
        "00 0f 00 01 00 02 00 00 00 0d",
        "fe 04 00 00 00 04 00 00 00 04 00",
        "09 0b",
    ]);
    let opened = in_doc(&["00 0f 00 05 ff ff 00 00 00 06 00 01 00 00 00 08"]);
    let credit = in_doc(&["00 0f 00 04 ff ff 00 00 00 06 00 01 00 00 00 01"]);

    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let peer = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let mut raw = Framed::new(stream, frpc::wire::PacketCodec::new(Framing::Frisbee));
        assert_eq!(wire_hex(&next(&mut raw).await), offer);
        raw.get_mut().write_all(&unhex(&accept)).await.unwrap();
        assert_eq!(wire_hex(&next(&mut raw).await), open);
        let request = next(&mut raw).await;
        assert_eq!(
            (request.id, request.op, &request.content[..]),
            (1, 2, &encoded("2")[..])
        );
        raw.get_mut().write_all(&unhex(&opened)).await.unwrap();
        for n in ["0", "1"] {
            send(&mut raw, 1, 2, &encoded(n)).await;
        }
        assert_eq!(wire_hex(&next(&mut raw).await), credit);
        send(&mut raw, 1, 2, EOF).await;
    });
    let flow = FlowClient::new(
        frpc::Client::connect_with(addr, client_config(Framing::Frisbee, 4))
            .await
            .unwrap(),
    );
    let mut produce = bounded("produce", flow.produce(text("2"))).await.unwrap();
    for n in ["0", "1"] {
        assert_eq!(produce.message().await.unwrap().unwrap().value, n);
    }
    assert!(produce.message().await.unwrap().is_none());
    bounded("raw server", peer).await.unwrap();
}

/// A peer that stops reading and floods a stream whose server-side reader is gone with 2 M tiny
/// messages: every message's credit goes back, coalesced per stream while the server's write
/// queue is full (no task or queued packet per message: this once grew the server by 1.5 GiB),
/// and once the peer reads again it gets all of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credit_for_a_gone_reader_is_coalesced() {
    const FLOOD: u32 = 2_000_000;
    for framing in FRAMINGS {
        let running = serve(server_config(framing, 1024)).await;
        let stream = TcpStream::connect(running.addr).await.unwrap();
        let mut raw = Framed::new(stream, frpc::wire::PacketCodec::new(framing));
        send(&mut raw, 1, 0xFFFF, &[1, 0, 0, 0, 0x6f]).await;
        assert_eq!(next(&mut raw).await.id, 2, "ACCEPT");
        // Drain, with a window of 4 for the server's messages: the handler reads one number,
        // drops its inbound stream and keeps sending (waiting for credit we never give).
        let open = [0xfe, 0x04, 0, 0, 0, 4, 0, 0, 0, 4, 0x00, 0x09, DRAIN as u8];
        send(&mut raw, 1, 2, &open).await;
        send(&mut raw, 1, 2, &encoded("1000000")).await;
        // Its first message says it has dropped its inbound stream.
        while next(&mut raw).await.op != 2 {}
        let _alone = MEMORY.lock().await;
        let before = reset_peak();
        for _ in 0..FLOOD {
            raw.feed(frpc::wire::Packet::new(1, 2, Bytes::from_static(&[0x08, 0x00])))
                .await
                .unwrap();
        }
        SinkExt::<frpc::wire::Packet>::flush(&mut raw).await.unwrap();
        // Now read: every flooded message's credit comes back (plus the first message's).
        let mut credit = 0u64;
        while credit < u64::from(FLOOD) {
            let packet = bounded("credit", next(&mut raw)).await;
            if packet.op == 0xFFFF && packet.id == 4 {
                let stream = u16::from_be_bytes([packet.content[0], packet.content[1]]);
                assert_eq!(stream, 1);
                credit += u64::from(u32::from_be_bytes(packet.content[2..6].try_into().unwrap()));
            }
        }
        let growth = peak_memory().saturating_sub(before);
        eprintln!(
            "{framing:?}: {FLOOD} messages to a gone reader, peak +{} MiB",
            growth >> 20
        );
        assert!(
            growth <= 64 << 20,
            "{framing:?}: the server grew by {} MiB",
            growth >> 20
        );
    }
}

/// The server-wide stream budget: streams beyond `max_open_streams` across all connections are
/// refused at open with RESOURCE_EXHAUSTED; the connections keep serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_beyond_the_servers_budget_are_refused() {
    for framing in FRAMINGS {
        let mut config = server_config(framing, 1024);
        config.max_open_streams = 3;
        let running = serve(config).await;
        let (a, b) = (
            connect(&running, client_config(framing, 1024)).await,
            connect(&running, client_config(framing, 1024)).await,
        );
        let mut held = Vec::new();
        for flow in [&a, &a, &b] {
            held.push(bounded("watch", flow.watch(text("1"))).await.unwrap());
        }
        let err = bounded("one too many", b.watch(text("1"))).await.unwrap_err();
        assert_eq!(err.code(), Code::ResourceExhausted, "{framing:?}: {err}");
        assert!(err.to_string().contains("max_open_streams 3"), "{err}");
        assert_eq!(bounded("echo", b.echo(text("x"))).await.unwrap().value, "x");
        drop(held);
    }
}

/// `ServerConfig::max_buffered_stream_bytes`: once a connection's unread stream messages fill
/// the server's budget, that connection is not read (its unary call waits behind them) while
/// other connections are served; once the handler reads, everything arrives, nothing lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buffered_stream_bytes_wait_for_the_budget_and_lose_nothing() {
    for framing in FRAMINGS {
        let mut config = server_config(framing, 1024);
        config.max_buffered_stream_bytes = 64 << 10;
        let running = serve(config).await;
        let (a, b) = (
            connect(&running, client_config(framing, 1024)).await,
            connect(&running, client_config(framing, 1024)).await,
        );
        let mut call = bounded("sink", a.sink()).await.unwrap();
        let parts: Vec<String> = (0..8).map(|i| format!("{i}").repeat(16 << 10)).collect();
        let sent = parts.clone();
        let (progress, mut sends) = mpsc::unbounded_channel();
        let producer = tokio::spawn(async move {
            for part in &sent {
                call.send(text(part)).await.unwrap();
                progress.send(()).unwrap();
            }
            call.close_and_recv().await
        });
        // Five 16 KiB messages are past the 64 KiB budget: the call below queues behind them.
        for _ in 0..5 {
            bounded("client send", sends.recv()).await.unwrap();
        }
        let behind = tokio::spawn({
            let a = a.clone();
            async move { a.echo(text("behind")).await }
        });
        assert_eq!(
            bounded("other connection", b.echo(text("b")))
                .await
                .unwrap()
                .value,
            "b"
        );
        assert!(!behind.is_finished(), "{framing:?}: the full connection was read");
        running.state.gate.add_permits(9);
        let joined = bounded("sink result", producer).await.unwrap().unwrap();
        assert_eq!(joined.value, parts.join(","), "{framing:?}");
        assert_eq!(bounded("behind", behind).await.unwrap().unwrap().value, "behind");
    }
}
