//! The health service over real TCP: `Check` per service beside a user's service, unknown
//! names, `Watch` following changes in order and ending at shutdown, plain fRPC clients,
//! the operation numbers and their collision checks, the messages' bytes, and health beside a
//! protobuf-capable service keeping the server's protobuf encoding on.
// The services are `#[frpc::service]`s: without the `macros` feature there is nothing to test.
#![cfg(feature = "macros")]

use bytes::Bytes;
use frpc::health::{self, HealthCheckRequest, HealthCheckResponse, HealthClient, ServingStatus};
use frpc::{ClientConfig, Error, Framing};
use futures_util::{SinkExt, StreamExt};
use tokio_util::codec::Framed;

#[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
pub struct Text {
    pub value: String,
}

#[frpc::service(package = "hp")]
pub trait Echo {
    async fn echo(&self, ctx: &frpc::Context, request: Text) -> Result<Text, frpc::Status>;
}

struct Svc;

impl Echo for Svc {
    async fn echo(&self, _ctx: &frpc::Context, request: Text) -> Result<Text, frpc::Status> {
        Ok(request)
    }
}

/// A server with the echo service and health; its reporter and address.
async fn serve(framing: Framing) -> (health::HealthReporter, std::net::SocketAddr) {
    let (reporter, health) = health::service();
    let bound = frpc::Server::builder()
        .framing(framing)
        .add_service(EchoServer::new(Svc))
        .add_service(health)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    (reporter, addr)
}

async fn connect(addr: std::net::SocketAddr, framing: Framing, extensions: bool) -> frpc::Client {
    let mut config = ClientConfig::default().extensions(extensions);
    config.connection.framing = framing;
    frpc::Client::connect_with(addr, config).await.unwrap()
}

#[tokio::test]
async fn check_reports_each_service_beside_the_users() {
    for framing in [Framing::Frisbee, Framing::Legacy] {
        for extensions in [true, false] {
            let (reporter, addr) = serve(framing).await;
            reporter.set_serving("hp.Echo");
            reporter.set_not_serving("hp.Other");
            let client = connect(addr, framing, extensions).await;
            let health = HealthClient::new(client.clone());
            assert_eq!(health.check("").await.unwrap(), ServingStatus::Serving);
            assert_eq!(health.check("hp.Echo").await.unwrap(), ServingStatus::Serving);
            assert_eq!(health.check("hp.Other").await.unwrap(), ServingStatus::NotServing);
            assert_eq!(health.check("nope").await.unwrap(), ServingStatus::ServiceUnknown);
            // The user's service, numbered from 10, on the same connection.
            let echo = EchoClient::new(client);
            assert_eq!(echo.echo(Text { value: "x".into() }).await.unwrap().value, "x");
            reporter.set_all_not_serving();
            assert_eq!(health.check("").await.unwrap(), ServingStatus::NotServing);
            assert_eq!(health.check("hp.Echo").await.unwrap(), ServingStatus::NotServing);
            assert_eq!(reporter.status("hp.Echo"), ServingStatus::NotServing);
        }
    }
}

#[tokio::test]
async fn watch_sees_changes_in_order() {
    let (reporter, addr) = serve(Framing::Frisbee).await;
    let health = HealthClient::connect(addr).await.unwrap();
    let mut watch = health.watch("hp.Echo").await.unwrap();
    let mut next = async || watch.message().await.unwrap().unwrap();
    assert_eq!(next().await, ServingStatus::ServiceUnknown);
    reporter.set_serving("hp.Echo");
    assert_eq!(next().await, ServingStatus::Serving);
    reporter.set_not_serving("hp.Echo");
    assert_eq!(next().await, ServingStatus::NotServing);
    // Setting the same status again sends nothing: the next message is the next change.
    reporter.set_not_serving("hp.Echo");
    reporter.set_serving("hp.Echo");
    assert_eq!(next().await, ServingStatus::Serving);
    // Other services' changes do not reach this watcher.
    reporter.set_not_serving("hp.Other");
    reporter.set_status("hp.Echo", ServingStatus::Unknown);
    assert_eq!(next().await, ServingStatus::Unknown);
}

#[tokio::test]
async fn watch_of_the_whole_server_from_a_plain_client() {
    let (reporter, addr) = serve(Framing::Frisbee).await;
    let health = HealthClient::new(connect(addr, Framing::Frisbee, false).await);
    let mut watch = health.watch("").await.unwrap();
    assert_eq!(watch.message().await.unwrap().unwrap(), ServingStatus::Serving);
    reporter.set_all_not_serving();
    assert_eq!(watch.message().await.unwrap().unwrap(), ServingStatus::NotServing);
}

/// A name only watched, never reported, stays unknown through `set_all_not_serving()`: its
/// watcher hears nothing and `Check` still says SERVICE_UNKNOWN. Before, it became NOT_SERVING
/// for good, the entry outlived its watcher, and watches of junk names between maintenance
/// toggles grew the reporter's map past its cap of watched names (session 31's probe).
#[tokio::test]
async fn names_only_watched_stay_unknown_when_all_go_not_serving() {
    let (reporter, addr) = serve(Framing::Frisbee).await;
    let health = HealthClient::connect(addr).await.unwrap();
    let mut watch = health.watch("never.Reported").await.unwrap();
    assert_eq!(
        watch.message().await.unwrap().unwrap(),
        ServingStatus::ServiceUnknown
    );
    reporter.set_all_not_serving();
    assert_eq!(
        health.check("never.Reported").await.unwrap(),
        ServingStatus::ServiceUnknown
    );
    assert_eq!(reporter.status("never.Reported"), ServingStatus::ServiceUnknown);
    reporter.set_serving("never.Reported");
    assert_eq!(
        watch.message().await.unwrap().unwrap(),
        ServingStatus::Serving,
        "no NOT_SERVING in between"
    );
}

/// A server of the health service alone on 127.0.0.1:0, until `stop` is sent: its reporter,
/// address, stop sender and serving task.
async fn health_until_stopped() -> (
    health::HealthReporter,
    std::net::SocketAddr,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<Result<(), Error>>,
) {
    let (reporter, health_service) = health::service();
    let bound = frpc::Server::builder()
        .add_service(health_service)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(bound.serve_with_shutdown(async {
        let _ = stopped.await;
    }));
    (reporter, addr, stop, serving)
}

#[tokio::test]
async fn watch_ends_when_the_server_shuts_down() {
    let (reporter, addr, stop, serving) = health_until_stopped().await;
    let health = HealthClient::connect(addr).await.unwrap();
    let mut watch = health.watch("svc").await.unwrap();
    assert_eq!(
        watch.message().await.unwrap().unwrap(),
        ServingStatus::ServiceUnknown
    );
    reporter.set_serving("svc");
    assert_eq!(watch.message().await.unwrap().unwrap(), ServingStatus::Serving);
    // As a graceful shutdown would: balancers see NOT_SERVING first.
    reporter.set_all_not_serving();
    assert_eq!(watch.message().await.unwrap().unwrap(), ServingStatus::NotServing);
    stop.send(()).unwrap();
    // The stream ends (EOF), and the server stops without waiting out its grace period.
    assert!(watch.message().await.unwrap().is_none());
    let start = std::time::Instant::now();
    serving.await.unwrap().unwrap();
    assert!(start.elapsed() < std::time::Duration::from_secs(4));
}

/// `set_all_not_serving()` right before the shutdown (no wait between them): every watcher
/// still gets NOT_SERVING, then the stream's end, though a stream cannot send once a shutdown
/// began (the race lost it, or failed the stream, in most of a few runs). Twenty servers, for
/// the race's both sides.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_serving_set_just_before_a_shutdown_reaches_the_watchers() {
    for round in 0..20 {
        let (reporter, addr, stop, serving) = health_until_stopped().await;
        let health = HealthClient::connect(addr).await.unwrap();
        let mut watch = health.watch("").await.unwrap();
        assert_eq!(watch.message().await.unwrap().unwrap(), ServingStatus::Serving);
        reporter.set_all_not_serving();
        stop.send(()).unwrap();
        let last = watch.message().await;
        assert!(
            matches!(last, Ok(Some(ServingStatus::NotServing))),
            "round {round}: {last:?}"
        );
        let end = watch.message().await;
        assert!(matches!(end, Ok(None)), "round {round}: {end:?}");
        serving.await.unwrap().unwrap();
    }
}

#[tokio::test]
async fn health_operations_are_fixed_and_collisions_refused() {
    assert_eq!((health::CHECK_OP, health::WATCH_OP), (0xFF00, 0xFF01));
    let (_, health_service) = health::service();
    let err = frpc::Server::builder()
        .route(0xFF00, |_, _| async { None })
        .add_service(health_service)
        .build()
        .unwrap_err();
    assert!(matches!(err, Error::Config(_)), "{err}");
    let text = err.to_string();
    assert!(text.contains("65280") && text.contains("claimed twice"), "{text}");

    // A raw fRPC peer (as a Go client would): the Check request on operation 0xFF00, and the
    // reply's exact bytes under the same id and operation.
    let (reporter, addr) = serve(Framing::Frisbee).await;
    reporter.set_serving("a");
    request_bytes(""); // docs/health.md's second example
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut raw = Framed::new(stream, frpc::wire::PacketCodec::new(Framing::Frisbee));
    raw.send(frpc::wire::Packet::new(7, 0xFF00, request_bytes("a")))
        .await
        .unwrap();
    let reply = raw.next().await.unwrap().unwrap();
    assert_eq!((reply.id, reply.op), (7, 0xFF00));
    assert_eq!(&reply.content[..], response_bytes());
}

/// `HealthCheckRequest { service }` in polyglot, as any fRPC message with one string field.
fn request_bytes(service: &str) -> Bytes {
    use frpc::codegen::Message as _;
    let bytes = HealthCheckRequest {
        service: service.into(),
    }
    .to_polyglot();
    let mut expected = vec![0x08, 0x00, 0x05, 0x0a, service.len() as u8];
    expected.extend_from_slice(service.as_bytes());
    assert_eq!(&bytes[..], expected, "HealthCheckRequest bytes");
    bytes
}

/// `HealthCheckResponse { status: SERVING }`: the enum as a `u32` (kind `0a`) of its number.
fn response_bytes() -> Vec<u8> {
    use frpc::codegen::Message as _;
    let bytes = HealthCheckResponse {
        status: ServingStatus::Serving,
    }
    .to_polyglot();
    assert_eq!(&bytes[..], [0x08, 0x00, 0x0a, 0x01], "HealthCheckResponse bytes");
    bytes.to_vec()
}

#[tokio::test]
async fn probes_pass_an_auth_interceptor_that_exempts_health() {
    let (reporter, health_service) = health::service();
    let bound = frpc::Server::builder()
        .interceptor(|call: &frpc::CallRequest| {
            if call.service() == health::SERVICE_NAME || call.metadata().get("token") == Some("t") {
                return Ok(());
            }
            Err(frpc::Status::unauthenticated("no token"))
        })
        .add_service(EchoServer::new(Svc))
        .add_service(health_service)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    reporter.set_serving("hp.Echo");
    let client = frpc::Client::connect(addr).await.unwrap();
    let probe = HealthClient::new(client.clone());
    assert_eq!(probe.check("hp.Echo").await.unwrap(), ServingStatus::Serving);
    let mut watch = probe.watch("hp.Echo").await.unwrap();
    assert_eq!(watch.message().await.unwrap().unwrap(), ServingStatus::Serving);
    let err = EchoClient::new(client).echo(Text::default()).await.unwrap_err();
    assert_eq!(err.code(), frpc::Code::Unauthenticated);
}

/// A Rust-first message with a protobuf encoding too (`#[frpc(protobuf)]` over prost's derive).
#[derive(Clone, PartialEq, frpc::Message, prost::Message)]
#[frpc(protobuf)]
pub struct PbText {
    #[prost(string, tag = "1")]
    pub value: String,
}

#[frpc::service(package = "hp")]
pub trait PbEcho {
    async fn echo(&self, ctx: &frpc::Context, request: PbText) -> Result<PbText, frpc::Status>;
}

impl PbEcho for Svc {
    async fn echo(&self, _ctx: &frpc::Context, request: PbText) -> Result<PbText, frpc::Status> {
        Ok(request)
    }
}

/// `HealthCheckResponse` read as a plain `int32 status = 1`: protobuf reads it (the same
/// bytes), polyglot does not (an `i32` field where the reply has an enum), so a reply that
/// decodes into it travelled in protobuf.
#[derive(Clone, PartialEq, frpc::Message, prost::Message)]
#[frpc(protobuf)]
pub struct StatusNumber {
    #[prost(int32, tag = "1")]
    pub status: i32,
}

/// A server with `services` and health, and a client that waited for the negotiation.
async fn serve_with(
    add: impl FnOnce(frpc::Builder) -> frpc::Builder,
) -> (health::HealthReporter, frpc::Client) {
    let (reporter, health) = health::service();
    let bound = add(frpc::Server::builder())
        .add_service(health)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    let client = frpc::Client::connect(addr).await.unwrap();
    assert!(client.negotiated().await);
    (reporter, client)
}

#[tokio::test]
async fn health_keeps_protobuf_on_beside_a_protobuf_service() {
    const { assert!(<HealthCheckRequest as frpc::codegen::Message>::PROTOBUF) };
    const { assert!(<HealthCheckResponse as frpc::codegen::Message>::PROTOBUF) };
    let (reporter, client) = serve_with(|b| b.add_service(PbEchoServer::new(Svc))).await;
    assert!(client.protobuf_accepted(), "health switched protobuf off");

    reporter.set_serving("hp.PbEcho");
    let health = HealthClient::new(client.clone());
    assert_eq!(health.check("").await.unwrap(), ServingStatus::Serving);
    assert_eq!(health.check("hp.PbEcho").await.unwrap(), ServingStatus::Serving);
    assert_eq!(health.check("nope").await.unwrap(), ServingStatus::ServiceUnknown);
    let mut watch = health.watch("hp.PbEcho").await.unwrap();
    let mut next = async || watch.message().await.unwrap().unwrap();
    assert_eq!(next().await, ServingStatus::Serving);
    reporter.set_not_serving("hp.PbEcho");
    assert_eq!(next().await, ServingStatus::NotServing);
    reporter.set_status("hp.PbEcho", ServingStatus::Unknown); // the default: no field at all
    assert_eq!(next().await, ServingStatus::Unknown);
    let reply = PbEchoClient::new(client.clone())
        .echo(PbText { value: "pb".into() })
        .await
        .unwrap();
    assert_eq!(reply.value, "pb");

    // The replies were protobuf: a type that reads only the protobuf bytes decodes them.
    reporter.set_not_serving("hp.PbEcho");
    let request = HealthCheckRequest {
        service: "hp.PbEcho".into(),
    };
    let reply: StatusNumber = frpc::codegen::call_unary(&client, health::CHECK_OP, request.clone())
        .await
        .unwrap();
    assert_eq!(reply.status, ServingStatus::NotServing as i32);
    let mut numbers =
        frpc::codegen::call_server_streaming::<_, StatusNumber>(&client, health::WATCH_OP, &request)
            .await
            .unwrap();
    assert_eq!(numbers.message().await.unwrap().unwrap().status, 2);
    reporter.set_status("hp.PbEcho", ServingStatus::ServiceUnknown);
    assert_eq!(numbers.message().await.unwrap().unwrap().status, 3);
}

#[tokio::test]
async fn protobuf_with_health_alone_and_off_beside_a_polyglot_only_service() {
    let (_, client) = serve_with(|b| b).await;
    assert!(client.protobuf_accepted());
    assert_eq!(
        HealthClient::new(client).check("").await.unwrap(),
        ServingStatus::Serving
    );

    // `Text` reads only polyglot: that service, not health, keeps protobuf off.
    let (_, client) = serve_with(|b| b.add_service(EchoServer::new(Svc))).await;
    assert!(client.extensions_accepted() && !client.protobuf_accepted());
    let health = HealthClient::new(client.clone());
    assert_eq!(health.check("").await.unwrap(), ServingStatus::Serving);
    let request = HealthCheckRequest::default();
    let err = frpc::codegen::call_unary::<_, StatusNumber>(&client, health::CHECK_OP, request)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("decode"), "{err}");
}

/// A balancer's probe: a `HealthClient` over a balanced `Channel` checks whichever server the
/// balancer picks, and watches through it.
#[tokio::test]
async fn a_health_client_over_a_balanced_channel() {
    let framing = Framing::Frisbee;
    let (first, a) = serve(framing).await;
    let (second, b) = serve(framing).await;
    for reporter in [&first, &second] {
        reporter.set_serving("hp.Echo");
    }
    let endpoint = |addr| frpc::Endpoint::from(addr).framing(framing);
    let channel = frpc::Channel::balance_list([endpoint(a), endpoint(b)]);
    channel.connected(2).await;
    let health = HealthClient::new(channel);
    for _ in 0..6 {
        assert_eq!(health.check("hp.Echo").await.unwrap(), ServingStatus::Serving);
    }
    for reporter in [&first, &second] {
        reporter.set_not_serving("hp.Echo");
    }
    for _ in 0..6 {
        assert_eq!(health.check("hp.Echo").await.unwrap(), ServingStatus::NotServing);
    }
    let mut watch = health.watch("hp.Echo").await.unwrap();
    assert_eq!(watch.message().await.unwrap().unwrap(), ServingStatus::NotServing);
}

/// Health by type: a generated server names its service (`frpc::NamedService`, and the
/// operation module's `SERVICE_NAME`), the reporter and the client take the type, and `check`
/// and `watch` give the same `ServingStatus`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn services_are_named_by_type() {
    use frpc::NamedService;
    assert_eq!(<EchoServer<Svc> as NamedService>::NAME, "hp.Echo");
    assert_eq!(echo::SERVICE_NAME, "hp.Echo");
    let (reporter, addr) = serve(Framing::Frisbee).await;
    let health = HealthClient::new(connect(addr, Framing::Frisbee, true).await);
    assert_eq!(
        health.check_of::<EchoServer<Svc>>().await.unwrap(),
        ServingStatus::ServiceUnknown
    );
    let mut watch = health.watch_of::<EchoServer<Svc>>().await.unwrap();
    assert_eq!(
        watch.message().await.unwrap(),
        Some(ServingStatus::ServiceUnknown)
    );
    reporter.set_serving_of::<EchoServer<Svc>>();
    assert_eq!(watch.next().await.unwrap().unwrap(), ServingStatus::Serving);
    assert_eq!(health.check("hp.Echo").await.unwrap(), ServingStatus::Serving);
    reporter.set_status_of::<EchoServer<Svc>>(ServingStatus::NotServing);
    assert_eq!(watch.message().await.unwrap(), Some(ServingStatus::NotServing));
    reporter.set_not_serving_of::<EchoServer<Svc>>();
    assert_eq!(reporter.status(echo::SERVICE_NAME), ServingStatus::NotServing);
}
