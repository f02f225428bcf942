//! The gRPC client direction: frpc's generated `BenchmarkServiceClient` (unary) and
//! `StreamsClient` (every streaming kind) over `frpc::grpc::GrpcChannel`, calling a plain tonic
//! server of the same proto and frpc's own gRPC face (alone and on a shared port), over real
//! TCP: replies, every status code (mid-stream too), metadata both ways, the timeout as
//! `grpc-timeout`, a dropped call cancelling the handler, the size limits, and the errors of
//! what it cannot do (a call with no gRPC path, a method the server lacks, nobody listening).

use std::net::SocketAddr;
use std::time::Duration;

use frpc::grpc::GrpcChannel;
use frpc_bench::frameworks::frpc::pb as fpb;
use frpc_bench::frameworks::tonic::pb as tpb;
use streams_svc::{Svc, fpb as spb, tonic_svc};
use tokio::sync::mpsc;

mod streams_svc;
mod unary_svc;

/// What a handler saw, reported to the test.
type Events = mpsc::UnboundedSender<String>;

/// A plain tonic server's handler: behaves by the request's text (`echo:x`, `status:N`,
/// `meta`, `deadline`, `hang`).
struct TonicSvc {
    events: Events,
}

#[tonic::async_trait]
impl tpb::benchmark_service_server::BenchmarkService for TonicSvc {
    async fn benchmark(
        &self,
        request: tonic::Request<tpb::Request>,
    ) -> Result<tonic::Response<tpb::Response>, tonic::Status> {
        let timeout = request.metadata().get("grpc-timeout").cloned();
        let metadata = request.metadata().clone();
        let text = request.into_inner().message;
        if let Some(code) = text.strip_prefix("status:") {
            let code = tonic::Code::from_i32(code.parse().unwrap());
            return Err(tonic::Status::new(code, format!("tonic failed with {code:?}")));
        }
        match text.as_str() {
            "meta" => {
                let user = metadata
                    .get("x-user")
                    .map_or("-", |v| v.to_str().unwrap())
                    .to_string();
                let bin = metadata.get_bin("x-trace-bin").map(|v| v.to_bytes().unwrap());
                let mut response = tonic::Response::new(tpb::Response {
                    message: user.clone(),
                });
                response
                    .metadata_mut()
                    .insert("x-echo-user", user.parse().unwrap());
                let bin = tonic::metadata::BinaryMetadataValue::from_bytes(&bin.unwrap_or_default());
                response.metadata_mut().insert_bin("x-echo-bin", bin);
                Ok(response)
            }
            "deadline" | "hang" => {
                let timeout = timeout.map(|v| v.to_str().unwrap().to_string());
                self.events.send(format!("grpc-timeout {timeout:?}")).unwrap();
                std::future::pending().await
            }
            _ => Ok(tonic::Response::new(tpb::Response { message: text })),
        }
    }

    async fn blob(
        &self,
        request: tonic::Request<tpb::BlobRequest>,
    ) -> Result<tonic::Response<tpb::BlobResponse>, tonic::Status> {
        Ok(tonic::Response::new(tpb::BlobResponse {
            data: request.into_inner().data,
        }))
    }
}

/// A plain tonic server (tonic's own transport), its events.
async fn tonic_server() -> (SocketAddr, mpsc::UnboundedReceiver<String>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = tpb::benchmark_service_server::BenchmarkServiceServer::new(TonicSvc { events: tx });
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    let server = tonic::transport::Server::builder().add_service(service);
    tokio::spawn(server.serve_with_incoming(incoming));
    (addr, rx)
}

/// frpc's gRPC face on its own listener.
async fn frpc_face() -> (SocketAddr, mpsc::UnboundedReceiver<String>) {
    let (svc, rx) = unary_svc::Svc::new();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = frpc::grpc::GrpcServer::new().add_service(fpb::BenchmarkServiceServer::new(svc));
    tokio::spawn(server.serve_listener(listener));
    (addr, rx)
}

/// An frpc server serving fRPC and gRPC on one port.
async fn shared_port() -> (SocketAddr, mpsc::UnboundedReceiver<String>) {
    unary_svc::shared_port(Default::default()).await
}

async fn client(addr: SocketAddr) -> fpb::BenchmarkServiceClient<GrpcChannel> {
    let channel = GrpcChannel::connect(&format!("http://{addr}")).await.unwrap();
    fpb::BenchmarkServiceClient::new(channel)
}

fn request(text: &str) -> fpb::Request {
    fpb::Request { message: text.into() }
}

/// Replies, a bytes method, and every status code with its message, from the handler at `addr`
/// whose status messages start with `failed` (which server answered).
async fn replies_and_statuses(addr: SocketAddr, failed: &str) {
    let client = client(addr).await;
    assert_eq!(
        client.benchmark(request("echo:héllo")).await.unwrap().message,
        "echo:héllo"
    );
    let blob = client
        .blob(fpb::BlobRequest {
            data: vec![0, 255, 7].into(),
        })
        .await
        .unwrap();
    assert_eq!(&blob.data[..], &[0, 255, 7]);
    for n in 1..=16u8 {
        let err = client
            .benchmark(request(&format!("status:{n}")))
            .await
            .unwrap_err();
        let frpc::Error::Status(status) = err else {
            panic!("not a status: {err:?}")
        };
        assert_eq!(status.code() as u8, n, "{status:?}");
        assert!(status.message().starts_with(failed), "{status:?}");
    }
}

#[tokio::test]
async fn a_generated_client_calls_a_plain_tonic_server() {
    let (addr, _events) = tonic_server().await;
    replies_and_statuses(addr, "tonic failed with ").await;
}

#[tokio::test]
async fn a_generated_client_calls_frpcs_grpc_face() {
    let (addr, _events) = frpc_face().await;
    replies_and_statuses(addr, "failed with ").await;
    let (addr, _events) = shared_port().await;
    replies_and_statuses(addr, "failed with ").await;
}

/// Request metadata (text and `-bin`) reaches the handler; its response metadata comes back.
async fn metadata_both_ways(addr: SocketAddr) {
    let client = client(addr).await;
    let mut metadata = frpc::Metadata::new();
    metadata.insert("x-user", "ada").unwrap();
    metadata.insert_bin("x-trace-bin", vec![0u8, 1, 255]).unwrap();
    let slot = frpc::MetadataSlot::new();
    let reply = client
        .with_metadata(metadata)
        .with_response_metadata(&slot)
        .benchmark(request("meta"))
        .await
        .unwrap();
    assert_eq!(reply.message, "ada");
    let back = slot.take().expect("response metadata");
    assert_eq!(back.get("x-echo-user"), Some("ada"));
    assert_eq!(back.get_bin("x-echo-bin"), Some(&[0u8, 1, 255][..]));
    assert!(
        !back.contains_key("content-type"),
        "HTTP's own headers are not metadata"
    );
}

#[tokio::test]
async fn metadata_crosses_both_ways_with_tonic_and_frpc() {
    let (addr, _events) = tonic_server().await;
    metadata_both_ways(addr).await;
    let (addr, _events) = shared_port().await;
    metadata_both_ways(addr).await;
}

/// A timed-out call's error: our own timer's, or the server's `DEADLINE_EXCEEDED`, whichever
/// came first.
fn is_timeout(err: &frpc::Error) -> bool {
    match err {
        frpc::Error::Timeout(limit) => *limit == Duration::from_millis(200),
        frpc::Error::Status(status) => status.code() == frpc::Code::DeadlineExceeded,
        _ => false,
    }
}

#[tokio::test]
async fn the_timeout_goes_as_grpc_timeout() {
    let (addr, mut events) = tonic_server().await;
    let to_tonic = client(addr).await.with_timeout(Duration::from_millis(200));
    let err = to_tonic.benchmark(request("deadline")).await.unwrap_err();
    assert!(is_timeout(&err), "{err:?}");
    let seen = events.recv().await.unwrap();
    // tonic encodes the remaining time, a little under 200 ms, in the unit it picks.
    assert!(
        seen.starts_with("grpc-timeout Some(\"") && seen.len() > 22,
        "{seen}"
    );

    let (addr, mut events) = frpc_face().await;
    let to_frpc = client(addr).await.with_timeout(Duration::from_millis(200));
    let err = to_frpc.benchmark(request("deadline")).await.unwrap_err();
    assert!(is_timeout(&err), "{err:?}");
    assert_eq!(events.recv().await.unwrap(), "deadline true");
    assert_eq!(events.recv().await.unwrap(), "deadline cancelled");

    let zero = to_frpc
        .with_timeout(Duration::ZERO)
        .benchmark(request("x"))
        .await
        .unwrap_err();
    assert!(
        matches!(&zero, frpc::Error::Config(text) if text.contains("zero")),
        "{zero:?}"
    );
}

#[tokio::test]
async fn a_dropped_call_cancels_the_handler() {
    let (addr, mut events) = shared_port().await;
    let client = client(addr).await;
    let call = tokio::spawn(async move { client.benchmark(request("hang")).await });
    assert_eq!(events.recv().await.unwrap(), "hang false");
    call.abort();
    assert_eq!(events.recv().await.unwrap(), "hang cancelled");
}

#[tokio::test]
async fn what_it_cannot_do_fails_clearly() {
    let (addr, _events) = tonic_server().await;
    let channel = GrpcChannel::connect(&format!("http://{addr}")).await.unwrap();
    // A call by operation number alone has no gRPC method to go to, streaming or not.
    let err = frpc::codegen::call_unary::<fpb::Request, fpb::Response>(&channel, 10, request("x"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, frpc::Error::Config(text) if text.contains("gRPC method path")),
        "{err:?}"
    );
    let err = frpc::codegen::call_bidi::<fpb::Request, fpb::Response>(&channel, 10)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, frpc::Error::Config(text) if text.contains("gRPC method path")),
        "{err:?}"
    );
    // A streaming method the server does not have: its UNIMPLEMENTED, at the open.
    let err = frpc::codegen::call_server_streaming_at::<fpb::Request, fpb::Response>(
        &channel,
        10,
        "/benchmark.BenchmarkService/NopeStream",
        &request("x"),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&err, frpc::Error::Status(s) if s.code() == frpc::Code::Unimplemented),
        "{err:?}"
    );
    // A method the server does not have: its UNIMPLEMENTED.
    let err = frpc::codegen::call_unary_at::<fpb::Request, fpb::Response>(
        &channel,
        10,
        "/benchmark.BenchmarkService/Nope",
        request("x"),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&err, frpc::Error::Status(s) if s.code() == frpc::Code::Unimplemented),
        "{err:?}"
    );

    // Nobody listening, a malformed endpoint.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let closed_addr = closed.local_addr().unwrap();
    drop(closed);
    let err = GrpcChannel::connect(&format!("http://{closed_addr}"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, frpc::Error::Unavailable(text) if text.contains("refused")),
        "{err}"
    );
    let err = GrpcChannel::connect("no such uri").await.unwrap_err();
    assert!(matches!(&err, frpc::Error::Config(_)), "{err}");
}

#[tokio::test]
async fn reply_limits_apply() {
    let (addr, _events) = tonic_server().await;
    let channel = GrpcChannel::connect(&format!("http://{addr}"))
        .await
        .unwrap()
        .max_decoding_message_size(100)
        .max_encoding_message_size(200);
    let client = fpb::BenchmarkServiceClient::new(channel);
    let blob = |n: usize| fpb::BlobRequest {
        data: vec![1; n].into(),
    };
    assert_eq!(client.blob(blob(90)).await.unwrap().data.len(), 90);
    // The reply is over the client's limit (tonic's framing says OUT_OF_RANGE).
    let err = client.blob(blob(150)).await.unwrap_err();
    assert!(
        matches!(&err, frpc::Error::Status(s) if s.code() == frpc::Code::OutOfRange && s.message().contains("too large")),
        "{err:?}"
    );
    // A request over the sending limit never leaves.
    let err = client.blob(blob(300)).await.unwrap_err();
    assert!(matches!(err, frpc::Error::TooLarge { max: 200, .. }), "{err:?}");
}

// Streaming methods: the generated `StreamsClient` over `GrpcChannel`, against a plain tonic
// server of `proto/streams.proto` and frpc's gRPC face (the shared port) serving one frpc
// implementation of it.

type Streams = spb::StreamsClient<GrpcChannel>;

/// frpc's gRPC face of the streaming service, on a port shared with fRPC.
async fn frpc_streams() -> (SocketAddr, mpsc::UnboundedReceiver<String>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let bound = frpc::Server::builder()
        .grpc(true)
        .add_service(spb::StreamsServer::new(Svc { events: tx }))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    (addr, rx)
}

/// Runs `check` against a plain tonic server of the streaming service, then frpc's face.
async fn on_both<F, Fut>(check: F)
where
    F: Fn(SocketAddr, mpsc::UnboundedReceiver<String>) -> Fut,
    Fut: Future<Output = ()>,
{
    let (addr, events) = tonic_svc::start().await;
    check(addr, events).await;
    let (addr, events) = frpc_streams().await;
    check(addr, events).await;
}

async fn streams(addr: SocketAddr) -> Streams {
    Streams::new(GrpcChannel::connect(&format!("http://{addr}")).await.unwrap())
}

fn item(text: &str, n: u32) -> spb::Item {
    spb::Item {
        text: text.into(),
        n,
        data: Default::default(),
    }
}

fn count(n: u32, mode: &str) -> spb::CountRequest {
    spb::CountRequest { n, mode: mode.into() }
}

/// Every reply's number, and how the stream ended.
async fn drain(mut replies: frpc::Streaming<spb::Item>) -> (Vec<u32>, Result<(), frpc::Error>) {
    let mut got = Vec::new();
    loop {
        match replies.message().await {
            Ok(Some(item)) => got.push(item.n),
            Ok(None) => return (got, Ok(())),
            Err(err) => return (got, Err(err)),
        }
    }
}

/// The next thing a handler saw: a test that waits for what never comes fails, rather than
/// hangs.
async fn event(events: &mut mpsc::UnboundedReceiver<String>) -> String {
    let next = tokio::time::timeout(Duration::from_secs(10), events.recv());
    next.await
        .expect("no event within 10 s")
        .expect("the server went")
}

/// `err` is a status of `code` saying `message`.
fn assert_status(err: &frpc::Error, code: frpc::Code, message: &str) {
    assert!(
        matches!(err, frpc::Error::Status(s) if s.code() == code && s.message() == message),
        "{err:?}"
    );
}

async fn messages_both_ways(addr: SocketAddr) {
    let client = streams(addr).await;
    let (got, end) = drain(client.count(count(5, "")).await.unwrap()).await;
    assert_eq!(got, [0, 1, 2, 3, 4]);
    end.unwrap();
    let (got, end) = drain(client.count(count(0, "")).await.unwrap()).await;
    assert!(got.is_empty());
    end.unwrap();

    // More requests than the call buffers, all sent before anyone reads the response.
    let mut sum = client.sum().await.unwrap();
    for n in 0..50 {
        sum.send(item("x", n)).await.unwrap();
    }
    let total = sum.close_and_recv().await.unwrap();
    assert_eq!((total.sum, total.count), (1225, 50));

    let mut chat = client.chat().await.unwrap();
    for n in 0..5 {
        chat.send(item(&format!("m{n}"), n)).await.unwrap();
        let reply = chat.message().await.unwrap().unwrap();
        assert_eq!((reply.text, reply.n), (format!("echo:m{n}"), n));
    }
    chat.close_send().await.unwrap();
    assert!(chat.message().await.unwrap().is_none());

    // Split: a task sends while the caller reads.
    let (mut sender, replies) = client.chat().await.unwrap().split();
    let sending = tokio::spawn(async move {
        for n in 0..100 {
            sender.send(item("s", n)).await.unwrap();
        }
        sender.close().await.unwrap();
    });
    let (got, end) = drain(replies).await;
    end.unwrap();
    sending.await.unwrap();
    assert_eq!(got, (0..100).collect::<Vec<_>>());
}

#[tokio::test]
async fn every_streaming_kind_carries_messages_both_ways() {
    on_both(|addr, _events| messages_both_ways(addr)).await;
}

async fn errors_mid_stream(addr: SocketAddr) {
    let client = streams(addr).await;
    let (got, end) = drain(client.count(count(3, "fail")).await.unwrap()).await;
    assert_eq!(got, [0, 1, 2]);
    assert_status(&end.unwrap_err(), frpc::Code::Aborted, "failed after 3");
    // Failing before any reply: at the open (a trailers-only answer) or as the first item.
    let end = match client.count(count(0, "fail")).await {
        Ok(replies) => drain(replies).await.1,
        Err(err) => Err(err),
    };
    assert_status(&end.unwrap_err(), frpc::Code::Aborted, "failed after 0");

    let mut sum = client.sum().await.unwrap();
    sum.send(item("a", 1)).await.unwrap();
    sum.send(item("fail", 2)).await.unwrap();
    let err = sum.close_and_recv().await.unwrap_err();
    assert_status(&err, frpc::Code::InvalidArgument, "bad item");

    let mut chat = client.chat().await.unwrap();
    chat.send(item("a", 1)).await.unwrap();
    assert_eq!(chat.message().await.unwrap().unwrap().text, "echo:a");
    chat.send(item("fail", 2)).await.unwrap();
    let err = chat.message().await.unwrap_err();
    assert_status(&err, frpc::Code::FailedPrecondition, "chat failed");
}

#[tokio::test]
async fn an_error_status_mid_stream_comes_after_the_replies_before_it() {
    on_both(|addr, _events| errors_mid_stream(addr)).await;
}

async fn streaming_metadata(addr: SocketAddr) {
    let mut metadata = frpc::Metadata::new();
    metadata.insert("x-user", "ada").unwrap();
    let slot = frpc::MetadataSlot::new();
    let client = streams(addr)
        .await
        .with_metadata(metadata)
        .with_response_metadata(&slot);

    // Server streaming: the headers once the stream opened, the trailers added at its end.
    let mut replies = client.count(count(2, "meta")).await.unwrap();
    let headers = slot.get().expect("the response's headers");
    assert_eq!(headers.get("x-echo-user"), Some("ada"));
    assert!(!headers.contains_key("x-done"));
    assert!(
        !headers.contains_key("content-type"),
        "HTTP's own headers are not metadata"
    );
    assert_eq!(replies.message().await.unwrap().unwrap().n, 0);
    let (got, end) = drain(replies).await;
    assert_eq!(got, [1]);
    end.unwrap();
    let all = slot.take().expect("headers and trailers");
    assert_eq!(all.get("x-echo-user"), Some("ada"));
    assert_eq!(all.get("x-done"), Some("yes"));

    let mut sum = client.sum().await.unwrap();
    sum.send(item("x", 1)).await.unwrap();
    assert_eq!(sum.close_and_recv().await.unwrap().sum, 1);
    assert_eq!(
        slot.take().expect("sum's metadata").get("x-echo-user"),
        Some("ada")
    );

    let mut chat = client.chat().await.unwrap();
    chat.send(item("x", 1)).await.unwrap();
    assert_eq!(chat.message().await.unwrap().unwrap().text, "echo:x");
    assert_eq!(
        slot.take().expect("chat's headers").get("x-echo-user"),
        Some("ada")
    );
}

#[tokio::test]
async fn streaming_metadata_goes_as_headers_and_comes_back_from_headers_and_trailers() {
    on_both(|addr, _events| streaming_metadata(addr)).await;
}

/// The streaming calls' timeout: enough for the open on a loaded machine, short for a test.
const LIMIT: Duration = Duration::from_millis(500);

/// The call's timeout, as our timer (or the server's, mapped) ends it.
fn assert_timeout(err: &frpc::Error) {
    assert!(
        matches!(err, frpc::Error::Timeout(limit) if *limit == LIMIT),
        "{err:?}"
    );
}

async fn timeouts(addr: SocketAddr, mut events: mpsc::UnboundedReceiver<String>) {
    let client = streams(addr).await.with_timeout(LIMIT);
    let mut replies = client.count(count(1, "hang")).await.unwrap();
    assert_eq!(replies.message().await.unwrap().unwrap().n, 0);
    assert_timeout(&replies.message().await.unwrap_err());
    assert!(replies.message().await.unwrap().is_none(), "the stream is over");
    assert_eq!(event(&mut events).await, "count hang true");
    assert_eq!(event(&mut events).await, "count cancelled");

    let mut sum = client.sum().await.unwrap();
    sum.send(item("hang", 1)).await.unwrap();
    assert_timeout(&sum.close_and_recv().await.unwrap_err());
    assert_eq!(event(&mut events).await, "sum hang true");
    assert_eq!(event(&mut events).await, "sum cancelled");

    let mut chat = client.chat().await.unwrap();
    chat.send(item("hang", 1)).await.unwrap();
    assert_timeout(&chat.message().await.unwrap_err());
    assert_eq!(event(&mut events).await, "chat hang true");
    assert_eq!(event(&mut events).await, "chat cancelled");
    // Past the deadline nothing more is sent.
    assert_timeout(&chat.send(item("late", 2)).await.unwrap_err());

    let zero = client.with_timeout(Duration::ZERO).chat().await.unwrap_err();
    assert!(
        matches!(&zero, frpc::Error::Config(text) if text.contains("zero")),
        "{zero:?}"
    );
}

#[tokio::test]
async fn the_timeout_bounds_every_streaming_kind_and_goes_as_grpc_timeout() {
    on_both(timeouts).await;
}

async fn cancels(addr: SocketAddr, mut events: mpsc::UnboundedReceiver<String>) {
    let client = streams(addr).await;
    let mut replies = client.count(count(1, "hang")).await.unwrap();
    assert_eq!(replies.message().await.unwrap().unwrap().n, 0);
    assert_eq!(event(&mut events).await, "count hang false");
    drop(replies);
    assert_eq!(event(&mut events).await, "count cancelled");

    let mut sum = client.sum().await.unwrap();
    sum.send(item("hang", 1)).await.unwrap();
    assert_eq!(event(&mut events).await, "sum hang false");
    drop(sum);
    assert_eq!(event(&mut events).await, "sum cancelled");

    let mut chat = client.chat().await.unwrap();
    chat.send(item("hang", 1)).await.unwrap();
    assert_eq!(event(&mut events).await, "chat hang false");
    drop(chat);
    assert_eq!(event(&mut events).await, "chat cancelled");
}

#[tokio::test]
async fn dropping_a_streaming_call_cancels_its_handler() {
    on_both(cancels).await;
}

async fn oversize(addr: SocketAddr) {
    let channel = GrpcChannel::connect(&format!("http://{addr}"))
        .await
        .unwrap()
        .max_encoding_message_size(100)
        .max_decoding_message_size(50);
    let client = Streams::new(channel);
    let big = |len: usize| spb::Item {
        text: "b".into(),
        n: 1,
        data: vec![7; len].into(),
    };
    let err = client.count(count(1, &"m".repeat(200))).await.unwrap_err();
    assert!(matches!(err, frpc::Error::TooLarge { max: 100, .. }), "{err:?}");

    // A request over the limit never leaves, and the stream goes on.
    let mut sum = client.sum().await.unwrap();
    let err = sum.send(big(200)).await.unwrap_err();
    assert!(matches!(err, frpc::Error::TooLarge { max: 100, .. }), "{err:?}");
    sum.send(item("x", 2)).await.unwrap();
    let total = sum.close_and_recv().await.unwrap();
    assert_eq!((total.sum, total.count), (2, 1));

    let mut chat = client.chat().await.unwrap();
    let err = chat.send(big(200)).await.unwrap_err();
    assert!(matches!(err, frpc::Error::TooLarge { max: 100, .. }), "{err:?}");
    chat.send(big(10)).await.unwrap();
    assert_eq!(chat.message().await.unwrap().unwrap().data.len(), 10);
    // A reply over the client's limit (tonic's framing says OUT_OF_RANGE) ends the stream.
    chat.send(big(60)).await.unwrap();
    let err = chat.message().await.unwrap_err();
    assert!(
        matches!(&err, frpc::Error::Status(s) if s.code() == frpc::Code::OutOfRange && s.message().contains("too large")),
        "{err:?}"
    );
}

#[tokio::test]
async fn streaming_messages_keep_to_the_size_limits() {
    on_both(|addr, _events| oversize(addr)).await;
}

/// frpc's own health client through a `GrpcChannel`: `grpc.health.v1.Health`'s `Check` and
/// `Watch`, answered here by frpc's gRPC face from the same reporter fRPC clients read.
#[tokio::test]
async fn the_health_client_checks_and_watches_through_a_grpc_channel() {
    use frpc::health::{HealthClient, ServingStatus};
    let (reporter, health) = frpc::health::service();
    reporter.set_serving("bench.BenchmarkService");
    let bound = frpc::Server::builder()
        .grpc(true)
        .add_service(health)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    let channel = GrpcChannel::connect(&format!("http://{addr}")).await.unwrap();
    let client = HealthClient::new(channel);

    assert_eq!(
        client.check("bench.BenchmarkService").await.unwrap(),
        ServingStatus::Serving
    );
    let unknown = client.check("nobody").await.unwrap_err();
    assert_status(&unknown, frpc::Code::NotFound, "unknown service");

    let mut watch = client.watch("bench.BenchmarkService").await.unwrap();
    assert_eq!(watch.message().await.unwrap(), Some(ServingStatus::Serving));
    reporter.set_not_serving("bench.BenchmarkService");
    assert_eq!(watch.message().await.unwrap(), Some(ServingStatus::NotServing));
}
