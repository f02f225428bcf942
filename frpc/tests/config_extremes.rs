//! Extreme settings, over real TCP: what tokio, hyper or tonic cannot take is refused with
//! [`frpc::Error::Config`] naming the field or clamped (documented), never a panic.
//!
//! - Counts that size tokio semaphores and channels (`write_queue`, `stream_buffer`,
//!   `max_inflight`, `max_inflight_per_connection`, `Concurrency::Limited`) at `usize::MAX`
//!   panicked in `build()`, in each connection's task or in `Client::connect_with`: tokio's
//!   limit is `usize::MAX >> 3`. They are refused over 2^28; the other limits still take
//!   `usize::MAX` as "no limit".
//! - A call timeout of `Duration::MAX` (a natural "no limit") panicked at a stream's opening
//!   (`Instant::now() + limit`), and on a `GrpcChannel` in tonic (over ~11,000 years): a
//!   timeout over a year counts as a year.
//! - A standalone `GrpcServer::idle_timeout(Duration::MAX)` made hyper's keep-alive timer panic
//!   in every connection: it is clamped to a year.
//! - The gRPC face's request header list was bounded only by hyper's 16 KiB default: it is
//!   `max_metadata_size` plus 1 KiB for gRPC's own headers.

mod support;

use std::time::Duration;

use frpc::{Caller, Client, ClientConfig, Concurrency, ConnectionConfig, Error, ServerConfig, codegen};
use support::*;

/// The largest count accepted (2^28).
const MAX_COUNT: usize = 1 << 28;
/// A test's own bound: everything here is answered at once.
const SOON: Duration = Duration::from_secs(5);

fn conn(f: impl FnOnce(ConnectionConfig) -> ConnectionConfig) -> ServerConfig {
    ServerConfig::default().connection(f(ConnectionConfig::default()))
}

/// A unary call and a two-message stream through `caller` work.
async fn echo_and_stream(caller: &impl Caller) {
    let work = async {
        let reply = codegen::call_unary::<Text, Text>(caller, ECHO, Text::new("hi")).await?;
        assert_eq!(reply.value, "hi");
        let mut stream = codegen::call_server_streaming::<Text, Text>(caller, COUNT, &Text::new("2")).await?;
        let mut n = 0;
        while stream.message().await?.is_some() {
            n += 1;
        }
        assert_eq!(n, 2);
        Ok::<_, Error>(())
    };
    tokio::time::timeout(SOON, work)
        .await
        .expect("answered at once")
        .unwrap();
}

/// The message of `build()`'s refusal of `config`.
fn refusal(config: ServerConfig) -> String {
    let built = frpc::Server::builder()
        .config(config)
        .add_service(TestService::default())
        .build();
    match built {
        Err(Error::Config(why)) => why,
        Err(other) => panic!("refused with {other}, not a config error"),
        Ok(_) => panic!("accepted"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counts_beyond_tokio_are_refused_naming_the_field() {
    let cases = [
        ("max_inflight", ServerConfig::default().max_inflight(usize::MAX)),
        (
            "max_inflight_per_connection",
            ServerConfig::default().max_inflight_per_connection(usize::MAX),
        ),
        (
            "Limited",
            ServerConfig::default().concurrency(Concurrency::Limited(usize::MAX)),
        ),
        ("connection.write_queue", conn(|c| c.write_queue(usize::MAX))),
        ("connection.stream_buffer", conn(|c| c.stream_buffer(usize::MAX))),
        (
            "max_inflight",
            ServerConfig::default().max_inflight(MAX_COUNT + 1),
        ),
    ];
    for (field, config) in cases {
        let why = refusal(config);
        assert!(
            why.contains(field) && why.contains(&MAX_COUNT.to_string()),
            "{why}"
        );
    }
    // A client's connection settings too, before it connects (it panicked in the caller).
    let running = start(ServerConfig::default()).await;
    for config in [
        ConnectionConfig::default().write_queue(usize::MAX),
        ConnectionConfig::default().stream_buffer(usize::MAX),
    ] {
        let config = ClientConfig::default().connection(config);
        match Client::connect_with(running.addr, config).await {
            Err(Error::Config(why)) => assert!(why.contains("connection."), "{why}"),
            other => panic!("not refused: {:?}", other.map(|_| ())),
        }
    }
}

/// The largest counts serve, and the limits that mean "none" at `usize::MAX` still take it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_largest_counts_and_unbounded_limits_serve() {
    let at_most = ServerConfig::default()
        .max_inflight(MAX_COUNT)
        .max_inflight_per_connection(MAX_COUNT)
        .concurrency(Concurrency::Limited(MAX_COUNT))
        .max_connections(usize::MAX)
        .max_connections_per_address(usize::MAX)
        .max_open_streams(usize::MAX)
        .max_buffered_stream_bytes(usize::MAX)
        .connection(
            ConnectionConfig::default()
                .write_queue(MAX_COUNT)
                .stream_buffer(MAX_COUNT)
                .max_streams(usize::MAX)
                .max_buffered_bytes(usize::MAX),
        );
    let running = start(at_most).await;
    let client_config = ClientConfig::default().connection(
        ConnectionConfig::default()
            .write_queue(MAX_COUNT)
            .stream_buffer(MAX_COUNT),
    );
    // With extensions (flow-controlled streams) and without (`stream_buffer` sizes them).
    for config in [client_config.clone(), client_config.extensions(false)] {
        let client = Client::connect_with(running.addr, config).await.unwrap();
        echo_and_stream(&client).await;
    }
}

/// `Duration::MAX` as a call timeout, on every handle that takes one, works as a year.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_of_duration_max_is_a_year() {
    let running = start(ServerConfig::default()).await;
    let config = ClientConfig::default().timeout(Duration::MAX);
    let client = Client::connect_with(running.addr, config).await.unwrap();
    echo_and_stream(&client).await;
    let client = Client::connect(running.addr).await.unwrap();
    echo_and_stream(&client.with_timeout(Duration::MAX)).await;
    echo_and_stream(&Caller::with_timeout(&client, Duration::MAX)).await;
    let channel = frpc::Endpoint::new(running.addr.to_string())
        .timeout(Duration::MAX)
        .connect()
        .await
        .unwrap();
    echo_and_stream(&channel).await;
    echo_and_stream(&channel.with_timeout(Duration::MAX)).await;
}

#[cfg(feature = "grpc")]
mod grpc {
    use std::net::SocketAddr;
    use std::time::Duration;

    use frpc::grpc::{GrpcChannel, GrpcServer};
    use frpc::{Caller, ConnectionConfig, Context, Metadata, ServerConfig, Status, StreamSender};

    use super::SOON;

    #[derive(Clone, PartialEq, frpc::Message, prost::Message)]
    #[frpc(protobuf)]
    pub struct Blob {
        #[prost(string, tag = "1")]
        pub data: String,
    }

    #[frpc::service(package = "extremes")]
    pub trait Extremes {
        async fn unary(&self, ctx: &Context, request: Blob) -> Result<Blob, Status>;
        async fn stream(
            &self,
            ctx: &Context,
            request: Blob,
            outbound: StreamSender<Blob>,
        ) -> Result<(), Status>;
    }

    struct Echo;

    impl Extremes for Echo {
        async fn unary(&self, _: &Context, request: Blob) -> Result<Blob, Status> {
            Ok(request)
        }

        async fn stream(
            &self,
            _: &Context,
            request: Blob,
            outbound: StreamSender<Blob>,
        ) -> Result<(), Status> {
            outbound.send(request).await?;
            Ok(())
        }
    }

    fn blob() -> Blob {
        Blob { data: "hi".into() }
    }

    /// A server sharing its port between fRPC and gRPC, with `config`.
    async fn shared_port(config: ServerConfig) -> SocketAddr {
        let server = frpc::Server::builder()
            .config(config)
            .grpc(true)
            .add_service(ExtremesServer::new(Echo))
            .bind("127.0.0.1:0")
            .await
            .unwrap();
        let addr = server.local_addr();
        tokio::spawn(server.serve());
        addr
    }

    async fn connect(addr: SocketAddr) -> GrpcChannel {
        GrpcChannel::connect(&format!("http://{addr}")).await.unwrap()
    }

    /// A unary call and a one-message stream through `caller` work.
    async fn unary_and_stream(caller: impl Caller) {
        let client = ExtremesClient::new(caller);
        let work = async {
            assert_eq!(client.unary(blob()).await?.data, "hi");
            let mut stream = client.stream(blob()).await?;
            assert_eq!(stream.message().await?.map(|b| b.data), Some("hi".into()));
            assert!(stream.message().await?.is_none());
            Ok::<_, frpc::Error>(())
        };
        tokio::time::timeout(SOON, work)
            .await
            .expect("answered at once")
            .unwrap();
    }

    /// tonic panicked on a `grpc-timeout` over ~11,000 years, a stream's deadline overflowed
    /// at `Duration::MAX`: both count as a year.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_grpc_channel_takes_any_timeout() {
        let channel = connect(shared_port(ServerConfig::default()).await).await;
        for timeout in [Duration::from_secs(20_000 * 365 * 86_400), Duration::MAX] {
            unary_and_stream(Caller::with_timeout(&channel, timeout)).await;
        }
    }

    /// `GrpcServer::idle_timeout(Duration::MAX)` killed every connection in hyper's timer.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_standalone_face_takes_any_idle_timeout() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let face = GrpcServer::new()
            .idle_timeout(Duration::MAX)
            .add_service(ExtremesServer::new(Echo));
        let serving = tokio::spawn(face.serve_listener(listener));
        unary_and_stream(connect(addr).await).await;
        serving.abort();
    }

    /// Metadata of `bytes` in HTTP/2's count (one entry: key, value and 32).
    fn metadata(bytes: usize) -> Metadata {
        let mut metadata = Metadata::new();
        metadata.insert("big", &"v".repeat(bytes - 3 - 32)).unwrap();
        metadata
    }

    /// Whether a unary call carrying `bytes` of metadata is answered; a refusal must be
    /// hyper's HTTP 431 (Request Header Fields Too Large), not another failure.
    async fn answered_with(channel: &GrpcChannel, bytes: usize) -> bool {
        let client = ExtremesClient::new(channel.with_metadata(metadata(bytes)));
        let reply = tokio::time::timeout(SOON, client.unary(blob())).await;
        match reply.expect("answered or refused at once") {
            Ok(_) => true,
            Err(err) => {
                assert!(err.to_string().contains("431"), "{err}");
                false
            }
        }
    }

    /// A request's header list is bounded by `max_metadata_size` (plus room for gRPC's own
    /// headers), on a shared port and a standalone face; over it the call is refused and the
    /// connection serves on.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn grpc_metadata_is_bounded_by_max_metadata_size() {
        // The default, 8 KiB: 12 KiB went through under hyper's 16 KiB.
        let channel = connect(shared_port(ServerConfig::default()).await).await;
        assert!(answered_with(&channel, 8 * 1024).await);
        assert!(!answered_with(&channel, 12 * 1024).await);
        assert!(answered_with(&channel, 100).await, "the connection serves on");
        // Set lower on a shared port.
        let config = ServerConfig::default().connection(ConnectionConfig::default().max_metadata_size(2048));
        let channel = connect(shared_port(config).await).await;
        assert!(answered_with(&channel, 2048).await);
        assert!(!answered_with(&channel, 4096).await);
        // Set higher on a standalone face.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let face = GrpcServer::new()
            .max_metadata_size(64 * 1024)
            .add_service(ExtremesServer::new(Echo));
        let serving = tokio::spawn(face.serve_listener(listener));
        let channel = connect(addr).await;
        assert!(answered_with(&channel, 32 * 1024).await);
        assert!(!answered_with(&channel, 80 * 1024).await);
        serving.abort();
    }
}
