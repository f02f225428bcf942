//! The gRPC face of frpc services (feature `grpc`): the same generated `FooServer<T>` that
//! serves fRPC clients serves gRPC clients over HTTP/2, through tonic's gRPC framing and hyper.
//! Services floor, beside the server: it routes `/package.Service/Method` to the service's
//! method by its operation number and feeds it the request's protobuf bytes.
//!
//! What a gRPC call brings to the handler's [`Context`](crate::Context): the request metadata (text and `-bin`
//! entries), `grpc-timeout` as [`Context::deadline`](crate::Context::deadline) (the handler is dropped and the client
//! gets `DEADLINE_EXCEEDED` when it passes), and a client's cancel (RST_STREAM, or the
//! connection closing) as [`Context::cancelled`](crate::Context::cancelled). Metadata the handler sets with
//! [`Context::set_response_metadata`](crate::Context::set_response_metadata) goes back as response headers (or, on an error, as
//! trailers beside the status). Statuses map code for code and message for message.
//!
//! All four kinds of method: a streaming handler gets the same [`crate::Streaming`] and
//! [`crate::StreamSender`] as over fRPC, bridged to the HTTP/2 stream (`call.rs` runs a call,
//! `stream.rs` carries its messages both ways): its replies go out as it sends them, its
//! status ends the stream, the metadata it set before its first reply goes in the headers and
//! what it sets after in the trailers. A request message over the size limit is
//! `RESOURCE_EXHAUSTED`. `grpc.health.v1.Health` (`Check` and `Watch`) is frpc's health
//! service under gRPC's name. On a shared port ([`crate::Builder::grpc`]) connections follow
//! the server's graceful shutdown (a GOAWAY, then the calls in flight finish); a standalone
//! server has layers of its own ([`GrpcServer::layer`], [`GrpcServer::interceptor`]) and a
//! graceful shutdown ([`GrpcServer::serve_listener_with_shutdown`]).
//!
//! ```no_run
//! # async fn demo(service: impl frpc::codegen::Service) -> Result<(), frpc::Error> {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:50051").await?;
//! frpc::grpc::GrpcServer::new().add_service(service).serve_listener(listener).await?;
//! # Ok(()) }
//! ```

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::metadata::{KeyAndValueRef, MetadataMap};

use self::gate::Gate;
use crate::calls::codec::MARKER;
use crate::config::DecodeLimits;
use crate::metadata::Metadata;
use crate::middleware::{self, CallLayer, CallRequest, CallService, LayerFn, Stack};
use crate::service::{MethodDesc, Service};
use crate::status::{Code, Error, Status};

mod body;
mod call;
pub(crate) mod gate;
mod preface;
mod shutdown;
mod stream;

mod client;
mod client_stream;
#[cfg(feature = "tls")]
pub(crate) mod tls;
pub use client::GrpcChannel;

/// tonic's default limit on a received message (4 MiB), kept as ours.
const DEFAULT_MAX_DECODING: usize = 4 * 1024 * 1024;

/// A method as the gRPC face routes it.
#[derive(Clone)]
struct Route {
    service: Arc<dyn Service>,
    method: MethodDesc,
    /// Served as `grpc.health.v1.Health`: an unknown name fails with `NOT_FOUND`, as gRPC's.
    grpc_health: bool,
}

impl Route {
    /// frpc's health service's `Watch`, which the layers let by (see
    /// [`crate::Builder::intercept_health`]): a balancer keeps one open per connection, which
    /// a concurrency limit would count and a timeout would cut.
    fn is_health_watch(&self) -> bool {
        self.method.op == crate::health::WATCH_OP && self.service.name() == FRPC_HEALTH
    }
}

/// The shutdown signals of the server a connection belongs to: a standalone
/// [`GrpcServer`]'s never fire.
#[derive(Debug, Clone, Default)]
pub(crate) struct Signals {
    /// The server began shutting down: connections get a GOAWAY, calls in flight finish,
    /// streams send no more messages, and [`crate::Context::shutting_down`] resolves.
    pub(crate) draining: CancellationToken,
    /// The shutdown's grace is over: connections close, [`crate::Context::cancelled`] fires.
    pub(crate) force: CancellationToken,
}

/// frpc's health service ([`crate::health`]), with gRPC's messages under another package.
const FRPC_HEALTH: &str = crate::health::SERVICE_NAME;
/// The name gRPC's probes and tools know it by.
const GRPC_HEALTH: &str = "grpc.health.v1.Health";

/// Serves frpc services to gRPC clients over HTTP/2 (cleartext, prior knowledge: what
/// grpcurl's `-plaintext`, grpcio's insecure channels and tonic's `http://` endpoints speak).
///
/// ```
/// let server = frpc::grpc::GrpcServer::new().max_decoding_message_size(1 << 20);
/// assert_eq!(server.routes(), 0);
/// ```
#[derive(Clone)]
pub struct GrpcServer {
    routes: Arc<HashMap<String, Route>>,
    max_decoding: usize,
    max_encoding: usize,
    limits: DecodeLimits,
    /// The bytes of replies a stream's handler may send ahead of HTTP/2 taking them.
    reply_window: usize,
    /// The layers and interceptors calls go through: the fRPC server's when it serves this
    /// face ([`crate::Builder::grpc`]), else this server's own ([`GrpcServer::layer`]).
    stack: Option<Stack>,
    /// This server's own layers, the first the outermost, to build `stack` from.
    layers: Vec<SharedLayer>,
    /// Health's `Watch` goes through the layers too (the fRPC server's
    /// [`crate::Builder::intercept_health`]).
    layered_health: bool,
    /// How long calls in flight may go on once a shutdown began ([`GrpcServer::shutdown_grace`]).
    grace: Duration,
    /// How long a connection may stay silent ([`GrpcServer::idle_timeout`]).
    idle_timeout: Duration,
    /// The largest request header list accepted, in HTTP/2's count
    /// ([`GrpcServer::max_metadata_size`] plus [`GRPC_HEADERS_ROOM`]).
    max_header_list: u32,
    /// The distinct descriptor sets the services embed (frpc-codegen's `FILE_DESCRIPTOR_SET`).
    descriptors: Vec<&'static [u8]>,
    /// `grpc.reflection.v1` and `v1alpha` over them (tonic-reflection), once a service has
    /// descriptors.
    reflection: Option<Reflections>,
    /// Whether reflection is answered ([`GrpcServer::reflection`]).
    reflect: bool,
    /// The fRPC server's call limits, on a shared port.
    gate: Gate,
}

/// What a request's header list may hold beyond its metadata (`max_metadata_size`): gRPC's
/// own headers, `:path`, `:authority`, `content-type`, `te`, `user-agent`, `grpc-timeout`…,
/// some 300 bytes in HTTP/2's count (each entry's name and value plus 32).
const GRPC_HEADERS_ROOM: usize = 1024;

/// A layer of a standalone server's stack, kept to rebuild the stack when another is added.
type SharedLayer = Arc<dyn Fn(CallService) -> CallService + Send + Sync>;

/// The shortest idle timeout taken: zero dropped every connection at once.
const MIN_IDLE: Duration = Duration::from_millis(1);

/// The header-list limit (HTTP/2's `SETTINGS_MAX_HEADER_LIST_SIZE`) for `max_metadata_size`
/// bytes of metadata: room for gRPC's own headers beside it, at most what HTTP/2 can say.
fn header_list_limit(max_metadata_size: usize) -> u32 {
    let limit = max_metadata_size.saturating_add(GRPC_HEADERS_ROOM);
    u32::try_from(limit).unwrap_or(u32::MAX)
}

/// tonic-reflection's service, type-erased.
type Reflection = tower::util::BoxCloneSyncService<
    http::Request<hyper::body::Incoming>,
    http::Response<tonic::body::Body>,
    Infallible,
>;

/// Server reflection in both versions clients speak (grpcurl tries `v1`, then `v1alpha`).
#[derive(Clone)]
struct Reflections {
    v1: Reflection,
    v1alpha: Reflection,
}

/// The path prefixes of server reflection's one method, in each version.
const REFLECTION: &str = "/grpc.reflection.v1.ServerReflection/";
const REFLECTION_V1ALPHA: &str = "/grpc.reflection.v1alpha.ServerReflection/";

impl std::fmt::Debug for GrpcServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrpcServer")
            .field("routes", &self.routes.len())
            .finish()
    }
}

impl Default for GrpcServer {
    fn default() -> GrpcServer {
        GrpcServer::new()
    }
}

impl GrpcServer {
    /// A server with no services; requests up to 4 MiB, replies of any size (tonic's
    /// defaults).
    pub fn new() -> GrpcServer {
        GrpcServer {
            routes: Arc::new(HashMap::new()),
            max_decoding: DEFAULT_MAX_DECODING,
            max_encoding: usize::MAX,
            limits: crate::config::ConnectionConfig::default().decode,
            reply_window: crate::config::ConnectionConfig::default().stream_window_bytes as usize,
            stack: None,
            layers: Vec::new(),
            layered_health: false,
            grace: crate::config::ServerConfig::default().shutdown_grace,
            idle_timeout: crate::config::ConnectionConfig::default().idle_timeout,
            max_header_list: header_list_limit(crate::config::ConnectionConfig::default().max_metadata_size),
            descriptors: Vec::new(),
            reflection: None,
            reflect: true,
            gate: Gate::default(),
        }
    }

    /// Serves `service`'s methods at `/package.Service/Method`.
    pub fn add_service(self, service: impl Service) -> GrpcServer {
        self.add_shared(Arc::new(service))
    }

    /// Serves an already shared service (the fRPC server's own, for [`crate::Builder::grpc`]).
    /// frpc's health service is also served as `grpc.health.v1.Health` (the same messages),
    /// for Kubernetes' gRPC probes, `grpc_health_probe` and grpcurl.
    pub(crate) fn add_shared(mut self, service: Arc<dyn Service>) -> GrpcServer {
        let routes = Arc::make_mut(&mut self.routes);
        let mut names = vec![(service.name(), false)];
        if service.name() == FRPC_HEALTH {
            names.push((GRPC_HEALTH, true));
        }
        for (name, grpc_health) in names {
            for method in service.methods() {
                let route = Route {
                    service: service.clone(),
                    method: *method,
                    grpc_health,
                };
                routes.insert(format!("/{name}/{}", method.name), route);
            }
        }
        // Health is reflected under the name it is served by here, and only beside services
        // with descriptors of their own (as on the fRPC face).
        let set = match service.name() == FRPC_HEALTH {
            true => crate::health::descriptor::grpc_set(),
            false => service.file_descriptor_set(),
        };
        if !set.is_empty() && !self.descriptors.contains(&set) {
            self.descriptors.push(set);
            let health = crate::health::descriptor::grpc_set();
            self.reflection = match self.descriptors.iter().any(|d| *d != health) {
                true => reflection(&self.descriptors),
                false => None,
            };
        }
        self
    }

    /// Runs every call through `layer` (any [`tower::Layer`] over calls, see
    /// [`CallLayer`]), as [`crate::Builder::layer`] does on an fRPC server: the first added
    /// is the outermost, and one stack is shared by every connection (a concurrency limit
    /// is server-wide). Per-service layers ([`crate::LayeredService`]) apply too. frpc's
    /// health service's `Watch` skips the layers, as on an fRPC server
    /// ([`crate::Builder::intercept_health`]): a balancer keeps one open per connection.
    ///
    /// ```
    /// let server = frpc::grpc::GrpcServer::new()
    ///     .layer(tower::limit::ConcurrencyLimitLayer::new(64));
    /// # let _ = server;
    /// ```
    pub fn layer<L: CallLayer>(self, layer: L) -> GrpcServer {
        self.push_layer(Arc::new(move |inner| layer.wrap(inner)))
    }

    /// Checks every call with `check` before the layers added after it and the handler see
    /// it, as [`crate::Builder::interceptor`] does: `Err(status)` answers the call with that
    /// status. Calls to frpc's health service (`grpc.health.v1.Health` included) pass, so
    /// probes without credentials see the server's health.
    pub fn interceptor<F>(self, check: F) -> GrpcServer
    where
        F: FnMut(&CallRequest) -> Result<(), Status> + Send + Sync + 'static,
    {
        let check = Arc::new(std::sync::Mutex::new(check));
        self.push_layer(Arc::new(move |inner| {
            let check = check.clone();
            let check = move |call: &CallRequest| match call.service() == FRPC_HEALTH {
                true => Ok(()),
                false => (check.lock().unwrap_or_else(|e| e.into_inner()))(call),
            };
            middleware::erase(middleware::Interceptor::new(inner, check))
        }))
    }

    /// Adds a layer and rebuilds the stack over all of them.
    fn push_layer(mut self, layer: SharedLayer) -> GrpcServer {
        self.layers.push(layer);
        let layers = self.layers.iter().map(|layer| -> LayerFn {
            let layer = layer.clone();
            Box::new(move |inner| layer(inner))
        });
        self.stack = Some(middleware::build_stack(layers.collect()));
        self
    }

    /// Runs calls through the fRPC server's layer stack, with its connections' decode limits,
    /// stream windows and metadata budget; health's `Watch` too where `intercept_health` (else it skips the
    /// layers, as on the fRPC face).
    pub(crate) fn with_stack(
        mut self,
        stack: Option<Stack>,
        connection: &crate::config::ConnectionConfig,
        intercept_health: bool,
    ) -> GrpcServer {
        self.stack = stack;
        self.limits = connection.decode;
        self.reply_window = connection.stream_window_bytes as usize;
        self.max_header_list = header_list_limit(connection.max_metadata_size);
        self.layered_health = intercept_health;
        self
    }

    /// Applies the fRPC server's call limits to this face's calls (a shared port).
    pub(crate) fn with_gate(mut self, gate: Gate) -> GrpcServer {
        self.gate = gate;
        self
    }

    /// The status of a path nothing serves, in grpc-go's words: `unknown service S`, or
    /// `unknown method M for service S` where the service is served.
    fn unknown(&self, path: &str) -> tonic::Status {
        let (service, method) = path.trim_start_matches('/').split_once('/').unwrap_or((path, ""));
        let prefix = format!("/{service}/");
        match self.routes.keys().any(|served| served.starts_with(&prefix)) {
            true => tonic::Status::unimplemented(format!("unknown method {method} for service {service}")),
            false => tonic::Status::unimplemented(format!("unknown service {service}")),
        }
    }

    /// Whether `grpc.reflection.v1` and `v1alpha` (`grpcurl list`, `describe`) are answered,
    /// from the descriptors of the services added (default `true`). Reflection is answered
    /// before routing: [`GrpcServer::layer`]s and [`GrpcServer::interceptor`]s never see it,
    /// so a server that checks credentials in an interceptor still describes its schema to a
    /// client without any; `false` answers it `UNIMPLEMENTED`, as any service not served. A
    /// shared port follows [`crate::ServerConfig::reflection`].
    ///
    /// ```
    /// let server = frpc::grpc::GrpcServer::new().reflection(false);
    /// # let _ = server;
    /// ```
    pub fn reflection(mut self, on: bool) -> GrpcServer {
        self.reflect = on;
        self
    }

    /// How many methods are routed.
    pub fn routes(&self) -> usize {
        self.routes.len()
    }

    /// How long a connection may stay silent (default 5 s, the fRPC face's
    /// `ConnectionConfig::idle_timeout`): a client that has not sent its HTTP/2 preface within
    /// it is dropped, and one silent for that long gets a PING it must answer within as long
    /// again (HTTP/2 keep-alive; gRPC clients answer on their own). Without it, a peer that
    /// sent one byte held its connection for ever. At least 1 ms and at most a year (the
    /// bounds of `ConnectionConfig::idle_timeout`, which refuses what is outside): a value
    /// outside counts as the nearest bound (`Duration::MAX` made hyper's keep-alive timer
    /// panic, killing every connection; zero dropped each one at once).
    pub fn idle_timeout(mut self, timeout: Duration) -> GrpcServer {
        self.idle_timeout = timeout.clamp(MIN_IDLE, crate::config::MAX_INTERVAL);
        self
    }

    /// The largest metadata a request may carry, in bytes, counted as HTTP/2 counts a header
    /// list (each entry's name and value plus 32): the fRPC face's
    /// `ConnectionConfig::max_metadata_size`, whose value a shared port takes. Default 8,192.
    /// The request's whole header list may hold this plus 1 KiB for gRPC's own headers
    /// (`:path`, `content-type`, `user-agent`…); a request over it is refused before any
    /// handler runs (hyper answers HTTP 431, which tonic clients report as `UNKNOWN`; the
    /// connection serves on), so a peer cannot make the server hold more than that per stream
    /// (hyper's own default, which applied before, was 16 KiB).
    pub fn max_metadata_size(mut self, limit: usize) -> GrpcServer {
        self.max_header_list = header_list_limit(limit);
        self
    }

    /// The largest request message accepted (`RESOURCE_EXHAUSTED` beyond it). Default 4 MiB.
    pub fn max_decoding_message_size(mut self, limit: usize) -> GrpcServer {
        self.max_decoding = limit;
        self
    }

    /// The largest response message sent (`OUT_OF_RANGE` beyond it, as tonic's server
    /// answers). Default: no limit.
    pub fn max_encoding_message_size(mut self, limit: usize) -> GrpcServer {
        self.max_encoding = limit;
        self
    }

    /// Accepts connections on `listener` and serves each on its own task, until accepting
    /// fails.
    pub async fn serve_listener(self, listener: TcpListener) -> Result<(), Error> {
        loop {
            let (io, peer) = listener.accept().await?;
            let _ = io.set_nodelay(true);
            tokio::spawn(self.serve_io(io, peer));
        }
    }

    /// Serves one connection (already accepted, or handed over by a protocol sniffer) until
    /// the client closes it.
    pub fn serve_io<T>(&self, io: T, peer: SocketAddr) -> impl Future<Output = ()> + Send + 'static
    where
        T: AsyncRead + AsyncWrite + Send + Unpin + 'static,
    {
        self.serve_io_until(io, peer, Signals::default())
    }

    /// Serves one connection until the client closes it or, once `signals` say the server is
    /// shutting down, until the calls in flight finish (after a GOAWAY) or the grace is over.
    pub(crate) fn serve_io_until<T>(
        &self,
        io: T,
        peer: SocketAddr,
        signals: Signals,
    ) -> impl Future<Output = ()> + Send + 'static
    where
        T: AsyncRead + AsyncWrite + Send + Unpin + 'static,
    {
        let server = self.clone();
        // Fires when the connection ends: every call on it is cancelled.
        let closed = CancellationToken::new();
        let on_close = closed.clone().drop_guard();
        let call_signals = signals.clone();
        let per_connection = self.gate.per_connection;
        let (idle, max_header_list) = (self.idle_timeout, self.max_header_list);
        let service = hyper::service::service_fn(move |request| {
            let server = server.clone();
            let (closed, signals) = (closed.child_token(), call_signals.clone());
            async move { Ok::<_, Infallible>(server.call(request, peer, closed, signals).await) }
        });
        async move {
            let _on_close = on_close;
            let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
            if let Some(streams) = per_connection {
                builder.max_concurrent_streams(streams);
            }
            // A silent client is dropped: before its preface by the deadline, after it by an
            // unanswered keep-alive PING.
            builder
                .timer(TokioTimer::new())
                .keep_alive_interval(idle)
                .keep_alive_timeout(idle)
                .max_header_list_size(max_header_list);
            let io = preface::PrefaceDeadline::new(io, idle);
            let connection = builder.serve_connection(TokioIo::new(io), service);
            tokio::pin!(connection);
            let result = tokio::select! {
                result = connection.as_mut() => result,
                _ = signals.draining.cancelled() => {
                    // GOAWAY: no new calls; the ones in flight finish within the grace.
                    connection.as_mut().graceful_shutdown();
                    tokio::select! {
                        result = connection.as_mut() => result,
                        _ = signals.force.cancelled() => Ok(()),
                    }
                }
            };
            if let Err(err) = result {
                tracing::debug!(%peer, error = %err, "gRPC connection ended");
            }
        }
    }

    /// Answers one HTTP/2 request: a routed method, or `UNIMPLEMENTED`.
    async fn call(
        &self,
        request: http::Request<hyper::body::Incoming>,
        peer: SocketAddr,
        closed: CancellationToken,
        signals: Signals,
    ) -> http::Response<tonic::body::Body> {
        let path = request.uri().path();
        // Off, the paths fall through to routing, which serves no such service.
        let reflection = self.reflection.as_ref().filter(|_| self.reflect);
        let reflection = reflection.and_then(|r| match path {
            _ if path.starts_with(REFLECTION) => Some(&r.v1),
            _ if path.starts_with(REFLECTION_V1ALPHA) => Some(&r.v1alpha),
            _ => None,
        });
        if let Some(reflection) = reflection {
            let mut reflection = reflection.clone();
            return match tower::ServiceExt::ready(&mut reflection).await {
                Ok(ready) => match tower::Service::call(ready, request).await {
                    Ok(response) => response,
                    Err(never) => match never {},
                },
                Err(never) => match never {},
            };
        }
        let Some(route) = self.routes.get(request.uri().path()).cloned() else {
            return self.unknown(request.uri().path()).into_http();
        };
        if !route.service.protobuf() {
            let status = tonic::Status::unimplemented(format!(
                "{} has no protobuf encoding (a Rust-first service): it cannot serve gRPC",
                route.service.name()
            ));
            return status.into_http();
        }
        if let Err(status) = body::uncompressed(request.headers()) {
            return status.into_http();
        }
        let call = call::Call {
            stack: match self.layered_health || !route.is_health_watch() {
                true => self.stack.clone(),
                false => None,
            },
            route,
            peer,
            limits: self.limits,
            reply_window: self.reply_window,
            gate: self.gate.clone(),
            closed,
            signals,
        };
        // Every kind as a stream of requests, reaching the call undecoded (tonic's framing and
        // size limit); the response is the face's own (`body.rs`), which sends the handler's
        // replies without copying them.
        let max_decoding = Some(self.max_decoding);
        let request = request.map(|body| tonic::Streaming::new_request(BareBytes, body, None, max_decoding));
        match call.run(tonic::Request::from_http(request)).await {
            Ok(response) => body::response(response, self.max_encoding),
            Err(status) => status.into_http(),
        }
    }
}

/// Server reflection over `descriptors`, `v1` and `v1alpha`; `None` (and a warning) if
/// tonic-reflection refuses them.
fn reflection(descriptors: &[&'static [u8]]) -> Option<Reflections> {
    let builder = || {
        descriptors
            .iter()
            .fold(tonic_reflection::server::Builder::configure(), |builder, set| {
                builder.register_encoded_file_descriptor_set(set)
            })
    };
    let built = builder()
        .build_v1()
        .and_then(|v1| Ok((v1, builder().build_v1alpha()?)));
    match built {
        Ok((v1, v1alpha)) => Some(Reflections {
            v1: tower::util::BoxCloneSyncService::new(v1),
            v1alpha: tower::util::BoxCloneSyncService::new(v1alpha),
        }),
        Err(err) => {
            tracing::warn!(error = %err, "gRPC reflection is off: the descriptors do not load");
            None
        }
    }
}

/// gRPC's `Check` fails with `NOT_FOUND` for a name nobody reported, where frpc's answers
/// `SERVICE_UNKNOWN` (see [`crate::health`]).
fn grpc_health_reply(reply: Bytes) -> Result<Bytes, Status> {
    use crate::health::{HealthCheckResponse, ServingStatus};
    let unknown = body::reply_message(&reply)
        .and_then(|body| <HealthCheckResponse as prost::Message>::decode(body).ok())
        .is_some_and(|response| response.status == ServingStatus::ServiceUnknown);
    match unknown {
        true => Err(Status::with_code(Code::NotFound, "unknown service")),
        false => Ok(reply),
    }
}

/// Who a new connection on a shared port is, by its first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FirstByte {
    /// The HTTP/2 preface's `P`: a gRPC client.
    Http2,
    /// Anything else (a Frisbee header starts with `00`), or a failure fRPC then reports.
    Frpc,
    /// Nothing within the idle timeout: dropped as idle (handing it to fRPC would give it a
    /// second idle timeout).
    Silent,
}

/// Peeks at a new connection's first byte (nothing is consumed) to tell a gRPC client from an
/// fRPC one, for at most `patience`.
pub(crate) async fn first_byte(stream: &tokio::net::TcpStream, patience: Duration) -> FirstByte {
    let mut first = [0u8; 1];
    match tokio::time::timeout(patience, stream.peek(&mut first)).await {
        Ok(Ok(1)) if first[0] == b'P' => FirstByte::Http2,
        Ok(_) => FirstByte::Frpc,
        Err(_) => FirstByte::Silent,
    }
}

/// Parses `grpc-timeout`: at most 8 digits and a unit (`H`, `M`, `S`, `m`, `u`, `n`).
fn parse_timeout(value: &str) -> Option<Duration> {
    // Checked split: a non-ASCII last character is refused, not split inside.
    let (digits, unit) = value.split_at_checked(value.len().checked_sub(1)?)?;
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n * 3600),
        "M" => Duration::from_secs(n * 60),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

/// Headers that are HTTP's or gRPC's own, not the caller's metadata.
fn is_reserved(key: &str) -> bool {
    key.starts_with("grpc-") || matches!(key, "content-type" | "te" | "user-agent")
}

/// The caller's metadata of a gRPC request, as frpc metadata; entries frpc cannot carry
/// (reserved keys, invalid text) are skipped. A key sent more than once keeps its first
/// value, what tonic's `MetadataMap::get` returns (frpc metadata holds one value per key).
fn request_metadata(map: &MetadataMap) -> Metadata {
    let mut metadata = Metadata::new();
    for entry in map.iter() {
        let key = match entry {
            KeyAndValueRef::Ascii(key, _) => key.as_str(),
            KeyAndValueRef::Binary(key, _) => key.as_str(),
        };
        if metadata.contains_key(key) {
            continue;
        }
        // Insertion checks keys and values; an entry it refuses is not the handler's concern.
        let _ = match entry {
            KeyAndValueRef::Ascii(key, value) if !is_reserved(key.as_str()) => match value.to_str() {
                Ok(text) => metadata.insert(key.as_str(), text),
                Err(_) => continue,
            },
            KeyAndValueRef::Binary(key, value) if !is_reserved(key.as_str()) => match value.to_bytes() {
                Ok(bytes) => metadata.insert_bin(key.as_str(), bytes),
                Err(_) => continue,
            },
            _ => continue,
        };
    }
    metadata
}

/// frpc metadata as gRPC headers (or trailers): a handler's response, a `GrpcChannel`'s
/// request. Keys gRPC reserves (`grpc-*`, `content-type`, `te`) are left out: a handler's
/// `grpc-encoding` made grpcio fail the call.
fn response_metadata(metadata: &Metadata) -> MetadataMap {
    let mut map = MetadataMap::new();
    for (key, value) in metadata.iter() {
        if key.starts_with("grpc-") || is_http_header(key) {
            continue;
        }
        if key.ends_with("-bin") {
            if let Ok(key) = tonic::metadata::BinaryMetadataKey::from_bytes(key.as_bytes()) {
                map.append_bin(key, tonic::metadata::BinaryMetadataValue::from_bytes(value));
            }
        } else if let (Ok(key), Ok(value)) = (
            tonic::metadata::AsciiMetadataKey::from_bytes(key.as_bytes()),
            std::str::from_utf8(value)
                .ok()
                .and_then(|text| text.parse::<tonic::metadata::AsciiMetadataValue>().ok())
                .ok_or(()),
        ) {
            map.append(key, value);
        }
    }
    map
}

/// Headers HTTP sets itself, which response metadata must not: gRPC's `content-type` and
/// `te`, a `content-length` (the body's is not known), and the connection-specific ones HTTP/2
/// forbids (h2 fails the response: the call ended with INTERNAL "h2 protocol error").
fn is_http_header(key: &str) -> bool {
    matches!(
        key,
        "content-type"
            | "te"
            | "content-length"
            | "connection"
            | "keep-alive"
            | "proxy-connection"
            | "transfer-encoding"
            | "upgrade"
    )
}

/// A handler's error as gRPC's, code for code and message for message, with `metadata` as
/// trailers. An error that says OK goes out as UNKNOWN, as on fRPC (a tonic client read it as
/// a reply with no message, and a stream's as a clean end).
fn to_tonic(status: &Status, metadata: Option<Metadata>) -> tonic::Status {
    let code = tonic::Code::from_i32(status.error_code() as i32);
    with_trailers(tonic::Status::new(code, status.message()), metadata)
}

/// `grpc` with `metadata` as trailers.
fn with_trailers(mut grpc: tonic::Status, metadata: Option<Metadata>) -> tonic::Status {
    if let Some(metadata) = metadata {
        *grpc.metadata_mut() = response_metadata(&metadata);
    }
    grpc
}

/// A request message as the face hands it to the call: its bare protobuf bytes, split off
/// tonic's receive buffer (not copied); the context tells the handler they are protobuf.
#[derive(Debug, Clone, Copy)]
struct BareBytes;

impl Decoder for BareBytes {
    type Item = Bytes;
    type Error = tonic::Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, tonic::Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}

/// The client direction's codec ([`GrpcChannel`]): messages it decodes get frpc's protobuf
/// marker in front (generated code then reads them as an frpc peer's), those it encodes lose
/// it. The server face has its own ([`BareBytes`], `body.rs`), which copies neither way.
#[derive(Debug, Clone, Copy)]
struct BytesCodec;

impl Codec for BytesCodec {
    type Encode = Bytes;
    type Decode = Bytes;
    type Encoder = BytesCodec;
    type Decoder = BytesCodec;

    fn encoder(&mut self) -> BytesCodec {
        BytesCodec
    }

    fn decoder(&mut self) -> BytesCodec {
        BytesCodec
    }
}

impl Encoder for BytesCodec {
    type Item = Bytes;
    type Error = tonic::Status;

    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), tonic::Status> {
        // The handler answers in the request's encoding: protobuf, behind the marker.
        match item.split_first() {
            Some((&MARKER, body)) => {
                dst.put_slice(body);
                Ok(())
            }
            _ => Err(tonic::Status::internal("the handler's reply is not protobuf")),
        }
    }
}

impl Decoder for BytesCodec {
    type Item = Bytes;
    type Error = tonic::Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, tonic::Status> {
        let mut buf = BytesMut::with_capacity(1 + src.remaining());
        buf.put_u8(MARKER);
        buf.put(src);
        Ok(Some(buf.freeze()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A handler's error that says OK goes to a gRPC client as UNKNOWN, as to an fRPC one: a
    /// tonic client read a unary one as "Missing response message" and a stream's as its
    /// clean end. Other codes go as they are.
    #[test]
    fn an_error_that_says_ok_goes_out_unknown() {
        let ok = to_tonic(&Status::with_code(Code::Ok, "m"), None);
        assert_eq!((ok.code(), ok.message()), (tonic::Code::Unknown, "m"));
        let found = to_tonic(&Status::not_found("x"), None);
        assert_eq!(found.code(), tonic::Code::NotFound);
    }

    #[test]
    fn timeouts_parse_in_every_unit_and_refuse_the_rest() {
        assert_eq!(parse_timeout("2H"), Some(Duration::from_secs(7200)));
        assert_eq!(parse_timeout("3M"), Some(Duration::from_secs(180)));
        assert_eq!(parse_timeout("1S"), Some(Duration::from_secs(1)));
        assert_eq!(parse_timeout("250m"), Some(Duration::from_millis(250)));
        assert_eq!(parse_timeout("7u"), Some(Duration::from_micros(7)));
        assert_eq!(parse_timeout("99999999n"), Some(Duration::from_nanos(99_999_999)));
        for bad in ["", "S", "123456789S", "1x", "-1S", "1.5S", "é"] {
            assert_eq!(parse_timeout(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_repeated_request_header_keeps_its_first_value_as_tonic_reads_it() {
        let mut map = MetadataMap::new();
        map.append("x-user", "ada".parse().unwrap());
        map.append("x-user", "bob".parse().unwrap());
        assert_eq!(map.get("x-user").unwrap(), "ada");
        assert_eq!(request_metadata(&map).get("x-user"), Some("ada"));
    }

    #[test]
    fn metadata_crosses_both_ways_text_and_binary() {
        let mut map = MetadataMap::new();
        map.insert("x-user", "ada".parse().unwrap());
        map.insert("grpc-timeout", "1S".parse().unwrap());
        map.insert_bin(
            "x-trace-bin",
            tonic::metadata::BinaryMetadataValue::from_bytes(&[0, 255]),
        );
        let metadata = request_metadata(&map);
        assert_eq!(metadata.get("x-user"), Some("ada"));
        assert_eq!(metadata.get_bin("x-trace-bin"), Some(&[0u8, 255][..]));
        assert!(!metadata.contains_key("grpc-timeout"));
        let mut metadata = metadata;
        metadata.insert("grpc-encoding", "gzip").unwrap();
        let back = response_metadata(&metadata);
        assert_eq!(back.get("x-user").unwrap(), "ada");
        assert!(
            back.get("grpc-encoding").is_none(),
            "gRPC's own keys are left out"
        );
        assert_eq!(
            back.get_bin("x-trace-bin").unwrap().to_bytes().unwrap().as_ref(),
            &[0, 255]
        );
    }
}
