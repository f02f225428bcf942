//! The server's side of calls: the [`Dispatch`] that turns packets into handler runs, the
//! concurrency modes that schedule them, the reply path and the connection's streams. Calls
//! floor: what runs for an operation comes from a [`Handlers`] the services floor implements.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use bytes::Bytes;
use frpc_wire::polyglot::{self, Decoder};
use frpc_wire::{Header, Packet, op};
use futures_util::FutureExt;
use std::task::Poll;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use super::stream::{ServerStream, StreamTable};
use crate::config::{Concurrency, ServerConfig};
use crate::status::{Error, Status};
use crate::transport::connection::{Connection, Dispatch};
use crate::types::BoxFuture;

/// What serves an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// A unary method.
    Unary,
    /// A streaming method (opened with a stream-open message, never as a packet operation).
    Streaming,
    /// A raw route: runs on the reader, in arrival order.
    Raw,
}

/// The handlers of one connection, as the services floor provides them.
pub(crate) trait Handlers: Send + Sync + 'static {
    /// What serves `op`, if anything.
    fn target(&self, op: u16) -> Option<Target>;
    /// Runs a unary method: the request content in, the encoded response out.
    fn unary(&self, conn: &Arc<Connection>, op: u16, request: Bytes) -> BoxFuture<Result<Bytes, Status>>;
    /// Runs a streaming method on a stream the client opened.
    fn streaming(
        &self,
        conn: &Arc<Connection>,
        op: u16,
        stream: ServerStream,
    ) -> BoxFuture<Result<(), Status>>;
    /// Runs a raw route; `Some(content)` is sent back under the packet's id and operation.
    fn raw(&self, conn: &Arc<Connection>, packet: Packet) -> BoxFuture<Option<Bytes>>;
    /// The service's full proto name and the method's name of method `op`, for the call's
    /// span. Asked only when the span is enabled (a subscriber listens at debug level).
    fn names(&self, op: u16) -> Option<(&'static str, &'static str)>;
}

/// Records the service and method names of `op` on a call's span, when anything listens.
fn record_names(span: &tracing::Span, handlers: &impl Handlers, op: u16) {
    if span.is_disabled() {
        return;
    }
    if let Some((service, method)) = handlers.names(op) {
        span.record("service", service);
        span.record("method", method);
    }
}

/// Limits shared by every connection of a server.
#[derive(Debug)]
pub(crate) struct Limits {
    concurrency: Concurrency,
    /// `Limited(n)`: the server-wide cap.
    global: Option<Arc<Semaphore>>,
    max_inflight_per_connection: usize,
    max_streams: usize,
    stream_buffer: usize,
    /// Open streams across every connection.
    pub(crate) open_streams: Arc<AtomicUsize>,
}

impl Limits {
    pub(crate) fn new(config: &ServerConfig) -> Limits {
        let global = match config.concurrency {
            Concurrency::Limited(n) => Some(Arc::new(Semaphore::new(n.max(1)))),
            _ => None,
        };
        Limits {
            concurrency: config.concurrency,
            global,
            max_inflight_per_connection: config.max_inflight_per_connection.max(1),
            max_streams: config.connection.max_streams,
            stream_buffer: config.connection.stream_buffer,
            open_streams: Arc::default(),
        }
    }
}

/// Dispatches one server connection's packets to its handlers.
pub(crate) struct ServerDispatch<H> {
    handlers: H,
    limits: Arc<Limits>,
    /// Calls running on this connection (bounded by `max_inflight_per_connection`).
    inflight: Arc<Semaphore>,
    streams: Arc<StreamTable>,
    rpcs: TaskTracker,
}

impl<H: Handlers> ServerDispatch<H> {
    /// A dispatcher whose spawned calls are tracked by `rpcs`.
    pub(crate) fn new(handlers: H, limits: Arc<Limits>, rpcs: TaskTracker) -> ServerDispatch<H> {
        ServerDispatch {
            handlers,
            inflight: Arc::new(Semaphore::new(limits.max_inflight_per_connection)),
            streams: Arc::new(StreamTable::new(
                limits.max_streams,
                limits.stream_buffer,
                limits.open_streams.clone(),
            )),
            limits,
            rpcs,
        }
    }

    /// Runs a unary call as the concurrency mode says.
    ///
    /// `PerRpc` and `Limited` first poll the handler once right here on the reader: a handler
    /// that finishes without waiting (most do) replies at the cost of an inline call, with no
    /// task, no hand-off and no wake-up; one that is still pending moves to a task of its own,
    /// so a slow handler never holds up the calls behind it. Waiting for a permit stops the
    /// reader, which is the backpressure a flooding peer gets.
    async fn unary(&self, conn: &Arc<Connection>, packet: Packet) {
        let (id, op) = (packet.id, packet.op);
        let span = tracing::debug_span!(
            "rpc",
            op,
            id,
            service = tracing::field::Empty,
            method = tracing::field::Empty
        );
        record_names(&span, &self.handlers, op);
        let call = self.handlers.unary(conn, op, packet.content);
        let permits = match self.limits.concurrency {
            Concurrency::Inline => {
                let job = reply(conn.clone(), id, op, call).instrument(span);
                return conn.busy(job).await;
            }
            Concurrency::PerRpc => None,
            Concurrency::Limited(_) => match self.global_permit().await {
                Some(global) => Some(global),
                None => return,
            },
        };
        let mut call = call;
        let first = span.in_scope(|| poll_once(&mut call));
        if let Some(result) = first {
            return send_reply(conn, id, op, result).await;
        }
        let Ok(local) = self.inflight.clone().acquire_owned().await else {
            return;
        };
        let job = reply(conn.clone(), id, op, call).instrument(span);
        self.rpcs.spawn(async move {
            job.await;
            drop((local, permits));
        });
    }

    /// A permit of `Limited(n)`'s server-wide cap.
    async fn global_permit(&self) -> Option<OwnedSemaphorePermit> {
        let global = self.limits.global.clone()?;
        global.acquire_owned().await.ok()
    }

    async fn raw(&self, conn: &Arc<Connection>, packet: Packet) {
        let (id, op) = (packet.id, packet.op);
        let handler = self.handlers.raw(conn, packet);
        match AssertUnwindSafe(handler).catch_unwind().await {
            Ok(Some(content)) => {
                let _ = conn.send(Packet::new(id, op, content)).await;
            }
            Ok(None) => {}
            Err(panic) => tracing::warn!(op, "raw handler panicked: {}", Status::from_panic(panic)),
        }
    }

    /// Opens a stream the client started with `first`, the stream-open message.
    async fn open_stream(&self, conn: &Arc<Connection>, id: u16, first: Bytes) {
        let Ok(method) = Decoder::from_bytes(&first).u16() else {
            // A late message, EOF or error of a stream we already finished (a handler that
            // replied before reading to the end): dropped, as Go does. Closing it instead would
            // make the peer's next send fail and lose the reply it already has.
            return tracing::trace!(stream = id, "dropping a packet of a finished stream");
        };
        if self.handlers.target(method) != Some(Target::Streaming) {
            let status = Status::new(format!("unknown streaming method {method}"));
            return ServerStream::refuse(conn, id, status).await;
        }
        let stream = match ServerStream::accept(conn, &self.streams, id) {
            Ok(stream) => stream,
            Err(err) => return ServerStream::refuse(conn, id, Status::new(err.to_string())).await,
        };
        let call = self.handlers.streaming(conn, method, stream);
        // Streams always get their own task: they consume packets the reader has yet to read.
        let span = tracing::debug_span!(
            "stream",
            op = method,
            id,
            service = tracing::field::Empty,
            method = tracing::field::Empty
        );
        record_names(&span, &self.handlers, method);
        self.rpcs.spawn(
            async move {
                if let Err(status) = call.await {
                    tracing::debug!(%status, "streaming call failed");
                }
            }
            .instrument(span),
        );
    }
}

impl<H: Handlers> Dispatch for ServerDispatch<H> {
    async fn packet(&self, conn: &Arc<Connection>, packet: Packet) {
        if packet.op == op::STREAM {
            if let Some(first) = self.streams.route(conn, packet.id, packet.content) {
                self.open_stream(conn, packet.id, first).await;
            }
            return;
        }
        match self.handlers.target(packet.op) {
            Some(Target::Unary) => self.unary(conn, packet).await,
            Some(Target::Raw) => self.raw(conn, packet).await,
            Some(Target::Streaming) => tracing::debug!(
                op = packet.op,
                "a streaming method's number used as a packet operation"
            ),
            // Go drops unknown operations silently; the connection stays usable.
            None => tracing::debug!(
                op = packet.op,
                id = packet.id,
                "dropping a packet for an unknown operation"
            ),
        }
    }

    async fn oversize(&self, conn: &Arc<Connection>, header: Header) {
        let max = conn.max_content_length();
        if header.op == op::STREAM {
            return self.streams.reject_oversize(conn, header.id, header.len, max);
        }
        if self.handlers.target(header.op) == Some(Target::Unary) {
            // Go drops the whole connection; the header names the call, so answer it instead.
            let text = format!("request of {} bytes exceeds the limit of {max} bytes", header.len);
            let content = polyglot::error_to_bytes(&text);
            let _ = conn.send(Packet::new(header.id, header.op, content)).await;
        }
    }

    fn closed(&self, err: &Error) {
        self.streams.close_all(err);
    }
}

/// Polls a handler once, turning a panic into an error status. `None`: it is still pending.
/// The waker is a no-op: a pending handler is spawned at once, and the task's first poll checks
/// again whatever it waits for and registers the task's own waker, so no wake-up is lost and
/// the reader is never woken for a call it handed off.
fn poll_once(call: &mut BoxFuture<Result<Bytes, Status>>) -> Option<Result<Bytes, Status>> {
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    match std::panic::catch_unwind(AssertUnwindSafe(|| call.as_mut().poll(&mut cx))) {
        Ok(Poll::Ready(result)) => Some(result),
        Ok(Poll::Pending) => None,
        Err(panic) => Some(Err(Status::from_panic(panic))),
    }
}

/// Runs a unary call and queues its reply under the request's id and operation.
async fn reply(conn: Arc<Connection>, id: u16, op: u16, call: BoxFuture<Result<Bytes, Status>>) {
    let result = AssertUnwindSafe(call)
        .catch_unwind()
        .await
        .unwrap_or_else(|panic| Err(Status::from_panic(panic)));
    send_reply(&conn, id, op, result).await;
}

/// Queues a call's reply: the response, or the error (closing the connection after it when the
/// status says so).
async fn send_reply(conn: &Connection, id: u16, op: u16, result: Result<Bytes, Status>) {
    let (content, close) = match result {
        Ok(content) => (content, false),
        Err(status) => (
            polyglot::error_to_bytes(status.message()),
            status.closes_connection(),
        ),
    };
    let content = match conn.check_len(content.len()) {
        Ok(()) => content,
        // Go closes the whole connection here; failing just this call is enough.
        Err(err) => polyglot::error_to_bytes(&format!("response too large: {err}")),
    };
    let _ = conn.send(Packet::new(id, op, content)).await;
    if close {
        conn.close("handler returned a closing status");
    }
}
