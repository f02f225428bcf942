//! The gRPC face (feature `grpc`) against peers that abuse it, over a raw HTTP/2 client
//! (hyper's) so the test controls what a gRPC library would not let it: the stream window, when
//! (and whether) replies are read.
//!
//! - Reflection can be turned off on both faces (`ServerConfig::reflection`): it is answered
//!   before the interceptors, so a server checking credentials described itself to anyone.
//! - A unary reply the client does not read keeps its call's place (`max_inflight`): the
//!   handler returning released it, and one connection held 4.9 GB of unread replies.
//! - `grpc-timeout` drops a streaming handler whose client stopped reading: the deadline ran
//!   inside the response body, which hyper does not poll at window 0.

#![cfg(feature = "grpc")]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use frpc::codegen::{self, BoxFuture, MethodDesc, ServerStream};
use frpc::{Context, ServerConfig, Status, StreamSender};
use hyper::body::{Body, Frame, Incoming};
use tokio::sync::mpsc;

const SERVICE: &str = "probe.Probe";
const UNARY: &str = "/probe.Probe/Unary";
const STREAM: &str = "/probe.Probe/Stream";
const REFLECTION: &str = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";
/// Each reply's size: far more than the client's stream window.
const REPLY: usize = 64 * 1024;
/// How long the tests wait for something that must not happen.
const QUIET: Duration = Duration::from_millis(300);
/// How long they wait for something that must happen.
const SOON: Duration = Duration::from_secs(5);

/// Protobuf too, so that it goes over the gRPC face.
#[derive(Clone, PartialEq, frpc::Message, prost::Message)]
#[frpc(protobuf)]
pub struct Blob {
    #[prost(string, tag = "1")]
    pub data: String,
}

#[frpc::service(package = "probe")]
pub trait Probe {
    async fn unary(&self, ctx: &Context, request: Blob) -> Result<Blob, Status>;
    async fn stream(&self, ctx: &Context, request: Blob, outbound: StreamSender<Blob>) -> Result<(), Status>;
}

/// `Unary` answers [`REPLY`] bytes, `Stream` sends such replies until it is dropped; each
/// reports its start (`ran`), `Stream` its drop (`dropped`).
struct Handlers {
    started: Arc<AtomicUsize>,
    ran: mpsc::UnboundedSender<()>,
    dropped: mpsc::UnboundedSender<()>,
}

/// Reports the handler's drop, whatever ends it.
struct OnDrop(mpsc::UnboundedSender<()>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

fn blob() -> Blob {
    Blob {
        data: "x".repeat(REPLY),
    }
}

impl Probe for Handlers {
    async fn unary(&self, _: &Context, _: Blob) -> Result<Blob, Status> {
        self.started.fetch_add(1, Ordering::SeqCst);
        let _ = self.ran.send(());
        Ok(blob())
    }
    async fn stream(&self, _: &Context, _: Blob, outbound: StreamSender<Blob>) -> Result<(), Status> {
        let _dropped = OnDrop(self.dropped.clone());
        let _ = self.ran.send(());
        loop {
            outbound.send(blob()).await?;
        }
    }
}

/// The generated server with descriptors, as frpc-codegen's servers have (Rust-first ones
/// have none, and reflection needs them).
struct Described(ProbeServer<Handlers>);

impl codegen::Service for Described {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn methods(&self) -> &'static [MethodDesc] {
        self.0.methods()
    }
    fn call_unary(&self, op: u16, ctx: Context, request: Bytes) -> BoxFuture<Result<Bytes, Status>> {
        self.0.call_unary(op, ctx, request)
    }
    fn call_streaming(&self, op: u16, ctx: Context, stream: ServerStream) -> BoxFuture<Result<(), Status>> {
        self.0.call_streaming(op, ctx, stream)
    }
    fn protobuf(&self) -> bool {
        self.0.protobuf()
    }
    fn file_descriptor_set(&self) -> &'static [u8] {
        descriptors()
    }
}

/// `probe.proto`'s descriptors: the service and its one message.
fn descriptors() -> &'static [u8] {
    use codegen::prost_types::*;
    static SET: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    SET.get_or_init(|| {
        let method = |name: &str, server_streaming| MethodDescriptorProto {
            name: Some(name.into()),
            input_type: Some(".probe.Blob".into()),
            output_type: Some(".probe.Blob".into()),
            server_streaming: Some(server_streaming),
            ..Default::default()
        };
        let file = FileDescriptorProto {
            name: Some("probe.proto".into()),
            package: Some("probe".into()),
            syntax: Some("proto3".into()),
            message_type: vec![DescriptorProto {
                name: Some("Blob".into()),
                field: vec![FieldDescriptorProto {
                    name: Some("data".into()),
                    number: Some(1),
                    label: Some(field_descriptor_proto::Label::Optional.into()),
                    r#type: Some(field_descriptor_proto::Type::String.into()),
                    json_name: Some("data".into()),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            service: vec![ServiceDescriptorProto {
                name: Some("Probe".into()),
                method: vec![method("Unary", false), method("Stream", true)],
                ..Default::default()
            }],
            ..Default::default()
        };
        prost::Message::encode_to_vec(&FileDescriptorSet { file: vec![file] })
    })
}

/// What the tests watch of the server's handlers.
struct Watch {
    started: Arc<AtomicUsize>,
    ran: mpsc::UnboundedReceiver<()>,
    dropped: mpsc::UnboundedReceiver<()>,
}

/// A shared-port server (fRPC and gRPC) of [`Probe`] on a free port; with `refuse`, its
/// interceptor refuses every call (as one checking credentials refuses a client without any).
async fn serve(config: ServerConfig, refuse: bool) -> (SocketAddr, Watch) {
    let (ran, ran_rx) = mpsc::unbounded_channel();
    let (dropped, dropped_rx) = mpsc::unbounded_channel();
    let started = Arc::new(AtomicUsize::new(0));
    let handlers = Handlers {
        started: started.clone(),
        ran,
        dropped,
    };
    let server = frpc::Server::builder()
        .config(config)
        .grpc(true)
        .interceptor(move |_| match refuse {
            true => Err(Status::unauthenticated("no credentials")),
            false => Ok(()),
        })
        .add_service(Described(ProbeServer::new(handlers)))
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { server.serve_listener(listener).await });
    let watch = Watch {
        started,
        ran: ran_rx,
        dropped: dropped_rx,
    };
    (addr, watch)
}

/// A request body of one message (or none), then its end.
struct Once(Option<Bytes>);

impl Body for Once {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.0.take().map(|data| Ok(Frame::data(data))))
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_none()
    }
}

type Sender = hyper::client::conn::http2::SendRequest<Once>;

/// An HTTP/2 connection whose streams start with a send window of `window` bytes: what they
/// receive is granted back as the test reads it.
async fn connect(addr: SocketAddr, window: u32) -> Sender {
    let io = hyper_util::rt::TokioIo::new(tokio::net::TcpStream::connect(addr).await.unwrap());
    let (sender, connection) = hyper::client::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
        .initial_stream_window_size(window)
        .handshake(io)
        .await
        .unwrap();
    tokio::spawn(connection);
    sender
}

/// Sends a gRPC request of `message` (framed here) to `path`.
async fn call(
    sender: &mut Sender,
    path: &str,
    message: &[u8],
    timeout: Option<&str>,
) -> hyper::Result<http::Response<Incoming>> {
    let mut frame = BytesMut::new();
    frame.put_u8(0);
    frame.put_u32(message.len() as u32);
    frame.put_slice(message);
    let mut request = http::Request::post(format!("http://probe{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    if let Some(timeout) = timeout {
        request = request.header("grpc-timeout", timeout);
    }
    sender.ready().await?;
    sender
        .send_request(request.body(Once(Some(frame.freeze()))).unwrap())
        .await
}

/// Reads a response to its end: its DATA, and its `grpc-status` (from the trailers, or the
/// headers of a trailers-only answer).
async fn read(response: http::Response<Incoming>) -> (Vec<u8>, String) {
    let (parts, mut body) = response.into_parts();
    let status =
        |headers: &http::HeaderMap| headers.get("grpc-status").map(|v| v.to_str().unwrap().to_owned());
    let mut data = Vec::new();
    let mut trailers = None;
    while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
        let frame = frame.unwrap();
        if let Some(chunk) = frame.data_ref() {
            data.extend_from_slice(chunk);
        } else if let Ok(map) = frame.into_trailers() {
            trailers = status(&map);
        }
    }
    (data, status(&parts.headers).or(trailers).unwrap_or_default())
}

/// `ServerReflectionRequest { list_services: "" }`.
const LIST_SERVICES: &[u8] = &[0x3a, 0x00];

/// Reflection is answered before the interceptors (the server's refuses every call), so the
/// switch is what keeps the schema private, on both faces.
#[tokio::test]
async fn reflection_can_be_turned_off_on_both_faces() {
    for on in [true, false] {
        let config = ServerConfig::default().reflection(on);
        let (addr, _watch) = serve(config, true).await;
        let mut sender = connect(addr, 1 << 20).await;
        let (_, status) = read(call(&mut sender, UNARY, b"", None).await.unwrap()).await;
        assert_eq!(status, "16", "the method is behind the interceptor");
        let (listed, status) = read(call(&mut sender, REFLECTION, LIST_SERVICES, None).await.unwrap()).await;
        let described = listed.windows(SERVICE.len()).any(|w| w == SERVICE.as_bytes());
        assert_eq!(
            (described, status.as_str()),
            (on, if on { "0" } else { "12" }),
            "gRPC, on: {on}"
        );
        let client = frpc::Client::connect(addr).await.unwrap();
        let answer = client.reflect().await.unwrap().unwrap_or_default();
        assert_eq!(!answer.is_empty(), on, "fRPC, on: {on}");
    }
}

/// A unary reply the client does not read (its window is spent) holds its call's place among
/// `max_inflight` until it is read or dropped, so the calls beyond the cap wait for a place
/// instead of running and leaving their replies to the server (1,000 calls of 5 MB each held
/// 4.9 GB of one connection's replies).
#[tokio::test]
async fn unread_unary_replies_keep_their_places() {
    let (addr, mut watch) = serve(ServerConfig::default().max_inflight(2), false).await;
    let mut sender = connect(addr, 1024).await;
    // Their headers come once their handlers returned: both places are taken.
    let first = call(&mut sender, UNARY, b"", None).await.unwrap();
    let second = call(&mut sender, UNARY, b"", None).await.unwrap();
    let more = |mut sender: Sender| tokio::spawn(async move { call(&mut sender, UNARY, b"", None).await });
    let (third, fourth) = (more(sender.clone()), more(sender.clone()));
    for _ in 0..2 {
        watch.ran.recv().await.unwrap();
    }
    let ran = tokio::time::timeout(QUIET, watch.ran.recv()).await;
    assert!(
        ran.is_err(),
        "a call beyond max_inflight ran while the replies were unread"
    );
    assert_eq!(watch.started.load(Ordering::SeqCst), 2);
    // Read to its end, a reply gives its place up; dropped (the stream reset) too.
    let (data, status) = read(first).await;
    assert_eq!((data.len() > REPLY, status.as_str()), (true, "0"));
    tokio::time::timeout(SOON, watch.ran.recv())
        .await
        .expect("a place came free")
        .unwrap();
    drop(second);
    tokio::time::timeout(SOON, watch.ran.recv())
        .await
        .expect("a place came free")
        .unwrap();
    for call in [third, fourth] {
        let (_, status) = read(call.await.unwrap().unwrap()).await;
        assert_eq!(status, "0");
    }
}

/// `grpc-timeout` drops a streaming handler whose client stopped reading (hyper does not poll
/// a response body at window 0, and the deadline ran inside it), and the client that reads
/// again gets what was sent, then `DEADLINE_EXCEEDED`.
#[tokio::test]
async fn a_deadline_drops_a_stream_whose_client_does_not_read() {
    let (addr, mut watch) = serve(ServerConfig::default(), false).await;
    let mut sender = connect(addr, 1024).await;
    // The headers come with the first reply: the handler runs, and the window is spent.
    let response = call(&mut sender, STREAM, b"", Some("200m")).await.unwrap();
    watch.ran.recv().await.unwrap();
    let dropped = tokio::time::timeout(SOON, watch.dropped.recv()).await;
    assert!(dropped.is_ok(), "the handler outlived its deadline");
    let (data, status) = read(response).await;
    assert!(data.len() > REPLY, "{} bytes", data.len());
    assert_eq!(status, "4", "DEADLINE_EXCEEDED");
}
