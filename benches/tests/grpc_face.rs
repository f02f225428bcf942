//! The gRPC face of a generated frpc service (`frpc::grpc`), called by tonic's generated client
//! of the same proto over real TCP: replies, every status code, metadata both ways,
//! `grpc-timeout` as the handler's deadline, a client's cancel reaching the handler, message
//! size limits, large messages byte-exact.

use std::net::SocketAddr;
use std::time::Duration;

use frpc_bench::frameworks::frpc::pb as fpb;
use frpc_bench::frameworks::tonic::pb as tpb;
use tokio::sync::mpsc;
use tpb::benchmark_service_client::BenchmarkServiceClient;
use unary_svc::Svc;

mod streams_svc;
mod unary_svc;

/// The gRPC face alone on a listener, decoding at most 1 KiB per message; the events.
async fn start() -> (SocketAddr, mpsc::UnboundedReceiver<String>) {
    let (svc, rx) = Svc::new();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = frpc::grpc::GrpcServer::new()
        .max_decoding_message_size(1024)
        .add_service(fpb::BenchmarkServiceServer::new(svc));
    assert_eq!(server.routes(), 2);
    tokio::spawn(server.serve_listener(listener));
    (addr, rx)
}

async fn client(addr: SocketAddr) -> BenchmarkServiceClient<tonic::transport::Channel> {
    BenchmarkServiceClient::connect(format!("http://{addr}"))
        .await
        .unwrap()
}

fn request(text: &str) -> tonic::Request<tpb::Request> {
    tonic::Request::new(tpb::Request { message: text.into() })
}

#[tokio::test]
async fn unary_calls_reply_and_map_every_status_code() {
    let (addr, _events) = start().await;
    let mut client = client(addr).await;
    let reply = client.benchmark(request("echo:héllo")).await.unwrap();
    assert_eq!(reply.into_inner().message, "echo:héllo");
    for n in 1..=16u8 {
        let status = client
            .benchmark(request(&format!("status:{n}")))
            .await
            .unwrap_err();
        let code = frpc::Code::from_u8(n).unwrap();
        assert_eq!(status.code() as i32, n as i32, "{status:?}");
        assert_eq!(status.message(), format!("failed with {code}"));
    }
}

/// gRPC reflection answers in `v1alpha` too (clients older than `v1` speak only it): the
/// service list holds the served service.
#[tokio::test]
async fn reflection_answers_v1alpha_clients() {
    use tonic_reflection::pb::v1alpha::ServerReflectionRequest;
    use tonic_reflection::pb::v1alpha::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1alpha::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1alpha::server_reflection_response::MessageResponse;
    let (addr, _events) = start().await;
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut client = ServerReflectionClient::new(channel);
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut answers = client
        .server_reflection_info(futures_util::stream::iter([request]))
        .await
        .unwrap()
        .into_inner();
    let answer = answers.message().await.unwrap().unwrap();
    let Some(MessageResponse::ListServicesResponse(list)) = answer.message_response else {
        panic!("not a service list: {answer:?}");
    };
    let names: Vec<&str> = list.service.iter().map(|s| s.name.as_str()).collect();
    assert!(names.contains(&"benchmark.BenchmarkService"), "{names:?}");
}

/// A panicking unary handler is INTERNAL, as on fRPC (not a reset stream), and the connection
/// serves the next call.
#[tokio::test]
async fn a_panicking_handler_is_internal() {
    let (addr, _events) = start().await;
    let mut client = client(addr).await;
    let status = client.benchmark(request("panic")).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::Internal, "{status:?}");
    assert_eq!(status.message(), "handler panicked", "{status:?}");
    let reply = client.benchmark(request("after")).await.unwrap();
    assert_eq!(reply.into_inner().message, "after");
}

#[tokio::test]
async fn metadata_reaches_the_handler_and_comes_back_as_headers() {
    let (addr, _events) = start().await;
    let mut client = client(addr).await;
    let mut call = request("meta");
    call.metadata_mut().insert("x-user", "ada".parse().unwrap());
    call.metadata_mut().insert_bin(
        "x-trace-bin",
        tonic::metadata::BinaryMetadataValue::from_bytes(&[0, 1, 255]),
    );
    let reply = client.benchmark(call).await.unwrap();
    assert_eq!(reply.metadata().get("x-echo-user").unwrap(), "ada");
    let bin = reply
        .metadata()
        .get_bin("x-echo-bin")
        .unwrap()
        .to_bytes()
        .unwrap();
    assert_eq!(bin.as_ref(), &[0, 1, 255]);
    assert_eq!(reply.into_inner().message, "ada");
}

/// Response metadata a handler sets under HTTP's own names (`content-length`, `connection`,
/// `transfer-encoding`, …) is left out of the response's headers: HTTP/2 forbids the
/// connection-specific ones and a `content-length` that is not the body's, and the call failed
/// with INTERNAL "h2 protocol error". The rest of the metadata still comes.
#[tokio::test]
async fn response_metadata_under_http_names_is_left_out() {
    let (addr, _events) = start().await;
    let mut client = client(addr).await;
    let mut call = request("meta");
    let set = [
        ("x-set-content-length", "5"),
        ("x-set-connection", "close"),
        ("x-set-transfer-encoding", "chunked"),
        ("x-set-keep-alive", "1"),
        ("x-set-upgrade", "h2c"),
        ("x-set-proxy-connection", "close"),
        ("x-set-x-kept", "yes"),
    ];
    for (key, value) in set {
        call.metadata_mut().insert(key, value.parse().unwrap());
    }
    let reply = client.benchmark(call).await.unwrap();
    assert_eq!(reply.metadata().get("x-kept").unwrap(), "yes");
    assert!(reply.metadata().get("connection").is_none());
    assert_eq!(reply.into_inner().message, "-");
}

#[tokio::test]
async fn grpc_timeout_is_the_deadline_and_cancels_the_handler() {
    let (addr, mut events) = start().await;
    let mut client = client(addr).await;
    let mut call = request("deadline");
    call.set_timeout(Duration::from_millis(200));
    let status = client.benchmark(call).await.unwrap_err();
    // tonic's channel times the call out itself too (CANCELLED, "Timeout expired"); the
    // server's DEADLINE_EXCEEDED races it.
    let codes = [tonic::Code::DeadlineExceeded, tonic::Code::Cancelled];
    assert!(codes.contains(&status.code()), "{status:?}");
    assert_eq!(events.recv().await.unwrap(), "deadline true");
    assert_eq!(events.recv().await.unwrap(), "deadline cancelled");
}

#[tokio::test]
async fn a_client_that_cancels_cancels_the_handler() {
    let (addr, mut events) = start().await;
    let mut client = client(addr).await;
    let call = tokio::spawn(async move { client.benchmark(request("hang")).await });
    assert_eq!(events.recv().await.unwrap(), "hang false");
    // Dropping the call makes tonic reset the HTTP/2 stream.
    call.abort();
    assert_eq!(events.recv().await.unwrap(), "hang cancelled");
}

#[tokio::test]
async fn oversized_requests_are_refused_and_unknown_methods_unimplemented() {
    let (addr, _events) = start().await;
    let mut client = client(addr).await;
    let small = client
        .blob(tpb::BlobRequest {
            data: vec![7; 1000].into(),
        })
        .await
        .unwrap();
    assert_eq!(small.into_inner().data.len(), 1000);
    let status = client
        .blob(tpb::BlobRequest {
            data: vec![7; 2000].into(),
        })
        .await
        .unwrap_err();
    // Refused before the handler, with RESOURCE_EXHAUSTED as gRPC servers answer (tonic's
    // framing says OUT_OF_RANGE; the face maps it).
    assert_eq!(status.code(), tonic::Code::ResourceExhausted, "{status:?}");
    assert!(status.message().contains("too large"), "{}", status.message());

    let mut grpc = tonic::client::Grpc::new(
        tonic::transport::Channel::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await
            .unwrap(),
    );
    grpc.ready().await.unwrap();
    let path = http::uri::PathAndQuery::from_static("/benchmark.BenchmarkService/Nope");
    let codec = tonic_prost::ProstCodec::<tpb::Request, tpb::Response>::default();
    let status = grpc.unary(request("x"), path, codec).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unimplemented);
    assert_eq!(
        status.message(),
        "unknown method Nope for service benchmark.BenchmarkService"
    );
    // A service nobody serves, in grpc-go's words too.
    grpc.ready().await.unwrap();
    let path = http::uri::PathAndQuery::from_static("/nope.Nope/Unary");
    let codec = tonic_prost::ProstCodec::<tpb::Request, tpb::Response>::default();
    let status = grpc.unary(request("x"), path, codec).await.unwrap_err();
    assert_eq!(
        (status.code(), status.message()),
        (tonic::Code::Unimplemented, "unknown service nope.Nope")
    );
}

#[tokio::test]
async fn one_port_serves_frpc_and_grpc_clients_at_the_same_time() {
    let (addr, mut events) = unary_svc::shared_port(Default::default()).await;
    let frpc_client = fpb::BenchmarkServiceClient::connect(addr).await.unwrap();
    let mut grpc_client = client(addr).await;
    // Both kinds of connection open at once, calls interleaved on each.
    for i in 0..20 {
        let text = format!("echo:{i}");
        let (fr, gr) = tokio::join!(
            frpc_client.benchmark(fpb::Request {
                message: text.clone()
            }),
            grpc_client.benchmark(request(&text)),
        );
        assert_eq!(fr.unwrap().message, text);
        assert_eq!(gr.unwrap().into_inner().message, text);
    }
    let err = frpc_client
        .benchmark(fpb::Request {
            message: "status:5".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), frpc::Code::NotFound);
    let status = grpc_client.benchmark(request("status:5")).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::NotFound);

    // Cancellation reaches the same handler code from the gRPC side of the shared port.
    let mut hanging = grpc_client.clone();
    let call = tokio::spawn(async move { hanging.benchmark(request("hang")).await });
    assert_eq!(events.recv().await.unwrap(), "hang false");
    call.abort();
    assert_eq!(events.recv().await.unwrap(), "hang cancelled");
}

/// On a shared port the gRPC face's calls take the server's places like fRPC calls: with
/// `Concurrency::Limited(1)`, a hanging gRPC call holds the one place, so a gRPC call and an
/// fRPC call behind it wait (here past their deadlines: they ran at once), and once the hang is
/// cancelled calls are answered again.
#[tokio::test]
async fn grpc_calls_take_the_servers_places() {
    let config = frpc::ServerConfig::default().concurrency(frpc::Concurrency::Limited(1));
    let (addr, mut events) = unary_svc::shared_port(config).await;
    let mut grpc_client = client(addr).await;
    let mut hanging = grpc_client.clone();
    let hang = tokio::spawn(async move { hanging.benchmark(request("hang")).await });
    assert_eq!(events.recv().await.unwrap(), "hang false");

    let mut behind = request("echo:behind");
    behind.set_timeout(Duration::from_millis(300));
    let status = grpc_client.benchmark(behind).await.unwrap_err();
    // The server's DEADLINE_EXCEEDED, or tonic's own timer first (CANCELLED).
    let timed_out = [tonic::Code::DeadlineExceeded, tonic::Code::Cancelled];
    assert!(timed_out.contains(&status.code()), "{status:?}");
    let frpc_client = fpb::BenchmarkServiceClient::connect(addr).await.unwrap();
    let frpc_behind = frpc_client.with_timeout(Duration::from_millis(300));
    let err = frpc_behind
        .benchmark(fpb::Request {
            message: "echo:behind".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), frpc::Code::DeadlineExceeded, "{err}");

    hang.abort();
    assert_eq!(events.recv().await.unwrap(), "hang cancelled");
    let reply = grpc_client.benchmark(request("echo:after")).await.unwrap();
    assert_eq!(reply.into_inner().message, "echo:after");
}

#[tokio::test]
async fn server_interceptors_and_layers_check_grpc_calls_too() {
    let bound = frpc::Server::builder()
        .grpc(true)
        .layer(tower::limit::ConcurrencyLimitLayer::new(8))
        .interceptor(|call: &frpc::CallRequest| match call.metadata().get("x-token") {
            Some("secret") => Ok(()),
            _ => Err(frpc::Status::with_code(frpc::Code::Unauthenticated, "no token")),
        })
        .add_service(fpb::BenchmarkServiceServer::new(Svc::new().0))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    let mut client = client(addr).await;

    let status = client.benchmark(request("echo:x")).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unauthenticated, "{status:?}");
    assert_eq!(status.message(), "no token");
    let mut call = request("echo:x");
    call.metadata_mut().insert("x-token", "secret".parse().unwrap());
    assert_eq!(
        client.benchmark(call).await.unwrap().into_inner().message,
        "echo:x"
    );
}

/// A blob of `n` bytes that differ (a byte-exact round trip shows nothing moved or was lost).
fn blob(n: usize) -> tpb::BlobRequest {
    tpb::BlobRequest {
        data: (0..n).map(|i| (i * 31 % 251) as u8).collect::<Vec<u8>>().into(),
    }
}

#[tokio::test]
async fn large_messages_cross_byte_exact_up_to_exactly_the_limit() {
    const LIMIT: usize = 1 << 20;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = frpc::grpc::GrpcServer::new()
        .max_decoding_message_size(LIMIT)
        .add_service(fpb::BenchmarkServiceServer::new(Svc::new().0));
    tokio::spawn(server.serve_listener(listener));
    let mut client = client(addr).await.max_decoding_message_size(2 * LIMIT);
    // A message of `n` data bytes encodes as its tag, a 3-byte length and the data.
    let at_limit = LIMIT - 4;
    for n in [0, 1, 64 * 1024, 1_000_000, at_limit] {
        let request = blob(n);
        let reply = client.blob(request.clone()).await.unwrap().into_inner();
        assert_eq!(reply.data, request.data, "{n} bytes");
    }
    let status = client.blob(blob(at_limit + 1)).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::ResourceExhausted, "{status:?}");
}

#[tokio::test]
async fn replies_over_the_sending_limit_are_out_of_range() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = frpc::grpc::GrpcServer::new()
        .max_encoding_message_size(100)
        .add_service(fpb::BenchmarkServiceServer::new(Svc::new().0));
    tokio::spawn(server.serve_listener(listener));
    let mut client = client(addr).await;
    // 98 data bytes encode in 100 (a tag, a 1-byte length): exactly the limit.
    assert_eq!(client.blob(blob(98)).await.unwrap().into_inner().data.len(), 98);
    let status = client.blob(blob(99)).await.unwrap_err();
    // As tonic's own server answers it.
    assert_eq!(status.code(), tonic::Code::OutOfRange, "{status:?}");
    assert!(status.message().contains("too large"), "{}", status.message());
}

/// On a shared port replies are held to the server's `max_content_length` on both faces, as
/// requests are: a reply over it fails its call (gRPC: OUT_OF_RANGE, as tonic's server
/// answers; fRPC: RESOURCE_EXHAUSTED), and the connection goes on.
#[tokio::test]
async fn a_shared_port_holds_grpc_replies_to_max_content_length() {
    let mut config = frpc::ServerConfig::default();
    config.connection.max_content_length = 1024;
    let (addr, _events) = unary_svc::shared_port(config).await;
    let mut grpc_client = client(addr).await;
    let status = grpc_client.benchmark(request("grow:2000")).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::OutOfRange, "{status:?}");
    let reply = grpc_client.benchmark(request("grow:900")).await.unwrap();
    assert_eq!(reply.into_inner().message.len(), 900);

    let frpc_client = fpb::BenchmarkServiceClient::connect(addr).await.unwrap();
    let grow = |text: &str| fpb::Request { message: text.into() };
    let err = frpc_client.benchmark(grow("grow:2000")).await.unwrap_err();
    assert_eq!(err.code(), frpc::Code::ResourceExhausted, "{err}");
    let reply = frpc_client.benchmark(grow("grow:900")).await.unwrap();
    assert_eq!(reply.message.len(), 900);
}

/// A gRPC connection on the shared port that goes silent is dropped, as an fRPC one is: before
/// its HTTP/2 preface (one byte, `P`, routes it here) at the idle timeout, after it once a
/// keep-alive PING goes unanswered. A live client, whose HTTP/2 stack answers PINGs, keeps a
/// silent call open. (hyper waited for a preface for ever: 10,000 connections of one byte each
/// held every `max_connections` place.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_grpc_connections_are_dropped_at_the_idle_timeout() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut config = frpc::ServerConfig::default();
    config.connection.idle_timeout = Duration::from_millis(200);
    let (addr, mut events) = unary_svc::shared_port(config).await;

    /// Reads (and drops) what the server sends until it closes; never answers.
    async fn until_closed(mut peer: tokio::net::TcpStream) {
        let mut buf = [0u8; 1024];
        let read_all = async {
            while let Ok(n) = peer.read(&mut buf).await
                && n > 0
            {}
        };
        tokio::time::timeout(Duration::from_secs(20), read_all)
            .await
            .expect("the server closes a silent connection");
    }
    // One byte, then nothing.
    let mut peer = tokio::net::TcpStream::connect(addr).await.unwrap();
    peer.write_all(b"P").await.unwrap();
    until_closed(peer).await;
    // The preface and an empty SETTINGS frame, then nothing: no SETTINGS ack, no PING answer.
    let mut peer = tokio::net::TcpStream::connect(addr).await.unwrap();
    peer.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        .await
        .unwrap();
    until_closed(peer).await;

    // A tonic client's call that waits for 5 idle timeouts stays open: its stack answers PINGs.
    let mut grpc_client = client(addr).await;
    let call = tokio::spawn(async move { grpc_client.benchmark(request("hang")).await });
    assert_eq!(events.recv().await.unwrap(), "hang false");
    let quiet = tokio::time::timeout(Duration::from_secs(1), events.recv()).await;
    assert!(quiet.is_err(), "the call was cancelled: {quiet:?}");
    assert!(!call.is_finished());
    call.abort();
}

/// Sends one gRPC request over a raw HTTP/2 connection: `frames` is its body (left open if it
/// never ends), `timeout` its `grpc-timeout`; returns the answer's `grpc-status` and
/// `grpc-message`, from its trailers or, for a trailers-only answer, its headers.
async fn raw_grpc_call<S>(addr: SocketAddr, path: &str, frames: S, timeout: Option<&str>) -> (String, String)
where
    S: futures_util::Stream<Item = Result<hyper::body::Frame<bytes::Bytes>, std::convert::Infallible>>
        + Send
        + Unpin
        + 'static,
{
    use http_body_util::BodyExt;
    let io = hyper_util::rt::TokioIo::new(tokio::net::TcpStream::connect(addr).await.unwrap());
    let (mut sender, connection) =
        hyper::client::conn::http2::handshake(hyper_util::rt::TokioExecutor::new(), io)
            .await
            .unwrap();
    tokio::spawn(connection);
    let mut request = http::Request::post(format!("http://{addr}{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    if let Some(timeout) = timeout {
        request = request.header("grpc-timeout", timeout);
    }
    let request = request.body(http_body_util::StreamBody::new(frames)).unwrap();
    let answer = async {
        let response = sender.send_request(request).await.unwrap();
        let (parts, body) = response.into_parts();
        let trailers = body
            .collect()
            .await
            .ok()
            .and_then(|body| body.trailers().cloned());
        let headers = match parts.headers.contains_key("grpc-status") {
            true => parts.headers,
            false => trailers.unwrap_or_default(),
        };
        let value = |name: &str| {
            let value = headers.get(name).map(|v| v.to_str().unwrap().to_owned());
            value.unwrap_or_default()
        };
        (value("grpc-status"), value("grpc-message"))
    };
    tokio::time::timeout(Duration::from_secs(20), answer)
        .await
        .expect("the server answers")
}

/// One DATA frame of `body`.
fn data(body: Vec<u8>) -> Result<hyper::body::Frame<bytes::Bytes>, std::convert::Infallible> {
    Ok(hyper::body::Frame::data(bytes::Bytes::from(body)))
}

/// A request that is not the method's protobuf message is INTERNAL, as gRPC servers (tonic's
/// included) answer one they cannot parse (it was INVALID_ARGUMENT, fRPC's answer).
#[tokio::test]
async fn an_undecodable_request_is_internal() {
    let (addr, _events) = start().await;
    // Field 1, length 5, one byte: truncated.
    let message = vec![0u8, 0, 0, 0, 3, 0x0a, 0x05, 0xff];
    let frames = futures_util::stream::iter([data(message)]);
    let (status, text) = raw_grpc_call(addr, "/benchmark.BenchmarkService/Benchmark", frames, None).await;
    assert_eq!(status, "13", "INTERNAL: {text}");
    assert!(text.starts_with("cannot%20decode%20the%20request"), "{text}");
}

/// A unary call's deadline covers the arrival of its request too, and the request is read only
/// once the call has its place among the calls in flight: a client whose request never ends
/// gets DEADLINE_EXCEEDED from the server (it waited for ever, its partly sent body uncounted).
/// A raw HTTP/2 client, as tonic's would end the call itself at the deadline.
#[tokio::test]
async fn a_unary_request_that_never_ends_meets_its_deadline() {
    let (addr, _events) = start().await;
    // Half a gRPC message (its prefix announces 100 bytes, 10 come), then nothing: the body
    // stays open.
    let mut half = vec![0u8, 0, 0, 0, 100];
    half.extend_from_slice(&[0u8; 10]);
    let frames = futures_util::StreamExt::chain(
        futures_util::stream::iter([data(half)]),
        futures_util::stream::pending(),
    );
    let path = "/benchmark.BenchmarkService/Benchmark";
    let (status, text) = raw_grpc_call(addr, path, frames, Some("200m")).await;
    assert_eq!(status, "4", "DEADLINE_EXCEEDED: {text}");
}

/// A server-streaming call's deadline covers the arrival of its one request too, as a unary
/// call's does, and the stream's place among the server's open streams goes with it: it was
/// read outside the deadline, so a request that never ended held the call, and its place in
/// `max_open_streams`, for ever.
#[tokio::test]
async fn a_server_streaming_request_that_never_ends_meets_its_deadline() {
    use streams_svc::{Svc, fpb};
    let (events, _seen) = mpsc::unbounded_channel();
    let server = frpc::Server::builder()
        .config(frpc::ServerConfig::default().max_open_streams(1))
        .grpc(true)
        .add_service(fpb::StreamsServer::new(Svc { events }))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = server.local_addr();
    tokio::spawn(server.serve());
    let mut half = vec![0u8, 0, 0, 0, 100];
    half.extend_from_slice(&[0u8; 10]);
    let frames = futures_util::StreamExt::chain(
        futures_util::stream::iter([data(half)]),
        futures_util::stream::pending(),
    );
    let (status, text) = raw_grpc_call(addr, "/streams.Streams/Count", frames, Some("200m")).await;
    assert_eq!(status, "4", "DEADLINE_EXCEEDED: {text}");
    // Its place is free again: the server's one open stream may be another call's.
    let frpc_client = fpb::StreamsClient::connect(addr).await.unwrap();
    let request = fpb::CountRequest {
        n: 2,
        mode: String::new(),
    };
    let mut items = frpc_client.count(request).await.unwrap();
    let mut got = Vec::new();
    while let Some(item) = items.message().await.unwrap() {
        got.push(item.n);
    }
    assert_eq!(got, [0, 1]);
}
