//! A connection during a graceful shutdown, as HTTP/2's GOAWAY has it: the server reads on,
//! refusing the calls and streams started after the shutdown began with UNAVAILABLE at once
//! (their clients may try elsewhere), while the calls and streams already running finish,
//! client streams still sending included. Before (found by a probe, 2026-11-29), the reader
//! stopped: a late call waited until the connection closed at the grace, and a client stream
//! whose client was still sending could not finish.
// Some tests here use `#[frpc::service]`s or `frpc::health`: without `macros` the file is left out.
#![cfg(feature = "macros")]

mod support;

use std::time::Duration;

use frpc::{ClientConfig, Code, Framing, ServerConfig};
use support::*;

const LIMIT: Duration = Duration::from_secs(20);

async fn within<T>(what: &str, work: impl Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, work)
        .await
        .unwrap_or_else(|_| panic!("{what}: not within {LIMIT:?}"))
}

/// A server with a long grace whose connection from `client` runs a GATED call, then shuts
/// down; returns once the connection is draining: for a client without the drain notice once
/// it refuses new calls (an ECHO made until one is refused: the calls before the reader saw
/// the shutdown are served), with the refusal; for one told (`None`), once told, a late call
/// then served (its DRAINED waits for the GATED call, and the server serves until it comes).
async fn draining(server: &Running, client: &frpc::Client) -> Option<frpc::Error> {
    let running = tokio::spawn({
        let client = client.clone();
        async move { call(&client, GATED, "running").await }
    });
    within("the gated call", gated_started(server, 1)).await;
    server.shutdown.notify_one();
    let refused = within("a refused call", async {
        loop {
            // Each late call is answered at once, served or refused: none waits for the grace.
            match within("a late call", call(client, ECHO, "late")).await {
                Ok(reply) if client.is_draining() => {
                    assert_eq!(reply.value, "late");
                    return None;
                }
                Ok(reply) => assert_eq!(reply.value, "late"),
                Err(err) => return Some(err),
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
    server.service.state.gate.add_permits(1);
    let reply = within("the running call", running).await.unwrap();
    assert_eq!(
        reply.unwrap().value,
        "running",
        "the call running at the shutdown answers"
    );
    refused
}

fn long_grace(framing: Framing) -> ServerConfig {
    let mut config = ServerConfig::default().shutdown_grace(Duration::from_secs(60));
    config.connection.framing = framing;
    config
}

/// An frpc client is told of the drain and its late unary calls are served (see §14); a
/// stream it opens then is refused at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_and_streams_started_during_the_drain_are_refused_at_once() {
    let server = start(long_grace(Framing::Frisbee)).await;
    let client = frpc::Client::connect(server.addr).await.unwrap();
    assert_eq!(client.negotiation().await, frpc::Negotiated::Extensions);
    let refused = draining(&server, &client).await;
    assert!(
        refused.is_none(),
        "told of the drain, its late calls are served: {refused:?}"
    );
    let stream = within(
        "a late stream",
        frpc::codegen::call_server_streaming::<Text, Text>(&client, COUNT, &Text::new("3")),
    )
    .await;
    let err = stream.expect_err("a stream opened during the drain is refused");
    assert_eq!(err.code(), Code::Unavailable, "{err}");
    within("the shutdown", server.done).await.unwrap().unwrap();
}

/// A plain peer (a Go client) gets the refusal as an error reply, in both framings: the text
/// says why, where it waited for the connection's end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_peer_gets_the_refusal_as_an_error_reply() {
    for framing in [Framing::Frisbee, Framing::Legacy] {
        let server = start(long_grace(framing)).await;
        let mut config = ClientConfig::default();
        config.extensions = false;
        config.connection.framing = framing;
        let client = frpc::Client::connect_with(server.addr, config).await.unwrap();
        let refused = draining(&server, &client)
            .await
            .expect("a plain peer's call refused");
        assert!(
            refused.to_string().contains("the server is shutting down"),
            "{framing:?}: {refused}"
        );
        within("the shutdown", server.done).await.unwrap().unwrap();
    }
}

/// A client stream open when the shutdown begins takes the requests its client sends after,
/// and its end, and answers: the docs promised it, and it waited for the grace instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_stream_open_at_the_shutdown_finishes() {
    let server = start(long_grace(Framing::Frisbee)).await;
    let client = frpc::Client::connect(server.addr).await.unwrap();
    assert_eq!(client.negotiation().await, frpc::Negotiated::Extensions);
    let mut upload = frpc::codegen::call_client_streaming::<Text, Text>(&client, JOIN)
        .await
        .unwrap();
    upload.send(Text::new("a")).await.unwrap();
    draining(&server, &client).await;
    upload.send(Text::new("b")).await.unwrap();
    let reply = within("the upload's reply", upload.close_and_recv())
        .await
        .unwrap();
    assert_eq!(reply.value, "a,b");
    within("the shutdown", server.done).await.unwrap().unwrap();
}

/// The drain notice, byte for byte as `docs/extensions.md` §14 shows it: a client that offered
/// it is told (DRAIN) when the shutdown begins; a call it sends before it answers is served,
/// not refused (it was on its way before the client knew); after its DRAINED a call is
/// refused; the call running at the shutdown answers, and the connection closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_told_of_the_drain_has_its_calls_on_the_way_served() {
    let doc = include_str!("../../docs/extensions.md");
    let in_doc = |hex: &str| {
        assert!(doc.contains(hex), "docs/extensions.md shows `{hex}`");
        hex.to_owned()
    };
    let offer = in_doc("00 0f 00 01 ff ff 00 00 00 05 01 00 00 03 ff");
    let drain = in_doc("00 0f 00 09 ff ff 00 00 00 00");
    let drained = in_doc("00 0f 00 0a ff ff 00 00 00 00");
    let server = start(long_grace(Framing::Frisbee)).await;
    let mut raw = Raw::connect(server.addr, &offer).await;
    let accept = raw.next().await.unwrap();
    // Every bit but protobuf (whose messages the test service's are not): the drain's is in.
    assert_eq!(
        (accept.id, accept.op, &accept.content[..]),
        (2, 0xFFFF, &[1, 0, 0, 3, 0xef][..])
    );
    raw.call(GATED, 1, "running").await;
    within("the gated call", gated_started(&server, 1)).await;
    server.shutdown.notify_one();
    let told = raw.next().await.unwrap();
    assert_eq!(
        (told.id, told.op, told.content.len()),
        (9, 0xFFFF, 0),
        "DRAIN: {told:?}"
    );
    assert_eq!(drain, "00 0f 00 09 ff ff 00 00 00 00");
    raw.call(ECHO, 1, "on its way").await;
    let served = raw.next().await.unwrap();
    assert_eq!((served.id, served.op), (1, ECHO));
    assert_eq!(
        &served.content[..],
        &frpc::codegen::Message::to_polyglot(&Text::new("on its way"))[..]
    );
    raw.send_bytes(&drained).await;
    raw.call(ECHO, 2, "after").await;
    let refused = raw.next().await.unwrap();
    assert_eq!((refused.id, refused.op), (2, ECHO));
    let text = String::from_utf8_lossy(&refused.content);
    assert!(text.contains("the server is shutting down"), "{text}");
    server.service.state.gate.add_permits(1);
    let running = raw.next().await.unwrap();
    assert_eq!((running.id, running.op), (1, GATED));
    assert!(raw.next().await.is_none(), "the connection closes");
    drop(raw); // the server lingers until its peer closes too (up to 5 s)
    within("the shutdown", server.done).await.unwrap().unwrap();
}

/// A channel leaves a server that says it is shutting down for a new connection at once, so
/// that no call fails while a successor takes over the listening socket (a rolling restart: a
/// second server on a duplicate of the socket). Before, the channel stayed on the draining
/// connection until it closed, and every call made meanwhile was refused (about half of the
/// calls during a 2 s drain in session 31's probe). A balanced channel with health checks too:
/// the health watch's end came before the drain notice and failed calls for that moment
/// ("no endpoint is serving").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_channel_moves_to_a_successor_without_a_failed_call() {
    for balanced in [false, true] {
        handoff(balanced).await;
    }
}

async fn handoff(balanced: bool) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let twin = listener.into_std().unwrap();
    let first = tokio::net::TcpListener::from_std(twin.try_clone().unwrap()).unwrap();
    let serve = |listener: tokio::net::TcpListener| {
        let service = TestService::default();
        let (reporter, health) = frpc::health::service();
        let server = frpc::Server::builder()
            .config(long_grace(Framing::Frisbee))
            .add_service(service.clone())
            .add_service(health)
            .build()
            .unwrap();
        let stop = std::sync::Arc::new(tokio::sync::Notify::new());
        let signal = stop.clone();
        let done = tokio::spawn(async move {
            server
                .serve_listener_with_shutdown(listener, async move { signal.notified().await })
                .await
        });
        let running = Running {
            addr,
            service,
            shutdown: stop,
            done,
        };
        (running, reporter)
    };
    let (old, _old_health) = serve(first);
    let channel = match balanced {
        false => frpc::Endpoint::from(addr).connect().await.unwrap(),
        true => {
            let channel = frpc::Channel::balance_list([frpc::Endpoint::from(addr)]);
            within("the balanced channel", channel.connected(1)).await;
            channel
        }
    };
    let client = frpc::Client::connect(addr).await.unwrap();
    assert_eq!(client.negotiation().await, frpc::Negotiated::Extensions);
    let echo = |value: &'static str| {
        let channel = channel.clone();
        async move { frpc::codegen::call_unary::<Text, Text>(&channel, ECHO, Text::new(value)).await }
    };
    assert_eq!(echo("before").await.unwrap().value, "before");
    // A call running on the old server holds its drain open.
    let running = tokio::spawn({
        let channel = channel.clone();
        async move { frpc::codegen::call_unary::<Text, Text>(&channel, GATED, Text::new("running")).await }
    });
    within("the gated call", gated_started(&old, 1)).await;
    let (successor, _successor_health) = serve(tokio::net::TcpListener::from_std(twin).unwrap());
    // Four callers call throughout the handoff, until each has made 100 calls after it.
    let callers: Vec<_> = (0..4)
        .map(|_| {
            let channel = channel.clone();
            tokio::spawn(async move {
                let mut after = 0;
                while after < 100 {
                    let call = frpc::codegen::call_unary::<Text, Text>(&channel, ECHO, Text::new("during"));
                    let reply = within("a call during the drain", call).await;
                    assert_eq!(reply.unwrap().value, "during", "balanced {balanced}");
                    after += usize::from(channel.reconnects() > 0);
                }
            })
        })
        .collect();
    old.shutdown.notify_one();
    within("the drain notice", client.draining()).await;
    for caller in callers {
        within("a caller", caller).await.unwrap();
    }
    assert_eq!(channel.reconnects(), 1);
    old.service.state.gate.add_permits(1);
    assert_eq!(
        within("the running call", running).await.unwrap().unwrap().value,
        "running"
    );
    within("the old server's shutdown", old.done)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(echo("after").await.unwrap().value, "after");
    successor.shutdown.notify_one();
    within("the successor's shutdown", successor.done)
        .await
        .unwrap()
        .unwrap();
}

/// The frpc client's side of §14, against a raw server: DRAINED (the bytes §14 shows) waits
/// until no call waits for its reply, so a call made after the DRAIN, while another is still
/// pending, is written before it and served. DRAINED went at once, and overtook calls waiting
/// for room in the write queue, which the server then refused (session 31's drain probe: up to
/// 25 failed calls in a handoff with 1 MiB requests).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clients_drained_waits_for_its_calls() {
    use futures_util::{SinkExt, StreamExt};
    let doc = include_str!("../../docs/extensions.md");
    let drain_hex = "00 0f 00 09 ff ff 00 00 00 00";
    let drained_hex = "00 0f 00 0a ff ff 00 00 00 00";
    assert!(doc.contains(drain_hex) && doc.contains(drained_hex));
    let unhex = |hex: &str| -> Vec<u8> {
        hex.split(' ')
            .map(|b| u8::from_str_radix(b, 16).unwrap())
            .collect()
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (made_b, make_b) = tokio::sync::oneshot::channel::<()>();
    let peer = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let mut raw = tokio_util::codec::Framed::new(stream, frpc::wire::PacketCodec::new(Framing::Frisbee));
        let next = async move |raw: &mut tokio_util::codec::Framed<_, _>| loop {
            let packet: frpc::wire::Packet = within("a packet", raw.next()).await.unwrap().unwrap();
            match packet.op {
                frpc::wire::op::PING => raw.send(frpc::wire::Packet::pong()).await.unwrap(),
                frpc::wire::op::PONG => {}
                _ => return packet,
            }
        };
        let offer = next(&mut raw).await;
        assert_eq!((offer.id, offer.op), (1, 0xFFFF));
        // Every bit the client offers but protobuf.
        raw.send(frpc::wire::Packet::new(2, 0xFFFF, &[1u8, 0, 0, 3, 0xef][..]))
            .await
            .unwrap();
        let a = next(&mut raw).await;
        assert_eq!(a.op, ECHO);
        use tokio::io::AsyncWriteExt;
        raw.get_mut().write_all(&unhex(drain_hex)).await.unwrap();
        made_b.send(()).unwrap();
        let b = next(&mut raw).await;
        assert_eq!(
            (b.op, b.id),
            (ECHO, 2),
            "the call made after the DRAIN comes before DRAINED"
        );
        raw.send(b).await.unwrap();
        raw.send(a).await.unwrap();
        let drained = next(&mut raw).await;
        let mut bytes = bytes::BytesMut::new();
        tokio_util::codec::Encoder::encode(
            &mut frpc::wire::PacketCodec::new(Framing::Frisbee),
            drained,
            &mut bytes,
        )
        .unwrap();
        assert_eq!(
            &bytes[..],
            &unhex(drained_hex)[..],
            "DRAINED, once both calls were answered"
        );
    });
    let client = frpc::Client::connect(addr).await.unwrap();
    assert!(client.negotiated().await);
    let a = tokio::spawn({
        let client = client.clone();
        async move { call(&client, ECHO, "a").await }
    });
    make_b.await.unwrap();
    within("the drain notice", client.draining()).await;
    assert_eq!(call(&client, ECHO, "b").await.unwrap().value, "b");
    assert_eq!(a.await.unwrap().unwrap().value, "a");
    within("the raw server", peer).await.unwrap();
}

/// A server that drains every connection at once (DRAIN right after its ACCEPT: a broken one,
/// or a proxy in front of a draining backend) is backed off from, as one that closes every
/// connection before serving a call: a channel dialled it in a tight loop (2,671 connections
/// in 2 s in session 32's hostile-peers probe).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_draining_every_connection_at_once_is_backed_off_from() {
    use futures_util::{SinkExt, StreamExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (fourth, accepted_four) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let (mut accepts, mut fourth) = (Vec::new(), Some(fourth));
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            accepts.push(tokio::time::Instant::now());
            if accepts.len() == 4 {
                let _ = fourth.take().unwrap().send(accepts.clone());
            }
            tokio::spawn(async move {
                let codec = frpc::wire::PacketCodec::new(Framing::Frisbee);
                let mut raw = tokio_util::codec::Framed::new(stream, codec);
                while let Some(Ok(packet)) = raw.next().await {
                    if (packet.op, packet.id) == (0xFFFF, 1) {
                        let accept = frpc::wire::Packet::new(2, 0xFFFF, &[1u8, 0, 0, 2, 0][..]);
                        let _ = raw.send(accept).await;
                        let drain = frpc::wire::Packet::new(9, 0xFFFF, bytes::Bytes::new());
                        let _ = raw.send(drain).await;
                    }
                }
            });
        }
    });
    let backoff = frpc::channel::Backoff::default()
        .initial(Duration::from_millis(50))
        .jitter(0.0);
    let channel = frpc::Endpoint::new(addr.to_string())
        .backoff(backoff)
        .connect_lazy();
    let first = tokio::spawn({
        let channel = channel.clone();
        async move { frpc::codegen::call_unary::<Text, Text>(&channel, ECHO, Text::new("x")).await }
    });
    let accepts = within("four connections", accepted_four).await.unwrap();
    first.abort();
    // Each connection drained before it served a call: 50 ms, 100 ms, 200 ms between them.
    for (i, wait) in [50, 100, 200].into_iter().enumerate() {
        let gap = accepts[i + 1] - accepts[i];
        assert!(gap >= Duration::from_millis(wait), "{i}: {gap:?} ({accepts:?})");
    }
}
