//! RED metrics (feature `metrics`): [`tower::Layer`]s recording, per service and method, every
//! call's outcome and duration through the [`metrics`] facade, so any exporter
//! (Prometheus, StatsD, OpenTelemetry) picks them up: [`MetricsLayer`] on servers,
//! [`ClientMetricsLayer`] on a [`Channel`] ([`Channel::with_metrics`]: its unary
//! calls and its streams).
//!
//! Names follow the OpenTelemetry RPC semantic conventions:
//!
//! | metric | kind | what |
//! |---|---|---|
//! | `rpc.server.duration` | histogram, seconds | from the call reaching the layer to its answer (a stream: to its end) |
//! | `rpc.server.requests` | counter | calls answered, errors included |
//! | `rpc.server.requests_per_rpc` | histogram | a stream's messages received (streams only: a unary call has one) |
//! | `rpc.server.responses_per_rpc` | histogram | a stream's messages sent (streams only) |
//! | `rpc.client.duration` | histogram, seconds | a unary call through the channel's layers; a stream from its opening to its last handle's drop |
//! | `rpc.client.requests` | counter | calls and streams made, failures included |
//! | `rpc.client.requests_per_rpc` | histogram | a stream's messages sent (streams only) |
//! | `rpc.client.responses_per_rpc` | histogram | a stream's messages received (streams only) |
//!
//! each with the labels `rpc.system="frpc"`, `rpc.service` (the full name, `pkg.Service`),
//! `rpc.method` and `rpc.frpc.status_code`, the status code's number as gRPC numbers it
//! (`"0"` OK, `"5"` NOT_FOUND, ...; OpenTelemetry's `rpc.grpc.status_code`). Errors by code are
//! the calls whose code is not `"0"`. A Prometheus exporter writes the names with underscores
//! (`rpc_server_requests`, `rpc_server_duration_count`, `rpc_service="demo.Greeter"`).
//!
//! A client stream dropped before the server ended it counts as `CANCELLED` (`"1"`), on both
//! sides (one dropped with the server's end arrived but unread counts that end), and so does a unary call its caller drops before the reply (a timeout or `select!`
//! around it): the server books a call whose handler was dropped unanswered as `CANCELLED` (the
//! client cancelled it, its connection closed), or `DEADLINE_EXCEEDED` past its deadline, and
//! so too a handler that failed once its call was cancelled (a stream whose client's
//! connection closed fails its next read or send). A handler's error with code OK is booked
//! `UNKNOWN`, the code its client gets; a handler that panics, `INTERNAL`. The layer passes
//! the readiness of the layers below it up, as tower's layers do (a `LoadShedLayer` above it
//! sheds what they cannot take): a call is seen once the stack is ready for it, so one dropped
//! while it waits for a limit below (`ConcurrencyLimitLayer`, `RateLimitLayer`) is not
//! counted. Put a `LoadShedLayer` right below the metrics layer to turn that wait into a
//! refusal it counts (`UNAVAILABLE`), or read the clients' metrics. On the client, a layer's
//! error is booked with the code its caller gets (tower's `Elapsed` as `DEADLINE_EXCEEDED`,
//! `Overloaded` as `UNAVAILABLE`).
//!
//! A call that ends at its deadline is booked `DEADLINE_EXCEEDED` by its client, but on the
//! server it races its client's cancel: the client's timer started before the request went
//! out, so its `CANCEL` can arrive before the server's own deadline (by up to the request's
//! transit and queueing, a few milliseconds on a loaded machine), and the call is then
//! booked `CANCELLED` (up to 4% of them in a measured loop of 15 ms deadlines). gRPC servers
//! have the same race (grpc-go books `Canceled` when the client's `RST_STREAM` wins). The
//! server cannot tell that cancel from one its client made for another reason, so it books
//! what it saw: count the two codes together for the calls whose client gave up, and the
//! client's metrics for which of them ran out of time.
//!
//! Calls refused before the layers (an unknown operation, a stream over `max_open_streams`, a
//! connection over `max_connections`) are not seen here: the clients' metrics show them.
//!
//! Each layer asks the recorder for the handles of a label set (method and status code) once
//! and keeps them, so a call costs a read lock and a hash lookup rather than a registry
//! lookup: **install the recorder before the first call** (calls made before it stay with
//! handles that record nothing).
//!
//! Without a recorder installed the facade does nothing, and without the feature this module,
//! its dependency and the streams' message counters are not compiled at all. With the feature
//! on, every stream counts its messages (a relaxed atomic add per message, and one small
//! allocation per stream) whether a layer reads them or not.
//!
//! ```
//! let server = frpc::Server::builder().layer(frpc::metrics::MetricsLayer::new());
//! # drop(server);
//! ```

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::Instant;

use futures_util::FutureExt;
use tower::{Layer, Service as TowerService};

use crate::caller::{Reply, Request};
use crate::calls::stream::{MessageCounts, StreamObserver};
use crate::channel::Channel;
use crate::middleware::{BoxError, CallRequest, CallResponse, status_from_error};
use crate::status::{Code, Error, Status};

mod handles;

use handles::{Cache, Names, labels};

/// The histogram of call durations, in seconds.
pub const SERVER_DURATION: &str = "rpc.server.duration";
/// The counter of calls answered.
pub const SERVER_REQUESTS: &str = "rpc.server.requests";
/// The histogram of a client's unary call durations, in seconds.
pub const CLIENT_DURATION: &str = "rpc.client.duration";
/// The counter of a client's unary calls.
pub const CLIENT_REQUESTS: &str = "rpc.client.requests";
/// The histogram of a server stream's messages received.
pub const SERVER_REQUESTS_PER_RPC: &str = "rpc.server.requests_per_rpc";
/// The histogram of a server stream's messages sent.
pub const SERVER_RESPONSES_PER_RPC: &str = "rpc.server.responses_per_rpc";
/// The histogram of a client stream's messages sent.
pub const CLIENT_REQUESTS_PER_RPC: &str = "rpc.client.requests_per_rpc";
/// The histogram of a client stream's messages received.
pub const CLIENT_RESPONSES_PER_RPC: &str = "rpc.client.responses_per_rpc";

/// The server's metrics.
static SERVER: Names = Names {
    requests: SERVER_REQUESTS,
    duration: SERVER_DURATION,
    requests_per_rpc: SERVER_REQUESTS_PER_RPC,
    responses_per_rpc: SERVER_RESPONSES_PER_RPC,
};

/// A client's metrics.
static CLIENT: Names = Names {
    requests: CLIENT_REQUESTS,
    duration: CLIENT_DURATION,
    requests_per_rpc: CLIENT_REQUESTS_PER_RPC,
    responses_per_rpc: CLIENT_RESPONSES_PER_RPC,
};

/// A layer recording [`SERVER_DURATION`] and [`SERVER_REQUESTS`] (and a stream's messages) for
/// every call it wraps (`Builder::layer(MetricsLayer::new())`, or on one service with
/// [`LayeredService::layer`](crate::LayeredService::layer)). Put it outermost to count calls
/// that inner layers (interceptors, limits shedding with `LoadShedLayer`) refuse; a call
/// dropped while it waits for an inner limit's readiness is not seen (see the module docs).
/// Its clones share the metric handles it registered (see the module docs).
#[derive(Debug, Clone)]
pub struct MetricsLayer {
    handles: Arc<Cache<ServerKey>>,
}

/// A server call's label set: service, method, status code.
type ServerKey = (&'static str, &'static str, u8);

impl MetricsLayer {
    /// A metrics layer.
    pub fn new() -> MetricsLayer {
        MetricsLayer {
            handles: Arc::new(Cache::new(&SERVER)),
        }
    }
}

impl Default for MetricsLayer {
    fn default() -> Self {
        MetricsLayer::new()
    }
}

impl<S> Layer<S> for MetricsLayer {
    type Service = Metrics<S>;

    fn layer(&self, inner: S) -> Metrics<S> {
        Metrics {
            inner,
            handles: self.handles.clone(),
        }
    }
}

/// The service of a [`MetricsLayer`].
#[derive(Debug, Clone)]
pub struct Metrics<S> {
    inner: S,
    handles: Arc<Cache<ServerKey>>,
}

impl<S> TowerService<CallRequest> for Metrics<S>
where
    S: TowerService<CallRequest, Response = CallResponse>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = CallResponse;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<CallResponse, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), BoxError>> {
        // Passed up, so that a `LoadShedLayer` above sheds what the layers below cannot take
        // (always ready, this layer made every call over a limit wait in line: nothing shed).
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: CallRequest) -> Self::Future {
        let mut call = ServerCall {
            service: request.service(),
            method: request.method(),
            counts: request.message_counts(),
            handles: Some(self.handles.clone()),
            started: Instant::now(),
            deadline: request.context().deadline(),
        };
        let ctx = request.context().clone();
        let answer = self.inner.call(request);
        Box::pin(async move {
            // A unary handler's panic is caught outside the layers (the stack's caller answers
            // it INTERNAL): booked so here, not as the client's cancel, then passed on.
            let answered = match AssertUnwindSafe(answer).catch_unwind().await {
                Ok(answered) => answered,
                Err(panic) => {
                    call.record(Code::Internal);
                    std::panic::resume_unwind(panic);
                }
            };
            let result = answered.map_err(|error| status_from_error(error.into()));
            call.record(match &result {
                Ok(_) => Code::Ok,
                // A handler failing because its client went (a stream's read or send failed
                // on the closed connection) is the client's cancel, as a dropped one is.
                Err(_) if ctx.is_cancelled() => call.unanswered_code(),
                Err(status) => status.error_code(),
            });
            // The status itself, so the layers above and the client see what the handler said.
            result.map_err(|status| Box::new(status) as BoxError)
        })
    }
}

/// A call the server layer has yet to record: recorded with its code once answered, or if
/// dropped unanswered (its handler dropped) as `DEADLINE_EXCEEDED` past its deadline, else
/// `CANCELLED` (the client cancelled it, its connection closed).
struct ServerCall {
    service: &'static str,
    method: &'static str,
    counts: Option<Arc<MessageCounts>>,
    /// `None` once recorded.
    handles: Option<Arc<Cache<ServerKey>>>,
    started: Instant,
    deadline: Option<Instant>,
}

impl ServerCall {
    fn record(&mut self, code: Code) {
        let Some(handles) = self.handles.take() else {
            return;
        };
        let (service, method) = (self.service, self.method);
        let seconds = self.started.elapsed().as_secs_f64();
        let counts = &self.counts;
        handles.with(
            (service, method, code as u8),
            || labels(service, method, code),
            |handles, names| {
                handles.call(seconds);
                if let Some(counts) = counts {
                    handles.messages(names, [counts.received(), counts.sent()]);
                }
            },
        );
    }
}

impl ServerCall {
    /// The code of a call its client gave up on: `DEADLINE_EXCEEDED` past its deadline, else
    /// `CANCELLED`.
    fn unanswered_code(&self) -> Code {
        match self.deadline {
            Some(deadline) if Instant::now() >= deadline => Code::DeadlineExceeded,
            _ => Code::Cancelled,
        }
    }
}

impl Drop for ServerCall {
    fn drop(&mut self) {
        self.record(self.unanswered_code());
    }
}

/// A layer for a [`Channel`] recording [`CLIENT_REQUESTS`] and
/// [`CLIENT_DURATION`] for every call, with the labels of the server's metrics: give it to
/// [`Channel::with_metrics`] for unary calls and streams alike (`channel.with_layer(..)` sees
/// unary calls only, as every channel layer does). A generated client's calls carry their
/// method's gRPC path ([`Request::path`]) and are labelled with its service and method, so
/// one layer serves a channel shared by several services. A call made by operation number
/// alone is labelled with the layer's service and the name given to its operation with
/// [`ClientMetricsLayer::method`], or else the number.
///
/// ```
/// let layer = frpc::metrics::ClientMetricsLayer::new("demo.Greeter").method(10, "Greet");
/// # drop(layer);
/// ```
#[derive(Debug, Clone)]
pub struct ClientMetricsLayer {
    recorder: Arc<ClientRecorder>,
}

/// What a client's calls are labelled with, and the handles of each label set seen.
#[derive(Debug)]
struct ClientRecorder {
    service: String,
    methods: Vec<(u16, String)>,
    handles: Cache<(u16, &'static str, u8)>,
}

impl ClientRecorder {
    fn new(service: String, methods: Vec<(u16, String)>) -> ClientRecorder {
        ClientRecorder {
            service,
            methods,
            handles: Cache::new(&CLIENT),
        }
    }

    /// The service and method a call of `op` is labelled with: a method named here, else its
    /// gRPC path's (`/package.Service/Method`, as generated clients give it), else the
    /// operation number in this layer's service.
    fn names(&self, op: u16, path: &str) -> (String, String) {
        if let Some((_, name)) = self.methods.iter().find(|(known, _)| *known == op) {
            return (self.service.clone(), name.clone());
        }
        match path.strip_prefix('/').and_then(|path| path.split_once('/')) {
            Some((service, method)) => (service.to_owned(), method.to_owned()),
            None => (self.service.clone(), op.to_string()),
        }
    }

    /// Records a call or stream of `op` (gRPC path `path`, or empty) that ended with `code`
    /// after `seconds`; a stream's messages too (sent, received).
    fn record(&self, op: u16, path: &'static str, code: Code, seconds: f64, messages: Option<[u64; 2]>) {
        let labels = || {
            let (service, method) = self.names(op, path);
            labels(&service, &method, code)
        };
        self.handles
            .with((op, path, code as u8), labels, |handles, names| {
                handles.call(seconds);
                if let Some(messages) = messages {
                    handles.messages(names, messages);
                }
            });
    }
}

impl StreamObserver for ClientRecorder {
    fn ended(&self, op: u16, path: &'static str, started: Instant, counts: &MessageCounts) {
        let code = counts.code().unwrap_or(Code::Cancelled);
        let seconds = started.elapsed().as_secs_f64();
        self.record(op, path, code, seconds, Some([counts.sent(), counts.received()]));
    }
}

impl ClientMetricsLayer {
    /// A layer labelling calls made by operation number with `service` (`pkg.Service`);
    /// a generated client's calls name their own service.
    pub fn new(service: impl Into<String>) -> ClientMetricsLayer {
        ClientMetricsLayer {
            recorder: Arc::new(ClientRecorder::new(service.into(), Vec::new())),
        }
    }

    /// Labels the calls of operation `op` with the method name `name` (and the layer's
    /// service), whatever their path.
    #[must_use]
    pub fn method(self, op: u16, name: impl Into<String>) -> ClientMetricsLayer {
        let mut methods = self.recorder.methods.clone();
        methods.push((op, name.into()));
        let service = self.recorder.service.clone();
        ClientMetricsLayer {
            recorder: Arc::new(ClientRecorder::new(service, methods)),
        }
    }
}

impl<S> Layer<S> for ClientMetricsLayer {
    type Service = ClientMetrics<S>;

    fn layer(&self, inner: S) -> ClientMetrics<S> {
        ClientMetrics {
            inner,
            recorder: self.recorder.clone(),
        }
    }
}

/// The service of a [`ClientMetricsLayer`].
#[derive(Debug, Clone)]
pub struct ClientMetrics<S> {
    inner: S,
    recorder: Arc<ClientRecorder>,
}

impl<S> TowerService<Request> for ClientMetrics<S>
where
    S: TowerService<Request, Response = Reply>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = Reply;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Reply, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let mut call = ClientCall {
            recorder: Some(self.recorder.clone()),
            op: request.op,
            path: request.path,
            started: Instant::now(),
        };
        let answer = self.inner.call(request);
        Box::pin(async move {
            let result = answer.await.map_err(Into::into);
            call.record(match &result {
                Ok(reply) => reply_code(reply),
                Err(error) => layer_error_code(error),
            });
            result
        })
    }
}

/// The code of the error a caller gets for `error`, failed by the layers below the metrics
/// layer or the channel: as [`Error::code`] of what the channel makes of it (an frpc error,
/// a layer's status, tower's `Elapsed` as `DEADLINE_EXCEEDED` and `Overloaded` as
/// `UNAVAILABLE` under [`Error::Layer`], anything else `UNKNOWN`).
fn layer_error_code(error: &BoxError) -> Code {
    if let Some(error) = error.downcast_ref::<Error>() {
        return error.code();
    }
    if let Some(status) = error.downcast_ref::<Status>() {
        return status.code();
    }
    if error.is::<tower::timeout::error::Elapsed>() {
        return Code::DeadlineExceeded;
    }
    if error.is::<tower::load_shed::error::Overloaded>() {
        return Code::Unavailable;
    }
    Code::Unknown
}

/// A unary call the client layer has yet to record: recorded with its code once answered, or
/// as `CANCELLED` if its caller drops it first (a `select!`, a timeout around it), as the
/// server books it and as the client's streams are.
struct ClientCall {
    /// `None` once recorded.
    recorder: Option<Arc<ClientRecorder>>,
    op: u16,
    path: &'static str,
    started: Instant,
}

impl ClientCall {
    fn record(&mut self, code: Code) {
        if let Some(recorder) = self.recorder.take() {
            let seconds = self.started.elapsed().as_secs_f64();
            recorder.record(self.op, self.path, code, seconds, None);
        }
    }
}

impl Drop for ClientCall {
    fn drop(&mut self) {
        self.record(Code::Cancelled);
    }
}

impl Channel {
    /// The channel with `layer` on its unary calls (as [`Channel::with_layer`] puts it) and
    /// recording its streams too (which bypass the channel's layers): the client's
    /// [RED metrics](crate::metrics) for every call this channel makes.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), frpc::Error> {
    /// use frpc::metrics::ClientMetricsLayer;
    /// let channel = frpc::Endpoint::from_static("127.0.0.1:8080").connect().await?;
    /// let channel = channel.with_metrics(ClientMetricsLayer::new("demo.Greeter").method(10, "Greet"));
    /// # drop(channel); Ok(()) }
    /// ```
    pub fn with_metrics(&self, layer: ClientMetricsLayer) -> Channel {
        let observer: Arc<dyn StreamObserver> = layer.recorder.clone();
        self.with_layer(layer).with_stream_observer(observer)
    }
}

/// A reply's status: the code an frpc server sent with an error, UNKNOWN for an error without
/// one (a Go server's: a polyglot error value, whose first byte no protobuf message can start
/// with), OK otherwise.
fn reply_code(reply: &Reply) -> Code {
    match (reply.code, reply.body.first()) {
        (Some(code), _) => code,
        (None, Some(&first)) if first == frpc_wire::polyglot::Kind::Error as u8 => Code::Unknown,
        (None, _) => Code::Ok,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A handler's `Err` with code OK reaches its client as UNKNOWN (`calls/server.rs` sends
    /// no code for it), and is booked so; other codes as they are.
    #[test]
    fn calls_are_named_by_the_layer_then_their_path_then_their_number() {
        let recorder = ClientRecorder::new("demo.Greeter".into(), vec![(10, "Greet".into())]);
        let names = |op, path| recorder.names(op, path);
        let pair = |service: &str, method: &str| (service.to_owned(), method.to_owned());
        assert_eq!(names(10, "/other.Svc/Call"), pair("demo.Greeter", "Greet"));
        assert_eq!(names(11, "/other.Svc/Call"), pair("other.Svc", "Call"));
        assert_eq!(names(11, ""), pair("demo.Greeter", "11"));
        assert_eq!(names(12, "not-a-path"), pair("demo.Greeter", "12"));
    }

    /// A client layer's error is booked with the code its caller gets (the channel makes it
    /// an `Error` as `Error::from_layer` does): tower's timeout and load shedding below the
    /// metrics layer were booked UNKNOWN.
    #[test]
    fn a_layer_error_is_booked_with_its_callers_code() {
        let errors: Vec<fn() -> BoxError> = vec![
            || Box::new(tower::timeout::error::Elapsed::new()),
            || Box::new(tower::load_shed::error::Overloaded::new()),
            || Box::new(Status::permission_denied("no")),
            || Box::new(Error::Cancelled),
            || "a layer's own error".into(),
        ];
        for error in errors {
            assert_eq!(layer_error_code(&error()), Error::from_layer(error()).code());
        }
        let elapsed: BoxError = Box::new(tower::timeout::error::Elapsed::new());
        assert_eq!(layer_error_code(&elapsed), Code::DeadlineExceeded);
    }

    #[test]
    fn an_error_saying_ok_is_booked_unknown() {
        assert_eq!(Status::with_code(Code::Ok, "m0").error_code(), Code::Unknown);
        assert_eq!(Status::not_found("x").error_code(), Code::NotFound);
    }
}
