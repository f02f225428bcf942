//! Issue #14: whole-call timeouts against a peer that stops reading, the connection living as
//! long as any handle, configuration refused with clear errors, and errors that name the
//! address or the likely framing mismatch.
// The services are `#[frpc::service]`s: without the `macros` feature there is nothing to test.
#![cfg(feature = "macros")]

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use frpc::codegen;
use frpc::{Client, ClientConfig, Error, Framing, Server, ServerConfig};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The test service on 127.0.0.1:0, with the server handle (for its connection count).
async fn serve() -> (SocketAddr, Server) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = Server::builder()
        .add_service(TestService::default())
        .build()
        .unwrap();
    let serving = server.clone();
    tokio::spawn(async move { serving.serve_listener(listener).await });
    (addr, server)
}

/// Polls `condition` every 10 ms for up to 5 s (waiting for cleanup, not for readiness).
async fn eventually(mut condition: impl FnMut() -> bool) -> bool {
    for _ in 0..500 {
        if condition() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    condition()
}

/// A Frisbee PING packet (10-byte header, no content).
const PING: [u8; 10] = [0x00, 0x0f, 0, 0, 0, 0, 0, 0, 0, 0];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_fails_within_its_timeout_against_a_peer_that_stops_reading() {
    // The peer accepts, keeps the connection alive with PINGs and never reads: once the socket
    // buffers and the write queue are full, calls wait for room to send.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let peer = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        loop {
            if stream.write_all(&PING).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let limit = Duration::from_millis(200);
    let config = ClientConfig::default().timeout(Some(limit));
    let client = Client::connect_with(addr, config).await.unwrap();
    let payload = "x".repeat(32 * 1024);
    let calls: Vec<_> = (0..1600)
        .map(|_| {
            let (client, payload) = (client.clone(), payload.clone());
            tokio::spawn(async move {
                let started = Instant::now();
                // Bounded here too, so that a call the timeout misses fails the test, not hangs it.
                let result =
                    tokio::time::timeout(Duration::from_secs(2), call(&client, ECHO, &payload)).await;
                (result, started.elapsed())
            })
        })
        .collect();
    let (mut slowest, mut blocked) = (Duration::ZERO, 0);
    for call in calls {
        match call.await.unwrap() {
            (Ok(Err(Error::Timeout(_))), elapsed) => slowest = slowest.max(elapsed),
            (Ok(other), _) => panic!("expected Error::Timeout, got {other:?}"),
            (Err(_), _) => blocked += 1,
        }
    }
    assert_eq!(blocked, 0, "calls still blocked after 2 s");
    // The slack covers scheduling 1,600 tasks that each encode 32 KiB on a busy 2-core
    // machine; a call the timeout missed would take the full 2 s.
    assert!(
        slowest <= limit + Duration::from_millis(400),
        "a call took {slowest:?} with a {limit:?} timeout"
    );
    assert_eq!(client.inflight(), 0, "timed-out calls leave no entry behind");
    // The write queue is still full: opening a stream (open message and request) times out too.
    let started = Instant::now();
    let request = Text::new("1");
    let open = codegen::call_server_streaming::<Text, Text>(&client, COUNT, &request);
    let opened = tokio::time::timeout(Duration::from_secs(2), open)
        .await
        .expect("opening a stream is bounded by the call timeout");
    assert!(matches!(opened, Err(Error::Timeout(_))), "{opened:?}");
    assert!(started.elapsed() <= limit + Duration::from_millis(100));
    assert_eq!(client.open_streams(), 0, "the stream that timed out is forgotten");
    peer.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_waits_at_most_the_stream_idle_timeout_per_message() {
    let (addr, _server) = serve().await;
    let config = ClientConfig::default().stream_idle_timeout(Some(Duration::from_millis(100)));
    let client = Client::connect_with(addr, config).await.unwrap();
    let mut chat = codegen::call_bidi::<Text, Text>(&client, CHAT).await.unwrap();
    // Messages that come in time are delivered; the wait counts from each call to `message`.
    chat.send(Text::new("a")).await.unwrap();
    assert_eq!(chat.message().await.unwrap(), Some(Text::new("a")));
    let started = Instant::now();
    let result = chat.message().await;
    assert!(matches!(result, Err(Error::Timeout(_))), "{result:?}");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(100) && waited < Duration::from_secs(1),
        "{waited:?}"
    );
    // The stream has ended; the connection has not.
    assert_eq!(chat.message().await.unwrap(), None);
    assert_eq!(call(&client, ECHO, "x").await.unwrap().value, "x");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_stream_outlives_the_dropped_client() {
    let (addr, server) = serve().await;
    let client = Client::connect(addr).await.unwrap();
    let mut counting = codegen::call_server_streaming::<Text, Text>(&client, COUNT, &Text::new("1000"))
        .await
        .unwrap();
    drop(client);
    let mut received = 0;
    while let Some(message) = counting.message().await.unwrap() {
        assert_eq!(message.value, received.to_string());
        received += 1;
    }
    assert_eq!(received, 1000);
    assert_eq!(server.connections(), 1, "the stream handle keeps the connection");
    drop(counting);
    assert!(
        eventually(|| server.connections() == 0).await,
        "the last handle closes the connection"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bidi_call_outlives_the_dropped_client() {
    let (addr, server) = serve().await;
    let client = Client::connect(addr).await.unwrap();
    let mut chat = codegen::call_bidi::<Text, Text>(&client, CHAT).await.unwrap();
    let mut join = codegen::call_client_streaming::<Text, Text>(&client, JOIN)
        .await
        .unwrap();
    drop(client);
    for word in ["a", "b", "c"] {
        chat.send(Text::new(word)).await.unwrap();
        assert_eq!(chat.message().await.unwrap(), Some(Text::new(word)));
        join.send(Text::new(word)).await.unwrap();
    }
    chat.close_send().await.unwrap();
    assert_eq!(chat.message().await.unwrap(), None);
    drop(chat);
    assert_eq!(join.close_and_recv().await.unwrap().value, "a,b,c");
    assert!(eventually(|| server.connections() == 0).await);
}

/// Each broken field, and the name the error must give.
fn broken_connection_configs() -> Vec<(&'static str, frpc::ConnectionConfig)> {
    vec![
        (
            "ping_interval",
            frpc::ConnectionConfig::default().ping_interval(Duration::ZERO),
        ),
        (
            "idle_timeout",
            frpc::ConnectionConfig::default().idle_timeout(Duration::ZERO),
        ),
        (
            "ping_interval",
            frpc::ConnectionConfig::default().ping_interval(Duration::MAX),
        ),
        ("write_queue", frpc::ConnectionConfig::default().write_queue(0)),
        (
            "write_queue_bytes",
            frpc::ConnectionConfig::default().write_queue_bytes(0),
        ),
        (
            "stream_buffer",
            frpc::ConnectionConfig::default().stream_buffer(0),
        ),
        ("max_streams", frpc::ConnectionConfig::default().max_streams(0)),
        (
            "stream_window",
            frpc::ConnectionConfig::default().stream_window(0),
        ),
        (
            "stream_window",
            frpc::ConnectionConfig::default().stream_window((1 << 20) + 1),
        ),
        (
            "max_content_length",
            frpc::ConnectionConfig::default().max_content_length(0),
        ),
    ]
}

fn assert_config_error(result: Result<impl std::fmt::Debug, Error>, field: &str) {
    match result {
        Err(Error::Config(message)) => assert!(message.contains(field), "{field}: {message}"),
        other => panic!("{field}: expected Error::Config, got {other:?}"),
    }
}

#[tokio::test]
async fn invalid_server_config_is_refused_at_build_naming_the_field() {
    let mut configs: Vec<(&str, ServerConfig)> = broken_connection_configs()
        .into_iter()
        .map(|(field, connection)| (field, ServerConfig::default().connection(connection)))
        .collect();
    configs.push(("max_connections", ServerConfig::default().max_connections(0)));
    configs.push((
        "max_connections_per_address",
        ServerConfig::default().max_connections_per_address(0),
    ));
    configs.push((
        "max_inflight_per_connection",
        ServerConfig::default().max_inflight_per_connection(0),
    ));
    configs.push((
        "Limited(0)",
        ServerConfig::default().concurrency(frpc::Concurrency::Limited(0)),
    ));
    for (field, config) in configs {
        assert_config_error(Server::builder().config(config).build(), field);
    }
    // A long ping interval with the default idle timeout stays allowed (see ConnectionConfig).
    let mut quiet = ServerConfig::default();
    quiet.connection.ping_interval = Duration::from_secs(3600);
    Server::builder().config(quiet).build().unwrap();
}

#[tokio::test]
async fn invalid_client_config_is_refused_before_connecting_naming_the_field() {
    let (addr, _server) = serve().await;
    let mut configs: Vec<(&str, ClientConfig)> = broken_connection_configs()
        .into_iter()
        .map(|(field, connection)| (field, ClientConfig::default().connection(connection)))
        .collect();
    configs.push((
        "connect_timeout",
        ClientConfig::default().connect_timeout(Duration::ZERO),
    ));
    configs.push(("timeout", ClientConfig::default().timeout(Some(Duration::ZERO))));
    configs.push((
        "stream_idle_timeout",
        ClientConfig::default().stream_idle_timeout(Some(Duration::ZERO)),
    ));
    for (field, config) in configs {
        assert_config_error(Client::connect_with(addr, config.clone()).await, field);
        let stream = TcpStream::connect(addr).await.unwrap();
        assert_config_error(Client::from_stream(stream, config), field);
    }
}

#[tokio::test]
async fn connect_and_bind_errors_name_the_address() {
    let taken = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = taken.local_addr().unwrap();
    let err = Server::builder().serve(addr).await.unwrap_err();
    assert!(matches!(err, Error::Bind { addr: a, .. } if a == addr), "{err:?}");
    assert!(err.to_string().contains(&addr.to_string()), "{err}");
    drop(taken);
    // Nobody listens there any more.
    let err = Client::connect(addr).await.unwrap_err();
    assert!(
        matches!(err, Error::Connect { addr: a, .. } if a == addr),
        "{err:?}"
    );
    assert!(err.to_string().contains(&addr.to_string()), "{err}");
}

#[tokio::test]
async fn a_connect_that_gets_no_answer_fails_after_connect_timeout() {
    // A listener whose accept queue is full drops further SYNs: the connect gets no answer.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(1).unwrap();
    let addr = listener.local_addr().unwrap();
    let mut filling = Vec::new();
    for _ in 0..8 {
        match tokio::time::timeout(Duration::from_millis(200), TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => filling.push(stream),
            _ => break,
        }
    }
    let limit = Duration::from_millis(300);
    let config = ClientConfig::default().connect_timeout(limit);
    let started = Instant::now();
    let err = Client::connect_with(addr, config).await.unwrap_err();
    let waited = started.elapsed();
    match &err {
        Error::Connect { addr: a, source } => {
            assert_eq!(*a, addr);
            assert_eq!(source.kind(), std::io::ErrorKind::TimedOut, "{err}");
        }
        other => panic!("expected Error::Connect, got {other:?}"),
    }
    assert!(waited >= limit && waited < limit * 3, "{waited:?}");
}

/// A call's error against a peer that hangs up right after our first packet, or answers in
/// the other framing: it says the framing is the likely cause and names the other one.
#[tokio::test]
async fn a_framing_mismatch_is_named_in_the_error() {
    for (peer_sends, ours, other) in [
        (&[][..], Framing::Frisbee, "Framing::Legacy"),
        (&[0u8; 8][..], Framing::Frisbee, "Framing::Legacy"), // a legacy PING
        (&[][..], Framing::Legacy, "Framing::Frisbee"),
    ] {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let _ = stream.write_all(peer_sends).await;
            // Like a frisbee-go v0.11 server seeing a legacy header: read, then hang up.
            let mut first = [0u8; 1];
            let _ = stream.read(&mut first).await;
        });
        let mut config = ClientConfig::default();
        config.connection.framing = ours;
        let client = Client::connect_with(addr, config).await.unwrap();
        let err = tokio::time::timeout(Duration::from_secs(5), call(&client, ECHO, "hi"))
            .await
            .expect("no hang")
            .unwrap_err();
        assert!(matches!(err, Error::ConnectionClosed { .. }), "{err:?}");
        let text = err.to_string();
        assert!(text.contains("other framing") && text.contains(other), "{text}");
    }
}

/// A raw peer that sends `calls` echo requests of `size` bytes on a socket with a small receive
/// buffer, then neither reads nor sends anything: the server's replies stick in the socket
/// buffers and its write queue. Returns the socket (held open, unread).
async fn silent_peer_with_stuck_replies(addr: SocketAddr, calls: u16, size: usize) -> tokio::net::TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket.connect(addr).await.unwrap();
    let content = frpc::codegen::Message::to_polyglot(&Text::new("x".repeat(size)));
    let mut framed =
        tokio_util::codec::FramedWrite::new(&mut stream, frpc::wire::PacketCodec::new(Framing::Frisbee));
    for id in 0..calls {
        let packet = frpc::wire::Packet::new(id, ECHO, content.clone());
        futures_util::SinkExt::send(&mut framed, packet).await.unwrap();
    }
    drop(framed);
    stream
}

/// A server config that notices a silent peer within half a second.
fn quick_idle() -> ServerConfig {
    let mut config = ServerConfig::default();
    config.connection.idle_timeout = Duration::from_millis(300);
    config.connection.ping_interval = Duration::from_millis(100);
    config
}

/// A peer that stops reading and then falls silent is dropped after the idle timeout, even
/// with the server's replies stuck behind its full socket buffer (they kept the connection
/// open for good). Both concurrency modes that answer on the reader and in tasks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_peer_with_replies_stuck_in_its_socket_is_dropped() {
    for concurrency in [frpc::Concurrency::PerRpc, frpc::Concurrency::Inline] {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = Server::builder()
            .config(quick_idle().concurrency(concurrency))
            .add_service(TestService::default())
            .build()
            .unwrap();
        let serving = server.clone();
        tokio::spawn(async move { serving.serve_listener(listener).await });
        let peer = silent_peer_with_stuck_replies(addr, 8, 1 << 20).await;
        assert!(
            eventually(|| server.connections() == 0).await,
            "{concurrency:?}: the silent peer's connection is still open"
        );
        drop(peer);
    }
}

/// `service` on 127.0.0.1:0 with a `grace`, until the returned `Notify` fires: the address,
/// the stop signal and the serving task.
async fn serve_until_stopped(
    service: impl frpc::codegen::Service,
    grace: Duration,
) -> (
    SocketAddr,
    std::sync::Arc<tokio::sync::Notify>,
    tokio::task::JoinHandle<Result<(), Error>>,
) {
    let mut config = ServerConfig::default();
    config.shutdown_grace = grace;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = Server::builder()
        .config(config)
        .add_service(service)
        .build()
        .unwrap();
    let stop = std::sync::Arc::new(tokio::sync::Notify::new());
    let signal = stop.clone();
    let serving = tokio::spawn(async move {
        server
            .serve_listener_with_shutdown(listener, async move { signal.notified().await })
            .await
    });
    (addr, stop, serving)
}

/// Sends a PING every `every` until the connection fails (the task is aborted by its test).
fn keep_pinging(
    mut write: impl tokio::io::AsyncWrite + Unpin + Send + 'static,
    every: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while write.write_all(&PING).await.is_ok() {
            tokio::time::sleep(every).await;
        }
    })
}

/// A graceful shutdown ends within its grace however stuck a connection's replies are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_shutdown_ends_within_its_grace_despite_stuck_replies() {
    let (addr, stop, serving) = serve_until_stopped(TestService::default(), Duration::from_millis(300)).await;
    // The peer keeps the connection alive with PINGs, so only the grace can end it.
    let peer = silent_peer_with_stuck_replies(addr, 8, 1 << 20).await;
    let pinging = keep_pinging(peer, Duration::from_millis(50));
    stop.notify_one();
    let ended = tokio::time::timeout(Duration::from_secs(5), serving).await;
    assert!(
        ended.is_ok(),
        "the shutdown is still running 5 s after a 300 ms grace"
    );
    pinging.abort();
}

/// A graceful shutdown delivers every reply to a peer that reads them slowly while it keeps
/// sending PINGs (as frpc and Go clients do), then ends the connection cleanly: the PINGs that
/// arrive after the server stopped reading once made the kernel reset the connection at its
/// close, throwing away the replies still on their way (a peer got 384 KB of 2 MB).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_shutdown_delivers_every_reply_to_a_slow_reader_that_pings() {
    use std::sync::atomic::Ordering::SeqCst;
    const CALLS: u16 = 400;
    let made = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let service = BigServer::new(Replies(made.clone()));
    let (addr, stop, serving) = serve_until_stopped(service, Duration::from_secs(20)).await;
    let (read, write) = asks_for_replies(addr, CALLS, 4096).await.into_split();
    let pinging = keep_pinging(write, Duration::from_millis(20));
    // Every call answered (the replies wait in the queue and the socket), then the shutdown.
    assert!(eventually(|| made.load(SeqCst) == usize::from(CALLS)).await);
    stop.notify_one();
    let mut packets =
        tokio_util::codec::FramedRead::new(read, frpc::wire::PacketCodec::new(Framing::Frisbee));
    let mut replies = 0;
    let end = loop {
        match futures_util::StreamExt::next(&mut packets).await {
            None => break Ok(()),
            Some(Ok(packet)) => replies += usize::from(packet.op == big::GET),
            Some(Err(err)) => break Err(err),
        }
        // A slow reader: a reply (4 KiB) every 2 ms.
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    pinging.abort();
    assert!(end.is_ok(), "after {replies} replies: {end:?}");
    assert_eq!(replies, usize::from(CALLS), "every reply, then the end");
    serving.await.unwrap().unwrap();
}

/// A plain peer on a socket with a small receive buffer that sends `calls` requests to
/// [`Big::get`] for `size` bytes each and reads nothing yet.
async fn asks_for_replies(addr: SocketAddr, calls: u16, size: u32) -> tokio::net::TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket.connect(addr).await.unwrap();
    let request = frpc::codegen::Message::to_polyglot(&Size { n: size });
    let mut framed =
        tokio_util::codec::FramedWrite::new(&mut stream, frpc::wire::PacketCodec::new(Framing::Frisbee));
    for id in 0..calls {
        let packet = frpc::wire::Packet::new(id, big::GET, request.clone());
        futures_util::SinkExt::send(&mut framed, packet).await.unwrap();
    }
    drop(framed);
    stream
}

#[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
pub struct Size {
    pub n: u32,
}

#[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
pub struct Blob {
    pub data: bytes::Bytes,
}

#[frpc::service(package = "big")]
pub trait Big {
    /// `n` bytes for a few: what a peer can make a server send.
    async fn get(&self, ctx: &frpc::Context, request: Size) -> Result<Blob, frpc::Status>;
}

/// Counts the replies it made.
struct Replies(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Big for Replies {
    async fn get(&self, _: &frpc::Context, request: Size) -> Result<Blob, frpc::Status> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(Blob {
            data: bytes::Bytes::from(vec![7u8; request.n as usize]),
        })
    }
}

/// A peer that asks for large replies, reads none and keeps the connection alive with PINGs
/// holds the server to `write_queue_bytes` (plus the socket's buffers): its reader stops once
/// the queued replies fill the budget, where 1,024 queued packets of any size once made it
/// hold 1,000 times what the peer sent (1 GiB for 1 MiB replies).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_reads_nothing_gets_at_most_write_queue_bytes_queued() {
    use std::sync::atomic::Ordering::SeqCst;
    const REPLY: u32 = 256 * 1024;
    let made = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut config = ServerConfig::default();
    config.connection.write_queue_bytes = 64 * 1024;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = Server::builder()
        .config(config)
        .add_service(BigServer::new(Replies(made.clone())))
        .build()
        .unwrap();
    tokio::spawn(async move { server.serve_listener(listener).await });

    let (_read, write) = asks_for_replies(addr, 200, REPLY).await.into_split();
    let pinging = keep_pinging(write, Duration::from_millis(50));
    assert!(eventually(|| made.load(SeqCst) >= 2).await);
    // What a stalled reader would not do: go on replying.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let replied = made.load(SeqCst);
    // The socket's buffers take a few MiB (loopback's send buffer grows to 4 MiB); the queue
    // one reply at a time. All 200 (50 MiB) without the budget.
    assert!(
        replied <= 40,
        "{replied} replies of 256 KiB made for a peer that reads nothing"
    );
    pinging.abort();
}

/// A peer's FIN is its close, half-close included (as Go reads it): the server closes the
/// connection at once, dropping the call still running, rather than waiting to answer it.
/// Documented in `docs/guide/faults-on-the-wire.md`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_close_closes_the_connection_and_drops_its_calls() {
    let server = start(ServerConfig::default()).await;
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    let content = frpc::codegen::Message::to_polyglot(&Text::new("waits"));
    let mut framed =
        tokio_util::codec::FramedWrite::new(&mut stream, frpc::wire::PacketCodec::new(Framing::Frisbee));
    futures_util::SinkExt::send(&mut framed, frpc::wire::Packet::new(1, GATED, content))
        .await
        .unwrap();
    drop(framed);
    tokio::time::timeout(Duration::from_secs(20), gated_started(&server, 1))
        .await
        .unwrap();
    stream.shutdown().await.unwrap();
    // The gate never opens: whatever comes back before the end is heartbeats.
    let mut got = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut got))
        .await
        .expect("the server closes the half-closed connection")
        .unwrap();
    assert_eq!(got.len() % PING.len(), 0, "{got:?}");
    assert!(
        got.chunks(PING.len()).all(|packet| packet == PING),
        "only PINGs: {got:?}"
    );
}
