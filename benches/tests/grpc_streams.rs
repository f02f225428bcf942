//! Streaming over the gRPC face (`frpc::grpc`): server-streaming, client-streaming and bidi
//! methods of one frpc service implementation, called by tonic's generated client of the same
//! proto over real TCP (and by an frpc client of the same server at the same time): replies as
//! they are sent, errors mid-stream, metadata both ways, `grpc-timeout` as the deadline, a
//! client's cancel reaching the handler, the size limit, large messages byte-exact,
//! `grpc.health.v1.Health/Watch`, layers on a standalone server, and graceful shutdown of the
//! shared port.

mod streams_svc;

use std::net::SocketAddr;
use std::time::Duration;

use streams_svc::{Svc, fpb, tpb};
use tokio::sync::mpsc;
use tokio_stream::StreamExt;
use tpb::streams_client::StreamsClient;

type Client = StreamsClient<tonic::transport::Channel>;

/// A standalone gRPC server of the service, messages up to 1 KiB.
async fn start() -> (SocketAddr, mpsc::UnboundedReceiver<String>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = frpc::grpc::GrpcServer::new()
        .max_decoding_message_size(1024)
        .add_service(fpb::StreamsServer::new(Svc { events: tx }));
    tokio::spawn(server.serve_listener(listener));
    (addr, rx)
}

async fn client(addr: SocketAddr) -> Client {
    StreamsClient::connect(format!("http://{addr}")).await.unwrap()
}

fn item(text: &str, n: u32) -> tpb::Item {
    tpb::Item {
        text: text.into(),
        n,
        data: Default::default(),
    }
}

fn count(n: u32, mode: &str) -> tonic::Request<tpb::CountRequest> {
    tonic::Request::new(tpb::CountRequest { n, mode: mode.into() })
}

/// Every reply of a server stream, and the status it ended with (`Ok` for OK).
async fn drain(mut replies: tonic::Streaming<tpb::Item>) -> (Vec<u32>, Result<(), tonic::Status>) {
    let mut got = Vec::new();
    loop {
        match replies.message().await {
            Ok(Some(item)) => got.push(item.n),
            Ok(None) => return (got, Ok(())),
            Err(status) => return (got, Err(status)),
        }
    }
}

#[tokio::test]
async fn server_streaming_sends_every_item_then_ok() {
    let (addr, _events) = start().await;
    let mut client = client(addr).await;
    let replies = client.count(count(5, "")).await.unwrap().into_inner();
    let (got, end) = drain(replies).await;
    assert_eq!(got, [0, 1, 2, 3, 4]);
    end.unwrap();
    // No items at all: an empty stream that ends OK.
    let replies = client.count(count(0, "")).await.unwrap().into_inner();
    assert_eq!(drain(replies).await.0, Vec::<u32>::new());
}

#[tokio::test]
async fn client_streaming_sums_what_the_client_sends() {
    let (addr, _events) = start().await;
    let mut client = client(addr).await;
    let items = tokio_stream::iter((1..=10).map(|n| item("x", n)));
    let total = client.sum(items).await.unwrap().into_inner();
    assert_eq!((total.sum, total.count), (55, 10));
    let total = client.sum(tokio_stream::empty()).await.unwrap().into_inner();
    assert_eq!((total.sum, total.count), (0, 0));
}

#[tokio::test]
async fn bidi_echoes_each_item_as_it_comes() {
    let (addr, _events) = start().await;
    let mut client = client(addr).await;
    let (tx, rx) = mpsc::channel(1);
    let mut replies = client
        .chat(tokio_stream::wrappers::ReceiverStream::new(rx))
        .await
        .unwrap()
        .into_inner();
    // One at a time: each reply comes back before the next request is sent.
    for n in 0..20 {
        tx.send(item(&format!("m{n}"), n)).await.unwrap();
        let reply = replies.message().await.unwrap().unwrap();
        assert_eq!((reply.text.as_str(), reply.n), (format!("echo:m{n}").as_str(), n));
    }
    drop(tx);
    assert!(replies.message().await.unwrap().is_none());
}

#[tokio::test]
async fn errors_mid_stream_arrive_after_the_replies_sent_before() {
    let (addr, _events) = start().await;
    let mut client = client(addr).await;
    let replies = client.count(count(3, "fail")).await.unwrap().into_inner();
    let (got, end) = drain(replies).await;
    assert_eq!(got, [0, 1, 2]);
    let status = end.unwrap_err();
    assert_eq!(status.code(), tonic::Code::Aborted);
    assert_eq!(status.message(), "failed after 3");

    // Failing before any reply: a trailers-only answer, the status at once.
    let status = client.count(count(0, "fail")).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::Aborted, "{status:?}");

    let items = tokio_stream::iter([item("a", 1), item("fail", 2), item("b", 3)]);
    let status = client.sum(items).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    assert_eq!(status.message(), "bad item");

    let items = tokio_stream::iter([item("a", 1), item("fail", 2)]);
    let mut replies = client.chat(items).await.unwrap().into_inner();
    assert_eq!(replies.message().await.unwrap().unwrap().text, "echo:a");
    let status = replies.message().await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::FailedPrecondition);
    assert_eq!(status.message(), "chat failed");
}

#[tokio::test]
async fn metadata_reaches_streaming_handlers_and_comes_back_as_headers_and_trailers() {
    let (addr, _events) = start().await;
    let mut client = client(addr).await;
    let mut request = count(2, "meta");
    request.metadata_mut().insert("x-user", "ada".parse().unwrap());
    let response = client.count(request).await.unwrap();
    assert_eq!(response.metadata().get("x-echo-user").unwrap(), "ada");
    let mut replies = response.into_inner();
    assert_eq!(replies.message().await.unwrap().unwrap().n, 0);
    assert_eq!(replies.message().await.unwrap().unwrap().n, 1);
    assert!(replies.message().await.unwrap().is_none());
    let trailers = replies.trailers().await.unwrap().unwrap();
    assert_eq!(trailers.get("x-done").unwrap(), "yes");

    // Bidi: the headers come before any request is sent (the handler waits for one).
    let (tx, rx) = mpsc::channel(1);
    let mut request = tonic::Request::new(tokio_stream::wrappers::ReceiverStream::new(rx));
    request.metadata_mut().insert("x-user", "grace".parse().unwrap());
    let response = client.chat(request).await.unwrap();
    assert_eq!(response.metadata().get("x-echo-user").unwrap(), "grace");
    let mut replies = response.into_inner();
    tx.send(item("a", 1)).await.unwrap();
    assert_eq!(replies.message().await.unwrap().unwrap().text, "echo:a");
    let total = {
        let mut request = tonic::Request::new(tokio_stream::iter([item("x", 4)]));
        request.metadata_mut().insert("x-user", "alan".parse().unwrap());
        client.sum(request).await.unwrap()
    };
    assert_eq!(total.metadata().get("x-echo-user").unwrap(), "alan");
    assert_eq!(total.into_inner().sum, 4);
}

/// The codes a timed-out call may end with: the server's DEADLINE_EXCEEDED, or tonic's own
/// CANCELLED ("Timeout expired") when its timer fires first.
const TIMED_OUT: [tonic::Code; 2] = [tonic::Code::DeadlineExceeded, tonic::Code::Cancelled];

#[tokio::test]
async fn grpc_timeout_is_a_streams_deadline_and_cancels_its_handler() {
    let (addr, mut events) = start().await;
    let mut client = client(addr).await;
    let mut request = count(2, "hang");
    request.set_timeout(Duration::from_millis(300));
    let replies = client.count(request).await.unwrap().into_inner();
    let (got, end) = drain(replies).await;
    assert_eq!(got, [0, 1]);
    let status = end.unwrap_err();
    assert!(TIMED_OUT.contains(&status.code()), "{status:?}");
    assert_eq!(events.recv().await.unwrap(), "count hang true");
    assert_eq!(events.recv().await.unwrap(), "count cancelled");

    // A bidi call whose handler hangs before any reply.
    let (tx, rx) = mpsc::channel(1);
    tx.send(item("hang", 1)).await.unwrap();
    let mut request = tonic::Request::new(tokio_stream::wrappers::ReceiverStream::new(rx));
    request.set_timeout(Duration::from_millis(300));
    let status = client.chat(request).await.unwrap_err();
    assert!(TIMED_OUT.contains(&status.code()), "{status:?}");
    assert_eq!(events.recv().await.unwrap(), "chat hang true");
    assert_eq!(events.recv().await.unwrap(), "chat cancelled");
}

#[tokio::test]
async fn a_client_that_cancels_a_stream_cancels_its_handler() {
    let (addr, mut events) = start().await;
    let mut client = client(addr).await;
    // Server streaming: the client drops the stream after two items.
    let mut replies = client.count(count(2, "hang")).await.unwrap().into_inner();
    assert_eq!(replies.message().await.unwrap().unwrap().n, 0);
    assert_eq!(replies.message().await.unwrap().unwrap().n, 1);
    assert_eq!(events.recv().await.unwrap(), "count hang false");
    drop(replies);
    assert_eq!(events.recv().await.unwrap(), "count cancelled");

    // Bidi: the call is dropped while its handler waits (before any reply).
    let (tx, rx) = mpsc::channel(1);
    tx.send(item("hang", 1)).await.unwrap();
    let mut hanging = client.clone();
    let call = tokio::spawn(async move {
        hanging
            .chat(tokio_stream::wrappers::ReceiverStream::new(rx))
            .await
    });
    assert_eq!(events.recv().await.unwrap(), "chat hang false");
    call.abort();
    assert_eq!(events.recv().await.unwrap(), "chat cancelled");

    // Client streaming: the upload is abandoned mid-way.
    let (tx, rx) = mpsc::channel(1);
    tx.send(item("hang", 1)).await.unwrap();
    let call = tokio::spawn(async move { client.sum(tokio_stream::wrappers::ReceiverStream::new(rx)).await });
    assert_eq!(events.recv().await.unwrap(), "sum hang false");
    call.abort();
    assert_eq!(events.recv().await.unwrap(), "sum cancelled");
    drop(tx);
}

#[tokio::test]
async fn oversize_request_messages_are_resource_exhausted_on_every_kind() {
    let (addr, _events) = start().await;
    let mut client = client(addr).await;
    let big = || tpb::Item {
        text: "big".into(),
        n: 1,
        data: vec![7u8; 2000].into(),
    };
    let small = || tpb::Item {
        text: "small".into(),
        n: 1,
        data: vec![7u8; 500].into(),
    };
    // Bidi: the small one is echoed, the big one ends the call.
    let mut replies = client
        .chat(tokio_stream::iter([small(), big()]))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(replies.message().await.unwrap().unwrap().data.len(), 500);
    let status = replies.message().await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::ResourceExhausted, "{status:?}");
    assert!(status.message().contains("too large"), "{}", status.message());

    let status = client
        .sum(tokio_stream::iter([small(), big()]))
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::ResourceExhausted, "{status:?}");

    let mut request = count(1, "");
    request.get_mut().mode = "x".repeat(2000);
    let status = client.count(request).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::ResourceExhausted, "{status:?}");
}

/// Calls `grpc.health.v1.Health/Watch` for `service` with tonic's plain client and frpc's
/// health messages (they are the proto's).
async fn watch(addr: SocketAddr, service: &str) -> tonic::Streaming<frpc::health::HealthCheckResponse> {
    let channel = tonic::transport::Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.unwrap();
    let path = http::uri::PathAndQuery::from_static("/grpc.health.v1.Health/Watch");
    let codec = tonic_prost::ProstCodec::<
        frpc::health::HealthCheckRequest,
        frpc::health::HealthCheckResponse,
    >::default();
    let request = frpc::health::HealthCheckRequest {
        service: service.into(),
    };
    grpc.server_streaming(tonic::Request::new(request), path, codec)
        .await
        .unwrap()
        .into_inner()
}

async fn next(
    statuses: &mut tonic::Streaming<frpc::health::HealthCheckResponse>,
) -> frpc::health::ServingStatus {
    statuses.message().await.unwrap().unwrap().status
}

/// The streams service and frpc's health on a shared port of 127.0.0.1, the builder first
/// given to `configure` (layers), serving: its address and the health reporter.
async fn serving_with_health(
    configure: impl FnOnce(frpc::Builder) -> frpc::Builder,
) -> (SocketAddr, frpc::health::HealthReporter) {
    let (tx, _events) = mpsc::unbounded_channel();
    let (reporter, health) = frpc::health::service();
    let builder = configure(frpc::Server::builder().grpc(true));
    let bound = builder
        .add_service(fpb::StreamsServer::new(Svc { events: tx }))
        .add_service(health)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    (addr, reporter)
}

#[tokio::test]
async fn health_watch_sends_the_status_then_each_change() {
    use frpc::health::ServingStatus;
    let (addr, reporter) = serving_with_health(|builder| builder).await;
    reporter.set_serving("streams.Streams");

    let mut statuses = watch(addr, "streams.Streams").await;
    assert_eq!(next(&mut statuses).await, ServingStatus::Serving);
    reporter.set_not_serving("streams.Streams");
    assert_eq!(next(&mut statuses).await, ServingStatus::NotServing);
    reporter.set_serving("streams.Streams");
    assert_eq!(next(&mut statuses).await, ServingStatus::Serving);

    // A name nobody reported: SERVICE_UNKNOWN (not an error: it may appear later).
    let mut unknown = watch(addr, "nobody").await;
    assert_eq!(next(&mut unknown).await, ServingStatus::ServiceUnknown);
}

#[tokio::test]
async fn grpc_and_frpc_clients_stream_from_one_port_at_the_same_time() {
    let (bound, _events) = bound_shared(frpc::ServerConfig::default()).await;
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    let frpc_client = fpb::StreamsClient::connect(addr).await.unwrap();
    let mut grpc_client = client(addr).await;

    let frpc_side = async {
        for round in 0..5 {
            let mut counts = frpc_client
                .count(fpb::CountRequest {
                    n: 50,
                    mode: String::new(),
                })
                .await
                .unwrap();
            let mut got = 0;
            while let Some(item) = counts.message().await.unwrap() {
                assert_eq!(item.n, got, "round {round}");
                got += 1;
            }
            assert_eq!(got, 50);
            let mut chat = frpc_client.chat().await.unwrap();
            chat.send(fpb::Item {
                text: "hi".into(),
                ..Default::default()
            })
            .await
            .unwrap();
            assert_eq!(chat.message().await.unwrap().unwrap().text, "echo:hi");
        }
    };
    let grpc_side = async {
        for _ in 0..5 {
            let replies = grpc_client.count(count(50, "")).await.unwrap().into_inner();
            let (got, end) = drain(replies).await;
            assert_eq!(got, (0..50).collect::<Vec<_>>());
            end.unwrap();
            let items = tokio_stream::iter((0..50).map(|n| item("x", n)));
            let replies = grpc_client.chat(items).await.unwrap().into_inner();
            let echoed: Vec<_> = replies.map(|r| r.unwrap().n).collect().await;
            assert_eq!(echoed, (0..50).collect::<Vec<_>>());
        }
    };
    tokio::join!(frpc_side, grpc_side);
}

/// On a shared port gRPC streams count in the server's `max_open_streams` with fRPC's: at the
/// limit (2), a third stream is RESOURCE_EXHAUSTED from either face, and once one ends another
/// opens.
#[tokio::test]
async fn grpc_streams_count_in_the_servers_open_streams() {
    let (bound, mut events) = bound_shared(frpc::ServerConfig::default().max_open_streams(2)).await;
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    let grpc_client = client(addr).await;
    let mut hanging = Vec::new();
    for _ in 0..2 {
        let mut client = grpc_client.clone();
        hanging.push(tokio::spawn(async move { client.count(count(1, "hang")).await }));
        assert_eq!(events.recv().await.unwrap(), "count hang false");
    }
    let status = grpc_client.clone().count(count(1, "")).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::ResourceExhausted, "{status:?}");
    assert!(status.message().contains("max_open_streams 2"), "{status:?}");
    let frpc_client = fpb::StreamsClient::connect(addr).await.unwrap();
    let request = fpb::CountRequest {
        n: 1,
        mode: String::new(),
    };
    let err = frpc_client.count(request.clone()).await.unwrap_err();
    assert_eq!(err.code(), frpc::Code::ResourceExhausted, "{err}");

    hanging.remove(0).abort();
    assert_eq!(events.recv().await.unwrap(), "count cancelled");
    let replies = grpc_client
        .clone()
        .count(count(3, ""))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(drain(replies).await.0, [0, 1, 2]);
}

#[tokio::test]
async fn layers_and_interceptors_apply_on_a_standalone_grpc_server() {
    let (tx, _events) = mpsc::unbounded_channel();
    let (reporter, health) = frpc::health::service();
    reporter.set_serving("streams.Streams");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = frpc::grpc::GrpcServer::new()
        .layer(tower::limit::ConcurrencyLimitLayer::new(4))
        .interceptor(|call: &frpc::CallRequest| match call.metadata().get("x-token") {
            Some("secret") => Ok(()),
            _ => Err(frpc::Status::with_code(
                frpc::Code::Unauthenticated,
                format!("no token for {}", call.method()),
            )),
        })
        .add_service(fpb::StreamsServer::new(Svc { events: tx }))
        .add_service(health);
    tokio::spawn(server.serve_listener(listener));
    let mut client = client(addr).await;

    // Every kind is checked before its handler runs.
    let status = client.count(count(3, "")).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unauthenticated, "{status:?}");
    assert_eq!(status.message(), "no token for Count");
    let status = client.sum(tokio_stream::iter([item("x", 1)])).await.unwrap_err();
    assert_eq!(status.message(), "no token for Sum");
    let status = client.chat(tokio_stream::iter([item("x", 1)])).await.unwrap_err();
    assert_eq!(status.message(), "no token for Chat");

    // With the token, through the concurrency limit, many at once.
    let calls = (0..10).map(|n| {
        let mut client = client.clone();
        async move {
            let mut request = tonic::Request::new(tokio_stream::iter([item("x", n)]));
            request
                .metadata_mut()
                .insert("x-token", "secret".parse().unwrap());
            let replies = client.chat(request).await.unwrap().into_inner();
            let echoed: Vec<_> = replies.map(|r| r.unwrap().n).collect().await;
            assert_eq!(echoed, [n]);
        }
    });
    futures_util::future::join_all(calls).await;

    // Health passes the interceptor: probes carry no token.
    let mut statuses = watch(addr, "streams.Streams").await;
    assert_eq!(next(&mut statuses).await, frpc::health::ServingStatus::Serving);
}

/// The streams service alone on a shared port (fRPC and gRPC) of 127.0.0.1, with `config`,
/// bound and not yet serving; the receiver gets what its handlers report.
async fn bound_shared(config: frpc::ServerConfig) -> (frpc::Bound, mpsc::UnboundedReceiver<String>) {
    let (tx, events) = mpsc::unbounded_channel();
    let bound = frpc::Server::builder()
        .config(config)
        .grpc(true)
        .add_service(fpb::StreamsServer::new(Svc { events: tx }))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    (bound, events)
}

/// How a new call after a GOAWAY fails: the server refused its stream (hyper's client says
/// CANCELLED, "connection closed"), or the channel found nobody listening (UNAVAILABLE).
const REFUSED: [tonic::Code; 2] = [tonic::Code::Unavailable, tonic::Code::Cancelled];

#[tokio::test]
async fn a_shutdown_lets_grpc_streams_in_flight_finish_on_the_shared_port() {
    let (bound, mut events) = bound_shared(frpc::ServerConfig::default()).await;
    let addr = bound.local_addr();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(bound.serve_with_shutdown(async {
        let _ = stopped.await;
    }));
    let mut client = client(addr).await;
    let frpc_client = fpb::StreamsClient::connect(addr).await.unwrap();

    // In flight: an upload, a bidi call, and a server stream that sends until the shutdown.
    let (sum_tx, sum_rx) = mpsc::channel(1);
    let mut summing = client.clone();
    let sum = tokio::spawn(async move {
        summing
            .sum(tokio_stream::wrappers::ReceiverStream::new(sum_rx))
            .await
    });
    sum_tx.send(item("before", 1)).await.unwrap();
    let (chat_tx, chat_rx) = mpsc::channel(1);
    let mut chat = client
        .chat(tokio_stream::wrappers::ReceiverStream::new(chat_rx))
        .await
        .unwrap()
        .into_inner();
    chat_tx.send(item("before", 1)).await.unwrap();
    assert_eq!(chat.message().await.unwrap().unwrap().text, "echo:before");
    let mut endless = client.count(count(0, "shutdown")).await.unwrap().into_inner();
    assert_eq!(endless.message().await.unwrap().unwrap().n, 0);

    stop.send(()).unwrap();
    // Streams send no more messages once the shutdown began (as fRPC's): the endless stream
    // ends, its handler returning the error, and the client gets it as the status.
    assert_eq!(events.recv().await.unwrap(), "count drained");
    let (_, end) = drain(endless).await;
    assert_eq!(end.unwrap_err().code(), tonic::Code::Unavailable);
    // The calls in flight go on: the upload takes more requests and gets its reply.
    sum_tx.send(item("after", 2)).await.unwrap();
    drop(sum_tx);
    let total = sum.await.unwrap().unwrap().into_inner();
    assert_eq!((total.sum, total.count), (3, 2));
    // The bidi call reads on; its reply fails, and it ends with that status.
    chat_tx.send(item("after", 2)).await.unwrap();
    let status = chat.message().await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
    assert_eq!(status.message(), "the server is shutting down");
    // No new calls: the connection got a GOAWAY, and the listener is closed.
    let status = client.count(count(1, "")).await.unwrap_err();
    assert!(REFUSED.contains(&status.code()), "{status:?}");
    serving.await.unwrap().unwrap();
    // The fRPC connection on the same port closed with the server.
    frpc_client.client().closed().await;
}

#[tokio::test]
async fn a_standalone_grpc_server_shuts_down_gracefully_within_its_grace() {
    let (tx, mut events) = mpsc::unbounded_channel();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = frpc::grpc::GrpcServer::new()
        .shutdown_grace(Duration::from_millis(500))
        .add_service(fpb::StreamsServer::new(Svc { events: tx }));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.serve_listener_with_shutdown(listener, async {
        let _ = stopped.await;
    }));
    let mut client = client(addr).await;

    // In flight: an upload, and a bidi call whose handler never returns.
    let (sum_tx, sum_rx) = mpsc::channel(1);
    let mut summing = client.clone();
    let sum = tokio::spawn(async move {
        summing
            .sum(tokio_stream::wrappers::ReceiverStream::new(sum_rx))
            .await
    });
    sum_tx.send(item("before", 1)).await.unwrap();
    let (chat_tx, chat_rx) = mpsc::channel(1);
    chat_tx.send(item("hang", 1)).await.unwrap();
    let mut hanging = client.clone();
    let chat = tokio::spawn(async move {
        hanging
            .chat(tokio_stream::wrappers::ReceiverStream::new(chat_rx))
            .await
    });
    assert_eq!(events.recv().await.unwrap(), "chat hang false");

    stop.send(()).unwrap();
    // The upload finishes within the grace.
    sum_tx.send(item("after", 2)).await.unwrap();
    drop(sum_tx);
    let total = sum.await.unwrap().unwrap().into_inner();
    assert_eq!((total.sum, total.count), (3, 2));
    // No new calls.
    let status = client.count(count(1, "")).await.unwrap_err();
    assert!(REFUSED.contains(&status.code()), "{status:?}");
    // The hanging call holds the shutdown until the grace is over; then its connection
    // closes, its handler's context is cancelled, and the server returns.
    serving.await.unwrap().unwrap();
    assert_eq!(events.recv().await.unwrap(), "chat cancelled");
    assert!(chat.await.unwrap().is_err());
    drop(chat_tx);
}

#[tokio::test]
async fn large_and_small_messages_cross_a_bidi_stream_byte_exact() {
    let (tx, _events) = mpsc::unbounded_channel();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = frpc::grpc::GrpcServer::new()
        .max_decoding_message_size(2 << 20)
        .add_service(fpb::StreamsServer::new(Svc { events: tx }));
    tokio::spawn(server.serve_listener(listener));
    let mut client = client(addr).await.max_decoding_message_size(2 << 20);
    // Small replies ready together go out gathered, large ones as they are: in order either way.
    let sizes = [1 << 20, 3, 0, 64 * 1024, 10, 40 * 1024, 1, 1, 1 << 20, 5];
    let items = sizes.iter().enumerate().map(|(n, &size)| tpb::Item {
        text: format!("m{n}"),
        n: n as u32,
        data: (0..size).map(|i| (i * 7 + n) as u8).collect::<Vec<u8>>().into(),
    });
    let items: Vec<_> = items.collect();
    let mut replies = client
        .chat(tokio_stream::iter(items.clone()))
        .await
        .unwrap()
        .into_inner();
    for item in &items {
        let reply = replies.message().await.unwrap().unwrap();
        assert_eq!((reply.n, &reply.data), (item.n, &item.data));
        assert_eq!(reply.text, format!("echo:{}", item.text));
    }
    assert!(replies.message().await.unwrap().is_none());
}

/// A handler that gives clones of its sender to tasks and returns `Ok` keeps its gRPC stream
/// open until the last clone goes, as on fRPC (the response ended at the return, and the
/// tasks' sends failed).
#[tokio::test]
async fn spawned_senders_keep_a_grpc_stream_open() {
    let (addr, _events) = start().await;
    let mut client = client(addr).await;
    let replies = client.count(count(40, "spawned")).await.unwrap().into_inner();
    let (mut got, end) = drain(replies).await;
    end.unwrap();
    got.sort_unstable();
    assert_eq!(got, (0..40).collect::<Vec<_>>());
}

/// A connection to the shared port that has sent nothing yet (neither fRPC nor HTTP/2) is
/// dropped when the server begins shutting down: it held `serve_with_shutdown` up to its idle
/// timeout (20 s here), past the grace.
#[tokio::test]
async fn a_silent_connection_does_not_hold_the_shared_ports_shutdown() {
    let mut config = frpc::ServerConfig::default();
    config.connection.idle_timeout = Duration::from_secs(20);
    config.shutdown_grace = Duration::from_millis(200);
    let (bound, _events) = bound_shared(config).await;
    let addr = bound.local_addr();
    let server = bound.server().clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(bound.serve_with_shutdown(async {
        let _ = stopped.await;
    }));
    let _silent = tokio::net::TcpStream::connect(addr).await.unwrap();
    while server.connections() == 0 {
        tokio::task::yield_now().await;
    }
    stop.send(()).unwrap();
    // A hang guard well below the idle timeout, not a timing assertion on the grace.
    tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("the shutdown waited for the silent connection")
        .unwrap()
        .unwrap();
}

/// A bidi handler that reads its requests in a task of its own still lets its response's
/// headers go while it waits for the first request: tonic's client waits for them before its
/// caller sends anything, so the call never opened (the face looked for the wait only right
/// after polling the handler, and the reading task's wait woke nobody).
#[tokio::test]
async fn a_handler_reading_in_a_task_of_its_own_opens_the_call_before_any_request() {
    let (addr, _events) = start().await;
    let mut client = client(addr).await;
    let (tx, rx) = mpsc::channel(4);
    let mut request = tonic::Request::new(tokio_stream::wrappers::ReceiverStream::new(rx));
    request
        .metadata_mut()
        .insert("x-spawned-reader", "yes".parse().unwrap());
    let response = tokio::time::timeout(Duration::from_secs(10), client.chat(request))
        .await
        .expect("the headers came while the handler waited for a request")
        .unwrap();
    let mut replies = response.into_inner();
    tx.send(item("a", 1)).await.unwrap();
    assert_eq!(replies.message().await.unwrap().unwrap().text, "echo:a");
    drop(tx);
    assert!(replies.message().await.unwrap().is_none());
}

/// `grpc.health.v1.Health/Watch` skips the server's layers, as the fRPC `Watch` does
/// (`Builder::intercept_health`): a balancer keeps one open per connection, which a
/// concurrency limit counted (one open watch under a limit of 1 held every other call back)
/// and a timeout cut.
#[tokio::test]
async fn grpc_health_watches_skip_the_servers_layers() {
    let (addr, _reporter) =
        serving_with_health(|builder| builder.layer(tower::limit::ConcurrencyLimitLayer::new(1))).await;
    let mut statuses = watch(addr, "").await;
    assert_eq!(next(&mut statuses).await, frpc::health::ServingStatus::Serving);
    let mut client = client(addr).await;
    let replies = tokio::time::timeout(Duration::from_secs(10), client.count(count(2, "")))
        .await
        .expect("the open watch holds no place under the limit")
        .unwrap()
        .into_inner();
    assert_eq!(drain(replies).await.0, [0, 1]);
}
