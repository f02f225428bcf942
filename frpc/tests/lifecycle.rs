//! Connection lifetime: heartbeats, idle timeouts, graceful shutdown.

mod support;

use std::sync::atomic::Ordering;
use std::time::Duration;

use frpc::{Client, ClientConfig, Concurrency, Error};
use frpc_wire::{Framing, PacketCodec, op};
use futures_util::StreamExt;
use support::*;
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::codec::FramedRead;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connection_stays_up_for_twelve_seconds_through_heartbeats() {
    let server = start(Default::default()).await;
    let client = Client::connect(server.addr).await.unwrap();
    assert_eq!(call(&client, ECHO, "before").await.unwrap().value, "before");
    // The subject of the test is 12 s of application silence (more than twice the 5 s idle
    // timeout): only PING/PONG flow.
    tokio::time::sleep(Duration::from_secs(12)).await;
    assert!(!client.is_closed());
    assert_eq!(call(&client, ECHO, "after").await.unwrap().value, "after");
}

#[tokio::test]
async fn server_drops_a_peer_that_sends_nothing() {
    let mut cfg = config(Concurrency::PerRpc);
    cfg.connection.idle_timeout = Duration::from_secs(1);
    cfg.connection.ping_interval = Duration::from_millis(100);
    let server = start(cfg).await;
    let started = tokio::time::Instant::now();
    let stream = TcpStream::connect(server.addr).await.unwrap();
    // Only read: the server's PINGs arrive, then the server closes.
    let mut framed = FramedRead::new(stream, PacketCodec::new(Framing::Frisbee));
    let mut pings = 0;
    while let Some(packet) = framed.next().await {
        match packet {
            Ok(packet) if packet.op == op::PING => pings += 1,
            Ok(other) => panic!("unexpected packet {other:?}"),
            Err(_) => break,
        }
    }
    let elapsed = started.elapsed();
    assert!(pings >= 5, "the server pinged while waiting ({pings})");
    assert!(
        elapsed >= Duration::from_millis(900) && elapsed < Duration::from_secs(4),
        "{elapsed:?}"
    );
}

#[tokio::test]
async fn half_a_header_then_silence_is_dropped_by_the_idle_timeout() {
    let mut cfg = config(Concurrency::PerRpc);
    cfg.connection.idle_timeout = Duration::from_secs(1);
    cfg.connection.ping_interval = Duration::from_millis(100);
    let server = start(cfg).await;
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut stream, &[0x00, 0x0f, 0x00])
        .await
        .unwrap();
    let mut sink = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut sink)).await;
    assert!(read.is_ok(), "the server closed the connection");
}

#[tokio::test]
async fn client_closes_when_the_server_goes_silent() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let silent = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut sink = Vec::new();
        let _ = stream.read_to_end(&mut sink).await; // reads, never writes
    });
    let mut cfg = ClientConfig::default();
    cfg.connection.idle_timeout = Duration::from_millis(600);
    cfg.connection.ping_interval = Duration::from_millis(100);
    let client = Client::connect_with(addr, cfg).await.unwrap();
    let pending = call(&client, ECHO, "never answered");
    let result = tokio::time::timeout(Duration::from_secs(5), pending)
        .await
        .expect("no hang");
    match result {
        Err(Error::ConnectionClosed { reason }) => {
            assert!(reason.unwrap_or_default().contains("nothing"), "idle reason")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        client.close_reason(),
        Some(frpc::CloseReason::Idle(Duration::from_millis(600)))
    );
    silent.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_with_a_thousand_calls_in_flight_loses_none() {
    let server = start(Default::default()).await;
    let state = server.service.state.clone();
    let client = Client::connect(server.addr).await.unwrap();
    let calls: Vec<_> = (0..1000)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move { call(&client, GATED, &i.to_string()).await })
        })
        .collect();
    // Wait until every call runs in a handler.
    loop {
        let started = state.started.notified();
        if state.gated_started.load(Ordering::SeqCst) == 1000 {
            break;
        }
        started.await;
    }
    server.shutdown.notify_one();
    state.gate.add_permits(1000);
    for (i, handle) in calls.into_iter().enumerate() {
        assert_eq!(handle.await.unwrap().unwrap().value, i.to_string());
    }
    let done = tokio::time::timeout(Duration::from_secs(5), server.done).await;
    done.expect("server exits").unwrap().unwrap();
    assert!(
        TcpStream::connect(server.addr).await.is_err(),
        "no longer accepting"
    );
}

/// An idle connection's reader, waiting for input, hears the shutdown at once: the server
/// does not wait out its grace for a client that only stays connected.
#[tokio::test]
async fn an_idle_connection_does_not_hold_up_shutdown() {
    let config = frpc::ServerConfig::default().shutdown_grace(Duration::from_secs(60));
    let server = start(config).await;
    let client = Client::connect(server.addr).await.unwrap();
    assert_eq!(call(&client, ECHO, "1").await.unwrap().value, "1");
    server.shutdown.notify_one();
    tokio::time::timeout(Duration::from_secs(10), server.done)
        .await
        .expect("the server exits well within its grace")
        .unwrap()
        .unwrap();
    drop(client);
}

#[tokio::test]
async fn shutdown_with_a_stuck_handler_fails_its_call_after_the_grace_period() {
    // A short grace: the test waits it out.
    let config = frpc::ServerConfig::default().shutdown_grace(Duration::from_millis(300));
    let server = start(config).await;
    let state = server.service.state.clone();
    let client = Client::connect(server.addr).await.unwrap();
    let pending = tokio::spawn({
        let client = client.clone();
        async move { call(&client, GATED, "x").await }
    });
    loop {
        let started = state.started.notified();
        if state.gated_started.load(Ordering::SeqCst) == 1 {
            break;
        }
        started.await;
    }
    server.shutdown.notify_one();
    // The gated handler never gets its permit: the grace period ends, connections close and
    // the pending call fails with a clear error rather than hanging.
    let result = tokio::time::timeout(Duration::from_secs(8), pending)
        .await
        .expect("no hang");
    assert!(matches!(result.unwrap(), Err(Error::ConnectionClosed { .. })));
    tokio::time::timeout(Duration::from_secs(8), server.done)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn connections_over_the_limit_are_closed_at_accept() {
    let mut cfg = config(Concurrency::PerRpc);
    cfg.max_connections = 2;
    let server = start(cfg).await;
    let first = Client::connect(server.addr).await.unwrap();
    let second = Client::connect(server.addr).await.unwrap();
    assert_eq!(call(&first, ECHO, "1").await.unwrap().value, "1");
    assert_eq!(call(&second, ECHO, "2").await.unwrap().value, "2");
    let third = Client::connect(server.addr).await.unwrap();
    let refused = tokio::time::timeout(Duration::from_secs(5), call(&third, ECHO, "3"))
        .await
        .expect("no hang");
    assert!(
        matches!(refused, Err(Error::ConnectionClosed { .. })),
        "{refused:?}"
    );
    drop(first);
    // Once a slot frees up, new connections are served again.
    let mut served = false;
    for _ in 0..100 {
        let again = Client::connect(server.addr).await.unwrap();
        if call(&again, ECHO, "4").await.is_ok() {
            served = true;
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(served);
}

/// Writes `bytes` one at a time, `gap` apart.
async fn dribble(stream: &mut TcpStream, bytes: &[u8], gap: Duration) {
    for byte in bytes {
        tokio::io::AsyncWriteExt::write_all(stream, std::slice::from_ref(byte))
            .await
            .unwrap();
        tokio::time::sleep(gap).await;
    }
}

/// A request that takes three idle timeouts to arrive, a byte at a time, is answered: the idle
/// timeout counts bytes, not whole packets.
#[tokio::test]
async fn a_slow_but_moving_request_is_not_idle() {
    let mut cfg = config(Concurrency::PerRpc);
    cfg.connection.idle_timeout = Duration::from_millis(300);
    cfg.connection.ping_interval = Duration::from_millis(50);
    let server = start(cfg).await;
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    let content = frpc::codegen::Message::to_polyglot(&Text::new("slow but steady"));
    let mut packet = vec![0x00, 0x0f, 0x00, 0x07];
    packet.extend_from_slice(&ECHO.to_be_bytes());
    packet.extend_from_slice(&(content.len() as u32).to_be_bytes());
    packet.extend_from_slice(&content);
    // About 30 bytes, 30 ms apart: about 0.9 s, three idle timeouts.
    dribble(&mut stream, &packet, Duration::from_millis(30)).await;
    let mut framed = FramedRead::new(stream, PacketCodec::new(Framing::Frisbee));
    let reply = loop {
        let packet = tokio::time::timeout(Duration::from_secs(5), framed.next())
            .await
            .expect("a reply")
            .expect("the connection is open")
            .unwrap();
        if packet.op != op::PING {
            break packet;
        }
    };
    assert_eq!((reply.id, reply.op), (7, ECHO));
    let text: Text = frpc::codegen::Message::from_polyglot(&reply.content).unwrap();
    assert_eq!(text.value, "slow but steady");
}

/// The same on the client: a reply that takes three idle timeouts to arrive is received.
#[tokio::test]
async fn a_slow_but_moving_reply_is_not_idle() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let mut framed = FramedRead::new(stream, PacketCodec::new(Framing::Frisbee));
        let request = loop {
            let packet = framed.next().await.unwrap().unwrap();
            if packet.op == ECHO {
                break packet;
            }
        };
        let mut stream = framed.into_inner();
        let mut reply = vec![0x00, 0x0f];
        reply.extend_from_slice(&request.id.to_be_bytes());
        reply.extend_from_slice(&ECHO.to_be_bytes());
        reply.extend_from_slice(&(request.content.len() as u32).to_be_bytes());
        reply.extend_from_slice(&request.content);
        dribble(&mut stream, &reply, Duration::from_millis(30)).await;
        stream
    });
    let mut cfg = ClientConfig::default().extensions(false);
    cfg.connection.idle_timeout = Duration::from_millis(300);
    cfg.connection.ping_interval = Duration::from_millis(50);
    let client = Client::connect_with(addr, cfg).await.unwrap();
    let reply = call(&client, ECHO, "slowly back").await.unwrap();
    assert_eq!(reply.value, "slowly back");
    assert!(!client.is_closed());
    drop(server.await.unwrap());
}

/// A client whose runtime shut down (a client kept in a static and used by several
/// `#[tokio::test]`s, each with its runtime): its connection's tasks are gone with that
/// runtime, so its calls from another runtime fail at once, saying why, instead of waiting
/// forever. (Not in `lone_caller.rs`: its runtimes beside that file's thread-local tracing
/// subscriber made a test there miss an event now and then, under load.)
#[test]
fn a_client_whose_runtime_shut_down_fails_its_calls_at_once() {
    let serving = tokio::runtime::Runtime::new().unwrap();
    let server = serving.block_on(start(config(frpc::Concurrency::PerRpc)));
    let first = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = first.block_on(async {
        let client = Client::connect(server.addr).await.unwrap();
        assert_eq!(call(&client, ECHO, "first").await.unwrap().value, "first");
        client
    });
    drop(first);

    let second = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let result = second.block_on(async {
        // Bounded, so a regression fails the test instead of hanging it.
        tokio::time::timeout(Duration::from_secs(10), call(&client, ECHO, "second")).await
    });
    let err = result.expect("the call fails at once").unwrap_err();
    assert_eq!(err.code(), frpc::Code::Unavailable, "{err}");
    assert!(
        err.to_string()
            .contains("runtime that ran the connection shut down"),
        "{err}"
    );
    assert!(client.is_closed());
    drop(serving);
}

/// A client bound to `source` (a loopback address of its own) connected to `server`.
async fn client_from(source: &str, server: std::net::SocketAddr) -> Client {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(format!("{source}:0").parse().unwrap()).unwrap();
    let stream = socket.connect(server).await.unwrap();
    Client::from_stream(stream, frpc::ClientConfig::default()).unwrap()
}

/// `max_connections_per_address`: one address's connections beyond it are closed at accept,
/// while another address is served, and a freed place serves the address again. One peer
/// cannot take every `max_connections` place.
#[tokio::test]
async fn connections_over_an_addresss_limit_are_closed_at_accept() {
    let cfg = config(Concurrency::PerRpc).max_connections_per_address(2);
    let server = start(cfg).await;
    let first = client_from("127.0.0.1", server.addr).await;
    let second = client_from("127.0.0.1", server.addr).await;
    for client in [&first, &second] {
        assert_eq!(client.negotiation().await, frpc::Negotiated::Extensions);
    }
    let third = client_from("127.0.0.1", server.addr).await;
    let refused = tokio::time::timeout(Duration::from_secs(5), third.negotiation())
        .await
        .expect("no hang");
    assert!(matches!(refused, frpc::Negotiated::Closed(_)), "{refused:?}");
    // Another address is served meanwhile.
    let other = client_from("127.0.0.2", server.addr).await;
    assert_eq!(call(&other, ECHO, "other").await.unwrap().value, "other");
    // Once a place of the first address frees up, it is served again.
    first.close();
    let mut served = false;
    for _ in 0..100 {
        let again = client_from("127.0.0.1", server.addr).await;
        if again.negotiation().await == frpc::Negotiated::Extensions {
            served = true;
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(served);
}
