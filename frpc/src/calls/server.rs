//! The server's side of calls: the [`Dispatch`] that turns packets into handler runs, the
//! concurrency modes that schedule them, the reply path and the connection's streams. Calls
//! floor: what runs for an operation comes from a [`Handlers`] the services floor implements.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use bytes::Bytes;
use frpc_wire::polyglot::{self, Decoder};
use frpc_wire::{Header, Packet, op};
use futures_util::FutureExt;
use std::task::Poll;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use super::budget::ByteBudget;
use super::codec;
use super::drain::DrainNotice;
use super::ext::{self, CallInfo, CallState, Registry};
use super::held::Hold;
use super::slot::UnarySlot;
use super::stream::{Budget, Routed, ServerStream, StreamExt, StreamSetup, StreamTable};
use crate::config::{Concurrency, ConnectionConfig, ServerConfig};
use crate::metadata::Metadata;
use crate::status::{CloseReason, Code, Error, Status};
use crate::transport::connection::{Connection, Dispatch};
use crate::transport::writer::Outgoing;
use crate::types::{BoxFuture, Encoded};

/// What serves an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// A unary method, with the handlers' own number for its service (handed back to
    /// [`Handlers::unary`], so the call does not look its route up twice).
    Unary(usize),
    /// A streaming method (opened with a stream-open message, never as a packet operation).
    Streaming,
    /// A raw route: runs on the reader, in arrival order.
    Raw,
}

/// The handlers of one connection, as the services floor provides them.
pub(crate) trait Handlers: Send + Sync + 'static {
    /// What serves `op`, if anything.
    fn target(&self, op: u16) -> Option<Target>;
    /// Starts unary method `op` in `slot` (`service`: what [`Handlers::target`] said serves
    /// it): the request content in, the encoded response out when the slot's future finishes.
    /// `call` is the call's extension state, on connections that negotiated extensions.
    fn unary(
        &self,
        conn: &Arc<Connection>,
        op: u16,
        service: usize,
        request: Bytes,
        call: Option<CallInfo>,
        slot: &mut UnarySlot,
    );
    /// Runs a streaming method on a stream the client opened.
    fn streaming(
        &self,
        conn: &Arc<Connection>,
        op: u16,
        stream: ServerStream,
        call: Option<CallInfo>,
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
    /// Waiting unary handlers across every connection (`max_inflight`).
    inflight: Arc<Semaphore>,
    /// What each connection's stream table is made of.
    connection: ConnectionConfig,
    /// Open streams across every connection.
    pub(crate) open_streams: Arc<AtomicUsize>,
    /// The most `open_streams` may reach.
    max_open_streams: usize,
    /// Bytes of inbound stream messages buffered across every connection
    /// (`max_buffered_stream_bytes`).
    stream_bytes: Arc<ByteBudget>,
    /// Whether offers of extensions are answered.
    extensions: bool,
    /// The extensions an offer may get.
    supported: u32,
    /// The answer to a reflection request (an encoded `FileDescriptorSet`).
    reflection: Bytes,
}

impl Limits {
    /// The limits of `config`; `protobuf`: whether every service reads protobuf (the extension
    /// is accepted only then, and only with `config.protobuf`).
    pub(crate) fn new(config: &ServerConfig, protobuf: bool) -> Limits {
        let global = match config.concurrency {
            Concurrency::Limited(n) => Some(Arc::new(Semaphore::new(n.max(1)))),
            _ => None,
        };
        Limits {
            concurrency: config.concurrency,
            global,
            max_inflight_per_connection: config.max_inflight_per_connection.max(1),
            inflight: Arc::new(Semaphore::new(config.max_inflight.max(1))),
            connection: config.connection.clone(),
            open_streams: Arc::default(),
            max_open_streams: config.max_open_streams,
            stream_bytes: ByteBudget::new(config.max_buffered_stream_bytes),
            extensions: config.extensions,
            supported: ext::supported(config.protobuf && protobuf),
            reflection: Bytes::new(),
        }
    }

    /// What the gRPC face on the server's port applies of these limits to its calls.
    #[cfg(feature = "grpc")]
    pub(crate) fn grpc_gate(&self) -> crate::grpc::gate::Gate {
        crate::grpc::gate::Gate {
            unary: Some(self.global.clone().unwrap_or_else(|| self.inflight.clone())),
            streams: Some((self.open_streams.clone(), self.max_open_streams)),
            per_connection: Some(u32::try_from(self.connection.max_streams).unwrap_or(u32::MAX)),
        }
    }

    /// The limits with `reflection`, the encoded descriptors of the server's services, as the
    /// answer to reflection requests.
    pub(crate) fn with_reflection(self, reflection: Bytes) -> Limits {
        Limits { reflection, ..self }
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
    /// The extensions the client's offer got (`ANSWERED` once answered).
    accepted: AtomicU32,
    /// Calls of a connection with extensions that CANCEL may find.
    registry: Arc<Registry>,
    /// The drain notice to a client that took it (shared with the connection's shutdown).
    drain: Arc<DrainNotice>,
}

/// Marks [`ServerDispatch::accepted`] once an offer was answered (later ones are ignored).
const ANSWERED: u32 = 1 << 31;

fn call_key(op: u16, id: u16) -> u32 {
    (u32::from(op) << 16) | u32::from(id)
}

impl<H: Handlers> ServerDispatch<H> {
    /// A dispatcher whose spawned calls are tracked by `rpcs`.
    pub(crate) fn new(handlers: H, limits: Arc<Limits>, rpcs: TaskTracker) -> ServerDispatch<H> {
        ServerDispatch {
            handlers,
            inflight: Arc::new(Semaphore::new(limits.max_inflight_per_connection)),
            streams: Arc::new(StreamTable::new(
                &limits.connection,
                limits.open_streams.clone(),
                limits.max_open_streams,
            )),
            limits,
            rpcs,
            accepted: AtomicU32::new(0),
            registry: Arc::default(),
            drain: Arc::default(),
        }
    }

    /// The connection's drain notice, for its shutdown to wait for the client's answer.
    pub(crate) fn drain_notice(&self) -> Arc<DrainNotice> {
        self.drain.clone()
    }

    /// Whether a unary call starting now is refused: the server is shutting down, and the
    /// client was not told, or has answered the telling (nothing new should come).
    fn refuses_calls(&self, conn: &Connection) -> bool {
        conn.is_draining() && !self.drain.awaiting()
    }

    /// The extensions this connection uses (0: plain fRPC).
    fn extensions(&self) -> u32 {
        self.accepted.load(Ordering::Relaxed) & !ANSWERED
    }

    /// A call to an operation nothing serves. Go drops them silently (the connection stays
    /// usable), and so do we for peers without extensions; an frpc peer gets `UNIMPLEMENTED`,
    /// as a gRPC client would, rather than a call that waits for its timeout.
    async fn unknown(&self, conn: &Arc<Connection>, packet: Packet) {
        let bits = self.extensions();
        if bits == 0 || op::is_reserved(packet.op) {
            return tracing::debug!(
                op = packet.op,
                id = packet.id,
                "dropping a packet for an unknown operation"
            );
        }
        let status = Status::unimplemented(format!("unknown operation {}", packet.op));
        tracing::debug!(
            op = packet.op,
            id = packet.id,
            "answering an unknown operation UNIMPLEMENTED"
        );
        send_reply(conn, packet.id, packet.op, Err(status), Some((None, bits))).await;
    }

    /// A packet on the extension operation: an OFFER (answered once, when extensions are on)
    /// or a CANCEL. Anything else, or anything malformed, is ignored.
    async fn extension(&self, conn: &Arc<Connection>, packet: Packet) {
        match packet.id {
            ext::OFFER if self.limits.extensions => {
                let Some((_, offered)) = ext::parse_hello(&packet.content) else {
                    return tracing::debug!("ignoring a malformed extension offer");
                };
                // Only the reader writes it; a second offer keeps the first answer.
                if self.accepted.load(Ordering::Relaxed) & ANSWERED != 0 {
                    return tracing::debug!("ignoring a second extension offer");
                }
                let bits = offered & self.limits.supported;
                self.accepted.store(ANSWERED | bits, Ordering::Relaxed);
                let _ = conn.send(ext::hello(ext::ACCEPT, bits)).await;
            }
            ext::CANCEL if self.extensions() & ext::EXT_CANCEL != 0 => {
                let Some((op_, id)) = ext::parse_cancel(&packet.content) else {
                    return tracing::debug!("ignoring a malformed cancel");
                };
                if op_ == op::STREAM {
                    return self.streams.cancel(id);
                }
                self.registry.cancel(call_key(op_, id));
            }
            ext::CREDIT if self.extensions() & ext::EXT_FLOW != 0 => {
                let Some((stream, grant)) = ext::parse_stream_window(&packet.content) else {
                    return tracing::debug!("ignoring a malformed credit");
                };
                self.streams.credit(stream, grant);
            }
            ext::DRAINED if self.extensions() & ext::EXT_DRAIN != 0 => self.drain.answered(),
            ext::REFLECT if self.extensions() & ext::EXT_REFLECTION != 0 => {
                let answer = Packet::new(ext::REFLECTION, ext::OP, self.limits.reflection.clone());
                // Too large for the connection's packets, it fails to send; the client's
                // request then times out, as with a server that does not reflect.
                if let Err(err) = conn.send(answer).await {
                    tracing::debug!(%err, "cannot send the reflection answer");
                }
            }
            _ => tracing::debug!(id = packet.id, "ignoring an extension packet"),
        }
    }

    /// A unary call the reader could not start at once: one that waits for a permit of
    /// `Limited(n)`'s server-wide cap first, or whose extension header must be read (its
    /// deadline, its metadata). A header that does not parse is answered with its error.
    async fn unary(&self, conn: &Arc<Connection>, packet: Packet, service: usize, slot: &mut UnarySlot) {
        let permit = match &self.limits.global {
            Some(global) => match global.clone().try_acquire_owned() {
                Ok(permit) => Some(permit),
                Err(_) if self.extensions() != 0 => {
                    return self.wait_for_place(conn, packet, service, slot).await;
                }
                Err(_) => {
                    // A plain peer cannot cancel: the reader reads nothing while it waits
                    // (the cap's backpressure), the peer's PINGs included: that is not the
                    // peer falling silent.
                    let _busy = conn.mark_busy();
                    match global.clone().acquire_owned().await {
                        Ok(permit) => Some(permit),
                        Err(_) => return,
                    }
                }
            },
            None => None,
        };
        let (id, op) = (packet.id, packet.op);
        let span = self.rpc_span(&packet);
        let (ext, content) = match self.extensions() {
            0 => (None, packet.content),
            bits => match call_state(conn, packet.content) {
                Ok((state, content)) => (Some(CallExt { bits, state }), content),
                Err(status) => return send_reply(conn, id, op, Err(status), Some((None, bits))).await,
            },
        };
        let call = UnaryCall {
            id,
            op,
            span,
            ext,
            permit,
        };
        if let Some(started) = self.start_unary(conn, call, service, content, slot) {
            self.resume(conn, started, slot).await;
        }
    }

    /// Starts `call` in the slot and polls its handler once, on the reader, whatever the
    /// concurrency mode: a handler that finishes without waiting (most do) is answered at
    /// once, with no task, no hand-off and no future of the reader's; what is left (a handler
    /// still pending, a reply that must wait for the writer's queue) is returned. The waker of
    /// that first poll is a no-op: whoever awaits the handler next polls it again at once.
    fn start_unary(
        &self,
        conn: &Arc<Connection>,
        call: UnaryCall,
        service: usize,
        content: Bytes,
        slot: &mut UnarySlot,
    ) -> Option<Started> {
        let info = call.ext.as_ref().map(|ext| self.call_info(&call, ext));
        self.handlers.unary(conn, call.op, service, content, info, slot);
        let first = {
            // An inline handler keeps the connection busy while it runs (the idle timeout).
            let _busy = matches!(self.limits.concurrency, Concurrency::Inline).then(|| conn.mark_busy());
            in_span(&call.span, || poll_once(slot))
        };
        match first {
            Some(result) => {
                let ext = self.reply_ext(&call);
                in_span(&call.span, || place_reply(conn, call.id, call.op, result, ext)).map(Started::Queued)
            }
            None => Some(Started::Pending(call)),
        }
    }

    /// `Limited(n)` at its cap, on a connection with extensions: the call waits for its place
    /// in a task of its own, where CANCEL finds it and its deadline ends it, while the reader
    /// goes on (PINGs, CANCELs, the calls behind it, which queue behind it for the cap).
    /// Waiting calls take the places pending handlers take, the connection's
    /// `max_inflight_per_connection` and the server's `max_inflight`, so a flood still stops
    /// the reader.
    async fn wait_for_place(
        &self,
        conn: &Arc<Connection>,
        packet: Packet,
        service: usize,
        slot: &mut UnarySlot,
    ) {
        let (id, op, bits) = (packet.id, packet.op, self.extensions());
        let span = self.rpc_span(&packet);
        let (state, content) = match call_state(conn, packet.content) {
            Ok(parts) => parts,
            Err(status) => return send_reply(conn, id, op, Err(status), Some((None, bits))).await,
        };
        let Some(places) = self.waiting_places(conn).await else {
            return;
        };
        let key = call_key(op, id);
        let state = state.unwrap_or_else(|| self.registry.state(key));
        // Made (not polled) here, so the request is decoded on the reader as any other's.
        let info = CallInfo::State(state.clone());
        self.handlers.unary(conn, op, service, content, Some(info), slot);
        let handler = slot.take();
        self.registry.insert(key, state.clone());
        let (registry, conn) = (self.registry.clone(), conn.clone());
        let global = self
            .limits
            .global
            .clone()
            .expect("only Limited(n) waits for a place");
        let job = async move {
            // The place is held until the reply is queued, as a call that found one at once.
            let run = async move {
                let permit = global.acquire_owned().await.ok();
                Ok((handler.await?, permit))
            };
            answer_registered(&conn, &registry, key, &state, bits, run).await;
            drop(places);
        };
        self.rpcs.spawn(job.instrument(span));
    }

    /// The places a call waiting for `Limited(n)`'s cap holds: one of its connection's
    /// `max_inflight_per_connection` and one of the server's `max_inflight`.
    async fn waiting_places(
        &self,
        conn: &Connection,
    ) -> Option<(OwnedSemaphorePermit, OwnedSemaphorePermit)> {
        let _busy = conn.mark_busy();
        let local = self.inflight.clone().acquire_owned().await.ok()?;
        let server = self.limits.inflight.clone().acquire_owned().await.ok()?;
        Some((local, server))
    }

    /// Finishes a unary call [`ServerDispatch::start_unary`] left.
    async fn resume(&self, conn: &Arc<Connection>, started: Started, slot: &mut UnarySlot) {
        match started {
            Started::Queued(reply) => reply.send(conn).await,
            Started::Pending(call) => match self.limits.concurrency {
                Concurrency::Inline => self.finish_inline(conn, call, slot).await,
                Concurrency::PerRpc | Concurrency::Limited(_) => self.spawn_unary(conn, call, slot).await,
            },
        }
    }

    /// Awaits a pending inline handler on the reader, then replies. The reader reads no CANCEL
    /// meanwhile; a deadline still ends the handler.
    async fn finish_inline(&self, conn: &Arc<Connection>, call: UnaryCall, slot: &mut UnarySlot) {
        let _busy = conn.mark_busy();
        let state = call.ext.as_ref().and_then(|ext| ext.state.as_ref());
        let result = match state.filter(|state| state.deadline.is_some()) {
            // A span no subscriber takes (the default) is not entered and left on every poll.
            None if call.span.is_disabled() => until_closed(conn, catch(&mut *slot)).await,
            None => {
                until_closed(conn, catch(&mut *slot))
                    .instrument(call.span.clone())
                    .await
            }
            Some(state) => {
                // Boxed: few calls have a deadline, and its timer would enlarge every call's
                // future.
                Box::pin(until_closed(conn, guarded(&mut *slot, state)))
                    .instrument(call.span.clone())
                    .await
                    .flatten()
            }
        };
        // A handler its deadline, a CANCEL or the connection's end ended is dropped now (a
        // finished one is already gone).
        slot.release();
        let Some(result) = result else {
            return;
        };
        let ext = self.reply_ext(&call);
        let UnaryCall { id, op, span, .. } = call;
        if span.is_disabled() {
            return send_reply(conn, id, op, result, ext).await;
        }
        send_reply(conn, id, op, result, ext).instrument(span).await
    }

    /// Moves a pending handler to a task of its own (`PerRpc`, `Limited`), so a slow handler
    /// never holds up the calls behind it; a call of a connection with extensions is findable
    /// by CANCEL and bounded by its deadline meanwhile. Waiting for a permit (the connection's,
    /// then the server's) stops the reader, which is the backpressure a flooding peer gets.
    async fn spawn_unary(&self, conn: &Arc<Connection>, call: UnaryCall, slot: &mut UnarySlot) {
        let handler = slot.take();
        let Some(local) = self.inflight_permits(conn).await else {
            return;
        };
        let UnaryCall {
            id,
            op,
            span,
            ext,
            permit,
        } = call;
        let conn = conn.clone();
        let Some(CallExt { bits, state }) = ext else {
            let job = async move {
                if let Some(result) = until_closed(&conn, catch(handler)).await {
                    send_reply(&conn, id, op, result, None).await;
                }
            };
            let job = job.instrument(span);
            self.rpcs.spawn(async move {
                job.await;
                drop((local, permit));
            });
            return;
        };
        let key = call_key(op, id);
        // A lazy call's state is made now: CANCEL must find the call while its task runs.
        let state = state.unwrap_or_else(|| self.registry.state(key));
        self.registry.insert(key, state.clone());
        let registry = self.registry.clone();
        let job = async move {
            let run = async move { Ok((handler.await?, ())) };
            answer_registered(&conn, &registry, key, &state, bits, run).await;
        };
        self.rpcs.spawn(
            async move {
                job.await;
                drop((local, permit));
            }
            .instrument(span),
        );
    }

    /// What the call's handler gets of its extension state: the state its header made, or, for
    /// a call without one, the lazy state (made in the registry only if someone asks).
    fn call_info(&self, call: &UnaryCall, ext: &CallExt) -> CallInfo {
        match &ext.state {
            Some(state) => CallInfo::State(state.clone()),
            None => CallInfo::Lazy {
                registry: self.registry.clone(),
                key: call_key(call.op, call.id),
            },
        }
    }

    /// What the reply of a call that finished on the reader carries for the extensions: the
    /// response metadata its handler set, and the connection's extensions (`None`: plain).
    fn reply_ext(&self, call: &UnaryCall) -> Option<(Option<Metadata>, u32)> {
        let ext = call.ext.as_ref()?;
        let response = match &ext.state {
            Some(state) => state.take_response(),
            // Registered only if the handler asked for its cancellation or set metadata.
            None => self
                .registry
                .finish(call_key(call.op, call.id), None)
                .and_then(|state| state.take_response()),
        };
        Some((response, ext.bits))
    }

    /// The span of a unary call, named after its service and method. Inline: the `Span` is then
    /// built where the caller keeps it, not returned and moved (callgrind: about 20 instructions
    /// a call less).
    #[inline]
    fn rpc_span(&self, packet: &Packet) -> tracing::Span {
        let (id, op) = (packet.id, packet.op);
        let span = tracing::debug_span!(
            "rpc",
            op,
            id,
            service = tracing::field::Empty,
            method = tracing::field::Empty
        );
        record_names(&span, &self.handlers, op);
        span
    }

    /// A permit of `Limited(n)`'s server-wide cap.
    /// A waiting handler's places: one of its connection's `max_inflight_per_connection` and,
    /// unless `Limited(n)` already caps them, one of the server's `max_inflight`. Waiting for
    /// them is the calls' backpressure, not the peer falling silent (its PINGs wait too).
    async fn inflight_permits(
        &self,
        conn: &Connection,
    ) -> Option<(OwnedSemaphorePermit, Option<OwnedSemaphorePermit>)> {
        let _busy = conn.mark_busy();
        let local = self.inflight.clone().acquire_owned().await.ok()?;
        if self.limits.global.is_some() {
            return Some((local, None));
        }
        let server = self.limits.inflight.clone().acquire_owned().await.ok()?;
        Some((local, Some(server)))
    }

    async fn raw(&self, conn: &Arc<Connection>, packet: Packet) {
        let (id, op) = (packet.id, packet.op);
        let handler = self.handlers.raw(conn, packet);
        match AssertUnwindSafe(handler).catch_unwind().await {
            Ok(Some(content)) => {
                let _ = conn.send(Packet::new(id, op, content)).await;
            }
            Ok(None) => {}
            Err(panic) => {
                let _ = Status::from_panic(panic); // logged there
                tracing::warn!(op, "a raw handler panicked");
            }
        }
    }

    /// Opens a stream the client started with `first`, the stream-open message.
    async fn open_stream(&self, conn: &Arc<Connection>, id: u16, first: Bytes) {
        let bits = self.extensions();
        // The server is shutting down: a new stream is refused at once (its client may open it
        // elsewhere), as HTTP/2's GOAWAY refuses new streams; the open ones go on.
        if conn.is_draining() {
            return ServerStream::refuse(conn, id, Status::from(Error::ShuttingDown), bits).await;
        }
        let (header, first) = match bits != 0 && ext::has_prefix(&first) {
            false => (None, first),
            true => match ext::split(&first, conn.max_metadata_size()) {
                Ok((header, first)) => (Some(header), first),
                Err(err) => {
                    let status = err.status("bad stream open");
                    return ServerStream::refuse(conn, id, status, bits).await;
                }
            },
        };
        let mut open_message = Decoder::from_bytes(&first);
        let Ok(method) = open_message.u16() else {
            // A late message, EOF or error of a stream we already finished (a handler that
            // replied before reading to the end): dropped, as Go does. Closing it instead would
            // make the peer's next send fail and lose the reply it already has.
            return tracing::trace!(stream = id, "dropping a packet of a finished stream");
        };
        if self.handlers.target(method) != Some(Target::Streaming) {
            // The same text a Go client has always got; the code only reaches frpc clients.
            let status = Status::unimplemented(format!("unknown streaming method {method}"));
            return ServerStream::refuse(conn, id, status, bits).await;
        }
        // The client asks for OPENED (and, with a window, flow control) in its open header.
        let open = header
            .as_ref()
            .and_then(|header| header.open)
            .filter(|_| bits & ext::EXT_OPEN_ACK != 0);
        let peer_window = open.filter(|_| bits & ext::EXT_FLOW != 0).unwrap_or_default();
        // Bytes count too when negotiated and the opener announced its byte window.
        let bytes = bits & ext::EXT_BYTES != 0 && peer_window.bytes.is_some();
        let window = match peer_window.messages {
            0 => ext::Window::default(),
            _ => self.streams.window(bytes),
        };
        let setup = StreamSetup {
            recv_window: window.messages,
            send_credit: (peer_window.messages > 0).then_some(peer_window.messages),
            recv_bytes: window.bytes,
            send_bytes: peer_window.bytes.filter(|_| bytes).map(i64::from),
            awaiting_ack: false,
            codes: bits & ext::EXT_STATUS != 0,
            // Only the opener cancels a stream (and gives its id up).
            hold: Hold::Plain,
        };
        // Every stream the peer opens has a state, plain peers' too: its handler is cancelled
        // when the peer fails the stream (closes it with an empty packet, overflows it). Its
        // end carries response metadata to a client that takes metadata.
        let carries_response = bits & ext::EXT_METADATA != 0;
        let state = Arc::new(CallState::for_stream(
            header.unwrap_or_default(),
            carries_response,
        ));
        // The client asks for protobuf with the marker behind the method (docs/extensions.md
        // §10); only on a connection that negotiated it.
        let bits = match open_message.peek() == Some(codec::MARKER) {
            true => bits,
            false => bits & !ext::EXT_PROTOBUF,
        };
        let ext = StreamExt {
            bits,
            cancel: Some(state.clone()),
            ack_window: open.map(|_| window),
        };
        let (stream, place) = match ServerStream::accept(conn, &self.streams, id, ext, setup) {
            Ok(accepted) => accepted,
            Err(err) => {
                let status = match err {
                    // Too many streams: the client may retry later.
                    Error::ConnectionClosed { reason: Some(reason) } => Status::resource_exhausted(reason),
                    err => Status::unavailable(err.to_string()),
                };
                return ServerStream::refuse(conn, id, status, bits).await;
            }
        };
        let info = Some(CallInfo::State(state.clone()));
        let end = stream.end_handle();
        let call = self.handlers.streaming(conn, method, stream, info);
        // Streams always get their own task: they consume packets the reader has yet to read.
        let span = tracing::debug_span!(
            "stream",
            op = method,
            id,
            service = tracing::field::Empty,
            method = tracing::field::Empty
        );
        record_names(&span, &self.handlers, method);
        let conn = conn.clone();
        self.rpcs.spawn(
            async move {
                // The stream counts in the limits while this task runs (and its handler,
                // with the tasks it waits for); no longer once it is dropped with its
                // connection or cancelled, whatever its spawned tasks still hold.
                let _place = place;
                // Cancelled by the client (or failed by it), or its connection closed: the
                // handler is dropped, nothing more is sent.
                let Some(result) = until_closed(&conn, guarded(call, &state)).await.flatten() else {
                    return tracing::debug!("stream cancelled by the client, or its connection closed");
                };
                // A handler dropped at its deadline, or one that returned without ending the
                // stream: end it for the handler.
                end.ensure(&result).await;
                if let Err(status) = result {
                    tracing::debug!(%status, "streaming call failed");
                }
            }
            .instrument(span),
        );
    }
}

impl<H> ServerDispatch<H> {
    /// The shares of the connection's and the server's buffered-bytes budgets for a stream
    /// message of `len` bytes, waited for (so this connection is not read meanwhile); a message
    /// larger than a whole budget takes all of it. A connection whose streams have windows in
    /// bytes needs no budget of its own: each stream holds at most its window and one message.
    /// The connection is busy meanwhile: the peer's packets wait unread in the socket, so its
    /// silence is ours, and the idle timeout must not close it (it closed every connection
    /// whose handlers were slower than the timeout to read 16 MiB, losing their calls).
    async fn buffer_budget(&self, conn: &Connection, len: usize) -> Budget {
        let _busy = conn.mark_busy();
        let bits = self.accepted.load(Ordering::Relaxed);
        let connection = self.streams.buffer_budget(len, bits).await;
        let budget = &self.limits.stream_bytes;
        let server = match budget.try_take(len) {
            Some(share) => share,
            None => budget.take(len).await,
        };
        Budget { connection, server }
    }
}

impl<H: Handlers> Dispatch for ServerDispatch<H> {
    /// The slot unary handlers run in.
    type Scratch = UnarySlot;
    type Later = Later;

    /// A unary call that needs no wait before its handler starts (no server-wide permit to
    /// wait for, no extension header to read) starts here; everything else is left whole.
    fn packet_now(&self, conn: &Arc<Connection>, packet: Packet, slot: &mut UnarySlot) -> Option<Later> {
        let unary = packet.op != op::STREAM
            && packet.op != ext::OP
            && !matches!(self.limits.concurrency, Concurrency::Limited(_))
            && !conn.is_draining();
        let service = match unary.then(|| self.handlers.target(packet.op)) {
            Some(Some(Target::Unary(service))) => service,
            _ => return Some(Later::Packet(packet)),
        };
        let bits = self.extensions();
        if bits != 0 && ext::has_prefix(&packet.content) {
            return Some(Later::Packet(packet));
        }
        let (id, op) = (packet.id, packet.op);
        let call = UnaryCall {
            id,
            op,
            span: self.rpc_span(&packet),
            ext: (bits != 0).then_some(CallExt { bits, state: None }),
            permit: None,
        };
        self.start_unary(conn, call, service, packet.content, slot)
            .map(Later::Started)
    }

    async fn packet(&self, conn: &Arc<Connection>, later: Later, slot: &mut UnarySlot) {
        let packet = match later {
            Later::Packet(packet) => packet,
            Later::Started(started) => return self.resume(conn, started, slot).await,
        };
        if packet.op == op::STREAM {
            let budget = self.buffer_budget(conn, packet.content.len()).await;
            match self.streams.route(conn, packet.id, packet.content, budget) {
                Routed::Opens(first) => self.open_stream(conn, packet.id, first).await,
                Routed::Full(full) => self.streams.deliver(conn, full).await,
                Routed::Done => {}
            }
            return;
        }
        if packet.op == ext::OP {
            return self.extension(conn, packet).await;
        }
        match self.handlers.target(packet.op) {
            Some(Target::Unary(_)) if self.refuses_calls(conn) => {
                let ext = match self.extensions() {
                    0 => None,
                    bits => Some((None, bits)),
                };
                send_reply(
                    conn,
                    packet.id,
                    packet.op,
                    Err(Status::from(Error::ShuttingDown)),
                    ext,
                )
                .await
            }
            Some(Target::Unary(service)) => self.unary(conn, packet, service, slot).await,
            Some(Target::Raw) => self.raw(conn, packet).await,
            // A unary call on a streaming method's number (a client of another schema): as an
            // unknown operation, UNIMPLEMENTED for frpc peers (it got no reply at all).
            Some(Target::Streaming) | None => self.unknown(conn, packet).await,
        }
    }

    async fn oversize(&self, conn: &Arc<Connection>, header: Header) {
        let max = conn.max_content_length();
        if header.op == op::STREAM {
            return self.streams.reject_oversize(conn, header.id, header.len, max);
        }
        if matches!(self.handlers.target(header.op), Some(Target::Unary(_))) {
            // Go drops the whole connection; the header names the call, so answer it instead
            // (with its code, for a peer that takes codes).
            let text = format!("request of {} bytes exceeds the limit of {max} bytes", header.len);
            let ext = match self.extensions() {
                0 => None,
                bits => Some((None, bits)),
            };
            let status = Status::resource_exhausted(text);
            send_reply(conn, header.id, header.op, Err(status), ext).await;
        }
    }

    /// Tells a client that took the drain notice; the calls it sent before it knew are served
    /// until its DRAINED. With the write queue full, it is not told: its calls are refused, as
    /// a client without the extension's are.
    fn draining(&self, conn: &Arc<Connection>) {
        if self.extensions() & ext::EXT_DRAIN != 0 && conn.try_send(ext::drain(ext::DRAIN)).is_ok() {
            self.drain.sent();
        }
    }

    fn closed(&self, err: &Error) {
        self.streams.close_all(err);
    }
}

/// What the server's reader leaves of a packet to await (see [`Dispatch::packet_now`]).
pub(crate) enum Later {
    /// The packet, not started: anything but a unary call that could start at once.
    Packet(Packet),
    /// A unary call started on the reader.
    Started(Started),
}

/// What is left of a unary call started on the reader.
pub(crate) enum Started {
    /// Its handler, in the slot, is still pending.
    Pending(UnaryCall),
    /// Its reply waits for room in the writer's queue.
    Queued(QueuedReply),
}

/// A unary call: what its handler's continuation and its reply need.
pub(crate) struct UnaryCall {
    id: u16,
    op: u16,
    span: tracing::Span,
    /// The call's extensions (`None`: plain fRPC).
    ext: Option<CallExt>,
    /// `Limited(n)`: the server-wide permit, held while the handler runs.
    permit: Option<OwnedSemaphorePermit>,
}

/// A unary call's side of its connection's extensions.
pub(crate) struct CallExt {
    /// The extensions the connection negotiated.
    bits: u32,
    /// The state its extension header made; `None` for a call without one, whose state is
    /// made in the connection's registry only if someone asks (most calls never do).
    state: Option<Arc<CallState>>,
}

/// The state a call's extension header makes, read from the front of `content`, and the
/// content behind the header (`None`: no header, or an empty one).
fn call_state(conn: &Connection, content: Bytes) -> Result<(Option<Arc<CallState>>, Bytes), Status> {
    if !ext::has_prefix(&content) {
        return Ok((None, content));
    }
    match ext::split(&content, conn.max_metadata_size()) {
        Ok((header, content)) if header.is_empty() => Ok((None, content)),
        Ok((header, content)) => Ok((Some(Arc::new(CallState::new(header))), content)),
        Err(err) => Err(err.status("bad request")),
    }
}

/// A reply the writer could not take at once.
pub(crate) struct QueuedReply {
    packet: Outgoing,
    /// Whether the connection closes once it is queued (a closing status).
    close: bool,
}

impl QueuedReply {
    /// Waits for room in the writer's queue, then closes the connection if the reply said so.
    async fn send(self, conn: &Connection) {
        let _ = conn.queue(self.packet).await;
        if self.close {
            close_after_reply(conn);
        }
    }
}

/// Runs `f` in `span`, entered only when a subscriber takes it.
fn in_span<T>(span: &tracing::Span, f: impl FnOnce() -> T) -> T {
    match span.is_disabled() {
        true => f(),
        false => span.in_scope(f),
    }
}

/// Polls a handler once, turning a panic into an error status. `None`: it is still pending.
/// The waker is a no-op: a pending handler is spawned at once, and the task's first poll checks
/// again whatever it waits for and registers the task's own waker, so no wake-up is lost and
/// the reader is never woken for a call it handed off.
fn poll_once(call: &mut UnarySlot) -> Option<Result<Encoded, Status>> {
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    match std::panic::catch_unwind(AssertUnwindSafe(|| std::pin::Pin::new(&mut *call).poll(&mut cx))) {
        Ok(Poll::Ready(result)) => Some(result),
        Ok(Poll::Pending) => None,
        Err(panic) => Some(Err(Status::from_panic(panic))),
    }
}

/// Runs a pending handler until it finishes or its connection closes (`None`: the handler is
/// dropped, as a CANCEL drops it, since no reply can reach the client any more). Polled
/// handler first: a result that is there wins.
async fn until_closed<T>(conn: &Connection, handler: impl Future<Output = T>) -> Option<T> {
    tokio::select! {
        biased;
        result = handler => Some(result),
        _ = conn.closed() => None,
    }
}

/// Runs a call, turning a panic into an error status.
async fn catch(call: impl Future<Output = Result<Encoded, Status>>) -> Result<Encoded, Status> {
    AssertUnwindSafe(call)
        .catch_unwind()
        .await
        .unwrap_or_else(|panic| Err(Status::from_panic(panic)))
}

/// Runs a call CANCEL can find (registered under `key` with `state`) until it finishes, the
/// client cancels it or its deadline passes; then forgets it and answers it (a cancelled call
/// gets nothing). What `call` returns beside its reply (a place) is held until the reply is
/// queued.
async fn answer_registered<H>(
    conn: &Connection,
    registry: &Registry,
    key: u32,
    state: &Arc<CallState>,
    bits: u32,
    call: impl Future<Output = Result<(Encoded, H), Status>>,
) {
    let result = until_closed(conn, guarded(call, state)).await.flatten();
    registry.finish(key, Some(state));
    let (op, id) = ((key >> 16) as u16, key as u16);
    let Some(result) = result else {
        // Cancelled (or its connection closed): a client that takes answers to its CANCELs
        // (bit 10) holds the call's id until this one reply comes.
        if bits & ext::EXT_CANCEL_ANSWER != 0 && state.is_cancelled() {
            let answer = Err(Status::cancelled("cancelled by the client"));
            send_reply(conn, id, op, answer, Some((None, bits))).await;
        }
        return;
    };
    let (result, _held) = match result {
        Ok((reply, held)) => (Ok(reply), Some(held)),
        Err(status) => (Err(status), None),
    };
    send_reply(conn, id, op, result, Some((state.take_response(), bits))).await;
}

/// Runs a call of a connection with extensions until it finishes (`Some`), the client cancels
/// it (`None`: the handler is dropped) or its deadline passes (the handler is dropped, its
/// token fired, and the result is a `DeadlineExceeded` status).
async fn guarded<T>(
    call: impl Future<Output = Result<T, Status>>,
    state: &CallState,
) -> Option<Result<T, Status>> {
    let deadline = async {
        match state.deadline {
            Some(deadline) => tokio::time::sleep_until(deadline).await,
            None => std::future::pending().await,
        }
    };
    let call = AssertUnwindSafe(call).catch_unwind();
    tokio::select! {
        biased;
        _ = state.cancelled() => None,
        result = call => Some(result.unwrap_or_else(|panic| Err(Status::from_panic(panic)))),
        _ = deadline => {
            state.cancel();
            Some(Err(Status::deadline_exceeded("deadline exceeded")))
        }
    }
}

/// Queues a call's reply: the response, or the error (closing the connection after it when the
/// status says so). With extensions (`ext`: the response metadata the handler set and the
/// connection's extensions), an extension header in front carries the status code and the
/// response metadata.
async fn send_reply(
    conn: &Connection,
    id: u16,
    op: u16,
    result: Result<Encoded, Status>,
    ext: Option<(Option<Metadata>, u32)>,
) {
    if let Some(queued) = place_reply(conn, id, op, result, ext) {
        queued.send(conn).await;
    }
}

/// [`send_reply`] as far as it goes without waiting: written, or corked for the reader, or
/// (returned) left to wait for room in the writer's queue.
fn place_reply(
    conn: &Connection,
    id: u16,
    op: u16,
    result: Result<Encoded, Status>,
    ext: Option<(Option<Metadata>, u32)>,
) -> Option<QueuedReply> {
    let (content, close, code, error) = match result {
        Ok(content) => (content, false, Code::Ok, None),
        Err(status) => {
            call_failed(&status);
            (
                Encoded::from(polyglot::error_to_bytes(status.message())),
                status.closes_connection(),
                status.error_code(),
                Some(status),
            )
        }
    };
    let bits = ext.as_ref().map_or(0, |(_, bits)| *bits);
    let content = match ext {
        None => content,
        Some((response, bits)) => {
            let header = ext::Header {
                timeout: None,
                open: None,
                metadata: response.filter(|_| bits & ext::EXT_METADATA != 0),
                code: Some(code)
                    .filter(|code| bits & ext::EXT_STATUS != 0 && !matches!(code, Code::Ok | Code::Unknown)),
            };
            match header.is_empty() {
                true => content,
                false => header.encode_parts(content),
            }
        }
    };
    let content = match conn.check_len(content.len()) {
        Ok(()) => content,
        // Go closes the whole connection here; failing just this call is enough: with its
        // own error cut to fit, or RESOURCE_EXHAUSTED for a response.
        Err(err) => {
            let (text, code) = match &error {
                Some(status) => (status.message().to_owned(), code),
                None => (format!("response too large: {err}"), Code::ResourceExhausted),
            };
            match fitted_error(&text, code, bits, conn.max_content_length() as usize) {
                Some(content) => content,
                // Not even an error without a text fits (a limit of a few bytes): closed,
                // since the peer would wait for the reply for ever.
                None => {
                    conn.close(CloseReason::Local("no reply fits max_content_length".into()));
                    return None;
                }
            }
        }
    };
    if let Ok(Some(packet)) = conn.send_now(Outgoing::new(id, op, content)) {
        return Some(QueuedReply { packet, close });
    }
    if close {
        close_after_reply(conn);
    }
    None
}

/// A unary call answered with an error, at DEBUG in the call's span (its service and method),
/// as a failed stream is. Out of line: the reply's path is every call's.
#[cold]
#[inline(never)]
fn call_failed(status: &Status) {
    tracing::debug!(code = %status.code(), error = status.message(), "call failed");
}

/// An error reply carrying `text` (cut short as far as needed) and, for a peer that takes
/// codes, `code`, within `max` bytes; `None` if not even an empty text fits.
fn fitted_error(text: &str, code: Code, bits: u32, max: usize) -> Option<Encoded> {
    let header = ext::Header {
        code: Some(code).filter(|_| bits & ext::EXT_STATUS != 0 && code != Code::Unknown),
        ..ext::Header::default()
    };
    let error = |text: &str| {
        let content = Encoded::from(polyglot::error_to_bytes(text));
        match header.is_empty() {
            true => content,
            false => header.encode_parts(content),
        }
    };
    let mut end = text.len();
    loop {
        let content = error(&text[..end]);
        let Some(over) = content.len().checked_sub(max).filter(|&over| over > 0) else {
            return Some(content);
        };
        if end == 0 {
            return None;
        }
        end = end.saturating_sub(over);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
    }
}

/// Closes the connection after a reply whose status says so.
fn close_after_reply(conn: &Connection) {
    conn.close(CloseReason::Local("handler returned a closing status".into()));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error reply is cut to the limit, at a character boundary, its code kept; none fits a
    /// limit below an error without text.
    #[test]
    fn error_replies_are_cut_to_fit() {
        let text = format!("response too large: {}", "é".repeat(40));
        for bits in [0, ext::EXT_STATUS] {
            let full = fitted_error(&text, Code::ResourceExhausted, bits, usize::MAX).unwrap();
            for max in [full.len(), 40, 21, 12] {
                let cut = fitted_error(&text, Code::ResourceExhausted, bits, max).unwrap();
                assert!(
                    cut.len() <= max && cut.len() + 2 >= max,
                    "{} for {max}",
                    cut.len()
                );
            }
            let bare = fitted_error("", Code::ResourceExhausted, bits, usize::MAX).unwrap();
            assert!(fitted_error(&text, Code::ResourceExhausted, bits, bare.len()).is_some());
            assert!(fitted_error(&text, Code::ResourceExhausted, bits, bare.len() - 1).is_none());
        }
    }
}
