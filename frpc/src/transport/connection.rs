//! One Frisbee connection: a reader task, a writer task and a heartbeat task around a byte
//! stream. The transport floor: it knows packets, a [`Dispatch`] to hand them to, and how to give
//! the socket back (takeover); nothing of calls, streams or services. Clients and servers differ
//! only in their `Dispatch`.
//!
//! - The **writer** batches every queued packet into one buffer and writes it with one syscall,
//!   flushing as soon as its queue is empty. Its queue is bounded: a peer that stops reading
//!   slows our senders down instead of growing memory.
//! - The **reader** answers PING with PONG, drops PONG and hands everything else to the
//!   dispatcher. What it sends itself while more input is buffered (the replies of inline
//!   handlers) is corked, and written once it runs out of input or has to wait. On a client's
//!   connection its loop is shared ([`super::shared_reader`]): a call alone on the connection
//!   polls it itself when its reply is due, and the reader task polls it the rest of the time.
//! - The **heartbeat** sends a PING every `ping_interval` and closes the connection when the
//!   peer has sent nothing, not a byte, for `idle_timeout` (Go's 5 s read deadline): a packet
//!   still arriving on a slow link keeps the connection up however long it takes. On a
//!   server's connection it also passes the shutdown on to the reader, whose wait for input
//!   then watches a few atomics rather than polling cancellation tokens (a lock each). The
//!   reader then marks the connection draining and reads on: the dispatcher refuses new calls
//!   (HTTP/2's GOAWAY), the open streams get their messages.
//! - **Takeover** ([`Connection::request_handback`]): the reader stops before the next packet,
//!   and once the connection is closed the writer flushes what is queued, keeps its half open
//!   and reunites it with the read half and the bytes read but not parsed ([`super::handback`]).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use frpc_wire::{Frame, Framing, Header, Packet, PacketCodec, op};
use futures_util::task::AtomicWaker;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::frames::FrameReader;
use super::handback::{Handback, Join, ReadParts, TakeConnection};
use super::progress::{Watched, WriteProgress};
use super::queue_bytes::QueueBytes;
use super::shared_reader::{SharedReader, WakeDriver};
use super::writer::{Finished, Outbound, Outgoing, Writer};
use crate::config::ConnectionConfig;
use crate::status::{CloseReason, Error};

/// Under continuous traffic the reader looks at the server's shutdown signal every this many
/// packets (it also wakes for it whenever the socket is idle).
const DRAIN_CHECK_EVERY: u32 = 64;

/// What the reader does with the packets it reads: the calls floor implements it, once for
/// clients and once for servers.
pub(crate) trait Dispatch: Send + Sync + 'static {
    /// What the reader keeps for the dispatcher from one packet to the next, handed to
    /// [`Dispatch::packet`] (the server's slot for unary handlers: one allocation per
    /// connection, not one per call).
    type Scratch: Default + Send;
    /// What [`Dispatch::packet_now`] leaves for [`Dispatch::packet`] to finish: the packet
    /// itself, or the rest of its handling.
    type Later: Send;
    /// Handles a packet that is not a heartbeat (PING and PONG never reach the dispatcher) as
    /// far as it can without waiting: `None` once it is done, or what is left to await. Most
    /// packets end here (a unary call whose handler finishes in its first poll and whose reply
    /// the writer takes, a reply that finds its call) at the cost of a function call: the
    /// reader builds, polls and drops no future for them.
    fn packet_now(
        &self,
        conn: &Arc<Connection>,
        packet: Packet,
        scratch: &mut Self::Scratch,
    ) -> Option<Self::Later>;
    /// Finishes what [`Dispatch::packet_now`] left.
    fn packet(
        &self,
        conn: &Arc<Connection>,
        later: Self::Later,
        scratch: &mut Self::Scratch,
    ) -> impl Future<Output = ()> + Send;
    /// A packet whose content is over the limit arrived: its header, while the transport
    /// discards its content (so the connection survives and the request can be answered).
    fn oversize(&self, conn: &Arc<Connection>, header: Header) -> impl Future<Output = ()> + Send;
    /// A PONG arrived (the answer to one of our PINGs).
    fn pong(&self) {}
    /// The reader is about to mark the connection draining (its server began shutting down),
    /// before reading the next packet: what the dispatcher sends now goes out ahead of its
    /// answers to the packets that follow, and what it notes is there before anyone sees the
    /// connection draining.
    fn draining(&self, _conn: &Arc<Connection>) {}
    /// The connection closed with `err`: called once, synchronously, by whoever closed it, so
    /// waiting calls and streams fail at once.
    fn closed(&self, err: &Error);
}

/// Runs the dispatcher's close handler; a trait object so [`Connection`] stays one type.
trait OnClose: Send + Sync {
    fn closed(&self, err: &Error);
}

impl<D: Dispatch> OnClose for D {
    fn closed(&self, err: &Error) {
        Dispatch::closed(self, err)
    }
}

/// How a connection starts: the signal a server adds, and whether callers may drive the reader.
#[derive(Default)]
pub(crate) struct Options {
    /// When it fires (server shutdown), the reader handles what it has already received and
    /// stops reading.
    pub(crate) drain: Option<CancellationToken>,
    /// Set when a call alone on the connection may poll the read loop itself
    /// ([`SharedReader`]): a client's connection, whose reader only hands replies over. It wakes
    /// that call.
    pub(crate) shared_reader: Option<Arc<dyn WakeDriver>>,
}

/// The shared half of a connection: what tasks and handles use to send and to close.
pub(crate) struct Connection {
    out: mpsc::Sender<Outgoing>,
    /// The bytes waiting in `out`, against `write_queue_bytes`.
    queue_bytes: Arc<QueueBytes>,
    /// The write side: the direct path and the bookkeeping of what is queued.
    outbound: Arc<dyn Outbound>,
    /// Set by the reader while it has input buffered beyond the packet it dispatches: replies
    /// then batch into one write, in the cork when the reader itself sends them (it writes the
    /// cork once it runs out of input or has to wait), through the queue otherwise.
    more_input: AtomicBool,
    /// The reader's task, once it runs: what it sends while it has more input is corked.
    reader: OnceLock<tokio::task::Id>,
    /// The read loop, when its callers may drive it ([`Options::shared_reader`]).
    shared_reader: OnceLock<Arc<SharedReader>>,
    closed: CancellationToken,
    is_closed: AtomicBool,
    close_reason: OnceLock<CloseReason>,
    /// The dispatcher's close handler, dropped once run (it may hold the connection).
    on_close: Mutex<Option<Arc<dyn OnClose>>>,
    peer: SocketAddr,
    codec: PacketCodec,
    /// Set by the reader whenever bytes arrive (its [`FrameReader`], after every read that
    /// brought any, so a packet still arriving counts), cleared by the heartbeat.
    activity: Arc<AtomicBool>,
    /// Whether the peer takes what the writer writes (read by the heartbeat).
    writes: Arc<WriteProgress>,
    /// Set while the reader runs a handler inline, so the silence is not blamed on the peer.
    busy: AtomicBool,
    /// Control packets that found the write queue full, sent in order by one task.
    control: Mutex<ControlBacklog>,
    /// Wakes the reader while it waits for input, to look at `is_closed`, `stopping` and
    /// `drain_requested`: cheaper to wait on than cancellation futures, which lock on every poll.
    reader_signal: AtomicWaker,
    /// Makes the reader stop before the next packet, without closing (takeover).
    stopping: AtomicBool,
    /// Set (by the heartbeat task) once the server's shutdown began: the reader marks the
    /// connection draining between two packets, and reads on.
    drain_requested: AtomicBool,
    /// Set once the server serving it began shutting down: streams send no more messages, the
    /// dispatcher refuses new calls.
    draining: AtomicBool,
    /// Told when `draining` is set.
    drain_started: tokio::sync::Notify,
    handback: Handback,
    config: ConnectionConfig,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("peer", &self.peer)
            .field("closed", &self.is_closed())
            .finish()
    }
}

/// Handles to a connection's reader and writer tasks: the reader's ends when it stops reading
/// (closed, drained or stopped for a takeover), the writer's once the socket is shut (or handed
/// back).
#[derive(Debug)]
pub(crate) struct Tasks {
    pub(crate) reader: JoinHandle<()>,
    pub(crate) writer: JoinHandle<()>,
}

impl Connection {
    /// Starts the three tasks on a read and a write half. `join` puts the halves back together
    /// into a socket for a takeover (`None`: takeover is not available, as over TLS).
    pub(crate) fn spawn<R, W, D>(
        (read, write): (R, W),
        join: Option<Join<R, W>>,
        peer: SocketAddr,
        config: &ConnectionConfig,
        dispatch: D,
        options: Options,
    ) -> (Arc<Connection>, Tasks)
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
        D: Dispatch,
    {
        let (out, queue) = mpsc::channel(config.write_queue.max(1));
        let codec = PacketCodec::new(config.framing).with_max_content_length(config.max_content_length);
        let dispatch = Arc::new(dispatch);
        let queue_bytes = Arc::new(QueueBytes::new(config.write_queue_bytes));
        let writes = Arc::new(WriteProgress::default());
        let write = Watched::new(write, writes.clone());
        let writer = Arc::new(Writer::new(write, config.framing, queue_bytes.clone()));
        let conn = Arc::new(Connection {
            out,
            queue_bytes,
            outbound: writer.clone(),
            more_input: AtomicBool::new(false),
            reader: OnceLock::new(),
            shared_reader: OnceLock::new(),
            closed: CancellationToken::new(),
            is_closed: AtomicBool::new(false),
            close_reason: OnceLock::new(),
            on_close: Mutex::new(Some(dispatch.clone())),
            peer,
            codec,
            activity: Arc::new(AtomicBool::new(false)),
            writes,
            busy: AtomicBool::new(false),
            control: Mutex::new(ControlBacklog::default()),
            reader_signal: AtomicWaker::new(),
            stopping: AtomicBool::new(false),
            drain_requested: AtomicBool::new(false),
            draining: AtomicBool::new(false),
            drain_started: tokio::sync::Notify::new(),
            handback: Handback::new(join.is_some()),
            config: config.clone(),
        });
        let span = tracing::debug_span!("connection", %peer);
        let (parts_tx, parts_rx) = oneshot::channel::<ReadParts<R>>();
        let writer_conn = conn.clone();
        let writer = tokio::spawn(
            async move {
                let mut unfinished = CloseIfDropped(Some(writer_conn.clone()));
                let conn = writer_conn;
                let keep = || conn.handback.requested();
                // A peer that sent nothing for the idle timeout reads nothing either.
                let flush_limit = || match conn.close_reason.get() {
                    Some(CloseReason::Idle(_)) => Duration::ZERO,
                    _ => super::writer::CLOSE_FLUSH_TIMEOUT,
                };
                match writer.run(queue, &conn.closed, keep, flush_limit).await {
                    Ok(Finished::Kept(write)) => {
                        conn.handback.complete(write.into_inner(), parts_rx, join).await
                    }
                    // Only replies that all went out are worth keeping the socket open for (a
                    // peer that read none in the flush limit kept a shutdown 5 s more).
                    Ok(Finished::Flushed) => {
                        conn.handback.abandon();
                        if !flush_limit().is_zero() {
                            linger(parts_rx).await;
                        }
                    }
                    Ok(Finished::Unflushed) => conn.handback.abandon(),
                    Err(err) => {
                        tracing::debug!(peer = %conn.peer, error = %err, "closing connection on write error");
                        conn.close(CloseReason::WriteFailed(err.to_string()));
                        conn.handback.abandon();
                    }
                }
                unfinished.finished();
            }
            .instrument(span.clone()),
        );
        let frames = FrameReader::new(read, codec.frames(), conn.activity.clone(), 64 * 1024);
        let shared = options.shared_reader.is_some();
        let reader = read_loop(conn.clone(), frames, dispatch, !shared);
        let mut unfinished = CloseIfDropped(Some(conn.clone()));
        let reader = async move {
            let parts = reader.await;
            // A reader that stopped for a takeover or a shutdown leaves the connection open
            // for the replies still to go.
            unfinished.finished();
            let _ = parts_tx.send(parts);
        }
        .instrument(span.clone());
        let reader = match options.shared_reader {
            None => tokio::spawn(reader),
            Some(driver) => {
                let shared = SharedReader::new(reader, driver);
                let _ = conn.shared_reader.set(shared.clone());
                let conn = conn.clone();
                tokio::spawn(async move {
                    // Here, not in the loop: a caller driving it may poll it first.
                    conn.note_reader_task();
                    shared.run().await
                })
            }
        };
        tokio::spawn(heartbeat(conn.clone(), options.drain).instrument(span));
        (conn, Tasks { reader, writer })
    }

    /// The remote address.
    pub(crate) fn peer(&self) -> SocketAddr {
        self.peer
    }

    /// What decoding the peer's messages may cost (`ConnectionConfig::decode`).
    pub(crate) fn decode_limits(&self) -> crate::config::DecodeLimits {
        self.config.decode
    }

    /// The largest metadata block accepted (`ConnectionConfig::max_metadata_size`).
    pub(crate) fn max_metadata_size(&self) -> usize {
        self.config.max_metadata_size
    }

    /// The largest content accepted.
    pub(crate) fn max_content_length(&self) -> u32 {
        self.codec.max_content_length()
    }

    /// Checks a content length against the connection's limit.
    pub(crate) fn check_len(&self, len: usize) -> Result<(), Error> {
        self.codec.check_len(len).map(|_| ()).map_err(Error::from)
    }

    /// Sends a packet: written at once when the writer is idle and nothing is queued ahead,
    /// queued otherwise (waiting while the writer's queue is full).
    pub(crate) async fn send(&self, packet: impl Into<Outgoing>) -> Result<(), Error> {
        // Uncorked: never `Sent::Corked`.
        self.send_or_cork(packet.into(), false).await.map(drop)
    }

    /// [`Connection::send`], or with `cork` for a packet that others sent from the same task
    /// are likely to join (calls joined on one task, or several tasks calling at once): it
    /// waits in the cork, and the first packet corked writes them all in one write after
    /// letting its task run the others once (a yield, no hand-off to the writer task); queued
    /// when the writer is busy. One future for both, so a caller that picks at run time
    /// carries one `enqueue` state, not two (futures are moved by copy). Resolves once the
    /// packet is on its way: written or corked within the first poll, or queued; the first
    /// packet corked leaves the cork's write to the caller ([`Sent::Corked`]), which learns
    /// first that its packet goes out whatever it does next.
    #[allow(clippy::manual_async_fn, reason = "an async fn keeps its arguments twice")]
    pub(crate) fn send_or_cork(
        &self,
        packet: Outgoing,
        cork: bool,
    ) -> impl Future<Output = Result<Sent, Error>> + Send + '_ {
        // A function returning an `async` block rather than an `async fn`, which would keep the
        // packet twice in its future (as its argument and as its local): a unary call's future
        // holds this one.
        async move {
            self.admit(&packet)?;
            // The packet bound by `let`, not in an `Option` matched later: a partly moved local
            // stays in the future, beside the queue's wait.
            let packet = match self.place(packet, cork) {
                Placed::Gone => return Ok(Sent::AtOnce),
                Placed::FirstCorked => return Ok(Sent::Corked),
                Placed::Queue(packet) => packet,
            };
            self.enqueue(packet).await.map(|()| Sent::Queued)
        }
    }

    /// Lets the task run the others once (calls joined on it, or queued behind it, join the
    /// cork), then writes the cork: what the sender of [`Sent::Corked`] does next. Written when
    /// dropped too: a caller dropped during the yield leaves nothing stuck.
    pub(crate) async fn write_cork_after_yield(&self) {
        let _flush = FlushCork(&*self.outbound);
        YieldOnce(false).await;
    }

    /// Where [`Connection::send_or_cork`] puts an admitted packet, without waiting.
    #[inline]
    fn place(&self, packet: Outgoing, cork: bool) -> Placed {
        if cork {
            return match self.outbound.try_cork(packet) {
                Ok(true) => Placed::FirstCorked,
                Ok(false) => Placed::Gone,
                Err(packet) => Placed::Queue(packet),
            };
        }
        match self.place_uncorked(packet) {
            None => Placed::Gone,
            Some(packet) => Placed::Queue(packet),
        }
    }

    /// [`Connection::place`] without a cork of its own: written at once, or corked for the
    /// reader to write (it writes the cork when it runs out of input or has to wait); the packet
    /// back when it has to go through the writer's queue.
    #[inline]
    fn place_uncorked(&self, packet: Outgoing) -> Option<Outgoing> {
        if !self.more_input.load(Ordering::Relaxed) {
            return self.outbound.try_direct(packet).err();
        }
        if !self.on_reader() {
            return Some(packet);
        }
        self.outbound.try_cork(packet).err()
    }

    /// [`Connection::send`] where that needs no wait, without a future: `Ok(None)` once the
    /// packet is written or corked, `Ok(Some(packet))` when it has to wait for room in the
    /// writer's queue ([`Connection::queue`] then sends it). A server's reply takes this path:
    /// the common case builds, polls and drops no `send` future.
    pub(crate) fn send_now(&self, packet: Outgoing) -> Result<Option<Outgoing>, Error> {
        self.admit(&packet)?;
        Ok(self.place_uncorked(packet))
    }

    /// Notes that the running task is the reader's (see [`Connection::on_reader`]).
    fn note_reader_task(&self) {
        if let Some(id) = tokio::task::try_id() {
            let _ = self.reader.set(id);
        }
    }

    /// The read loop, when a caller alone on the connection may drive it.
    #[inline]
    pub(crate) fn shared_reader(&self) -> Option<&SharedReader> {
        self.shared_reader.get().map(|shared| &**shared)
    }

    /// Whether the caller is the reader's task.
    fn on_reader(&self) -> bool {
        self.reader
            .get()
            .is_some_and(|&reader| tokio::task::try_id() == Some(reader))
    }

    /// Sends a packet through the writer task's queue (waiting while it is full), so it can
    /// leave in one write with others: for senders that know more packets follow.
    pub(crate) async fn queue(&self, packet: impl Into<Outgoing>) -> Result<(), Error> {
        let packet = packet.into();
        self.admit(&packet)?;
        self.enqueue(packet).await
    }

    /// Whether `packet` may go out: within the size limit, on an open connection.
    fn admit(&self, packet: &Outgoing) -> Result<(), Error> {
        self.check_len(packet.len())?;
        match self.is_closed() {
            true => Err(self.closed_error()),
            false => Ok(()),
        }
    }

    /// Puts an admitted packet in the writer's queue: at once when it has room, else boxed
    /// while it waits for room. The wait (a slot in the channel's waiter list) is three times
    /// the rest of a send, and every caller's future, a unary call's included, would carry it
    /// (and copy it with every move) while only a full queue needs it.
    #[allow(clippy::manual_async_fn, reason = "an async fn keeps its arguments twice")]
    fn enqueue(&self, packet: Outgoing) -> impl Future<Output = Result<(), Error>> + Send + '_ {
        // Before any wait, in the poll that encoded it: a content cut from this thread's chunk
        // still shares it then (see `Outgoing::detached`).
        let packet = packet.detached();
        // An `async` block for the reason `send_or_cork` gives.
        async move {
            // A send spends the task's cooperative budget, as the channel's own `send` does: a
            // sender with room in the queue still lets the writer task run now and then. Without
            // it a flow-controlled stream filled the queue with its whole window before the writer
            // wrote any of it, and ran in bursts (32 B messages: 0.90× plain → 0.60×).
            tokio::task::consume_budget().await;
            let len = packet.len();
            if !self.queue_bytes.try_take(len)
                && !Box::pin(self.queue_bytes.take(len, || self.is_closed())).await
            {
                return Err(self.closed_error());
            }
            self.outbound.queued();
            match self.out.try_send(packet) {
                Ok(()) => Ok(()),
                Err(mpsc::error::TrySendError::Full(packet)) => {
                    Box::pin(self.wait_for_place(packet, len)).await
                }
                Err(mpsc::error::TrySendError::Closed(_)) => {
                    drop(Reserved { conn: self, len });
                    Err(self.closed_error())
                }
            }
        }
    }

    /// Waits for a place in the full write queue for a packet already counted (`len` bytes):
    /// both given back if it never gets in, the connection closed or the sender gone (its call
    /// timed out). Kept, each give-up closed the direct path for good and took its bytes out of
    /// the budget, until a connection whose peer had been slow for a while sent nothing.
    async fn wait_for_place(&self, packet: Outgoing, len: usize) -> Result<(), Error> {
        let reserved = Reserved { conn: self, len };
        self.out.send(packet).await.map_err(|_| self.closed_error())?;
        reserved.keep();
        Ok(())
    }

    /// The connection's settings.
    pub(crate) fn config(&self) -> &ConnectionConfig {
        &self.config
    }

    /// Writes a small packet at once when the writer is idle (as [`Connection::send`] does),
    /// else queues it if there is room right now: for callers that cannot wait but whose packet
    /// the peer is waiting for (flow-control credit), so it does not wait for the writer task's
    /// next turn on a thread busy with the caller.
    pub(crate) fn try_send_now(&self, packet: Packet) -> Result<(), Error> {
        self.check_len(packet.content.len())?;
        let packet = match self.more_input.load(Ordering::Relaxed) {
            true => Outgoing::One(packet),
            false => match self.outbound.try_direct(packet.into()) {
                Ok(()) => return Ok(()),
                Err(packet) => packet,
            },
        };
        self.try_send(packet)
    }

    /// Queues a control packet the peer must get (a CANCEL, without which its handler would
    /// run on; a DRAINED, which its shutdown waits for) from a caller that cannot wait (a
    /// `Drop`): at once if there is room, else from a task that waits for room. Dropped only
    /// once the connection is closed (or outside a Tokio runtime).
    ///
    /// What waits does so in one backlog per connection, sent by one task: a task each (as
    /// before) grew by the thousand a second, for as long as the connection lived, with a peer
    /// that pinged but never read while calls timed out. The backlog holds at most
    /// [`CONTROL_BACKLOG`] packets (more would be for calls whose requests never left either:
    /// the queue they wait behind is as stuck).
    pub(crate) fn send_control(self: &Arc<Self>, packet: Packet) {
        if self.is_closed() {
            return;
        }
        let mut backlog = self.control_backlog();
        let packet = Outgoing::One(packet).detached();
        // Behind a backlog, it waits its turn.
        let packet = match backlog.flushing {
            true => packet,
            false => match self.try_queue(packet) {
                Ok(()) => return,
                Err(packet) => packet,
            },
        };
        if backlog.packets.len() >= CONTROL_BACKLOG {
            return tracing::debug!("the control backlog is full: a control packet is lost");
        }
        backlog.packets.push(packet);
        if backlog.flushing {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            backlog.packets.clear();
            return tracing::debug!(
                "the write queue is full and no runtime is left: a control packet is lost"
            );
        };
        backlog.flushing = true;
        runtime.spawn(flush_control(self.clone()));
    }

    fn control_backlog(&self) -> std::sync::MutexGuard<'_, ControlBacklog> {
        self.control.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues a packet if there is room right now (for callers that cannot wait, like `Drop`).
    pub(crate) fn try_send(&self, packet: impl Into<Outgoing>) -> Result<(), Error> {
        // Queued like `enqueue`'s (a stream's error reply may be cut from the chunk).
        let packet = packet.into().detached();
        self.check_len(packet.len())?;
        self.try_queue(packet).map_err(|_| self.closed_error())
    }

    /// Queues `packet` (its length checked) if there is room right now, or gives it back.
    fn try_queue(&self, packet: Outgoing) -> Result<(), Outgoing> {
        let len = packet.len();
        self.outbound.queued();
        self.queue_bytes.force_take(len);
        self.out.try_send(packet).map_err(|err| {
            self.outbound.unqueued();
            self.queue_bytes.give_back(len);
            err.into_inner()
        })
    }

    /// Closes the connection: the reader stops, the writer flushes what is queued and shuts
    /// the socket down (or hands it back, see [`Connection::request_handback`]), the dispatcher
    /// fails what waits. The first reason given is kept.
    pub(crate) fn close(&self, reason: CloseReason) {
        let reason = match self.handback.requested() {
            true => CloseReason::Local("connection taken over".to_owned()),
            false => reason,
        };
        let _ = self.close_reason.set(reason);
        if self.is_closed.swap(true, Ordering::AcqRel) {
            return;
        }
        self.closed.cancel();
        self.queue_bytes.wake_all();
        self.reader_signal.wake();
        let on_close = self.on_close.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(on_close) = on_close {
            on_close.closed(&self.closed_error());
        }
    }

    /// Marks the connection as draining: its server is shutting down.
    pub(crate) fn start_draining(&self) {
        if !self.draining.swap(true, Ordering::AcqRel) {
            self.drain_started.notify_waiters();
        }
    }

    /// Resolves once the connection is draining. The reader marks it so between two packets,
    /// so from then on every call it started is where its server waits for it (a task of its
    /// own, or its reply queued), none halfway.
    pub(crate) async fn drain_started(&self) {
        crate::notify::until(&self.drain_started, || self.is_draining()).await
    }

    /// Whether its server is shutting down (never, on a client's connection).
    pub(crate) fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }

    /// Whether the connection has closed.
    pub(crate) fn is_closed(&self) -> bool {
        // An atomic load: `CancellationToken::is_cancelled` takes a lock.
        self.is_closed.load(Ordering::Acquire)
    }

    /// Resolves once the connection has closed.
    pub(crate) fn closed(&self) -> tokio_util::sync::WaitForCancellationFuture<'_> {
        self.closed.cancelled()
    }

    /// The error pending operations get once the connection has closed.
    pub(crate) fn closed_error(&self) -> Error {
        Error::ConnectionClosed {
            reason: self.close_reason.get().map(ToString::to_string),
        }
    }

    /// Why it closed, once it has.
    pub(crate) fn close_reason(&self) -> Option<CloseReason> {
        self.close_reason.get().cloned()
    }

    /// Makes the reader stop before it parses the next packet, leaving the connection open:
    /// what it has not parsed stays in its buffer for a takeover.
    pub(crate) fn stop_reading(&self) {
        self.stopping.store(true, Ordering::Release);
        self.reader_signal.wake();
    }

    /// Whether the socket can be handed back at all (a plain TCP connection).
    /// Whether a handler asked for the connection ([`Connection::request_handback`]).
    pub(crate) fn handback_requested(&self) -> bool {
        self.handback.requested()
    }

    pub(crate) fn can_hand_back(&self) -> bool {
        self.handback.available()
    }

    /// Asks for the socket back: the reader stops before the next packet; once the connection
    /// is closed (by whoever started the takeover, when its last reply is queued) the writer
    /// flushes, and the returned future resolves to the socket and the unparsed bytes.
    pub(crate) fn request_handback(&self) -> Result<TakeConnection, Error> {
        if !self.can_hand_back() {
            // Refused before anything stops: the connection goes on as it was.
            return Err(Error::Config(super::handback::NO_TAKEOVER.into()));
        }
        // Closed already: its halves are on their way out, if not gone.
        if self.is_closed() {
            return Err(self.closed_error());
        }
        let take = self.handback.request()?;
        self.stop_reading();
        Ok(take)
    }

    /// Marks the connection busy until the guard is dropped, so a long inline handler is not
    /// mistaken for an idle peer.
    pub(crate) fn mark_busy(&self) -> Busy<'_> {
        self.busy.store(true, Ordering::Relaxed);
        Busy(self)
    }

    fn reading_stopped(&self) -> bool {
        self.is_closed() || self.stopping.load(Ordering::Acquire)
    }

    /// Tells the reader its server began shutting down (see [`heartbeat`]).
    fn request_drain(&self) {
        self.drain_requested.store(true, Ordering::Release);
        self.reader_signal.wake();
    }

    fn drain_was_requested(&self) -> bool {
        self.drain_requested.load(Ordering::Acquire)
    }
}

/// Where [`Connection::send_or_cork`] put a packet.
enum Placed {
    /// Written, or corked behind a packet whose sender writes the cork.
    Gone,
    /// Corked first: its sender writes the cork after a yield.
    FirstCorked,
    /// For the writer task's queue.
    Queue(Outgoing),
}

/// A queued packet's count and bytes, taken before it is in the write queue: given back when
/// dropped (it never got in) unless kept.
struct Reserved<'a> {
    conn: &'a Connection,
    len: usize,
}

impl Reserved<'_> {
    /// The packet is in the queue: the writer gives both back once it wrote it.
    fn keep(self) {
        std::mem::forget(self);
    }
}

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        self.conn.outbound.unqueued();
        self.conn.queue_bytes.give_back(self.len);
    }
}

/// How [`Connection::send_or_cork`] sent a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sent {
    /// Written, or corked behind a packet whose sender writes the cork, within the first poll.
    AtOnce,
    /// In the writer's queue, after a wait.
    Queued,
    /// Corked first: its sender writes the cork next, with no await before it
    /// ([`Connection::write_cork_after_yield`]).
    Corked,
}

/// Writes the cork when dropped (see [`Connection::send_or_cork`]).
struct FlushCork<'a>(&'a dyn Outbound);

impl Drop for FlushCork<'_> {
    fn drop(&mut self) {
        self.0.flush_cork();
    }
}

pin_project_lite::pin_project! {
    /// Runs one of the reader's futures, writing the cork whenever it has to wait (for input,
    /// or for a handler): replies the reader corked never wait for more than the packets at
    /// hand. A struct rather than an `async fn`, so the future it wraps is not moved again.
    struct FlushWhenPending<'a, F> {
        conn: &'a Connection,
        #[pin]
        future: F,
    }
}

impl<'a, F: Future> FlushWhenPending<'a, F> {
    fn new(conn: &'a Connection, future: F) -> Self {
        FlushWhenPending { conn, future }
    }
}

impl<F: Future> Future for FlushWhenPending<'_, F> {
    type Output = F::Output;

    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<F::Output> {
        let this = self.project();
        let poll = this.future.poll(cx);
        if poll.is_pending() {
            this.conn.outbound.flush_cork();
        }
        poll
    }
}

/// Why the reader was woken while it waited for input.
enum Signal {
    /// The connection closed, or a takeover asked the reader to stop.
    Stop,
    /// The server began shutting down.
    Drain,
}

/// Resolves once the reader must stop or drain. Polling it loads three atomics: no lock (three
/// `CancellationToken` futures took six per wait). The reader's waker is registered on the
/// first poll only (`registered`, kept by the reader): the reader is one task for its whole
/// life, and every wake-up of the signal (close, stop, drain) sets a flag that stays set, so the
/// reader stops at the next poll and never waits for the signal again. Registering on every
/// wait cost a waker clone and two atomic swaps per call.
struct ReaderSignal<'a> {
    conn: &'a Connection,
    registered: &'a mut bool,
}

impl Future for ReaderSignal<'_> {
    type Output = Signal;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Signal> {
        let conn = self.conn;
        // Registered before the flags are read: a signal set after the read wakes us.
        if !*self.registered {
            conn.reader_signal.register(cx.waker());
            *self.registered = true;
        }
        if conn.reading_stopped() {
            return std::task::Poll::Ready(Signal::Stop);
        }
        match conn.drain_was_requested() && !conn.is_draining() {
            true => std::task::Poll::Ready(Signal::Drain),
            false => std::task::Poll::Pending,
        }
    }
}

/// What ended the reader's wait: input (a frame, an error or the end of the stream), or a signal.
enum Woken<T> {
    Input(T),
    Signal(Signal),
}

pin_project_lite::pin_project! {
    /// The reader's wait: its input first, the signal only while no input is ready (what a
    /// biased `select!` of the two does, without its per-poll bookkeeping: this runs once per
    /// packet).
    struct InputOrSignal<'a, F> {
        #[pin]
        input: F,
        signal: ReaderSignal<'a>,
    }
}

impl<F: Future> Future for InputOrSignal<'_, F> {
    type Output = Woken<F::Output>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let this = self.project();
        if let std::task::Poll::Ready(input) = this.input.poll(cx) {
            return std::task::Poll::Ready(Woken::Input(input));
        }
        std::pin::Pin::new(this.signal).poll(cx).map(Woken::Signal)
    }
}

/// Pending once, waking its own task: the task's other futures (calls joined with this one)
/// and the tasks queued behind it run before it resumes. Unlike `tokio::task::yield_now`, it
/// does not wait for the runtime to poll the I/O driver (a system call).
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        if self.0 {
            return std::task::Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

/// The connection is busy while this lives; dropping it counts as activity.
pub(crate) struct Busy<'a>(&'a Connection);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.busy.store(false, Ordering::Relaxed);
        self.0.activity.store(true, Ordering::Relaxed);
    }
}

/// The reader's loop; `own_task`: it runs in a task of its own (not a shared loop), which is
/// the reader's task.
async fn read_loop<R: AsyncRead + Unpin, D: Dispatch>(
    conn: Arc<Connection>,
    mut frames: FrameReader<R>,
    dispatch: Arc<D>,
    own_task: bool,
) -> ReadParts<R> {
    if own_task {
        conn.note_reader_task();
    }
    let mut since_drain_check = 0u32;
    // Whether the peer has sent one valid packet: if it hangs up (or sends garbage) before, its
    // framing is the likely cause, and the close reason says so.
    let mut parsed_any = false;
    let mut scratch = D::Scratch::default();
    // Whether `ReaderSignal` has registered this task's waker (once is enough: see there).
    let mut signal_registered = false;
    loop {
        // Closing and stopping are checked with atomics between packets (a takeover must stop
        // before the next packet is parsed), and the signal below when the socket has nothing
        // ready.
        if conn.reading_stopped() {
            break;
        }
        since_drain_check += 1;
        if since_drain_check == DRAIN_CHECK_EVERY {
            since_drain_check = 0;
            if conn.drain_was_requested() && !conn.is_draining() {
                dispatch.draining(&conn);
                conn.start_draining();
                // The drain's wake-up took the registered waker (see below).
                signal_registered = false;
            }
        }
        // A frame already read (pipelined packets) is cut with no wait, no signal, no poll.
        let next = match frames.buffered().transpose() {
            Some(next) => Some(next),
            None => {
                let input = InputOrSignal {
                    input: FlushWhenPending::new(&conn, frames.next_frame()),
                    signal: ReaderSignal {
                        conn: &conn,
                        registered: &mut signal_registered,
                    },
                };
                match input.await {
                    Woken::Input(next) => next,
                    Woken::Signal(Signal::Stop) => break,
                    // The server began shutting down: reading goes on (the streams open here
                    // get their messages, client streams can finish), new calls are refused
                    // (the dispatcher sees the connection draining), as HTTP/2 does after its
                    // GOAWAY. The connection closes once its calls are done, or at the grace.
                    Woken::Signal(Signal::Drain) => {
                        dispatch.draining(&conn);
                        conn.start_draining();
                        // The wake-up took the registered waker: register it again, or a later
                        // stop (a close, a takeover) would not wake this wait.
                        signal_registered = false;
                        continue;
                    }
                }
            }
        };
        match next {
            Some(Ok(frame)) => {
                parsed_any = true;
                let more = frames.has_unread();
                conn.more_input.store(more, Ordering::Relaxed);
                if let Some(rest) = handle_now(&conn, &*dispatch, frame, &mut scratch) {
                    FlushWhenPending::new(&conn, finish(&conn, &*dispatch, rest, &mut scratch)).await
                }
            }
            Some(Err(err)) => {
                tracing::debug!(peer = %conn.peer, error = %err, "closing connection on read error");
                // A TLS failure (an alert, a certificate refused) says all there is to say.
                let hinted = parsed_any || is_tls_failure(&err);
                conn.close(CloseReason::ReadFailed(framing_hint(
                    &conn,
                    err.to_string(),
                    hinted,
                )));
                break;
            }
            None => {
                let reason = framing_hint(&conn, "peer closed the connection".into(), parsed_any);
                conn.close(CloseReason::PeerClosed(reason));
                break;
            }
        }
    }
    conn.more_input.store(false, Ordering::Relaxed);
    conn.outbound.flush_cork();
    frames.into_parts()
}

/// Whether a read failed in TLS (an alert from the peer, say a client certificate it required
/// and did not get, which TLS 1.3 reports at the first read rather than at the handshake).
fn is_tls_failure(err: &frpc_wire::FrameError) -> bool {
    #[cfg(feature = "tls")]
    if let frpc_wire::FrameError::Io(io) = err {
        return io
            .get_ref()
            .is_some_and(|inner| inner.is::<tokio_rustls::rustls::Error>());
    }
    let _ = err;
    false
}

/// How long a closed connection reads (and drops) what its peer still sends, waiting for the
/// peer to close its side: the bound its flush has (Go's).
const LINGER: Duration = super::writer::CLOSE_FLUSH_TIMEOUT;

/// After a close that sent its FIN (the replies flushed), reads and drops what the peer still
/// sends until it closes its side, for at most [`LINGER`], once the reader has stopped and
/// handed its half over. Closing a socket with unread input makes the kernel reset the
/// connection, and a reset throws away the replies still on their way to the peer: a
/// slow-reading client, whose PINGs kept arriving while the server flushed its replies at a
/// graceful shutdown, lost most of them.
async fn linger<R: AsyncRead + Unpin>(parts: oneshot::Receiver<ReadParts<R>>) {
    use tokio::io::AsyncReadExt;
    let lingering = async {
        // The reader hands its half over as it stops (at once, woken by the close; a server's
        // reader reads on while its shutdown drains the connection).
        let Ok((mut read, _)) = parts.await else {
            return;
        };
        let mut scratch = vec![0u8; 4096];
        while let Ok(1..) = read.read(&mut scratch).await {}
    };
    let _ = tokio::time::timeout(LINGER, lingering).await;
}

/// Adds to why a connection ended a hint at a framing mismatch when the peer never sent one
/// valid packet (a frisbee-go v0.11 peer drops a legacy header at once; a v0.10 peer's packets
/// fail our magic check).
fn framing_hint(conn: &Connection, reason: String, parsed_any: bool) -> String {
    // The codec already said what the peer plainly is (HTTP, TLS): no framing would help.
    // (`parsed_any`: a valid packet came, or the failure was one no framing explains.)
    if parsed_any || reason.contains("this looks like") {
        return reason;
    }
    let (ours, other) = match conn.codec.framing() {
        Framing::Frisbee => ("Framing::Frisbee (frisbee-go >= v0.11)", "Framing::Legacy"),
        Framing::Legacy => ("Framing::Legacy (frisbee-go <= v0.10)", "Framing::Frisbee"),
    };
    format!(
        "{reason} before sending a valid packet: is it refusing connections (an frpc server at \
         its `max_connections`, or this address's `max_connections_per_address`, closes new ones \
         at once), or does it use the other framing? This side uses {ours}; try {other}"
    )
}

/// What is left of a frame's handling for the reader to await.
enum Rest<L> {
    /// What the dispatcher left of a packet.
    Packet(L),
    /// An oversize packet's header, for the dispatcher's answer.
    Oversize(Header),
}

/// Handles a frame as far as it can without waiting (see [`Dispatch::packet_now`]).
fn handle_now<D: Dispatch>(
    conn: &Arc<Connection>,
    dispatch: &D,
    frame: Frame,
    scratch: &mut D::Scratch,
) -> Option<Rest<D::Later>> {
    let packet = match frame {
        Frame::Packet(packet) => packet,
        Frame::Oversize(header) => {
            tracing::debug!(peer = %conn.peer, op = header.op, id = header.id, len = header.len, "skipping an oversize packet");
            return Some(Rest::Oversize(header));
        }
    };
    match packet.op {
        op::PING => {
            // Never waits: with the write queue full we are sending anyway, and a reader stuck
            // on a peer that stops reading would stop reading too.
            let _ = conn.try_send(Packet::pong());
            None
        }
        op::PONG => {
            dispatch.pong();
            None
        }
        _ => dispatch.packet_now(conn, packet, scratch).map(Rest::Packet),
    }
}

/// Awaits what [`handle_now`] left.
async fn finish<D: Dispatch>(
    conn: &Arc<Connection>,
    dispatch: &D,
    rest: Rest<D::Later>,
    scratch: &mut D::Scratch,
) {
    match rest {
        Rest::Packet(later) => dispatch.packet(conn, later, scratch).await,
        Rest::Oversize(header) => dispatch.oversize(conn, header).await,
    }
}

/// Closes its connection if dropped before [`finished`](Self::finished): held by the reader's
/// and the writer's tasks, which are dropped unfinished only when their runtime shuts down.
/// Then no one is left to read or write, and a caller on another runtime would wait forever:
/// closing fails the calls in flight and every later one at once.
struct CloseIfDropped(Option<Arc<Connection>>);

impl CloseIfDropped {
    /// The task ran to its end: nothing to close.
    fn finished(&mut self) {
        self.0 = None;
    }
}

impl Drop for CloseIfDropped {
    fn drop(&mut self) {
        if let Some(conn) = self.0.take() {
            let reason = "the Tokio runtime that ran the connection shut down";
            conn.close(CloseReason::Local(reason.into()));
        }
    }
}

/// The most control packets a connection keeps waiting for room in its write queue.
pub(crate) const CONTROL_BACKLOG: usize = 65_536;

/// Control packets waiting for room in the write queue (see [`Connection::send_control`]).
#[derive(Debug, Default)]
struct ControlBacklog {
    packets: Vec<Outgoing>,
    /// A task sends them: later ones queue behind.
    flushing: bool,
}

/// Sends a connection's control backlog, in order, until it is empty (or the connection
/// closed: then nothing more can go).
async fn flush_control(conn: Arc<Connection>) {
    loop {
        let packets = {
            let mut backlog = conn.control_backlog();
            if backlog.packets.is_empty() {
                backlog.flushing = false;
                return;
            }
            std::mem::take(&mut backlog.packets)
        };
        for packet in packets {
            if conn.send(packet).await.is_err() {
                let mut backlog = conn.control_backlog();
                backlog.packets.clear();
                backlog.flushing = false;
                return;
            }
        }
    }
}

/// Pings the peer and closes the connection once it has been silent too long; on a server's
/// connection it also passes the shutdown signal (`drain`) on to the reader, which would
/// otherwise poll the server's token (a lock) every time it waits for input.
async fn heartbeat(conn: Arc<Connection>, drain: Option<CancellationToken>) {
    let interval = conn.config.ping_interval;
    let idle_timeout = conn.config.idle_timeout;
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut silent = Duration::ZERO;
    let drain = drain.unwrap_or_default();
    let draining = drain.cancelled();
    tokio::pin!(draining);
    let mut drain_passed_on = false;
    loop {
        tokio::select! {
            _ = conn.closed.cancelled() => return,
            _ = &mut draining, if !drain_passed_on => {
                drain_passed_on = true;
                conn.request_drain();
                continue;
            }
            _ = ticks.tick() => {}
        }
        // A full queue means we are writing anyway; the PING would add nothing.
        let _ = conn.try_send(Packet::ping());
        // A reader that waits on this side (a slow handler or consumer: it is `busy`) cannot
        // hear the peer, so that silence is ours; unless what we write is stuck as well: then
        // the wait is on the peer, which may be gone (a vanished host never frees the room a
        // handler writing to it waits for).
        let stuck = conn.writes.stuck();
        if conn.activity.swap(false, Ordering::Relaxed) || (conn.busy.load(Ordering::Relaxed) && !stuck) {
            silent = Duration::ZERO;
        } else {
            silent += interval;
            if silent >= idle_timeout {
                tracing::debug!(peer = %conn.peer, ?idle_timeout, "closing idle connection");
                conn.close(CloseReason::Idle(idle_timeout));
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use tokio::net::{TcpListener, TcpStream};

    use super::*;

    /// A dispatcher for a connection whose input the test ignores.
    struct Ignore;

    impl Dispatch for Ignore {
        type Scratch = ();
        type Later = ();
        fn packet_now(&self, _: &Arc<Connection>, _: Packet, _: &mut ()) -> Option<()> {
            None
        }
        async fn packet(&self, _: &Arc<Connection>, _: (), _: &mut ()) {}
        async fn oversize(&self, _: &Arc<Connection>, _: Header) {}
        fn closed(&self, _: &Error) {}
    }

    /// A connection over loopback TCP whose input is ignored, its tasks, and its peer's socket.
    async fn ignoring(config: &ConnectionConfig) -> (Arc<Connection>, Tasks, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stream, accepted) = tokio::join!(TcpStream::connect(addr), listener.accept());
        let (stream, (peer, _)) = (stream.unwrap(), accepted.unwrap());
        let (conn, tasks) = Connection::spawn(
            stream.into_split(),
            None,
            addr,
            config,
            Ignore,
            Options::default(),
        );
        (conn, tasks, peer)
    }

    /// Packets queued while the queue has room still spend the sender's cooperative budget, as
    /// the channel's own `send` does: the sender yields now and then, so the writer task (and
    /// others) run meanwhile. Without it a flow-controlled stream queued its whole window before
    /// the writer wrote any of it, and ran in bursts (`frpc-bench stream`: 0.9× plain → 0.6×).
    #[tokio::test(flavor = "current_thread")]
    async fn queued_sends_let_other_tasks_run() {
        let (conn, _tasks, _peer) = ignoring(&ConnectionConfig::default()).await;
        let ran = Arc::new(AtomicUsize::new(0));
        let probe = tokio::spawn({
            let ran = ran.clone();
            async move {
                loop {
                    ran.fetch_add(1, Ordering::Relaxed);
                    tokio::task::yield_now().await;
                }
            }
        });
        // Fewer than the queue holds (1,024), so no send waits for room.
        let sender = tokio::spawn(async move {
            for id in 0..600 {
                conn.queue(Packet::new(id, 100, bytes::Bytes::new()))
                    .await
                    .unwrap();
            }
            ran.load(Ordering::Relaxed)
        });
        let ran_meanwhile = sender.await.unwrap();
        probe.abort();
        // tokio's budget is 128 operations per poll: four yields or so in 600 sends (without
        // the budget the probe runs once, before the sender starts).
        assert!(
            ran_meanwhile >= 3,
            "the probe ran {ran_meanwhile} times during 600 sends"
        );
    }

    /// A control packet (a CANCEL) sent while the write queue is full is not lost: it goes out
    /// once there is room. It was dropped, and the server's handler of a call or stream given up
    /// ran on (session 31's soak probe: an endless stream's handler left running, its id
    /// later reused).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_control_packet_waits_for_room_in_a_full_queue() {
        use futures_util::StreamExt;
        let config = ConnectionConfig {
            write_queue: 4,
            ping_interval: Duration::from_secs(3600),
            ..ConnectionConfig::default()
        };
        let (conn, _tasks, peer) = ignoring(&config).await;
        // The peer reads nothing yet: large packets fill the socket's buffers, then the queue.
        fill(&conn).await;
        conn.send_control(Packet::new(7, 200, bytes::Bytes::from_static(b"cancel")));
        let mut framed =
            tokio_util::codec::FramedRead::new(peer, frpc_wire::PacketCodec::new(Framing::Frisbee));
        let control = tokio::time::timeout(Duration::from_secs(10), async {
            while let Some(packet) = framed.next().await {
                let packet = packet.unwrap();
                if packet.op == 200 {
                    return packet;
                }
            }
            panic!("the connection ended without the control packet")
        })
        .await
        .expect("the control packet within 10 s");
        assert_eq!((control.id, &control.content[..]), (7, &b"cancel"[..]));
    }

    /// A sender that gives up waiting for a place in a full queue (its call timed out) leaves
    /// nothing counted once the queue empties: its packet's count kept the direct path closed
    /// for good, and its bytes out of `write_queue_bytes`, until a connection whose peer had
    /// been slow for a while could send nothing at all.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn senders_giving_up_on_a_full_queue_leave_nothing_counted() {
        use futures_util::StreamExt;
        let config = ConnectionConfig {
            write_queue: 4,
            ping_interval: Duration::from_secs(3600),
            ..ConnectionConfig::default()
        };
        let (conn, _tasks, peer) = ignoring(&config).await;
        fill(&conn).await;
        // Room in bytes, none in places: each waits for a place, and gives up (unless the
        // socket took more meanwhile and a place came free).
        let mut gave_up = std::collections::HashSet::new();
        for id in 0..64 {
            let send = conn.send(Packet::new(id, 101, bytes::Bytes::from_static(&[0; 1024])));
            if tokio::time::timeout(Duration::from_millis(1), send)
                .await
                .is_err()
            {
                gave_up.insert(id);
            }
        }
        assert!(gave_up.len() >= 32, "only {} of 64 senders waited", gave_up.len());
        // The peer reads everything, the last packet sent behind the rest.
        let last = tokio::spawn({
            let conn = conn.clone();
            async move { conn.send(Packet::new(1, 102, bytes::Bytes::new())).await }
        });
        let mut framed =
            tokio_util::codec::FramedRead::new(peer, frpc_wire::PacketCodec::new(Framing::Frisbee));
        let read = async {
            while let Some(packet) = framed.next().await {
                let packet = packet.unwrap();
                let given_up = packet.op == 101 && gave_up.contains(&packet.id);
                assert!(
                    !given_up,
                    "packet {} went out after its sender gave up",
                    packet.id
                );
            }
        };
        let deadline = Duration::from_secs(10);
        tokio::time::timeout(deadline, async {
            tokio::select! {
                _ = read => panic!("the connection ended"),
                _ = async {
                    last.await.unwrap().unwrap();
                    while conn.queue_bytes.queued() != 0 || conn.outbound.outstanding() != 0 {
                        tokio::task::yield_now().await;
                    }
                } => {}
            }
        })
        .await
        .unwrap_or_else(|_| {
            panic!(
                "still counted: {} bytes, {} packets",
                conn.queue_bytes.queued(),
                conn.outbound.outstanding()
            )
        });
    }

    /// Fills the connection's socket buffers and write queue with large packets its peer does
    /// not read; returns how many it queued.
    async fn fill(conn: &Connection) -> u16 {
        let filler = bytes::Bytes::from(vec![0u8; 256 * 1024]);
        let mut queued = 0u16;
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        // Until the socket takes no more and the queue is full behind it.
        loop {
            let full = conn.try_send(Packet::new(queued, 100, filler.clone())).is_err();
            if full && conn.writes.is_blocked() {
                return queued;
            }
            queued += u16::from(!full);
            // Let the writer take what the socket accepts.
            tokio::task::yield_now().await;
            assert!(std::time::Instant::now() < deadline, "the socket never filled");
        }
    }

    /// Control packets that find the queue full wait in one backlog sent by one task, in order,
    /// and at most [`CONTROL_BACKLOG`] wait: a task each grew by the thousand a second for a
    /// peer that pinged but never read (session 32's hostile-peers probe).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn control_packets_wait_in_one_bounded_backlog() {
        use futures_util::StreamExt;
        let config = ConnectionConfig {
            write_queue: 4,
            ping_interval: Duration::from_secs(3600),
            idle_timeout: Duration::from_secs(3600),
            ..ConnectionConfig::default()
        };
        let (conn, _tasks, peer) = ignoring(&config).await;
        fill(&conn).await;
        let tasks = || tokio::runtime::Handle::current().metrics().num_alive_tasks();
        let before = tasks();
        let sent = 2 * CONTROL_BACKLOG as u32 + 1000;
        for n in 0..sent {
            conn.send_control(Packet::new(7, 200, bytes::Bytes::from(n.to_be_bytes().to_vec())));
        }
        assert!(
            tasks() <= before + 1,
            "one task sends the backlog: {before} → {}",
            tasks()
        );
        assert!(conn.control_backlog().packets.len() <= CONTROL_BACKLOG);
        let mut framed =
            tokio_util::codec::FramedRead::new(peer, frpc_wire::PacketCodec::new(Framing::Frisbee));
        let read = tokio::time::timeout(Duration::from_secs(30), async move {
            let mut got = Vec::new();
            while let Some(packet) = framed.next().await {
                let packet = packet.unwrap();
                match packet.op {
                    200 => got.push(u32::from_be_bytes(packet.content[..].try_into().unwrap())),
                    201 => return got,
                    _ => {}
                }
            }
            panic!("the connection ended before the last control packet")
        });
        let read = tokio::spawn(read);
        // A last one, once the peer reads and the backlog has room: it goes behind the others.
        while conn.control_backlog().packets.len() >= CONTROL_BACKLOG {
            tokio::task::yield_now().await;
        }
        conn.send_control(Packet::new(8, 201, bytes::Bytes::new()));
        let got = read.await.unwrap().expect("the backlog within 30 s");
        assert!(got.windows(2).all(|pair| pair[0] < pair[1]), "in order");
        assert_eq!(got[0], 0);
        let kept = got.len();
        assert!(
            (CONTROL_BACKLOG..=2 * CONTROL_BACKLOG + 4).contains(&kept),
            "{kept} kept"
        );
        assert!(kept < sent as usize, "the backlog is bounded: all {sent} kept");
    }

    /// A reader busy on this side (a slow handler) excuses the peer's silence only while what
    /// this side writes goes: with its writes stuck too, the peer is dropped after the idle
    /// timeout. A vanished plain peer kept a server's connection, its stream handler and its
    /// buffered messages for ever (session 32's faults probe).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_busy_reader_with_stuck_writes_drops_a_silent_peer() {
        let config = ConnectionConfig {
            write_queue: 4,
            ping_interval: Duration::from_millis(50),
            idle_timeout: Duration::from_millis(200),
            ..ConnectionConfig::default()
        };
        // Busy, the peer reading everything and sending nothing: kept.
        let (conn, _tasks, mut peer) = ignoring(&config).await;
        tokio::spawn(async move {
            let mut sink = [0u8; 4096];
            while tokio::io::AsyncReadExt::read(&mut peer, &mut sink)
                .await
                .is_ok_and(|n| n > 0)
            {}
        });
        let busy = conn.mark_busy();
        let kept = tokio::time::timeout(Duration::from_millis(600), conn.closed()).await;
        assert!(kept.is_err(), "closed: {:?}", conn.close_reason());
        drop(busy);
        // Busy, the peer reading nothing: dropped.
        let (conn, _tasks, _peer) = ignoring(&config).await;
        fill(&conn).await;
        let _busy = conn.mark_busy();
        tokio::time::timeout(Duration::from_secs(10), conn.closed())
            .await
            .expect("a silent peer taking nothing is dropped");
        assert!(matches!(conn.close_reason(), Some(CloseReason::Idle(_))));
    }

    /// A small content cut from a larger shared buffer (as the calls floor cuts small
    /// encodings from its chunk) is copied out when it waits in the queue: the buffer is free
    /// again at once, whatever the peer's reading speed, and the peer still gets its bytes.
    #[tokio::test(flavor = "current_thread")]
    async fn a_queued_small_content_lets_go_of_the_buffer_it_was_cut_from() {
        use tokio::io::AsyncReadExt;
        let (conn, _tasks, mut peer) = ignoring(&ConnectionConfig::default()).await;
        let mut chunk = bytes::BytesMut::with_capacity(4096);
        chunk.extend_from_slice(&[7; 4096]);
        let chunk = chunk.freeze();
        let small = chunk.slice(..super::super::writer::SMALL_CONTENT);
        assert!(!chunk.is_unique());
        conn.queue(Packet::new(1, 100, small)).await.unwrap();
        // The queued packet holds a copy; nothing else holds the chunk.
        assert!(chunk.is_unique(), "the queued packet keeps the chunk alive");
        // In a packet of parts (an extension header before the message), the small part is
        // copied and the large one is not: it is its own buffer already.
        let (other, large) = (
            bytes::Bytes::from(vec![8; 4096]),
            bytes::Bytes::from(vec![9; 4000]),
        );
        let chain = crate::types::Encoded::chain(vec![other.slice(..100), large.clone()]);
        conn.queue(Outgoing::new(2, 100, chain)).await.unwrap();
        assert!(other.is_unique(), "the queued small part keeps its buffer alive");
        assert!(!large.is_unique(), "the large part was copied");
        let header = Framing::Frisbee.header_len();
        let small_len = super::super::writer::SMALL_CONTENT;
        let mut got = vec![0; 2 * header + small_len + 4100];
        peer.read_exact(&mut got).await.unwrap();
        let content = |at: usize, len: usize| &got[at + header..][..len];
        assert_eq!(content(0, small_len), &vec![7; small_len][..]);
        assert_eq!(content(header + small_len, 100), &[8; 100][..]);
        assert_eq!(content(header + small_len + 100, 4000), &large[..]);
        // A small content with a buffer of its own is queued as it is.
        let own = bytes::Bytes::from(vec![6; 64]);
        let at = own.as_ptr() as usize;
        match Outgoing::from(Packet::new(3, 100, own)).detached() {
            Outgoing::One(packet) => assert_eq!(packet.content.as_ptr() as usize, at),
            Outgoing::Chain { .. } => panic!("one content became a chain"),
        }
    }
}
