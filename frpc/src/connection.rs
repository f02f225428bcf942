//! One Frisbee connection: a reader task, a writer task and a heartbeat task around a TCP
//! stream. Clients and servers differ only in the [`Dispatch`] that the reader hands packets to.
//!
//! - The **writer** batches every queued packet into one buffer and writes it with one syscall,
//!   flushing as soon as its queue is empty. Its queue is bounded: a peer that stops reading
//!   slows our senders down instead of growing memory.
//! - The **reader** answers PING with PONG, drops PONG, routes `STREAM` packets to their
//!   stream and everything else to the dispatcher.
//! - The **heartbeat** sends a PING every `ping_interval` and closes the connection when the
//!   peer has sent nothing for `idle_timeout` (Go's 5 s read deadline).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use frpc_wire::{Framing, Header, Packet, PacketCodec, op};
use futures_util::StreamExt;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::mpsc;
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::config::ConnectionConfig;
use crate::status::Error;
use crate::stream::StreamTable;

/// Content at least this large is written straight from its own buffer instead of being copied
/// into the batch buffer.
const LARGE_CONTENT: usize = 32 * 1024;
/// The writer stops batching once this much is buffered.
const BATCH_LIMIT: usize = 64 * 1024;
/// Under continuous traffic the reader looks at the server's shutdown signal every this many
/// packets (it also wakes for it whenever the socket is idle).
const DRAIN_CHECK_EVERY: u32 = 64;
/// How long a closing connection may spend flushing what is still queued (Go: 5 s).
const CLOSE_FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// What the reader does with packets that are not heartbeats or known streams.
pub(crate) trait Dispatch: Send + Sync + 'static {
    /// An application packet (any op but PING, PONG and STREAM).
    fn packet(&self, conn: &Arc<Connection>, packet: Packet) -> impl Future<Output = ()> + Send;
    /// The first data packet of a stream this side has not opened.
    fn new_stream(&self, conn: &Arc<Connection>, id: u16, first: Bytes) -> impl Future<Output = ()> + Send;
    /// The connection closed (called once, by the reader, as it stops).
    fn closed(&self, conn: &Arc<Connection>);
}

/// The shared half of a connection: what tasks and handles use to send and to close.
#[derive(Debug)]
pub(crate) struct Connection {
    out: mpsc::Sender<Packet>,
    closed: CancellationToken,
    is_closed: AtomicBool,
    close_reason: OnceLock<String>,
    peer: SocketAddr,
    codec: PacketCodec,
    pub(crate) streams: StreamTable,
    /// Set by the reader whenever bytes arrive, cleared by the heartbeat.
    activity: AtomicBool,
    /// Set while the reader runs a handler inline, so the silence is not blamed on the peer.
    busy: AtomicBool,
    /// Set when the socket is to be handed back instead of shut down.
    taking_over: AtomicBool,
    config: ConnectionConfig,
}

/// Handles to a connection's tasks. The reader gives back its half of the socket and the bytes
/// read but not parsed; the writer gives back its half only on takeover (otherwise it shuts it).
#[derive(Debug)]
pub(crate) struct Tasks<R, W> {
    pub(crate) reader: tokio::task::JoinHandle<(R, BytesMut)>,
    pub(crate) writer: tokio::task::JoinHandle<Option<W>>,
}

impl Tasks<OwnedReadHalf, OwnedWriteHalf> {
    /// Waits for both tasks after [`Connection::take_over`] and reunites the socket.
    pub(crate) async fn into_raw(self) -> std::io::Result<(TcpStream, BytesMut)> {
        let reader = self.reader.await.map_err(std::io::Error::other)?;
        let join = |read: OwnedReadHalf, write| read.reunite(write).map_err(std::io::Error::other);
        Self::reunite(reader, self.writer, join).await
    }
}

impl<R, W> Tasks<R, W> {
    /// Waits for the writer of a taken-over connection (the reader already stopped) and joins
    /// the halves back into a socket.
    pub(crate) async fn reunite(
        (read, unparsed): (R, BytesMut),
        writer: tokio::task::JoinHandle<Option<W>>,
        join: impl FnOnce(R, W) -> std::io::Result<TcpStream>,
    ) -> std::io::Result<(TcpStream, BytesMut)> {
        let write = writer
            .await
            .map_err(std::io::Error::other)?
            .ok_or_else(|| std::io::Error::other("the connection failed before it could be taken over"))?;
        Ok((join(read, write)?, unparsed))
    }
}

impl Connection {
    /// Starts the three tasks on a read and a write half. `drain` (servers) makes the reader
    /// stop taking new packets once it fires, after those already received.
    pub(crate) fn spawn<R, W, D>(
        (read, write): (R, W),
        peer: SocketAddr,
        config: &ConnectionConfig,
        dispatch: D,
        drain: Option<CancellationToken>,
        streams_gauge: Arc<AtomicUsize>,
    ) -> (Arc<Connection>, Tasks<R, W>)
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
        D: Dispatch,
    {
        let (out, queue) = mpsc::channel(config.write_queue.max(1));
        let codec = PacketCodec::new(config.framing).with_max_content_length(config.max_content_length);
        let conn = Arc::new(Connection {
            out,
            closed: CancellationToken::new(),
            is_closed: AtomicBool::new(false),
            close_reason: OnceLock::new(),
            peer,
            codec,
            streams: StreamTable::new(config.max_streams, config.stream_buffer, streams_gauge),
            activity: AtomicBool::new(false),
            busy: AtomicBool::new(false),
            taking_over: AtomicBool::new(false),
            config: config.clone(),
        });
        let span = tracing::debug_span!("connection", %peer);
        let writer = tokio::spawn(write_loop(conn.clone(), write, queue).instrument(span.clone()));
        let framed = FramedRead::with_capacity(read, codec, 64 * 1024);
        let reader = tokio::spawn(read_loop(conn.clone(), framed, dispatch, drain).instrument(span.clone()));
        tokio::spawn(heartbeat(conn.clone()).instrument(span));
        (conn, Tasks { reader, writer })
    }

    /// The remote address.
    pub(crate) fn peer(&self) -> SocketAddr {
        self.peer
    }

    /// The framing this connection speaks.
    pub(crate) fn framing(&self) -> Framing {
        self.codec.framing()
    }

    /// Checks a content length against the connection's limit.
    pub(crate) fn check_len(&self, len: usize) -> Result<(), Error> {
        self.codec.check_len(len).map(|_| ()).map_err(Error::from)
    }

    /// Queues a packet, waiting while the writer's queue is full.
    pub(crate) async fn send(&self, packet: Packet) -> Result<(), Error> {
        self.check_len(packet.content.len())?;
        if self.is_closed() {
            return Err(self.closed_error());
        }
        self.out.send(packet).await.map_err(|_| self.closed_error())
    }

    /// The connection's settings.
    pub(crate) fn config(&self) -> &ConnectionConfig {
        &self.config
    }

    /// Queues a packet if there is room right now (for callers that cannot wait, like `Drop`).
    pub(crate) fn try_send(&self, packet: Packet) -> Result<(), Error> {
        self.check_len(packet.content.len())?;
        self.out.try_send(packet).map_err(|_| self.closed_error())
    }

    /// Closes the connection: the reader stops, the writer flushes what is queued and shuts
    /// the socket down, pending calls and streams fail. The first reason given is kept.
    pub(crate) fn close(&self, reason: impl Into<String>) {
        let _ = self.close_reason.set(reason.into());
        self.is_closed.store(true, Ordering::Release);
        self.closed.cancel();
        self.streams.close_all(&self.closed_error());
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
            reason: self.close_reason.get().cloned(),
        }
    }

    /// Stops the tasks so that the socket can be handed back: the writer flushes what is queued
    /// and keeps its half open; collect both halves with [`Tasks::into_raw`].
    pub(crate) fn take_over(&self) {
        self.taking_over.store(true, Ordering::SeqCst);
        self.close("connection taken over");
    }

    /// Runs `f` marked as busy, so a long inline handler is not mistaken for an idle peer.
    pub(crate) async fn busy<T>(&self, f: impl Future<Output = T>) -> T {
        self.busy.store(true, Ordering::Relaxed);
        let out = f.await;
        self.busy.store(false, Ordering::Relaxed);
        self.activity.store(true, Ordering::Relaxed);
        out
    }
}

async fn read_loop<R: AsyncRead + Unpin, D: Dispatch>(
    conn: Arc<Connection>,
    mut framed: FramedRead<R, PacketCodec>,
    dispatch: D,
    drain: Option<CancellationToken>,
) -> (R, BytesMut) {
    let closed = conn.closed.cancelled();
    tokio::pin!(closed);
    let drain_token = drain.unwrap_or_default();
    let draining = drain_token.cancelled();
    tokio::pin!(draining);
    let mut since_drain_check = 0u32;
    loop {
        // Closing is checked with an atomic between packets (a takeover must stop before the next
        // packet is parsed); the cancellation futures below are only polled when the socket has
        // nothing ready, because polling them takes a lock.
        if conn.is_closed() {
            break;
        }
        since_drain_check += 1;
        if since_drain_check == DRAIN_CHECK_EVERY {
            since_drain_check = 0;
            if drain_token.is_cancelled() {
                drain_buffered(&conn, &mut framed, &dispatch).await;
                break;
            }
        }
        let next = tokio::select! {
            biased;
            next = framed.next() => next,
            _ = &mut closed => break,
            _ = &mut draining => {
                drain_buffered(&conn, &mut framed, &dispatch).await;
                break;
            }
        };
        match next {
            Some(Ok(packet)) => handle(&conn, &dispatch, packet).await,
            Some(Err(err)) => {
                tracing::debug!(peer = %conn.peer, error = %err, "closing connection on read error");
                conn.close(err.to_string());
                break;
            }
            None => {
                conn.close("peer closed the connection");
                break;
            }
        }
    }
    if conn.is_closed() {
        dispatch.closed(&conn);
    }
    let parts = framed.into_parts();
    (parts.io, parts.read_buf)
}

/// Handles the packets already received when a server starts shutting down, without waiting
/// for more.
async fn drain_buffered<R: AsyncRead + Unpin, D: Dispatch>(
    conn: &Arc<Connection>,
    framed: &mut FramedRead<R, PacketCodec>,
    dispatch: &D,
) {
    use futures_util::FutureExt;
    while let Some(Some(Ok(packet))) = framed.next().now_or_never() {
        handle(conn, dispatch, packet).await;
    }
}

async fn handle<D: Dispatch>(conn: &Arc<Connection>, dispatch: &D, packet: Packet) {
    conn.activity.store(true, Ordering::Relaxed);
    match packet.op {
        op::PING => {
            let _ = conn.out.send(Packet::pong()).await;
        }
        op::PONG => {}
        op::STREAM => {
            if let Some(first) = conn.streams.route(conn, packet.id, packet.content) {
                dispatch.new_stream(conn, packet.id, first).await;
            }
        }
        _ => dispatch.packet(conn, packet).await,
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(
    conn: Arc<Connection>,
    mut write: W,
    mut queue: mpsc::Receiver<Packet>,
) -> Option<W> {
    let framing = conn.framing();
    let mut buf = BytesMut::with_capacity(BATCH_LIMIT);
    let closed = conn.closed.cancelled();
    tokio::pin!(closed);
    let result: std::io::Result<()> = async {
        loop {
            let first = tokio::select! {
                biased;
                packet = queue.recv() => packet,
                _ = &mut closed => None,
            };
            let Some(packet) = first else { return Ok(()) };
            write_packet(&mut write, &mut buf, framing, packet).await?;
            while buf.len() < BATCH_LIMIT {
                match queue.try_recv() {
                    Ok(packet) => write_packet(&mut write, &mut buf, framing, packet).await?,
                    Err(_) => break,
                }
            }
            write.write_all(&buf).await?;
            buf.clear();
        }
    }
    .await;
    if let Err(err) = result {
        tracing::debug!(peer = %conn.peer, error = %err, "closing connection on write error");
        conn.close(format!("write failed: {err}"));
        return None;
    }
    // Closing: flush what was queued before the close (a closing status reply, say).
    let taking_over = conn.taking_over.load(Ordering::SeqCst);
    let flush = async {
        queue.close();
        while let Some(packet) = queue.recv().await {
            // A heartbeat would land in the raw byte stream of a taken-over connection.
            if taking_over && packet.op <= op::PONG {
                continue;
            }
            write_packet(&mut write, &mut buf, framing, packet).await?;
        }
        write.write_all(&buf).await?;
        write.flush().await
    };
    let _ = tokio::time::timeout(CLOSE_FLUSH_TIMEOUT, flush).await;
    if taking_over {
        return Some(write);
    }
    let _ = write.shutdown().await;
    None
}

/// Appends a packet to the batch; a large content is written from its own buffer after what is
/// batched so far, so it is never copied.
async fn write_packet<W: AsyncWrite + Unpin>(
    write: &mut W,
    buf: &mut BytesMut,
    framing: Framing,
    packet: Packet,
) -> std::io::Result<()> {
    let len = packet.content.len();
    Header {
        id: packet.id,
        op: packet.op,
        len: len as u32, // checked against the limit (≤ u32) when queued
    }
    .encode(framing, buf);
    if len < LARGE_CONTENT {
        buf.extend_from_slice(&packet.content);
        return Ok(());
    }
    write.write_all(buf).await?;
    buf.clear();
    write.write_all(&packet.content).await
}

async fn heartbeat(conn: Arc<Connection>) {
    let interval = conn.config.ping_interval;
    let idle_timeout = conn.config.idle_timeout;
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut silent = Duration::ZERO;
    loop {
        tokio::select! {
            _ = conn.closed.cancelled() => return,
            _ = ticks.tick() => {}
        }
        // A full queue means we are writing anyway; the PING would add nothing.
        let _ = conn.out.try_send(Packet::ping());
        if conn.activity.swap(false, Ordering::Relaxed) || conn.busy.load(Ordering::Relaxed) {
            silent = Duration::ZERO;
        } else {
            silent += interval;
            if silent >= idle_timeout {
                tracing::debug!(peer = %conn.peer, ?idle_timeout, "closing idle connection");
                conn.close(format!("peer sent nothing for {idle_timeout:?}"));
                return;
            }
        }
    }
}
