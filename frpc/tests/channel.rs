//! A reconnecting `Channel` to one server, over real sockets: lazy connect, reconnect after a
//! restart on the same port, failing fast while down, streams, and client layers (timeout,
//! concurrency limit, `retry::Idempotent`).
// The services are `#[frpc::service]`s: without the `macros` feature there is nothing to test.
#![cfg(feature = "macros")]

mod channel_support;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use channel_support::*;
use frpc::channel::Backoff;
use frpc::channel::ChannelState;
use frpc::retry::Idempotent;
use frpc::{Channel, CloseReason, Code, Endpoint, Error};
use tower::ServiceBuilder;
use tower::retry::budget::TpsBudget;

/// A backoff so long that a channel which failed to reconnect stays down for the whole test.
fn long_backoff() -> Backoff {
    Backoff::default()
        .initial(Duration::from_secs(60))
        .max(Duration::from_secs(60))
}

#[tokio::test]
async fn connect_calls_and_reports_connected() {
    let server = TestServer::start("a", "127.0.0.1:0").await;
    let channel = server.endpoint().connect().await.unwrap();
    assert!(channel.is_connected());
    assert_eq!(channel.connected_endpoints(), 1);
    let client = NamedClient::new(channel);
    assert_eq!(client.whoami(Text::default()).await.unwrap().value, "a");
    assert_eq!(server.stats.calls(), 1);
}

#[tokio::test]
async fn connect_to_nothing_is_a_connect_error() {
    let server = TestServer::start("gone", "127.0.0.1:0").await;
    let addr = server.addr;
    let mut server = server;
    server.stop().await;
    let err = Endpoint::from(addr).connect().await.unwrap_err();
    assert!(matches!(err, Error::Connect { .. }), "{err:?}");
    assert_eq!(err.code(), Code::Unavailable);
}

#[tokio::test]
async fn lazy_channel_connects_on_its_first_call() {
    // Nothing listens yet: a lazy channel does not mind.
    let mut server = TestServer::start("late", "127.0.0.1:0").await;
    server.stop().await;
    let channel = Endpoint::from(server.addr).backoff(long_backoff()).connect_lazy();
    assert!(!channel.is_connected());
    server.restart().await;
    let client = NamedClient::new(channel.clone());
    // The first call waits for the connection it starts.
    assert_eq!(client.whoami(Text::default()).await.unwrap().value, "late");
    assert!(channel.is_connected());
}

#[tokio::test]
async fn lazy_channel_to_nothing_fails_its_first_call_as_unavailable() {
    let mut server = TestServer::start("never", "127.0.0.1:0").await;
    server.stop().await;
    let channel = Endpoint::from(server.addr).connect_lazy();
    let err = NamedClient::new(channel)
        .whoami(Text::default())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Unavailable(_)), "{err:?}");
    assert_eq!(err.code(), Code::Unavailable);
}

#[tokio::test]
async fn reconnects_after_the_server_restarts_on_the_same_port() {
    let mut server = TestServer::start("first", "127.0.0.1:0").await;
    let channel = server
        .endpoint()
        .backoff(Backoff::default().initial(Duration::from_millis(10)))
        .connect()
        .await
        .unwrap();
    let client = NamedClient::new(channel.clone());
    assert_eq!(client.whoami(Text::default()).await.unwrap().value, "first");

    server.stop().await;
    within("the channel sees the close", channel.wait_connected(|n| n == 0)).await;
    server.name = "second".into();
    server.restart().await;
    within("reconnect", channel.connected(1)).await;
    assert_eq!(client.whoami(Text::default()).await.unwrap().value, "second");
    assert_eq!(server.stats.calls(), 2);
}

#[tokio::test]
async fn calls_fail_fast_while_the_server_is_down() {
    let mut server = TestServer::start("a", "127.0.0.1:0").await;
    let channel = server.endpoint().backoff(long_backoff()).connect().await.unwrap();
    let client = NamedClient::new(channel.clone().with_timeout(Duration::from_secs(30)));
    client.whoami(Text::default()).await.unwrap();
    server.stop().await;

    // The first call may still meet the closing connection; either way it is `Unavailable`.
    let err = client.whoami(Text::default()).await.unwrap_err();
    assert_eq!(err.code(), Code::Unavailable, "{err:?}");
    // The reconnect attempt is refused and the next is a minute away: calls do not wait
    // (neither for the backoff nor for their 30 s timeout).
    let started = Instant::now();
    for _ in 0..3 {
        let err = client.whoami(Text::default()).await.unwrap_err();
        assert!(matches!(err, Error::Unavailable(_)), "{err:?}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(!channel.is_connected());
}

#[tokio::test]
async fn streams_open_on_the_current_connection() {
    let mut server = TestServer::start("s", "127.0.0.1:0").await;
    let channel = server
        .endpoint()
        .backoff(Backoff::default().initial(Duration::from_millis(10)))
        .connect()
        .await
        .unwrap();
    let client = NamedClient::new(channel.clone());
    let mut names = client.names(Text::default()).await.unwrap();
    let mut got = Vec::new();
    while let Some(text) = names.message().await.unwrap() {
        got.push(text.value);
    }
    assert_eq!(got, ["s", "s", "s"]);

    // And again after a reconnect.
    server.stop().await;
    within("the channel sees the close", channel.wait_connected(|n| n == 0)).await;
    server.name = "t".into();
    server.restart().await;
    within("reconnect", channel.connected(1)).await;
    let mut names = client.names(Text::default()).await.unwrap();
    assert_eq!(names.message().await.unwrap().unwrap().value, "t");
}

#[tokio::test]
async fn timeout_layer_fails_slow_calls_with_deadline_exceeded() {
    let server = TestServer::start("a", "127.0.0.1:0").await;
    let channel = server.endpoint().connect().await.unwrap();
    let layered = channel.with_layer(ServiceBuilder::new().timeout(Duration::from_millis(50)));
    let client = NamedClient::new(layered);
    // `hold` waits for a permit that never comes.
    let err = client.hold(Text::default()).await.unwrap_err();
    assert!(matches!(err, Error::Layer(_)), "{err:?}");
    assert_eq!(err.code(), Code::DeadlineExceeded);
    // Fast calls go through.
    assert_eq!(client.whoami(Text::default()).await.unwrap().value, "a");
}

/// Client layers' errors keep their codes, as with tonic: a layer failing with a `Status` fails
/// the call with that status (its code was UNKNOWN), and tower's load shedding is UNAVAILABLE.
#[tokio::test]
async fn client_layer_errors_keep_their_codes() {
    let server = TestServer::start("a", "127.0.0.1:0").await;
    let channel = server.endpoint().connect().await.unwrap();
    let refuse = tower::service_fn(|_: frpc::channel::Request| async {
        Err::<frpc::channel::Reply, _>(frpc::Status::unauthenticated("no token"))
    });
    let refusing = channel.with_layer(tower::layer::layer_fn(move |_| refuse));
    let err = NamedClient::new(refusing)
        .whoami(Text::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated, "{err}");
    assert_eq!(err.status().map(|status| status.message()), Some("no token"));

    // One call held in a one-place limit: the next is shed.
    let shedding = channel.with_layer(ServiceBuilder::new().load_shed().concurrency_limit(1));
    let client = NamedClient::new(shedding);
    let held = tokio::spawn({
        let client = client.clone();
        async move { client.hold(Text::default()).await }
    });
    within("held", server.stats.wait_active(1)).await;
    let err = client.whoami(Text::default()).await.unwrap_err();
    assert!(matches!(err, Error::Layer(_)), "{err:?}");
    assert_eq!(err.code(), Code::Unavailable, "{err}");
    server.stats.gate.add_permits(1);
    assert_eq!(held.await.unwrap().unwrap().value, "a");
}

#[tokio::test]
async fn concurrency_limit_layer_bounds_calls_in_flight() {
    for limit in [1, 3] {
        let server = TestServer::start("a", "127.0.0.1:0").await;
        let channel = server.endpoint().connect().await.unwrap();
        let client = NamedClient::new(channel.with_layer(ServiceBuilder::new().concurrency_limit(limit)));
        let calls: Vec<_> = (0..3)
            .map(|_| {
                let client = client.clone();
                tokio::spawn(async move { client.hold(Text::default()).await })
            })
            .collect();
        // `limit` calls get in...
        within("calls enter", server.stats.wait_active(limit)).await;
        // ...and the others only as those finish: let them out one by one.
        for _ in 0..3 {
            server.stats.gate.add_permits(1);
        }
        for call in calls {
            assert_eq!(call.await.unwrap().unwrap().value, "a");
        }
        assert_eq!(
            server.stats.max_active.load(Ordering::SeqCst),
            limit,
            "limit {limit}"
        );
    }
}

#[tokio::test]
async fn idempotent_methods_are_retried_on_unavailable() {
    let server = TestServer::start("a", "127.0.0.1:0").await;
    let channel = server.endpoint().connect().await.unwrap();
    server.stats.flaky_failures.store(2, Ordering::SeqCst);
    let retrying =
        Idempotent::new([named::FLAKY]).backoff(Backoff::default().initial(Duration::from_millis(1)));
    let client = NamedClient::new(channel.with_layer(ServiceBuilder::new().retry(retrying)));
    assert_eq!(client.flaky(Text::default()).await.unwrap().value, "a");
    assert_eq!(server.stats.flaky_calls.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn methods_not_marked_idempotent_are_not_retried() {
    let server = TestServer::start("a", "127.0.0.1:0").await;
    let channel = server.endpoint().connect().await.unwrap();
    server.stats.flaky_failures.store(1, Ordering::SeqCst);
    let client =
        NamedClient::new(channel.with_layer(ServiceBuilder::new().retry(Idempotent::new([named::WHOAMI]))));
    let err = client.flaky(Text::default()).await.unwrap_err();
    assert_eq!(err.code(), Code::Unavailable);
    assert_eq!(server.stats.flaky_calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn retries_stop_at_max_retries_and_at_an_empty_budget() {
    let server = TestServer::start("a", "127.0.0.1:0").await;
    let channel = server.endpoint().connect().await.unwrap();
    let quick = Backoff::default().initial(Duration::from_millis(1));

    server.stats.flaky_failures.store(10, Ordering::SeqCst);
    let policy = Idempotent::new([named::FLAKY]).backoff(quick).max_retries(2);
    let client = NamedClient::new(channel.with_layer(ServiceBuilder::new().retry(policy)));
    assert_eq!(
        client.flaky(Text::default()).await.unwrap_err().code(),
        Code::Unavailable
    );
    assert_eq!(server.stats.flaky_calls.load(Ordering::SeqCst), 3);

    // A budget with no reserve and no share of calls allows no retry at all.
    server.stats.flaky_calls.store(0, Ordering::SeqCst);
    let broke = TpsBudget::new(Duration::from_secs(1), 0, 0.0);
    let policy = Idempotent::new([named::FLAKY]).backoff(quick).budget(broke);
    let client = NamedClient::new(channel.with_layer(ServiceBuilder::new().retry(policy)));
    assert_eq!(
        client.flaky(Text::default()).await.unwrap_err().code(),
        Code::Unavailable
    );
    assert_eq!(server.stats.flaky_calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn retry_over_a_restart_reaches_the_server_again() {
    // A channel that is down fails at once with `Unavailable`: an idempotent call retried
    // with enough backoff gets through once the server is back.
    let mut server = TestServer::start("a", "127.0.0.1:0").await;
    let channel = server
        .endpoint()
        .backoff(
            Backoff::default()
                .initial(Duration::from_millis(5))
                .max(Duration::from_millis(20)),
        )
        .connect()
        .await
        .unwrap();
    server.stop().await;
    within("the channel sees the close", channel.wait_connected(|n| n == 0)).await;
    let policy = Idempotent::new([named::WHOAMI])
        .backoff(
            Backoff::default()
                .initial(Duration::from_millis(20))
                .max(Duration::from_millis(200)),
        )
        .max_retries(100)
        .budget(TpsBudget::new(Duration::from_secs(10), 1000, 1.0));
    let client = NamedClient::new(channel.with_layer(ServiceBuilder::new().retry(policy)));
    let call = tokio::spawn(async move { client.whoami(Text::default()).await });
    server.restart().await;
    assert_eq!(
        within("the retried call", call).await.unwrap().unwrap().value,
        "a"
    );
}

#[tokio::test]
async fn channel_is_a_tower_service() {
    use tower::ServiceExt;
    let server = TestServer::start("a", "127.0.0.1:0").await;
    let channel: Channel = server.endpoint().connect().await.unwrap();
    let request = frpc::channel::Request {
        op: named::WHOAMI,
        path: "",
        body: frpc::codegen::Message::to_polyglot(&Text::default()),
        timeout: None,
        metadata: None,
    };
    let reply = channel.oneshot(request).await.unwrap();
    let text: Text = frpc::codegen::Message::from_polyglot(&reply.body).unwrap();
    assert_eq!(text.value, "a");
}

#[tokio::test]
async fn metadata_goes_both_ways_through_plain_and_layered_channels() {
    let server = TestServer::start("a", "127.0.0.1:0").await;
    let channel = server.endpoint().connect().await.unwrap();
    let layered = channel.with_layer(ServiceBuilder::new().concurrency_limit(4));
    for channel in [channel, layered] {
        let mut md = frpc::Metadata::new();
        md.insert("k", "v").unwrap();
        let slot = frpc::MetadataSlot::new();
        let client = NamedClient::new(channel)
            .with_metadata(md)
            .with_response_metadata(&slot);
        assert_eq!(client.meta(Text::default()).await.unwrap().value, "v");
        assert_eq!(slot.take().unwrap().get("server"), Some("a"));
    }
}

/// Waiting for a connection attempt counts towards the call's timeout (the attempt here hangs:
/// the peer takes the TCP connection and never answers the TLS handshake).
#[cfg(feature = "tls")]
#[tokio::test]
async fn a_call_waiting_for_a_connection_attempt_keeps_to_its_timeout() {
    use frpc::tls::rustls;
    use std::sync::Arc;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    let channel = Endpoint::from(addr)
        .connect_timeout(Duration::from_secs(60))
        .tls("localhost", Arc::new(tls))
        .connect_lazy();
    let client = NamedClient::new(channel.with_timeout(Duration::from_millis(100)));
    let started = Instant::now();
    let err = client.whoami(Text::default()).await.unwrap_err();
    assert!(matches!(err, Error::Timeout(_)), "{err:?}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    silent.abort();
}

/// A listener that accepts every connection and closes it at once (a server at
/// `max_connections`, a proxy resetting peers), counting them.
async fn closing_listener() -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    closing_listener_after(None).await
}

/// [`closing_listener`], writing `farewell` to each connection before it closes it.
async fn closing_listener_after(
    farewell: Option<frpc::wire::Packet>,
) -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    use futures_util::SinkExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            if let Some(packet) = farewell.clone() {
                let codec = frpc::wire::PacketCodec::new(frpc::Framing::Frisbee);
                let mut framed = tokio_util::codec::Framed::new(stream, codec);
                let _ = framed.send(packet).await;
            }
        }
    });
    (addr, accepted)
}

/// `connect` succeeds only for a connection that works: a server closing at accept is an
/// error at once, a black hole an error after one `connect_timeout`.
#[tokio::test]
async fn connect_fails_for_connections_that_do_not_work() {
    let (addr, _) = closing_listener().await;
    let err = within("closing", Endpoint::from(addr).connect())
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unavailable, "{err}");

    // A black hole: accepts and never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let holder = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    // Connects with `config`: a `Connect` error with `TimedOut`, within `bound`.
    let times_out = |config: frpc::ClientConfig, bound: Duration| async move {
        let started = Instant::now();
        let err = within("black hole", Endpoint::from(addr).client_config(config).connect())
            .await
            .unwrap_err();
        assert!(
            matches!(&err, Error::Connect { source, .. } if source.kind() == std::io::ErrorKind::TimedOut),
            "{err}"
        );
        assert!(started.elapsed() < bound, "{:?}", started.elapsed());
    };
    for extensions in [true, false] {
        let config = frpc::ClientConfig::default()
            .extensions(extensions)
            .connect_timeout(Duration::from_secs(1));
        // One connect timeout, not two (with slack for a busy machine).
        times_out(config, Duration::from_millis(1800)).await;
    }
    // An idle timeout shorter than the connect timeout closes the black hole first: the same
    // error, at the idle timeout.
    let mut config = frpc::ClientConfig::default().connect_timeout(Duration::from_secs(10));
    config.connection.idle_timeout = Duration::from_millis(300);
    config.connection.ping_interval = Duration::from_millis(100);
    times_out(config, Duration::from_secs(5)).await;
    holder.abort();
}

/// Calls `client` for a second, asserting that every call fails at once with UNAVAILABLE;
/// returns how many it made.
async fn unavailable_for_a_second(client: &NamedClient<Channel>) -> usize {
    let started = Instant::now();
    let mut calls = 0;
    while started.elapsed() < Duration::from_secs(1) {
        let err = within("a call", client.whoami(Text::default()))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::Unavailable, "{err}");
        calls += 1;
        tokio::task::yield_now().await;
    }
    calls
}

/// Against a server that closes every connection at accept (or after a packet that answers
/// nothing the client sent), a channel backs off between attempts instead of dialling in a
/// tight loop, and its calls fail fast with UNAVAILABLE rather than waiting out their timeout.
#[tokio::test]
async fn connections_closed_at_accept_back_off() {
    // A reply to a call nobody made is no call served: the channel redialled such a server at
    // once, 12,000 times a second (session 30's probe).
    let unsolicited = frpc::wire::Packet::new(777, 10, bytes::Bytes::from_static(b"\x08\x00"));
    for farewell in [None, Some(unsolicited)] {
        let (addr, accepted) = closing_listener_after(farewell.clone()).await;
        let channel = Endpoint::from(addr)
            .timeout(Duration::from_secs(30))
            .connect_lazy();
        let client = NamedClient::new(channel);
        let calls = unavailable_for_a_second(&client).await;
        // Backoff of 100 ms doubling: a handful of connections in a second (a tight loop made
        // thousands), while every call failed at once.
        let connections = accepted.load(Ordering::SeqCst);
        assert!(
            connections <= 8,
            "{connections} connections in a second ({farewell:?})"
        );
        assert!(calls > connections, "{calls} calls, {connections} connections");
    }
}

/// Waits until `changes` reports a state for which `done` holds; returns it.
async fn until(
    changes: &mut frpc::channel::StateChanges,
    channel: &Channel,
    done: impl Fn(&ChannelState) -> bool,
) -> ChannelState {
    let mut state = channel.state();
    while !done(&state) {
        state = within("a state change", changes.changed()).await;
    }
    state
}

/// A channel reports its state changes, its reconnections and why its connection closed, in
/// structured form; so does a client.
#[tokio::test]
async fn channels_and_clients_report_state_and_close_reasons() {
    let mut server = TestServer::start("s", "127.0.0.1:0").await;
    let channel = server
        .endpoint()
        .backoff(Backoff::default().initial(Duration::from_millis(10)))
        .connect_lazy();
    assert_eq!(channel.state(), ChannelState::Idle);
    let mut changes = channel.state_changes();
    let client = NamedClient::new(channel.clone());
    client.whoami(Text::default()).await.unwrap();
    until(&mut changes, &channel, |s| *s == ChannelState::Ready).await;
    assert_eq!((channel.reconnects(), channel.last_close_reason()), (0, None));

    server.stop().await;
    let down = until(&mut changes, &channel, |s| {
        matches!(s, ChannelState::TransientFailure(_) | ChannelState::Connecting)
    })
    .await;
    assert_ne!(down, ChannelState::Ready);
    assert!(
        matches!(channel.last_close_reason(), Some(CloseReason::PeerClosed(_))),
        "{:?}",
        channel.last_close_reason()
    );
    server.restart().await;
    until(&mut changes, &channel, |s| *s == ChannelState::Ready).await;
    assert_eq!(channel.reconnects(), 1);

    // A client's close reason.
    let plain = frpc::Client::connect(server.addr).await.unwrap();
    assert_eq!(plain.close_reason(), None);
    plain.close();
    assert_eq!(
        plain.close_reason(),
        Some(CloseReason::Local("closed by the client".into()))
    );
    let other = frpc::Client::connect(server.addr).await.unwrap();
    server.stop().await;
    within("the client sees the close", other.closed()).await;
    assert!(
        matches!(other.close_reason(), Some(CloseReason::PeerClosed(_))),
        "{:?}",
        other.close_reason()
    );

    // Balanced: ready while an endpoint is, a failure once none is.
    let balanced = Channel::balance_list([server.endpoint()]);
    let mut changes = balanced.state_changes();
    let state = until(&mut changes, &balanced, |s| {
        matches!(s, ChannelState::TransientFailure(_))
    })
    .await;
    assert_eq!(
        state,
        ChannelState::TransientFailure("no endpoint is connected".into())
    );
}

/// A TCP forwarder to `target` that counts the connections it accepted: the attempts a channel
/// makes, even those the server closes at accept.
async fn counting_forwarder(
    target: std::net::SocketAddr,
) -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                if let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
    (addr, accepted)
}

/// An frpc server at `max_connections` closes new connections at accept: a channel to it backs
/// off between attempts (a handful in a second, not thousands) and its calls fail fast with
/// UNAVAILABLE; the connection holding the slot is served throughout.
#[tokio::test]
async fn a_server_at_max_connections_is_not_dialled_in_a_loop() {
    let config = frpc::ServerConfig::default().max_connections(1);
    let bound = frpc::Server::builder()
        .config(config)
        .route(10, |_, packet| async move { Some(packet.content) })
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let server = bound.local_addr();
    let serving = tokio::spawn(bound.serve());
    // The one slot, taken and proven served (the server answered its offer).
    let holder = frpc::Client::connect(server).await.unwrap();
    assert!(within("the holder's negotiation", holder.negotiated()).await);

    let (addr, attempts) = counting_forwarder(server).await;
    let channel = Endpoint::from(addr)
        .backoff(Backoff::default().initial(Duration::from_millis(100)))
        .timeout(Duration::from_secs(30))
        .connect_lazy();
    let client = NamedClient::new(channel.clone());
    let calls = unavailable_for_a_second(&client).await;
    // 100 ms doubling (jitter ±20 %): at most 5 attempts fit in a second; a tight loop made
    // thousands. Load only makes fewer.
    let attempts = attempts.load(Ordering::SeqCst);
    assert!((1..=8).contains(&attempts), "{attempts} attempts in a second");
    assert!(calls > attempts, "{calls} calls, {attempts} attempts");
    assert!(matches!(
        channel.state(),
        ChannelState::TransientFailure(_) | ChannelState::Connecting
    ));
    assert!(!holder.is_closed());
    serving.abort();
}

/// `Client::negotiation` tells a dead connection from a plain peer: closed at accept is
/// `Closed` with its reason; an frpc server is `Extensions`, or `Plain` when no offer was made
/// (it answered the PING, as a Go peer does).
#[tokio::test]
async fn negotiation_tells_a_dead_connection_from_a_plain_peer() {
    let (closing, _) = closing_listener().await;
    let dead = frpc::Client::connect(closing).await.unwrap();
    let shown = within("a dead connection", dead.negotiation()).await;
    assert!(
        matches!(shown, frpc::Negotiated::Closed(CloseReason::PeerClosed(_))),
        "{shown:?}"
    );
    assert!(!within("negotiated", dead.negotiated()).await);

    let server = TestServer::start("n", "127.0.0.1:0").await;
    let frpc_peer = frpc::Client::connect(server.addr).await.unwrap();
    assert_eq!(
        within("an frpc server", frpc_peer.negotiation()).await,
        frpc::Negotiated::Extensions
    );
    let config = frpc::ClientConfig::default().extensions(false);
    let plain = frpc::Client::connect_with(server.addr, config).await.unwrap();
    assert_eq!(
        within("a plain connection", plain.negotiation()).await,
        frpc::Negotiated::Plain
    );
    assert!(!plain.is_closed());
}

/// A server that answers the handshake and then closes every connection at once is not dialled
/// in a loop either: a connection that served no call counts as a failed attempt.
#[tokio::test]
async fn connections_that_answer_then_close_back_off() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            // Answer the offer (ACCEPT nothing) and every PING, then hang up.
            tokio::spawn(async move {
                use futures_util::{SinkExt, StreamExt};
                let mut raw = tokio_util::codec::Framed::new(
                    stream,
                    frpc::wire::PacketCodec::new(frpc::Framing::Frisbee),
                );
                while let Some(Ok(packet)) = raw.next().await {
                    let answer = match (packet.op, packet.id) {
                        (0xFFFF, 1) => {
                            frpc::wire::Packet::new(2, 0xFFFF, bytes::Bytes::from_static(&[1, 0, 0, 0, 0]))
                        }
                        (frpc::wire::op::PING, _) => frpc::wire::Packet::pong(),
                        _ => continue,
                    };
                    let _ = raw.send(answer).await;
                    return;
                }
            });
        }
    });
    let channel = Endpoint::from(addr).connect_lazy();
    let client = NamedClient::new(channel);
    let started = Instant::now();
    let mut calls = 0;
    while started.elapsed() < Duration::from_secs(1) {
        let _ = within("a call", client.whoami(Text::default())).await;
        calls += 1;
    }
    let connections = accepted.load(Ordering::SeqCst);
    assert!(
        connections <= 8,
        "{connections} connections in a second ({calls} calls)"
    );
}

/// Calls failing at once yield: a caller retrying in a loop on a one-thread runtime leaves room
/// for other tasks.
#[tokio::test]
async fn failing_calls_yield_to_other_tasks() {
    let (addr, _) = closing_listener().await;
    let client = NamedClient::new(Endpoint::from(addr).connect_lazy());
    let other = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = other.clone();
    tokio::spawn(async move { flag.store(true, Ordering::SeqCst) });
    let mut calls = 0;
    while !other.load(Ordering::SeqCst) {
        let _ = client.whoami(Text::default()).await;
        calls += 1;
        assert!(calls < 100_000, "the other task never ran");
    }
}

/// Polls `call` once, as its caller's first await does: it starts waiting for a connection.
/// Returns whether it is still pending.
async fn poll_once<F: std::future::Future>(call: std::pin::Pin<&mut F>) -> bool {
    let mut call = call;
    std::future::poll_fn(|cx| std::task::Poll::Ready(call.as_mut().poll(cx).is_pending())).await
}

/// Checks that `call`, which waited for the connection `channel` has now, finds its `limit` used
/// up by that wait: it is timed out (DEADLINE_EXCEEDED), as any call past its deadline. Before,
/// what was left of the limit (nothing) went on to the client as the call's timeout, which it
/// refused as a zero timeout (`Error::Config`, INVALID_ARGUMENT). Tokio's clock is paused and moved on
/// by `limit`: the connection is there and all the time went in waiting for it, whatever the
/// machine's speed.
async fn check_used_up<T: std::fmt::Debug>(
    channel: &Channel,
    limit: Duration,
    mut call: std::pin::Pin<&mut impl std::future::Future<Output = Result<T, Error>>>,
) {
    assert!(
        poll_once(call.as_mut()).await,
        "the call did not wait for the connection"
    );
    within("the connection", channel.connected(1)).await;
    tokio::time::pause();
    tokio::time::advance(limit).await;
    let err = call.await.unwrap_err();
    assert!(matches!(err, Error::Timeout(t) if t == limit), "{err:?}");
    assert_eq!(err.code(), Code::DeadlineExceeded);
}

/// A call on a lazy channel whose timeout runs out as the connection it waited for comes.
#[tokio::test]
async fn a_timeout_used_up_waiting_for_the_connection_is_a_timeout() {
    let server = TestServer::start("late", "127.0.0.1:0").await;
    let limit = Duration::from_millis(50);
    let channel = server.endpoint().connect_lazy().with_timeout(limit);
    let client = NamedClient::new(channel.clone());
    check_used_up(&channel, limit, std::pin::pin!(client.whoami(Text::default()))).await;
}

/// The same for a stream on a balanced channel waiting for its first endpoint.
#[tokio::test]
async fn a_timeout_used_up_waiting_for_an_endpoint_is_a_timeout() {
    let server = TestServer::start("late", "127.0.0.1:0").await;
    let limit = Duration::from_millis(50);
    let channel = Channel::balance_list([server.endpoint()]).with_timeout(limit);
    let client = NamedClient::new(channel.clone());
    check_used_up(&channel, limit, std::pin::pin!(client.names(Text::default()))).await;
}
