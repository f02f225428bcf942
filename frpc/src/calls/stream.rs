//! Streams (spec §2.8, §3.5): the per-connection stream table, the inbound [`Streaming`] and the
//! outbound [`StreamSender`], and the client's call handles. Calls floor: the table is owned by
//! the client's and the server's dispatchers, and handles send through the transport.
//!
//! Every message is one `STREAM` packet (op 2, id = stream id), in polyglot or, on a stream
//! opened for it between frpc peers, in protobuf (`calls::codec`). A side ends its half with the
//! Error `EOF`; a failing side sends its error and then `EOF`. Go never sends a Frisbee stream
//! close, and neither do we in normal operation.
//!
//! **Flow.** Each inbound stream buffers up to `stream_buffer` messages. When a consumer falls
//! that far behind, its stream fails with [`Error::StreamOverflow`] (locally, and the peer gets
//! an error and `EOF`) instead of stalling the connection: unary calls and other streams on the
//! same connection keep flowing.
//!
//! **Late packets.** A stream is forgotten as soon as this side is done with it (its handles
//! dropped, its consumer gone): a handler may reply before reading its requests to the end, and
//! the peer keeps sending until it learns. What arrives afterwards for an id nobody here knows
//! and is not a stream-open message (`09 <method>`: no message, error or `EOF` starts with that
//! byte) is dropped, on both sides and for every streaming kind, as Go does; an empty close is
//! ignored. Nothing is remembered about finished streams, so memory stays bounded by the open
//! ones. A table entry is only removed by the handles of the stream that made it, so an id
//! reused by a newer stream is never forgotten by an older stream's handles.
//!
//! **Lifetime.** A client stream's handles hold the client's keep-alive: the connection stays
//! open while any of them lives, even once every `Client` clone is gone. With the client's
//! `stream_idle_timeout`, each message a client stream waits for (received, or room to send)
//! fails with [`Error::Timeout`] after that long, which ends the stream.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use frpc_wire::polyglot::{self, EOF_MESSAGE, Envelope, Message, encode};
use frpc_wire::{Packet, op};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{codec, ext};
use crate::status::{Code, Error, Status};
use crate::transport::connection::Connection;

/// Why an inbound stream ended without an `EOF`.
#[derive(Debug, Clone)]
enum EndReason {
    PeerClosed,
    Overflow,
    TooLarge { len: u32, max: u32 },
    ConnectionClosed(Option<String>),
}

#[derive(Debug)]
struct Route {
    tx: mpsc::Sender<Bytes>,
    end: Arc<OnceLock<EndReason>>,
    /// Fired by the peer's CANCEL (server streams on connections with extensions).
    cancel: Option<CancellationToken>,
}

#[derive(Debug, Default)]
struct Table {
    routes: HashMap<u16, Route>,
    next_id: u16,
    closed: Option<Option<String>>,
}

/// The streams open on one connection, keyed by stream id (one namespace for both peers).
#[derive(Debug)]
pub(crate) struct StreamTable {
    table: Mutex<Table>,
    max_streams: usize,
    buffer: usize,
    /// Open streams across every connection sharing it (a server's, say).
    gauge: Arc<AtomicUsize>,
}

/// The receiving end of one registered stream.
#[derive(Debug)]
pub(crate) struct Inbound {
    rx: mpsc::Receiver<Bytes>,
    end: Arc<OnceLock<EndReason>>,
}

impl StreamTable {
    pub(crate) fn new(max_streams: usize, buffer: usize, gauge: Arc<AtomicUsize>) -> StreamTable {
        StreamTable {
            table: Mutex::new(Table::default()),
            max_streams,
            buffer: buffer.max(1),
            gauge,
        }
    }

    fn forget(&self, table: &mut Table, id: u16) {
        if table.routes.remove(&id).is_some() {
            self.gauge.fetch_sub(1, Ordering::Relaxed);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Number of open streams.
    pub(crate) fn len(&self) -> usize {
        self.lock().routes.len()
    }

    /// Registers a stream this side opens, with an id no open stream uses (first id 1).
    pub(crate) fn open_local(&self) -> Result<(u16, Inbound), Error> {
        let mut table = self.lock();
        self.check_open(&table)?;
        let mut id = table.next_id;
        loop {
            id = id.wrapping_add(1);
            if !table.routes.contains_key(&id) {
                break;
            }
        }
        table.next_id = id;
        Ok((id, self.insert(&mut table, id, None)))
    }

    /// Registers a stream the peer opened; `cancel` fires when the peer cancels it.
    pub(crate) fn accept(&self, id: u16, cancel: Option<CancellationToken>) -> Result<Inbound, Error> {
        let mut table = self.lock();
        self.check_open(&table)?;
        Ok(self.insert(&mut table, id, cancel))
    }

    /// The peer cancelled stream `id`: fires its token (a stream nobody here knows, or one
    /// without a token, is left alone).
    pub(crate) fn cancel(&self, id: u16) {
        let table = self.lock();
        if let Some(token) = table.routes.get(&id).and_then(|route| route.cancel.as_ref()) {
            token.cancel();
        }
    }

    fn check_open(&self, table: &Table) -> Result<(), Error> {
        if let Some(reason) = &table.closed {
            return Err(Error::ConnectionClosed {
                reason: reason.clone(),
            });
        }
        if table.routes.len() >= self.max_streams {
            tracing::warn!(limit = self.max_streams, "refusing a stream over the limit");
            return Err(Error::closed(format!(
                "too many open streams (limit {})",
                self.max_streams
            )));
        }
        Ok(())
    }

    fn insert(&self, table: &mut Table, id: u16, cancel: Option<CancellationToken>) -> Inbound {
        let (tx, rx) = mpsc::channel(self.buffer);
        let end = Arc::new(OnceLock::new());
        let route = Route {
            tx,
            end: end.clone(),
            cancel,
        };
        if table.routes.insert(id, route).is_none() {
            self.gauge.fetch_add(1, Ordering::Relaxed);
        }
        Inbound { rx, end }
    }

    /// Forgets a stream when its handles are gone, unless a newer stream has taken its id.
    fn remove(&self, id: u16, end: &Arc<OnceLock<EndReason>>) {
        let mut table = self.lock();
        if table
            .routes
            .get(&id)
            .is_some_and(|route| Arc::ptr_eq(&route.end, end))
        {
            self.forget(&mut table, id);
        }
    }

    /// Delivers a `STREAM` packet. Returns the content back when it opens a stream nobody here
    /// knows, for the dispatcher to handle.
    pub(crate) fn route(&self, conn: &Connection, id: u16, content: Bytes) -> Option<Bytes> {
        let mut table = self.lock();
        let Some(route) = table.routes.get(&id) else {
            // A close for an unknown stream is ignored.
            return (!content.is_empty()).then_some(content);
        };
        if content.is_empty() {
            let _ = route.end.set(EndReason::PeerClosed);
            self.forget(&mut table, id);
            return None;
        }
        match route.tx.try_send(content) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => {
                tracing::warn!(stream = id, "stream consumer too slow; failing the stream");
                let _ = route.end.set(EndReason::Overflow);
                self.forget(&mut table, id);
                drop(table);
                send_detached(
                    conn,
                    id,
                    Status::new(format!("stream {id} overflowed the peer's buffer")),
                );
            }
            // The local handle is gone: drop late messages.
            Err(mpsc::error::TrySendError::Closed(_)) => {
                self.forget(&mut table, id);
            }
        }
        None
    }

    /// Fails stream `id` because the peer sent it a message of `len` bytes, over the limit `max`
    /// (the transport skipped its content): the local reader gets [`Error::TooLarge`], the peer
    /// an error and `EOF`. A stream nobody here knows is left alone.
    pub(crate) fn reject_oversize(&self, conn: &Connection, id: u16, len: u32, max: u32) {
        let mut table = self.lock();
        let Some(route) = table.routes.get(&id) else {
            return;
        };
        let _ = route.end.set(EndReason::TooLarge { len, max });
        self.forget(&mut table, id);
        drop(table);
        let status = Status::new(format!(
            "stream message of {len} bytes exceeds the limit of {max} bytes"
        ));
        send_detached(conn, id, status);
    }

    /// Ends every stream because the connection closed (the dispatchers' close handler).
    pub(crate) fn close_all(&self, err: &Error) {
        let reason = match err {
            Error::ConnectionClosed { reason } => reason.clone(),
            other => Some(other.to_string()),
        };
        let mut table = self.lock();
        self.gauge.fetch_sub(table.routes.len(), Ordering::Relaxed);
        for (_, route) in table.routes.drain() {
            let _ = route.end.set(EndReason::ConnectionClosed(reason.clone()));
        }
        table.closed = Some(reason);
    }
}

/// Sends an error and `EOF` on a stream without waiting (from places that cannot await).
fn send_detached(conn: &Connection, id: u16, status: Status) {
    let packets = [
        Packet::new(id, op::STREAM, polyglot::error_to_bytes(status.message())),
        Packet::new(id, op::STREAM, Bytes::from_static(EOF_MESSAGE)),
    ];
    for packet in packets {
        // Best effort: if the writer's queue is full the peer is not reading anyway.
        let _ = conn.try_send(packet);
    }
}

/// The content of a stream-open packet: polyglot u16 of the method number (`09 <varint>`),
/// followed by the protobuf marker when the client asks for the stream's messages in protobuf
/// (the protobuf extension; a Go server, or an frpc server without it, never sees the marker).
/// The marker goes behind the method so that the content still starts with `09`: a late
/// protobuf message of a finished stream (`FD …`) is never taken for an open.
pub(crate) fn open_message(method: u16, protobuf: bool) -> Bytes {
    let mut buf = BytesMut::with_capacity(encode::u16_len(method) + usize::from(protobuf));
    encode::put_u16(&mut buf, method);
    if protobuf {
        buf.extend_from_slice(&[codec::MARKER]);
    }
    buf.freeze()
}

/// What a client's stream handles carry: the keep-alive of the client's connection (whose last
/// drop closes it) and the per-message idle timeout. Servers' streams have neither.
#[derive(Debug, Clone, Default)]
pub(crate) struct ClientSide {
    #[allow(dead_code, reason = "held for its drop, never read")]
    pub(crate) keep_alive: Option<Arc<dyn Any + Send + Sync>>,
    pub(crate) idle: Option<Duration>,
}

/// The extensions a stream uses: the bits negotiated when it opened and, on the server, the
/// token the client's CANCEL fires.
#[derive(Debug, Clone, Default)]
pub(crate) struct StreamExt {
    pub(crate) bits: u32,
    pub(crate) cancel: Option<CancellationToken>,
}

/// Removes the stream from the table when the last handle to it goes.
#[derive(Debug)]
struct StreamGuard {
    conn: Arc<Connection>,
    table: Arc<StreamTable>,
    id: u16,
    /// Tells this stream's table entry from a newer one under the same id.
    end: Arc<OnceLock<EndReason>>,
    /// Dropped after the entry is removed (fields drop after `Drop::drop`).
    client: ClientSide,
    ext: StreamExt,
    /// Set once the peer ended the stream (EOF or error): nothing left to cancel.
    finished: AtomicBool,
}

impl StreamGuard {
    fn new(
        conn: &Arc<Connection>,
        table: &Arc<StreamTable>,
        id: u16,
        inbound: &Inbound,
        client: ClientSide,
        ext: StreamExt,
    ) -> StreamGuard {
        StreamGuard {
            conn: conn.clone(),
            table: table.clone(),
            id,
            end: inbound.end.clone(),
            client,
            ext,
            finished: AtomicBool::new(false),
        }
    }

    fn is_cancelled(&self) -> bool {
        self.ext.cancel.as_ref().is_some_and(|token| token.is_cancelled())
    }
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        // A client stream dropped before the server ended it: with the cancellation extension,
        // tell the server (its handler is dropped). Sent while the table still holds the id.
        if self.ext.bits & ext::EXT_CANCEL != 0
            && self.client.keep_alive.is_some()
            && !self.finished.load(Ordering::Relaxed)
            && !self.conn.is_closed()
        {
            let _ = self.conn.try_send(ext::cancel(op::STREAM, self.id));
        }
        self.table.remove(self.id, &self.end);
    }
}

/// Inbound messages of a stream: the server's request stream, or the client's response stream.
///
/// Read with [`Streaming::message`] or as a [`futures_core::Stream`]. The peer's `EOF` ends it
/// (`Ok(None)` / `None`); a peer error is returned as [`Error::Status`] and ends it too.
///
/// Servers get one as the `inbound` of client-streaming and bidi methods; clients get one from
/// server-streaming calls:
///
/// ```
/// # #[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
/// # pub struct Count { pub n: u32 }
/// #[frpc::service(package = "demo")]
/// pub trait Numbers {
///     /// Server streaming: counts from 0 up to the request's number.
///     async fn count(
///         &self,
///         ctx: &frpc::Context,
///         request: Count,
///         outbound: frpc::StreamSender<Count>,
///     ) -> Result<(), frpc::Status>;
///     /// Client streaming: sums what the client sends.
///     async fn sum(
///         &self,
///         ctx: &frpc::Context,
///         inbound: frpc::Streaming<Count>,
///     ) -> Result<Count, frpc::Status>;
/// }
///
/// struct Svc;
///
/// impl Numbers for Svc {
///     async fn count(
///         &self,
///         _ctx: &frpc::Context,
///         request: Count,
///         outbound: frpc::StreamSender<Count>,
///     ) -> Result<(), frpc::Status> {
///         for n in 0..request.n {
///             outbound.send(Count { n }).await?;
///         }
///         Ok(()) // the stream ends (EOF); an Err would reach the client as its last item
///     }
///
///     async fn sum(
///         &self,
///         _ctx: &frpc::Context,
///         mut inbound: frpc::Streaming<Count>,
///     ) -> Result<Count, frpc::Status> {
///         let mut total = 0;
///         while let Some(item) = inbound.message().await? {
///             total += item.n;
///         }
///         Ok(Count { n: total })
///     }
/// }
///
/// #[tokio::main]
/// async fn main() -> Result<(), Box<dyn std::error::Error>> {
///     let server = frpc::Server::builder()
///         .add_service(NumbersServer::new(Svc))
///         .bind("127.0.0.1:0")
///         .await?;
///     let addr = server.local_addr();
///     tokio::spawn(server.serve());
///     let client = NumbersClient::connect(addr).await?;
///
///     // Server streaming: the client reads a `Streaming<Count>`.
///     let mut counts = client.count(Count { n: 3 }).await?;
///     let mut got = Vec::new();
///     while let Some(item) = counts.message().await? {
///         got.push(item.n);
///     }
///     assert_eq!(got, [0, 1, 2]);
///
///     // Client streaming: the server reads a `Streaming<Count>`.
///     let mut upload = client.sum().await?;
///     for n in [1, 2, 3] {
///         upload.send(Count { n }).await?;
///     }
///     assert_eq!(upload.close_and_recv().await?.n, 6);
///     Ok(())
/// }
/// ```
pub struct Streaming<T> {
    inbound: Inbound,
    guard: Arc<StreamGuard>,
    done: bool,
    /// The idle timer (client streams with an idle timeout only), made on the first wait and
    /// re-armed at the start of each later one.
    idle: Option<Pin<Box<tokio::time::Sleep>>>,
    waiting: bool,
    _message: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for Streaming<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Streaming")
            .field("id", &self.guard.id)
            .field("done", &self.done)
            .finish()
    }
}

impl<T: Message> Streaming<T> {
    fn new(inbound: Inbound, guard: Arc<StreamGuard>) -> Streaming<T> {
        Streaming {
            inbound,
            guard,
            done: false,
            idle: None,
            waiting: false,
            _message: PhantomData,
        }
    }

    /// The stream id.
    pub fn id(&self) -> u16 {
        self.guard.id
    }

    /// The next message; `Ok(None)` once the peer has ended the stream.
    pub async fn message(&mut self) -> Result<Option<T>, Error> {
        std::future::poll_fn(|cx| self.poll_message(cx)).await
    }

    fn poll_message(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<Option<T>, Error>> {
        if self.done {
            return Poll::Ready(Ok(None));
        }
        let content = match self.inbound.rx.poll_recv(cx) {
            Poll::Ready(Some(content)) => content,
            Poll::Ready(None) => {
                self.finish();
                return Poll::Ready(Err(self.end_error()));
            }
            Poll::Pending => return self.poll_idle(cx),
        };
        self.waiting = false;
        // An error with a status code, from an frpc server that accepted our offer (perhaps
        // after this stream opened). No fRPC message starts with the header byte.
        let (code, content) = match ext::has_prefix(&content) {
            false => (None, content),
            true => match ext::split(&content) {
                Ok((header, body)) => (header.code, body),
                Err(err) => {
                    self.finish();
                    let status = Status::internal(format!("malformed stream message: {err}"));
                    return Poll::Ready(Err(Error::Status(status)));
                }
            },
        };
        Poll::Ready(match codec::decode::<T>(&content) {
            Ok(Envelope::Message(message)) => Ok(Some(message)),
            Ok(Envelope::Error(text)) => {
                // Anything after the first EOF (Go may send two) is ignored.
                self.finish();
                if text == "EOF" {
                    Ok(None)
                } else {
                    let code = code.unwrap_or(Code::Unknown);
                    Err(Error::Status(Status::with_code(code, text)))
                }
            }
            Err(err) => Err(Error::Decode(err)),
        })
    }

    /// The stream is over on the peer's side.
    fn finish(&mut self) {
        self.done = true;
        self.guard.finished.store(true, Ordering::Relaxed);
    }

    /// Pending, or the idle timeout once no message came for that long since this wait began.
    fn poll_idle(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<Option<T>, Error>> {
        let Some(limit) = self.guard.client.idle else {
            return Poll::Pending;
        };
        let timer = self
            .idle
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        if !std::mem::replace(&mut self.waiting, true) {
            // A new wait: the limit counts from now (the config caps it, so no overflow).
            timer.as_mut().reset(tokio::time::Instant::now() + limit);
        }
        if timer.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        self.done = true;
        Poll::Ready(Err(Error::Timeout(limit)))
    }

    fn end_error(&self) -> Error {
        match self.inbound.end.get() {
            Some(EndReason::Overflow) => Error::StreamOverflow(self.guard.id),
            Some(EndReason::TooLarge { len, max }) => Error::TooLarge {
                len: *len as usize,
                max: *max,
            },
            Some(EndReason::ConnectionClosed(reason)) => Error::ConnectionClosed {
                reason: reason.clone(),
            },
            Some(EndReason::PeerClosed) | None => Error::closed("the peer closed the stream without EOF"),
        }
    }
}

impl<T: Message> futures_core::Stream for Streaming<T> {
    type Item = Result<T, Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        this.poll_message(cx).map(Result::transpose)
    }
}

impl<T> Unpin for Streaming<T> {}

/// Sends messages on a stream: the server's response stream, or the client's request stream.
///
/// Server-streaming and bidi methods get one as their `outbound`; each `send` waits while the
/// connection's write queue is full, and fails once the peer has gone. Cheap to clone (to send
/// from several tasks):
///
/// ```
/// # #[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
/// # pub struct Count { pub n: u32 }
/// #[frpc::service(package = "demo")]
/// pub trait Numbers {
///     /// Server streaming: counts from 0 up to the request's number.
///     async fn count(
///         &self,
///         ctx: &frpc::Context,
///         request: Count,
///         outbound: frpc::StreamSender<Count>,
///     ) -> Result<(), frpc::Status>;
///     /// Client streaming: sums what the client sends.
///     async fn sum(
///         &self,
///         ctx: &frpc::Context,
///         inbound: frpc::Streaming<Count>,
///     ) -> Result<Count, frpc::Status>;
/// }
///
/// struct Svc;
///
/// impl Numbers for Svc {
///     async fn count(
///         &self,
///         _ctx: &frpc::Context,
///         request: Count,
///         outbound: frpc::StreamSender<Count>,
///     ) -> Result<(), frpc::Status> {
///         for n in 0..request.n {
///             outbound.send(Count { n }).await?;
///         }
///         Ok(()) // the stream ends (EOF); an Err would reach the client as its last item
///     }
///
///     async fn sum(
///         &self,
///         _ctx: &frpc::Context,
///         mut inbound: frpc::Streaming<Count>,
///     ) -> Result<Count, frpc::Status> {
///         let mut total = 0;
///         while let Some(item) = inbound.message().await? {
///             total += item.n;
///         }
///         Ok(Count { n: total })
///     }
/// }
///
/// #[tokio::main]
/// async fn main() -> Result<(), Box<dyn std::error::Error>> {
///     let server = frpc::Server::builder()
///         .add_service(NumbersServer::new(Svc))
///         .bind("127.0.0.1:0")
///         .await?;
///     let addr = server.local_addr();
///     tokio::spawn(server.serve());
///     let client = NumbersClient::connect(addr).await?;
///
///     let mut counts = client.count(Count { n: 5 }).await?;
///     let mut got = Vec::new();
///     while let Some(item) = counts.message().await? {
///         got.push(item.n);
///     }
///     assert_eq!(got, [0, 1, 2, 3, 4]);
///     Ok(())
/// }
/// ```
pub struct StreamSender<T> {
    guard: Arc<StreamGuard>,
    _message: PhantomData<fn(T)>,
}

impl<T> fmt::Debug for StreamSender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamSender")
            .field("id", &self.guard.id)
            .finish()
    }
}

impl<T> Clone for StreamSender<T> {
    fn clone(&self) -> Self {
        StreamSender {
            guard: self.guard.clone(),
            _message: PhantomData,
        }
    }
}

impl<T: Message> StreamSender<T> {
    fn new(guard: Arc<StreamGuard>) -> StreamSender<T> {
        StreamSender {
            guard,
            _message: PhantomData,
        }
    }

    /// The stream id.
    pub fn id(&self) -> u16 {
        self.guard.id
    }

    /// Sends one message, waiting while the connection's write queue is full. Fails with
    /// [`Error::TooLarge`] for a message over the content limit (the stream stays usable).
    pub async fn send(&self, message: T) -> Result<(), Error> {
        let content = self.encode(&message);
        drop(message);
        self.send_raw(content).await
    }

    /// Sends one message by reference.
    pub async fn send_ref(&self, message: &T) -> Result<(), Error> {
        self.send_raw(self.encode(message)).await
    }

    /// Protobuf when the stream is (the client asked for it in the open message, on a connection
    /// that negotiated it), else polyglot.
    fn encode(&self, message: &T) -> Bytes {
        codec::encode(message, self.guard.ext.bits & ext::EXT_PROTOBUF != 0)
    }

    async fn send_raw(&self, content: Bytes) -> Result<(), Error> {
        if self.guard.is_cancelled() {
            return Err(Error::Cancelled);
        }
        let send = self
            .guard
            .conn
            .send(Packet::new(self.guard.id, op::STREAM, content));
        match self.guard.client.idle {
            None => send.await,
            // Waiting for room in the write queue counts as idle too.
            Some(limit) => tokio::time::timeout(limit, send)
                .await
                .unwrap_or(Err(Error::Timeout(limit))),
        }
    }

    async fn send_eof(&self) -> Result<(), Error> {
        self.send_raw(Bytes::from_static(EOF_MESSAGE)).await
    }

    async fn send_error(&self, status: &Status) -> Result<(), Error> {
        let content = polyglot::error_to_bytes(status.message());
        let content = match self.guard.ext.bits & ext::EXT_STATUS != 0 && status.code() != Code::Unknown {
            false => content,
            true => ext::Header {
                code: Some(status.code()),
                ..ext::Header::default()
            }
            .encode(&content),
        };
        self.send_raw(content).await
    }
}

/// The server's view of a stream a client opened, handed to the generated dispatcher.
#[derive(Debug)]
pub struct ServerStream {
    inbound: Inbound,
    guard: Arc<StreamGuard>,
}

impl ServerStream {
    pub(crate) fn accept(
        conn: &Arc<Connection>,
        table: &Arc<StreamTable>,
        id: u16,
        ext: StreamExt,
    ) -> Result<ServerStream, Error> {
        let inbound = table.accept(id, ext.cancel.clone())?;
        let guard = Arc::new(StreamGuard::new(
            conn,
            table,
            id,
            &inbound,
            ClientSide::default(),
            ext,
        ));
        Ok(ServerStream { inbound, guard })
    }

    pub(crate) fn split<Req: Message, Resp: Message>(self) -> (Streaming<Req>, StreamSender<Resp>) {
        (
            Streaming::new(self.inbound, self.guard.clone()),
            StreamSender::new(self.guard),
        )
    }

    /// Sends the handler's outcome: its error (if any) and then `EOF`.
    pub(crate) async fn finish<Resp: Message>(sender: &StreamSender<Resp>, result: Result<(), Status>) {
        if let Err(status) = &result {
            let _ = sender.send_error(status).await;
        }
        let _ = sender.send_eof().await;
    }

    /// Refuses a stream before any handler ran (unknown method, bad request).
    pub(crate) async fn refuse(conn: &Connection, id: u16, status: Status) {
        let _ = conn
            .send(Packet::new(
                id,
                op::STREAM,
                polyglot::error_to_bytes(status.message()),
            ))
            .await;
        let _ = conn
            .send(Packet::new(id, op::STREAM, Bytes::from_static(EOF_MESSAGE)))
            .await;
    }
}

/// Opens a stream from the client side: registers it, then sends the open message (behind
/// `header`, the extension header, when there is one).
pub(crate) async fn open<Req: Message, Resp: Message>(
    conn: &Arc<Connection>,
    table: &Arc<StreamTable>,
    method: u16,
    client: ClientSide,
    bits: u32,
    header: Option<ext::Header>,
) -> Result<(StreamSender<Req>, Streaming<Resp>), Error> {
    let (id, inbound) = table.open_local()?;
    let ext = StreamExt { bits, cancel: None };
    let guard = Arc::new(StreamGuard::new(conn, table, id, &inbound, client, ext));
    let sender = StreamSender::new(guard.clone());
    let open = open_message(method, bits & ext::EXT_PROTOBUF != 0);
    let open = match header {
        Some(header) => header.encode(&open),
        None => open,
    };
    sender.send_raw(open).await?;
    Ok((sender, Streaming::new(inbound, guard)))
}

/// A client-streaming call: send requests, then [`close_and_recv`](Self::close_and_recv).
pub struct ClientStreamingCall<Req, Resp> {
    sender: StreamSender<Req>,
    inbound: Streaming<Resp>,
    closed: bool,
}

impl<Req, Resp> fmt::Debug for ClientStreamingCall<Req, Resp> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientStreamingCall")
            .field("id", &self.sender.guard.id)
            .finish()
    }
}

impl<Req: Message, Resp: Message> ClientStreamingCall<Req, Resp> {
    pub(crate) fn new(sender: StreamSender<Req>, inbound: Streaming<Resp>) -> Self {
        ClientStreamingCall {
            sender,
            inbound,
            closed: false,
        }
    }

    /// Sends one request.
    pub async fn send(&mut self, request: Req) -> Result<(), Error> {
        self.sender.send(request).await
    }

    /// Ends the request stream and waits for the response.
    pub async fn close_and_recv(mut self) -> Result<Resp, Error> {
        self.closed = true;
        self.sender.send_eof().await?;
        match self.inbound.message().await? {
            Some(response) => {
                // The server is done (its EOF follows): nothing to cancel.
                self.inbound.finish();
                Ok(response)
            }
            None => Err(Error::closed("the server ended the stream without a response")),
        }
    }
}

impl<Req, Resp> Drop for ClientStreamingCall<Req, Resp> {
    fn drop(&mut self) {
        if !self.closed {
            eof_detached(&self.sender.guard);
        }
    }
}

/// A bidirectional call: [`send`](Self::send) and [`message`](Self::message) in any order,
/// [`close_send`](Self::close_send) when done sending.
pub struct BidiCall<Req, Resp> {
    sender: StreamSender<Req>,
    inbound: Streaming<Resp>,
    send_closed: bool,
}

impl<Req, Resp> fmt::Debug for BidiCall<Req, Resp> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BidiCall")
            .field("id", &self.sender.guard.id)
            .finish()
    }
}

impl<Req: Message, Resp: Message> BidiCall<Req, Resp> {
    pub(crate) fn new(sender: StreamSender<Req>, inbound: Streaming<Resp>) -> Self {
        BidiCall {
            sender,
            inbound,
            send_closed: false,
        }
    }

    /// Sends one request.
    pub async fn send(&mut self, request: Req) -> Result<(), Error> {
        self.sender.send(request).await
    }

    /// Ends the request stream (sends `EOF`); responses can still be read.
    pub async fn close_send(&mut self) -> Result<(), Error> {
        if !self.send_closed {
            self.send_closed = true;
            self.sender.send_eof().await?;
        }
        Ok(())
    }

    /// The next response; `Ok(None)` once the server has ended the stream.
    pub async fn message(&mut self) -> Result<Option<Resp>, Error> {
        self.inbound.message().await
    }
}

impl<Req, Resp> Drop for BidiCall<Req, Resp> {
    fn drop(&mut self) {
        if !self.send_closed {
            eof_detached(&self.sender.guard);
        }
    }
}

/// Ends our half of a stream from a `Drop`, so the peer's handler sees the end.
fn eof_detached(guard: &StreamGuard) {
    if !guard.conn.is_closed() {
        let _ = guard
            .conn
            .try_send(Packet::new(guard.id, op::STREAM, Bytes::from_static(EOF_MESSAGE)));
    }
}
