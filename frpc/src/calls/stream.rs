//! Streams (spec §2.8, §3.5): the per-connection stream table, the inbound [`Streaming`] and the
//! outbound [`StreamSender`], and the client's call handles. Calls floor: the table is owned by
//! the client's and the server's dispatchers, and handles send through the transport.
//!
//! Every message is one `STREAM` packet (op 2, id = stream id), in polyglot or, on a stream
//! opened for it between frpc peers, in protobuf (`calls::codec`). A side ends its half with the
//! Error `EOF`; a failing side sends its error and then `EOF`. Go never sends a Frisbee stream
//! close, and neither do we in normal operation.
//!
//! **Flow control** (frpc peers that negotiated it, `docs/extensions.md` §9). Credit in
//! messages, per stream and direction: a sender holds a [`Semaphore`] of credit (one permit per
//! data message; errors and `EOF` take none) that the peer's CREDIT packets refill, so a slow
//! consumer makes its producer's `send` wait, never the connection. The receiver's reader takes
//! one message of the peer's credit per data message (an atomic, under the table lock it holds
//! anyway); the consumer gives credit back every half window it reads. The inbound buffer holds
//! the whole window, so it never overflows; a peer sending past its credit gets the stream failed
//! (RESOURCE_EXHAUSTED). The opener starts with one message of credit and learns the server's
//! window from OPENED. Once the stream ends (the server's error or `EOF` on the client, the
//! stream forgotten, the connection closed) the credit closes and waiting sends go on as
//! without flow control.
//!
//! **Without flow control** (Go peers, extensions off). Each inbound stream buffers up to
//! `stream_buffer` messages. When a consumer falls that far behind, its stream fails with
//! [`Error::StreamOverflow`] (locally, and the peer gets an error and `EOF`) instead of stalling
//! the connection: unary calls and other streams on the same connection keep flowing.
//!
//! **Open acknowledgement** (`docs/extensions.md` §8). The client's open header asks for OPENED;
//! the server sends it once the handler's first poll is over ([`StreamSender::started`]), and the
//! client's call waits for it ([`Streaming::opened`]: an empty mark in the inbound channel, or
//! the stream's first content), or fails with the refusal's status.
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
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use frpc_wire::polyglot::{self, EOF_MESSAGE, Envelope, Message, encode};
use frpc_wire::{DecodeError, Packet, op};
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use super::credit::CreditBack;
use super::{codec, ext};
use crate::status::{Code, Error, Status};
use crate::transport::connection::Connection;

/// Why an inbound stream ended without an `EOF`.
#[derive(Debug, Clone)]
enum EndReason {
    PeerClosed,
    Overflow,
    TooLarge {
        len: u32,
        max: u32,
    },
    ConnectionClosed(Option<String>),
    /// The peer sent more data messages than the credit this side granted (flow control).
    CreditExceeded,
}

/// The most credit a stream's sender may hold: a peer granting more is capped (the semaphore
/// would panic past its own limit, which is lower on 32-bit targets).
const MAX_CREDIT: usize = if (u32::MAX as usize) < Semaphore::MAX_PERMITS {
    u32::MAX as usize
} else {
    Semaphore::MAX_PERMITS
};

/// Room in a flow-controlled stream's inbound buffer beyond its window: the OPENED mark, an
/// error, `EOF` and a second `EOF` (Go's habit), none of which take credit.
const CONTROL_ROOM: usize = 4;

/// Whether a stream content is a control message (an error, `EOF`, or an error behind an
/// extension header) rather than a data message: only data messages take flow-control credit.
/// A polyglot error envelope starts with `06`, an extension header with `FE`; a data message
/// never starts with either (`00`, `08`, or another encoding's marker).
fn is_control(content: &[u8]) -> bool {
    matches!(content.first(), Some(&0x06) | Some(&ext::PREFIX))
}

/// How a stream is set up: flow control and open acknowledgement (all off for plain fRPC).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct StreamSetup {
    /// This side's receive window in messages (0: no flow control).
    pub(crate) recv_window: u32,
    /// The credit this side starts with for sending (`None`: no flow control).
    pub(crate) send_credit: Option<u32>,
    /// The opener waits for the peer's OPENED.
    pub(crate) awaiting_ack: bool,
    /// Errors this side sends on its own (overflow, credit exceeded) carry a status code.
    pub(crate) codes: bool,
}

#[derive(Debug)]
struct Route {
    tx: mpsc::Sender<Bytes>,
    end: Arc<OnceLock<EndReason>>,
    /// Fired by the peer's CANCEL (server streams on connections with extensions).
    cancel: Option<CancellationToken>,
    /// Data messages the peer may still send (flow-controlled streams): the reader takes one
    /// per message, the consumer gives back what it read.
    recv_credit: Option<Arc<AtomicU32>>,
    /// What this side may send (flow-controlled streams). Closed once the stream ends, which
    /// lets waiting senders go on (and fail on a closed connection, or send what the peer
    /// drops, as without flow control).
    send_credit: Option<Arc<Semaphore>>,
    /// Opened by this side: the peer's error or `EOF` means it reads no more.
    local: bool,
    /// Waiting for the peer's OPENED.
    awaiting_ack: bool,
    /// The stream's errors carry a status code (status codes negotiated).
    codes: bool,
}

impl Route {
    /// Ends this side's sending credit: nothing more will come.
    fn close_credit(&self) {
        if let Some(credit) = &self.send_credit {
            credit.close();
        }
    }
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
    /// The receive window of flow-controlled streams, in messages.
    window: u32,
    /// Open streams across every connection sharing it (a server's, say).
    gauge: Arc<AtomicUsize>,
    /// The most `gauge` may reach (a server's `max_open_streams`; no limit on a client).
    max_total: usize,
    /// Credit given back from places that cannot wait, coalesced while the queue is full.
    credit_back: Arc<CreditBack>,
}

/// The receiving end of one registered stream.
#[derive(Debug)]
pub(crate) struct Inbound {
    rx: mpsc::Receiver<Bytes>,
    end: Arc<OnceLock<EndReason>>,
    /// The credit the peer has left, and the window (flow-controlled streams).
    recv: Option<(Arc<AtomicU32>, u32)>,
    send_credit: Option<Arc<Semaphore>>,
    awaiting_ack: bool,
}

impl StreamTable {
    pub(crate) fn new(
        max_streams: usize,
        buffer: usize,
        window: u32,
        gauge: Arc<AtomicUsize>,
        max_total: usize,
    ) -> StreamTable {
        StreamTable {
            table: Mutex::new(Table::default()),
            max_streams,
            buffer: buffer.max(1),
            window: window.max(1),
            gauge,
            max_total,
            credit_back: Arc::default(),
        }
    }

    /// The receive window of flow-controlled streams this side announces.
    pub(crate) fn window(&self) -> u32 {
        self.window
    }

    fn forget(&self, table: &mut Table, id: u16) {
        if let Some(route) = table.routes.remove(&id) {
            route.close_credit();
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
    pub(crate) fn open_local(&self, setup: StreamSetup) -> Result<(u16, Inbound), Error> {
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
        Ok((id, self.insert(&mut table, id, None, setup, true)))
    }

    /// Registers a stream the peer opened; `cancel` fires when the peer cancels it.
    pub(crate) fn accept(
        &self,
        id: u16,
        cancel: Option<CancellationToken>,
        setup: StreamSetup,
    ) -> Result<Inbound, Error> {
        let mut table = self.lock();
        self.check_open(&table)?;
        Ok(self.insert(&mut table, id, cancel, setup, false))
    }

    /// The peer's CREDIT for stream `id`: more messages this side may send. Ignored for a
    /// stream nobody here knows or one without flow control; capped at [`MAX_CREDIT`].
    pub(crate) fn credit(&self, id: u16, messages: u32) {
        let table = self.lock();
        if let Some(credit) = table.routes.get(&id).and_then(|route| route.send_credit.as_ref()) {
            add_credit(credit, messages);
        }
    }

    /// The server's OPENED for stream `id`, with its receive window: the stream's opening
    /// resolves, and with flow control the client's credit becomes that window (of which it
    /// had one message already). A window of 0 means the server does not flow-control the
    /// stream. A second OPENED, or one for a stream not waiting, is ignored.
    pub(crate) fn opened(&self, id: u16, window: u32) {
        let mut table = self.lock();
        let Some(route) = table.routes.get_mut(&id) else {
            return;
        };
        if !std::mem::replace(&mut route.awaiting_ack, false) {
            return;
        }
        match (&route.send_credit, window) {
            (None, _) => {}
            (Some(credit), 0) => {
                // The server takes no credit: send freely, and count nothing of its sends.
                credit.close();
                route.recv_credit = None;
            }
            (Some(credit), window) => add_credit(credit, window - 1),
        }
        // The mark the opener waits for; the buffer keeps room for it.
        let _ = route.tx.try_send(Bytes::new());
    }

    /// The peer cancelled stream `id`: fires its token (a stream nobody here knows, or one
    /// without a token, is left alone).
    pub(crate) fn cancel(&self, id: u16) {
        let table = self.lock();
        let Some(route) = table.routes.get(&id) else {
            return;
        };
        if let Some(token) = &route.cancel {
            token.cancel();
            // Sends waiting for credit (a clone of the sender in a task of its own, say) wake
            // up and fail with `Cancelled`.
            route.close_credit();
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
        if self.gauge.load(Ordering::Relaxed) >= self.max_total {
            tracing::warn!(
                limit = self.max_total,
                "refusing a stream over the server's limit"
            );
            return Err(Error::closed(format!(
                "too many open streams on this server (max_open_streams {})",
                self.max_total
            )));
        }
        Ok(())
    }

    fn insert(
        &self,
        table: &mut Table,
        id: u16,
        cancel: Option<CancellationToken>,
        setup: StreamSetup,
        local: bool,
    ) -> Inbound {
        // A flow-controlled stream's buffer holds its whole window, so it never overflows.
        let capacity = match setup.recv_window {
            0 => self.buffer + usize::from(setup.awaiting_ack),
            window => window as usize + CONTROL_ROOM,
        };
        let (tx, rx) = mpsc::channel(capacity);
        let end = Arc::new(OnceLock::new());
        let recv_credit = (setup.recv_window > 0).then(|| Arc::new(AtomicU32::new(setup.recv_window)));
        let send_credit = setup
            .send_credit
            .map(|credit| Arc::new(Semaphore::new((credit as usize).min(MAX_CREDIT))));
        let route = Route {
            tx,
            end: end.clone(),
            cancel,
            recv_credit: recv_credit.clone(),
            send_credit: send_credit.clone(),
            local,
            awaiting_ack: setup.awaiting_ack,
            codes: setup.codes,
        };
        if let Some(old) = table.routes.insert(id, route) {
            old.close_credit();
        } else {
            self.gauge.fetch_add(1, Ordering::Relaxed);
        }
        Inbound {
            rx,
            end,
            recv: recv_credit.map(|credit| (credit, setup.recv_window)),
            send_credit,
            awaiting_ack: setup.awaiting_ack,
        }
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
    pub(crate) fn route(&self, conn: &Arc<Connection>, id: u16, content: Bytes) -> Option<Bytes> {
        let mut table = self.lock();
        let Some(route) = table.routes.get_mut(&id) else {
            // A close for an unknown stream is ignored.
            return (!content.is_empty()).then_some(content);
        };
        if content.is_empty() {
            let _ = route.end.set(EndReason::PeerClosed);
            self.forget(&mut table, id);
            return None;
        }
        // Anything from the server means it accepted the stream: a later OPENED only adds
        // credit.
        route.awaiting_ack = false;
        if is_control(&content) {
            if route.local {
                // The server is done: it grants nothing more.
                route.close_credit();
            }
        } else if let Some(credit) = &route.recv_credit
            && credit
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| left.checked_sub(1))
                .is_err()
        {
            tracing::warn!(
                stream = id,
                "the peer sent beyond its flow-control credit; failing the stream"
            );
            let codes = route.codes;
            let _ = route.end.set(EndReason::CreditExceeded);
            self.forget(&mut table, id);
            drop(table);
            let status = Status::resource_exhausted(format!(
                "stream {id}: more messages than the flow-control credit granted"
            ));
            send_detached(conn, id, status, codes);
            return None;
        }
        match route.tx.try_send(content) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => {
                let codes = route.codes;
                tracing::warn!(stream = id, "stream consumer too slow; failing the stream");
                let _ = route.end.set(EndReason::Overflow);
                self.forget(&mut table, id);
                drop(table);
                let status = Status::resource_exhausted(format!("stream {id} overflowed the peer's buffer"));
                send_detached(conn, id, status, codes);
            }
            // The local handle is gone: drop late messages.
            Err(mpsc::error::TrySendError::Closed(content)) => match &route.recv_credit {
                // A server handler that dropped its inbound stream may still be sending on it:
                // the stream stays (for its own credit), and the peer gets its message's
                // credit back so its sends do not stall.
                Some(credit) if !is_control(&content) => {
                    credit.fetch_add(1, Ordering::AcqRel);
                    self.credit_back.give(conn, id, 1);
                }
                Some(_) => {}
                None => self.forget(&mut table, id),
            },
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
        let codes = route.codes;
        let _ = route.end.set(EndReason::TooLarge { len, max });
        self.forget(&mut table, id);
        drop(table);
        let status = Status::resource_exhausted(format!(
            "stream message of {len} bytes exceeds the limit of {max} bytes"
        ));
        send_detached(conn, id, status, codes);
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
            route.close_credit();
        }
        table.closed = Some(reason);
    }
}

/// Adds `messages` of credit, capped at [`MAX_CREDIT`] in all.
fn add_credit(credit: &Semaphore, messages: u32) {
    let room = MAX_CREDIT.saturating_sub(credit.available_permits());
    credit.add_permits((messages as usize).min(room));
}

/// The content of a stream error: the polyglot error, behind a STATUS header when the stream
/// has status codes (and the code says more than UNKNOWN).
fn error_content(status: &Status, codes: bool) -> Bytes {
    let content = polyglot::error_to_bytes(status.message());
    match codes && status.code() != Code::Unknown {
        false => content,
        true => ext::Header {
            code: Some(status.code()),
            ..ext::Header::default()
        }
        .encode(&content),
    }
}

/// Sends an error and `EOF` on a stream without waiting (from places that cannot await).
fn send_detached(conn: &Connection, id: u16, status: Status, codes: bool) {
    let packets = [
        Packet::new(id, op::STREAM, error_content(&status, codes)),
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
    /// On the server, when the client asked for OPENED: the window it announces (0 without
    /// flow control).
    pub(crate) ack_window: Option<u32>,
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
    /// What this side may send (flow-controlled streams).
    send_credit: Option<Arc<Semaphore>>,
    /// Set once this side ended its half (sent `EOF`).
    ended: AtomicBool,
    /// Set once a send had to wait for credit: the producer outruns its consumer, so its
    /// messages go through the writer's queue, batched, from then on (see `send_raw`).
    bulk: AtomicBool,
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
            send_credit: inbound.send_credit.clone(),
            ended: AtomicBool::new(false),
            bulk: AtomicBool::new(false),
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
    /// A content read while waiting for OPENED, not yet handed out.
    peeked: Option<Bytes>,
    /// Messages read and not yet given back as credit (flow-controlled streams).
    unacked: u32,
    /// A server's inbound stream: what it cannot decode is the client's bad argument.
    server: bool,
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
            peeked: None,
            unacked: 0,
            server: false,
            _message: PhantomData,
        }
    }

    /// A server's inbound stream (see [`Error::InvalidMessage`]).
    fn for_server(inbound: Inbound, guard: Arc<StreamGuard>) -> Streaming<T> {
        let mut stream = Streaming::new(inbound, guard);
        stream.server = true;
        stream
    }

    /// The error for a message that cannot be decoded: the client's bad argument on a server,
    /// a decode failure on a client.
    fn undecodable(&self, err: DecodeError) -> Error {
        match self.server {
            true => Error::InvalidMessage(err.to_string()),
            false => Error::Decode(err),
        }
    }

    /// The error for a message whose extension header is malformed.
    fn malformed(&self, err: String) -> Error {
        let text = format!("malformed stream message: {err}");
        match self.server {
            true => Error::InvalidMessage(text),
            false => Error::Status(Status::internal(text)),
        }
    }

    /// The stream id.
    pub fn id(&self) -> u16 {
        self.guard.id
    }

    /// Waits until the server accepted the stream (its OPENED, or anything it sent on the
    /// stream), when the stream asked for it; fails with the server's refusal (its status, or
    /// the stream's end). Without open acknowledgement (Go peers) it returns at once.
    pub(crate) async fn opened(&mut self) -> Result<(), Error> {
        if !std::mem::replace(&mut self.inbound.awaiting_ack, false) {
            return Ok(());
        }
        let Some(content) = self.inbound.rx.recv().await else {
            self.finish();
            return Err(self.end_error());
        };
        if content.is_empty() {
            return Ok(()); // OPENED
        }
        let refused = is_control(&content) && content[..] != *EOF_MESSAGE;
        self.peeked = Some(content);
        if refused {
            // The server refused the stream, or its handler failed at once: its status.
            self.message().await?;
        }
        Ok(())
    }

    /// Gives back credit for a data message the consumer read: every half window at once, so
    /// a stream costs one CREDIT packet per half window.
    fn consumed(&mut self) {
        let Some((credit, window)) = &self.inbound.recv else {
            return;
        };
        self.unacked += 1;
        if self.unacked < (window / 2).max(1) || self.done {
            return;
        }
        let messages = std::mem::take(&mut self.unacked);
        // Counted before the grant leaves, so the peer's next message finds it.
        credit.fetch_add(messages, Ordering::AcqRel);
        let guard = &self.guard;
        guard.table.credit_back.give(&guard.conn, guard.id, messages);
    }

    /// The next message; `Ok(None)` once the peer has ended the stream.
    pub async fn message(&mut self) -> Result<Option<T>, Error> {
        std::future::poll_fn(|cx| self.poll_message(cx)).await
    }

    fn poll_message(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<Option<T>, Error>> {
        if self.done {
            return Poll::Ready(Ok(None));
        }
        let content = match self.peeked.take() {
            Some(content) => content,
            None => loop {
                match self.inbound.rx.poll_recv(cx) {
                    // An OPENED mark nobody waited for.
                    Poll::Ready(Some(content)) if content.is_empty() => continue,
                    Poll::Ready(Some(content)) => break content,
                    Poll::Ready(None) => {
                        self.finish();
                        return Poll::Ready(Err(self.end_error()));
                    }
                    Poll::Pending => return self.poll_idle(cx),
                }
            },
        };
        self.waiting = false;
        if !is_control(&content) {
            self.consumed();
        }
        // An error with a status code, from an frpc server that accepted our offer (perhaps
        // after this stream opened). No fRPC message starts with the header byte.
        let (code, content) = match ext::has_prefix(&content) {
            false => (None, content),
            true => match ext::split(&content, self.guard.conn.max_metadata_size()) {
                Ok((header, body)) => (header.code, body),
                Err(err) => {
                    self.finish();
                    return Poll::Ready(Err(self.malformed(err.to_string())));
                }
            },
        };
        Poll::Ready(
            match codec::decode::<T>(&content, self.guard.conn.decode_limits()) {
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
                Err(err) => Err(self.undecodable(err)),
            },
        )
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
            Some(EndReason::CreditExceeded) => Error::Status(Status::resource_exhausted(format!(
                "stream {}: the peer sent more messages than its flow-control credit",
                self.guard.id
            ))),
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

impl<T> Drop for Streaming<T> {
    /// A consumer gone while the stream goes on (a server handler that stops reading but keeps
    /// sending): gives back the credit of what it never read, so the peer's sends do not stall.
    /// Later messages get theirs back from the reader.
    fn drop(&mut self) {
        let Some((credit, _)) = &self.inbound.recv else {
            return;
        };
        if Arc::strong_count(&self.guard) == 1 {
            return; // the whole stream goes: nothing more to grant
        }
        self.inbound.rx.close();
        let is_data = |content: &Bytes| !content.is_empty() && !is_control(content);
        let mut unread = std::mem::take(&mut self.unacked);
        unread += u32::from(self.peeked.take().is_some_and(|content| is_data(&content)));
        while let Ok(content) = self.inbound.rx.try_recv() {
            unread += u32::from(is_data(&content));
        }
        if unread > 0 {
            credit.fetch_add(unread, Ordering::AcqRel);
            let guard = &self.guard;
            guard.table.credit_back.give(&guard.conn, guard.id, unread);
        }
    }
}

/// Sends messages on a stream: the server's response stream, or the client's request stream.
///
/// Server-streaming and bidi methods get one as their `outbound`; each `send` waits while the
/// connection's write queue is full and, between frpc peers (flow control), while the peer's
/// consumer is a whole window behind; it fails once the peer has gone. Cheap to clone (to send
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

    /// Sends one message, waiting while the connection's write queue is full, and for
    /// flow-control credit when the peer's window is used up. Fails with [`Error::TooLarge`] for
    /// a message over the content limit (the stream stays usable), and on a server that began
    /// shutting down with [`Error::ShuttingDown`] (the handler should return: its error and
    /// `EOF` still reach the client).
    pub async fn send(&self, message: T) -> Result<(), Error> {
        self.check_not_draining()?;
        let content = self.encode(&message);
        drop(message);
        self.send_raw(content, true).await
    }

    /// Sends one message by reference.
    pub async fn send_ref(&self, message: &T) -> Result<(), Error> {
        self.check_not_draining()?;
        self.send_raw(self.encode(message), true).await
    }

    /// Sends a client-streaming call's one reply: like a unary reply, it goes out during a
    /// shutdown too.
    pub(crate) async fn send_reply(&self, message: T) -> Result<(), Error> {
        self.send_raw(self.encode(&message), true).await
    }

    /// A server's streams send no more messages once it began shutting down (never true on a
    /// client's connection).
    fn check_not_draining(&self) -> Result<(), Error> {
        match self.guard.conn.is_draining() {
            true => Err(Error::ShuttingDown),
            false => Ok(()),
        }
    }

    /// Protobuf when the stream is (the client asked for it in the open message, on a connection
    /// that negotiated it), else polyglot.
    fn encode(&self, message: &T) -> Bytes {
        codec::encode(message, self.guard.ext.bits & ext::EXT_PROTOBUF != 0)
    }

    /// Sends one content; a data message (`credit`) first takes a message of flow-control
    /// credit, waiting for the peer's grant when there is none.
    async fn send_raw(&self, content: Bytes, credit: bool) -> Result<(), Error> {
        if self.guard.is_cancelled() {
            return Err(Error::Cancelled);
        }
        let conn = &self.guard.conn;
        let packet = Packet::new(self.guard.id, op::STREAM, content);
        let send = async {
            if let Some(window) = self.guard.send_credit.as_ref().filter(|_| credit) {
                // A closed window (the stream or connection ended) lets the send go on, as
                // without flow control: it then fails on a closed connection, or the peer
                // drops it; a cancelled stream's send fails.
                match window.try_acquire() {
                    Ok(permit) => permit.forget(),
                    Err(_) => {
                        self.guard.bulk.store(true, Ordering::Relaxed);
                        if let Ok(permit) = window.acquire().await {
                            permit.forget();
                        }
                        if self.guard.is_cancelled() {
                            return Err(Error::Cancelled);
                        }
                    }
                }
            }
            // A producer that ran out of credit sends in bursts (a grant lets half a window
            // go at once) into a pipeline the wait has emptied. The direct path would write
            // each message with a syscall of its own (the window keeps too little in flight to
            // fill the socket, which is what moves a plain stream onto the batching queue);
            // the queue lets the writer task write the burst in a few.
            match self.guard.bulk.load(Ordering::Relaxed) {
                true => conn.queue(packet).await,
                false => conn.send(packet).await,
            }
        };
        match self.guard.client.idle {
            None => send.await,
            // Waiting for room in the write queue counts as idle too.
            Some(limit) => tokio::time::timeout(limit, send)
                .await
                .unwrap_or(Err(Error::Timeout(limit))),
        }
    }

    async fn send_eof(&self) -> Result<(), Error> {
        self.guard.ended.store(true, Ordering::Relaxed);
        self.send_raw(Bytes::from_static(EOF_MESSAGE), false).await
    }

    /// Runs a server handler; with open acknowledgement, sends OPENED once its first poll is
    /// over (it has started: whatever it set up before its first wait, a subscription say, is
    /// in place), unless that poll already failed it, so the client's open fails with that
    /// status instead.
    pub(crate) async fn started<R>(
        &self,
        handler: impl Future<Output = Result<R, Status>>,
    ) -> Result<R, Status> {
        let Some(window) = self.guard.ext.ack_window else {
            return handler.await;
        };
        let mut handler = std::pin::pin!(handler);
        let first = std::future::poll_fn(|cx| Poll::Ready(handler.as_mut().poll(cx))).await;
        if let Poll::Ready(Err(status)) = first {
            return Err(status);
        }
        let opened = ext::stream_window(ext::OPENED, self.guard.id, window);
        let _ = self.guard.conn.send(opened).await;
        match first {
            Poll::Ready(result) => result,
            Poll::Pending => handler.await,
        }
    }

    async fn send_error(&self, status: &Status) -> Result<(), Error> {
        let content = error_content(status, self.guard.ext.bits & ext::EXT_STATUS != 0);
        self.send_raw(content, false).await
    }
}

/// The server's view of a stream a client opened, handed to the generated dispatcher.
#[derive(Debug)]
pub struct ServerStream {
    inbound: Inbound,
    guard: Arc<StreamGuard>,
}

/// What the server's dispatcher keeps of a stream it hands to a handler: enough to end the
/// stream for a handler that returned without ending it (generated handlers always do; a
/// hand-written service, or a layer refusing the call, may not), so the client always sees an
/// end (and, with open acknowledgement, its open never waits in vain).
#[derive(Debug)]
pub(crate) struct StreamEnd {
    guard: Arc<StreamGuard>,
}

impl StreamEnd {
    /// Ends the stream with the handler's outcome unless the handler ended it.
    pub(crate) async fn ensure(self, result: &Result<(), Status>, bits: u32) {
        if self.guard.ended.load(Ordering::Relaxed) || self.guard.conn.is_closed() {
            return;
        }
        let sender = StreamSender::<()>::new(self.guard);
        match result {
            Err(status) => {
                let content = error_content(status, bits & ext::EXT_STATUS != 0);
                let _ = sender.send_raw(content, false).await;
                let _ = sender.send_eof().await;
            }
            Ok(()) => {
                let _ = sender.send_eof().await;
            }
        }
    }
}

impl ServerStream {
    /// A handle that ends the stream if its handler does not (see [`StreamEnd`]).
    pub(crate) fn end_handle(&self) -> StreamEnd {
        StreamEnd {
            guard: self.guard.clone(),
        }
    }

    pub(crate) fn accept(
        conn: &Arc<Connection>,
        table: &Arc<StreamTable>,
        id: u16,
        ext: StreamExt,
        setup: StreamSetup,
    ) -> Result<ServerStream, Error> {
        let inbound = table.accept(id, ext.cancel.clone(), setup)?;
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
            Streaming::for_server(self.inbound, self.guard.clone()),
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

    /// Refuses a stream before any handler ran (unknown method, bad request, too many
    /// streams): its error (with its code when the connection has status codes) and `EOF`.
    pub(crate) async fn refuse(conn: &Connection, id: u16, status: Status, bits: u32) {
        let content = error_content(&status, bits & ext::EXT_STATUS != 0);
        let _ = conn.send(Packet::new(id, op::STREAM, content)).await;
        let _ = conn
            .send(Packet::new(id, op::STREAM, Bytes::from_static(EOF_MESSAGE)))
            .await;
    }
}

/// Opens a stream from the client side: registers it, then sends the open message (behind
/// `header`, the extension header, when there is one). With open acknowledgement (`bits`) the
/// header asks for OPENED, and with flow control too it carries this side's window; the
/// stream then starts with one message of credit (the request of a server-streaming call goes
/// out without a round trip) and OPENED brings the rest of the server's window. The caller
/// waits for OPENED with [`Streaming::opened`].
pub(crate) async fn open<Req: Message, Resp: Message>(
    conn: &Arc<Connection>,
    table: &Arc<StreamTable>,
    method: u16,
    client: ClientSide,
    bits: u32,
    header: Option<ext::Header>,
) -> Result<(StreamSender<Req>, Streaming<Resp>), Error> {
    let ack = bits & ext::EXT_OPEN_ACK != 0;
    let window = match ack && bits & ext::EXT_FLOW != 0 {
        true => table.window(),
        false => 0,
    };
    let setup = StreamSetup {
        recv_window: window,
        send_credit: (window > 0).then_some(1),
        awaiting_ack: ack,
        codes: bits & ext::EXT_STATUS != 0,
    };
    let (id, inbound) = table.open_local(setup)?;
    let ext = StreamExt {
        bits,
        cancel: None,
        ack_window: None,
    };
    let guard = Arc::new(StreamGuard::new(conn, table, id, &inbound, client, ext));
    let sender = StreamSender::new(guard.clone());
    let header = match ack {
        false => header,
        true => Some(ext::Header {
            open: Some(window),
            ..header.unwrap_or_default()
        }),
    };
    let open = open_message(method, bits & ext::EXT_PROTOBUF != 0);
    let open = match header {
        Some(header) => header.encode(&open),
        None => open,
    };
    sender.send_raw(open, false).await?;
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
