//! Unary RPCs over real loopback sockets: results, errors, ids, timeouts, concurrency modes.

mod support;

use std::time::Duration;

use frpc::{Client, ClientConfig, Concurrency, Error};
use frpc_wire::{Framing, Packet, PacketCodec};
use futures_util::{SinkExt, StreamExt};
use support::*;
use tokio::net::TcpListener;
use tokio_util::codec::Framed;

const MODES: [Concurrency; 3] = [Concurrency::PerRpc, Concurrency::Inline, Concurrency::Limited(8)];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echo_in_every_concurrency_mode() {
    for mode in MODES {
        let server = start(config(mode)).await;
        let client = Client::connect(server.addr).await.unwrap();
        let reply = call(&client, ECHO, "hello").await.unwrap();
        assert_eq!(reply, Text::new("hello"), "{mode:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_concurrent_calls_on_one_connection() {
    for mode in [Concurrency::PerRpc, Concurrency::Inline] {
        let server = start(config(mode)).await;
        let client = Client::connect(server.addr).await.unwrap();
        let calls = (0..10_000).map(|i| {
            let client = client.clone();
            async move { (i, call(&client, ECHO, &i.to_string()).await) }
        });
        let results = futures_util::future::join_all(calls).await;
        for (i, result) in results {
            assert_eq!(result.unwrap().value, i.to_string(), "{mode:?}");
        }
        assert_eq!(client.inflight(), 0);
    }
}

#[tokio::test]
async fn handler_error_becomes_remote_status() {
    let server = start(Default::default()).await;
    let client = Client::connect(server.addr).await.unwrap();
    let err = call(&client, FAIL, "x").await.unwrap_err();
    assert_eq!(err.status().map(|s| s.message()), Some("failed: x"));
    // The connection is still good.
    assert_eq!(call(&client, ECHO, "after").await.unwrap().value, "after");
}

#[tokio::test]
async fn handler_panic_becomes_error_and_server_keeps_serving() {
    for mode in MODES {
        let server = start(config(mode)).await;
        let client = Client::connect(server.addr).await.unwrap();
        let err = call(&client, PANIC, "").await.unwrap_err();
        let status = err.status().expect("a remote status");
        assert_eq!(status.code(), frpc::Code::Internal);
        // The panic's own message stays on the server (logged), as it may say too much.
        assert_eq!(status.message(), "handler panicked", "{mode:?}");
        assert_eq!(
            call(&client, ECHO, "still").await.unwrap().value,
            "still",
            "{mode:?}"
        );
    }
}

/// One connection's unary calls share the slot their handlers run in: `Echo` (the generated
/// form, one future type) and `Fail` and `Panic` (a hand-written service's, a boxed future in
/// the slot: another layout) in turn, a panic in between, and concurrent calls that hold the
/// slot's earlier future in a task while later ones take the slot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn methods_of_other_future_layouts_take_turns_in_the_slot() {
    for mode in MODES {
        let server = start(config(mode)).await;
        let client = Client::connect(server.addr).await.unwrap();
        for round in 0..3 {
            let echo = call(&client, ECHO, &format!("echo {round}")).await.unwrap();
            assert_eq!(echo.value, format!("echo {round}"), "{mode:?}");
            let err = call(&client, FAIL, &round.to_string()).await.unwrap_err();
            let failed = err.status().map(|s| s.message().to_owned());
            assert_eq!(
                failed.as_deref(),
                Some(format!("failed: {round}").as_str()),
                "{mode:?}"
            );
            assert!(call(&client, PANIC, "").await.is_err(), "{mode:?}");
        }
        let mixed = (0..200).map(|i| {
            let client = client.clone();
            async move {
                match i % 2 {
                    0 => call(&client, ECHO, &i.to_string()).await.map(|t| t.value),
                    _ => call(&client, FAIL, &i.to_string()).await.map(|t| t.value),
                }
            }
        });
        for (i, result) in futures_util::future::join_all(mixed)
            .await
            .into_iter()
            .enumerate()
        {
            match i % 2 {
                0 => assert_eq!(result.unwrap(), i.to_string(), "{mode:?}"),
                _ => assert!(
                    result.unwrap_err().to_string().contains(&format!("failed: {i}")),
                    "{mode:?}"
                ),
            }
        }
    }
}

#[tokio::test]
async fn closing_status_replies_then_closes_the_connection() {
    let server = start(Default::default()).await;
    let client = Client::connect(server.addr).await.unwrap();
    let err = call(&client, CLOSE, "").await.unwrap_err();
    assert_eq!(err.status().map(|s| s.message()), Some("bye"));
    client.closed().await;
    assert!(matches!(
        call(&client, ECHO, "x").await,
        Err(Error::ConnectionClosed { .. })
    ));
    // The server still accepts new connections.
    let again = Client::connect(server.addr).await.unwrap();
    assert_eq!(call(&again, ECHO, "new").await.unwrap().value, "new");
}

#[tokio::test]
async fn undecodable_request_gets_an_error_reply() {
    let server = start(Default::default()).await;
    let stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let mut framed = Framed::new(stream, PacketCodec::new(Framing::Frisbee));
    // `05 0a 09 ...`: a string whose length runs past the end.
    framed
        .send(Packet::new(7, ECHO, &b"\x08\x00\x05\x0a\x09ab"[..]))
        .await
        .unwrap();
    let reply = next_non_ping(&mut framed).await;
    assert_eq!((reply.id, reply.op), (7, ECHO));
    assert_eq!(reply.content[0], 0x06, "an Error envelope: {:?}", reply.content);
    let text = frpc_wire::polyglot::Decoder::new(&reply.content).error().unwrap();
    assert!(text.contains("decode"), "{text}");
    // The connection still serves well-formed requests.
    framed
        .send(Packet::new(
            8,
            ECHO,
            frpc_wire::polyglot::Message::to_polyglot(&Text::new("ok")),
        ))
        .await
        .unwrap();
    let reply = next_non_ping(&mut framed).await;
    assert_eq!(
        (reply.id, &reply.content[..]),
        (8, &b"\x08\x00\x05\x0a\x02ok"[..])
    );
}

#[tokio::test]
async fn unknown_operation_is_dropped_and_the_connection_stays_usable() {
    let server = start(Default::default()).await;
    let stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let mut framed = Framed::new(stream, PacketCodec::new(Framing::Frisbee));
    framed.send(Packet::new(1, 999, &b"\x08\x00"[..])).await.unwrap();
    framed
        .send(Packet::new(
            2,
            ECHO,
            frpc_wire::polyglot::Message::to_polyglot(&Text::new("x")),
        ))
        .await
        .unwrap();
    let reply = next_non_ping(&mut framed).await;
    assert_eq!(
        (reply.id, reply.op),
        (2, ECHO),
        "no reply to the unknown op comes first"
    );
}

/// An frpc peer (extensions negotiated) gets UNIMPLEMENTED for an operation nothing serves,
/// rather than a call that waits for its timeout; the plain peer above gets silence, as from Go.
#[tokio::test]
async fn unknown_operation_is_unimplemented_for_frpc_peers() {
    let server = start(Default::default()).await;
    let client = Client::connect(server.addr).await.unwrap();
    assert!(client.negotiated().await);
    let err = call(&client, 999, "x").await.unwrap_err();
    assert_eq!(
        err.status().map(|s| s.code()),
        Some(frpc::Code::Unimplemented),
        "{err}"
    );
    assert!(err.to_string().contains("unknown operation 999"), "{err}");
    // A unary call on a streaming method's number (a client of another schema) is answered
    // the same (it got no reply at all).
    let err = call(&client.with_timeout(Duration::from_secs(10)), COUNT, "x")
        .await
        .unwrap_err();
    assert_eq!(err.code(), frpc::Code::Unimplemented, "{err}");
    assert_eq!(call(&client, ECHO, "x").await.unwrap().value, "x");
}

#[tokio::test]
async fn timeout_then_late_reply_is_discarded() {
    let server = start(Default::default()).await;
    let client = Client::connect(server.addr).await.unwrap();
    let err = call(&client.with_timeout(Duration::from_millis(50)), GATED, "slow")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Timeout(_)), "{err}");
    assert_eq!(client.inflight(), 0, "the timed-out call left the table");
    server.service.state.gate.add_permits(1);
    // The late reply (same op, id 1) must not be mistaken for this call's (op GATED, id 2).
    server.service.state.gate.add_permits(1);
    assert_eq!(call(&client, GATED, "second").await.unwrap().value, "second");
    assert_eq!(call(&client, ECHO, "x").await.unwrap().value, "x");
}

#[tokio::test]
async fn a_zero_call_timeout_is_refused_and_a_timed_call_answered_in_time_succeeds() {
    let server = start(Default::default()).await;
    let client = Client::connect(server.addr).await.unwrap();
    let err = call(&client.with_timeout(Duration::ZERO), ECHO, "x")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Config(_)), "{err}");
    assert!(err.to_string().contains("timeout is zero"), "{err}");
    assert_eq!(client.inflight(), 0, "the refused call never registered");
    let timed = client.with_timeout(Duration::from_secs(30));
    assert_eq!(call(&timed, ECHO, "y").await.unwrap().value, "y");
    assert_eq!(client.inflight(), 0);
}

#[tokio::test]
async fn default_timeout_from_config() {
    let server = start(Default::default()).await;
    let config = ClientConfig::default().timeout(Some(Duration::from_millis(30)));
    let client = Client::connect_with(server.addr, config).await.unwrap();
    assert!(matches!(call(&client, GATED, "").await, Err(Error::Timeout(_))));
}

#[tokio::test]
async fn oversize_request_fails_locally_and_connection_survives() {
    let server = start(Default::default()).await;
    let client = Client::connect(server.addr).await.unwrap();
    let big = "x".repeat(6 * 1024 * 1024);
    let err = call(&client, ECHO, &big).await.unwrap_err();
    assert!(matches!(err, Error::TooLarge { max: 5_242_880, .. }), "{err}");
    let four_mib = "y".repeat(4 * 1024 * 1024);
    assert_eq!(
        call(&client, ECHO, &four_mib).await.unwrap().value.len(),
        four_mib.len()
    );
}

#[tokio::test]
async fn legacy_framing_end_to_end() {
    let mut cfg = config(Concurrency::PerRpc);
    cfg.connection.framing = Framing::Legacy;
    let server = start(cfg).await;
    let mut client_cfg = ClientConfig::default();
    client_cfg.connection.framing = Framing::Legacy;
    let client = Client::connect_with(server.addr, client_cfg).await.unwrap();
    assert_eq!(call(&client, ECHO, "old").await.unwrap().value, "old");
}

#[tokio::test]
async fn replies_out_of_order_are_matched_by_op_and_id() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let peer = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let mut framed = Framed::new(stream, PacketCodec::new(Framing::Frisbee));
        let first = next_non_ping(&mut framed).await;
        let second = next_non_ping(&mut framed).await;
        let third = next_non_ping(&mut framed).await;
        // Reply in reverse order, echoing each request's content.
        for request in [third, second, first] {
            framed.send(request).await.unwrap();
        }
        framed
    });
    let client = Client::connect(addr).await.unwrap();
    let (a, b, c) = tokio::join!(
        call(&client, ECHO, "a"),
        call(&client, ECHO, "b"),
        call(&client, FAIL, "c")
    );
    assert_eq!(
        (a.unwrap().value, b.unwrap().value, c.unwrap().value),
        ("a".into(), "b".into(), "c".into())
    );
    drop(peer);
}

#[tokio::test]
async fn first_ids_are_one_per_method_like_go() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let peer = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let mut framed = Framed::new(stream, PacketCodec::new(Framing::Frisbee));
        let mut seen = Vec::new();
        for _ in 0..3 {
            let request = next_non_ping(&mut framed).await;
            seen.push((request.op, request.id));
            framed.send(request).await.unwrap();
        }
        seen
    });
    let client = Client::connect(addr).await.unwrap();
    call(&client, ECHO, "1").await.unwrap();
    call(&client, ECHO, "2").await.unwrap();
    call(&client, FAIL, "3").await.unwrap();
    assert_eq!(peer.await.unwrap(), vec![(ECHO, 1), (ECHO, 2), (FAIL, 1)]);
}

#[tokio::test]
async fn server_killed_mid_call_fails_pending_calls_promptly() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let peer = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let mut framed = Framed::new(stream, PacketCodec::new(Framing::Frisbee));
        next_non_ping(&mut framed).await;
        next_non_ping(&mut framed).await;
        // Both calls are in flight: vanish without replying.
    });
    let client = Client::connect(addr).await.unwrap();
    let started = tokio::time::Instant::now();
    let (a, b) = tokio::join!(call(&client, ECHO, "a"), call(&client, GATED, "b"));
    peer.await.unwrap();
    assert!(matches!(a, Err(Error::ConnectionClosed { .. })), "{a:?}");
    assert!(matches!(b, Err(Error::ConnectionClosed { .. })), "{b:?}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "failed promptly, not by idle timeout"
    );
    assert!(matches!(
        call(&client, ECHO, "c").await,
        Err(Error::ConnectionClosed { .. })
    ));
}

#[tokio::test]
async fn two_services_on_one_operation_are_refused_at_build() {
    let err = frpc::Server::builder()
        .add_service(TestService::default())
        .add_service(TestService::default())
        .build()
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("operation 10") && text.contains("test.TestService"),
        "{text}"
    );
}

/// The next packet that is not a heartbeat (PINGs answered), nor the client's extension offer
/// (op 0xFFFF), which this peer ignores as a Go server does.
async fn next_non_ping(framed: &mut Framed<tokio::net::TcpStream, PacketCodec>) -> Packet {
    loop {
        let packet = framed.next().await.expect("a packet").expect("a valid packet");
        if packet.op > frpc_wire::op::PONG && packet.op != 0xFFFF {
            return packet;
        }
        if packet.op == frpc_wire::op::PING {
            framed.send(Packet::pong()).await.unwrap();
        }
    }
}

/// A raw server on `listener` that holds the first request (id 1) unanswered and echoes the
/// next 65,536 at once: its connection, the held request and the ids of the others.
async fn hold_the_first_answer_the_rest(
    listener: TcpListener,
) -> (Framed<tokio::net::TcpStream, PacketCodec>, Packet, Vec<u16>) {
    let (stream, _) = listener.accept().await.unwrap();
    let mut framed = Framed::new(stream, PacketCodec::new(Framing::Frisbee));
    let held = next_non_ping(&mut framed).await;
    assert_eq!(held.id, 1);
    let mut ids = Vec::new();
    for _ in 0..65_536 {
        let request = next_non_ping(&mut framed).await;
        ids.push(request.id);
        framed.send(request).await.unwrap();
    }
    (framed, held, ids)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_wrap_to_zero_and_skip_an_id_still_in_flight() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let peer = tokio::spawn(async move {
        let (mut framed, held, ids) = hold_the_first_answer_the_rest(listener).await;
        framed.send(held).await.unwrap();
        ids
    });
    let mut config = ClientConfig::default();
    config.connection.ping_interval = Duration::from_secs(3600);
    let client = Client::connect_with(addr, config).await.unwrap();
    let held = tokio::spawn({
        let client = client.clone();
        async move { call(&client, ECHO, "held").await }
    });
    while client.inflight() == 0 {
        tokio::task::yield_now().await;
    }
    for i in 0..65_536u32 {
        assert_eq!(call(&client, ECHO, "x").await.unwrap().value, "x", "call {i}");
    }
    assert_eq!(held.await.unwrap().unwrap().value, "held");
    let ids = peer.await.unwrap();
    assert_eq!(&ids[..3], &[2, 3, 4]);
    // ... 65535, then 0 (the wrap), then 1 is skipped because it is still in flight.
    let wrap = ids.iter().position(|&id| id == 65535).unwrap();
    assert_eq!(&ids[wrap..wrap + 3], &[65535, 0, 2]);
}

/// Packets that arrive together are handled from the read buffer one after the other (the
/// reader takes each whole frame without polling the socket again), in every concurrency mode:
/// four calls, a PING and a call to an unknown operation in one write, then a fifth call cut in
/// two writes. Every call is answered under its id with its own content, the PING with a PONG,
/// and the cut call once its second half arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packets_in_one_read_are_each_handled_and_a_cut_one_waits_for_its_rest() {
    use bytes::BytesMut;
    use tokio::io::AsyncWriteExt;
    use tokio_util::codec::Encoder;
    for mode in MODES {
        let server = start(config(mode)).await;
        let stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        let mut codec = PacketCodec::new(Framing::Frisbee);
        let request = |id: u16| {
            let text = Text::new(format!("call {id}"));
            Packet::new(id, ECHO, frpc_wire::polyglot::Message::to_polyglot(&text))
        };
        let mut bytes = BytesMut::new();
        for packet in [
            request(1),
            request(2),
            Packet::new(0, frpc_wire::op::PING, bytes::Bytes::new()),
            request(3),
            Packet::new(9, 999, &b"\x08\x00"[..]),
            request(4),
            request(5),
        ] {
            codec.encode(packet, &mut bytes).unwrap();
        }
        let cut = bytes.len() - 5;
        let mut framed = Framed::new(stream, PacketCodec::new(Framing::Frisbee));
        framed.get_mut().write_all(&bytes[..cut]).await.unwrap();
        let mut pong = false;
        let mut answered = Vec::new();
        while answered.len() < 4 {
            let packet = framed.next().await.unwrap().unwrap();
            if packet.op == frpc_wire::op::PONG {
                pong = true;
                continue;
            }
            if packet.op == frpc_wire::op::PING {
                continue;
            }
            let reply: Text = frpc_wire::polyglot::Message::from_polyglot(&packet.content).unwrap();
            assert_eq!(
                (packet.op, reply.value),
                (ECHO, format!("call {}", packet.id)),
                "{mode:?}"
            );
            answered.push(packet.id);
        }
        framed.get_mut().write_all(&bytes[cut..]).await.unwrap();
        let last = next_non_ping(&mut framed).await;
        answered.push(last.id);
        assert_eq!(answered, [1, 2, 3, 4, 5], "{mode:?}");
        assert!(pong, "the PING among the calls got no PONG ({mode:?})");
    }
}

/// A unary call's future is what a client keeps per call in flight, and what every move of it
/// copies (a generated client's method, the caller's own `async` blocks, `join_all`): it stays
/// small. A call's timer, for one, is boxed where a timeout applies rather than carried (112
/// bytes) by every call.
#[tokio::test]
async fn a_unary_calls_future_stays_small() {
    let running = start(config(Concurrency::Inline)).await;
    let client = Client::connect(running.addr).await.unwrap();
    let pending = frpc::codegen::traced_unary::<_, Text, Text>(
        &client,
        ("Echo", "Echo"),
        ECHO,
        "/Echo/Echo",
        Text::new("small"),
    );
    let size = std::mem::size_of_val(&pending);
    eprintln!("a unary call's future: {size} bytes");
    assert!(size <= 400, "a unary call's future is {size} bytes");
    assert_eq!(pending.await.unwrap().value, "small");
    // With a timeout, the timer is there and the call still answers.
    let timed = client.with_timeout(Duration::from_secs(5));
    assert_eq!(call(&timed, ECHO, "timed").await.unwrap().value, "timed");
}

/// A call registers the waker of the poll that sends it, and the first look at its reply waits
/// for that waker. A call first polled with another waker (one that wakes no one) and then
/// driven by a task still gets its reply, handed over while nobody was there to be woken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_first_polled_with_another_waker_still_gets_its_reply() {
    let server = start(config(Concurrency::Inline)).await;
    let client = Client::connect(server.addr).await.unwrap();
    // Negotiated first: a call made before the answer waits for it instead of sending.
    assert!(client.negotiated().await);
    let moved = client.clone();
    // GATED holds its reply until the test lets it go: the first poll cannot see it (an ECHO's
    // reply could arrive within that poll and end the call there).
    let mut first = Box::pin(async move { call(&moved, GATED, "first").await });
    let mut elsewhere = std::task::Context::from_waker(std::task::Waker::noop());
    assert!(
        first.as_mut().poll(&mut elsewhere).is_pending(),
        "sent, no reply yet"
    );
    gated_started(&server, 1).await;
    server.service.state.gate.add_permits(1);
    // Inline handlers answer in order: once the next call's reply is in, the first's was
    // handed over (and woke the waker that wakes no one).
    assert_eq!(call(&client, ECHO, "next").await.unwrap().value, "next");
    let reply = tokio::time::timeout(Duration::from_secs(10), tokio::spawn(first))
        .await
        .expect("the first call got its reply once a task polled it")
        .unwrap();
    assert_eq!(reply.unwrap().value, "first");
}

/// A call given up (its timeout) keeps its id out of use while its reply may still come: after
/// the ids wrap, it is skipped as one in flight is, and its late reply goes to nobody. It was
/// freed at once, and the reply of a call that timed out went to the call that took its id
/// 65,535 calls later (a fault probe through a 3 s delay, session 30).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_id_of_a_call_given_up_is_not_reused_while_its_reply_may_come() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // The held request is answered late, once 65,536 others were.
    let peer = tokio::spawn(async move {
        let (mut framed, held, ids) = hold_the_first_answer_the_rest(listener).await;
        framed.send(held).await.unwrap();
        let after = next_non_ping(&mut framed).await;
        framed.send(after.clone()).await.unwrap();
        (ids, after.id)
    });
    let mut config = ClientConfig::default();
    config.connection.ping_interval = Duration::from_secs(3600);
    config.extensions = false;
    let client = Client::connect_with(addr, config).await.unwrap();
    let given_up = call(&client.with_timeout(Duration::from_millis(100)), ECHO, "late").await;
    assert!(matches!(given_up, Err(Error::Timeout(_))), "{given_up:?}");
    for i in 0..65_536u32 {
        assert_eq!(call(&client, ECHO, "x").await.unwrap().value, "x", "call {i}");
    }
    // The late reply lands nowhere; the next call is answered its own.
    assert_eq!(call(&client, ECHO, "after").await.unwrap().value, "after");
    let (ids, after) = peer.await.unwrap();
    let wrap = ids.iter().position(|&id| id == 65535).unwrap();
    assert_eq!(&ids[wrap..wrap + 3], &[65535, 0, 2], "id 1 skipped");
    assert_ne!(after, 1, "id 1 still out of use");
}

/// A Go server's error whose text is not UTF-8 (Go writes `err.Error()`'s bytes as they are)
/// reaches the caller as that error, its invalid bytes replaced; before, the reply failed to
/// decode (`InvalidUtf8`) and the server's error was lost (session 31's values probe).
#[tokio::test]
async fn an_error_text_that_is_not_utf8_still_reads_as_the_error() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let mut framed = Framed::new(stream, PacketCodec::new(Framing::Frisbee));
        let request = next_non_ping(&mut framed).await;
        // Error, String of 5 bytes: "bad", 0xFF, "!".
        let error = &b"\x06\x05\x0a\x05bad\xff!"[..];
        framed
            .send(Packet::new(request.id, request.op, error))
            .await
            .unwrap();
        next_non_ping(&mut framed).await
    });
    let client = Client::connect(addr).await.unwrap();
    let err = call(&client, ECHO, "x").await.unwrap_err();
    let status = err.status().unwrap_or_else(|| panic!("a status: {err:?}"));
    assert_eq!(status.message(), "bad\u{fffd}!");
}

/// A method whose 65,536 ids are all given up (cancelled, their replies possibly on the way)
/// fails the next call at once with RESOURCE_EXHAUSTED, and says why: it said the connection
/// was closed, which it was not (a channel or retry layer would take it for a dead connection;
/// session 31's soak probe). Another method's calls go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_method_out_of_ids_is_resource_exhausted_not_closed() {
    use futures_util::stream::FuturesUnordered;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // Takes cancellation, answers only FAIL calls (as an echo), reads everything.
    tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let mut framed = Framed::new(stream, PacketCodec::new(Framing::Frisbee));
        while let Some(Ok(packet)) = framed.next().await {
            match packet.op {
                frpc_wire::op::PING => framed.send(Packet::pong()).await.unwrap(),
                0xFFFF if packet.id == 1 => {
                    let accept = Packet::new(2, 0xFFFF, &[1u8, 0, 0, 0, 1][..]);
                    framed.send(accept).await.unwrap();
                }
                FAIL => framed.send(packet).await.unwrap(),
                _ => {}
            }
        }
    });
    let mut config = ClientConfig::default();
    config.connection.ping_interval = Duration::from_secs(3600);
    let client = Client::connect_with(addr, config).await.unwrap();
    assert!(client.negotiated().await);
    let mut calls: FuturesUnordered<_> = (0..65_536).map(|_| call(&client, ECHO, "x")).collect();
    // Each call registers on its first poll (a few thousand a turn); none is answered.
    while client.inflight() < 65_536 {
        let next = futures_util::StreamExt::next(&mut calls);
        let answered = tokio::time::timeout(Duration::from_millis(1), next).await;
        assert!(answered.is_err(), "no answer: {answered:?}");
    }
    drop(calls);
    let err = call(&client, ECHO, "one more").await.unwrap_err();
    assert_eq!(err.code(), frpc::Code::ResourceExhausted, "{err}");
    assert!(err.to_string().contains("65,536 ids of operation 10"), "{err}");
    assert!(!client.is_closed());
    assert_eq!(call(&client, FAIL, "other").await.unwrap().value, "other");
}
