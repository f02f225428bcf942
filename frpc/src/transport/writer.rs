//! The write side of a connection: a writer task that batches queued packets into one write,
//! and a direct path on which a sender that finds the writer idle writes its packet itself,
//! saving the hand-off to the writer task (a wake-up and a context switch per message).
//! Transport floor.
//!
//! Both write under one lock around the socket's write half: a plain mutex, held by a sender for
//! its non-blocking write and by the writer task only to take the write half out (and put it
//! back once its write is done): a sender that finds it out queues, as it would behind the
//! writer task. The direct path is taken only when
//! nothing is queued or half-written ahead of the packet (`outstanding` counts only the cork,
//! checked under the lock), so packets leave in the order they were sent. A direct write that
//! the socket only partly takes leaves the rest to the writer task, which writes it before
//! anything else, the large contents it left in their own buffers. A busy writer and a reader
//! with more input buffered (whose replies batch better through the queue) take the queue.
//!
//! A **large content** (32 KiB to 256 KiB) ahead of the queue is written at once straight from
//! its own buffers, in vectored writes, whoever sends it (a cork leaves with it): worth a write
//! of its own, it is never copied into a batch. A larger one takes the queue: its write takes
//! long enough that the writer task doing it on another thread is worth the hand-off.
//!
//! The **cork** batches without the writer task: a sender that knows others follow on its own
//! task appends its packet to the bytes pending ahead of the queue, and the writer task takes
//! whatever is still corked before its queue (`Connection::send_or_cork`). Two senders cork:
//! - a client call made with others in flight: the first to cork writes them all with one
//!   write once its task has let the others append, so ten calls joined on one task cost one
//!   write and no hand-off;
//! - a server's reader replying while more requests are buffered: it writes the cork once it
//!   runs out of input (with its last reply) or has to wait (for the socket, or for a handler),
//!   so a batch of pipelined requests costs one write and no hand-off either.
//!
//! A cork that reaches the batch limit is written at once.
use std::io::IoSlice;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::time::Instant;

use bytes::{Buf, Bytes, BytesMut};
use frpc_wire::{Framing, Header, Packet, op};

use super::queue_bytes::QueueBytes;
use crate::types::Encoded;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

/// Content at least this large is written straight from its own buffer instead of being copied
/// into the batch buffer (and never corked: ahead of the queue it is written at once, after the
/// cork if there is one).
const LARGE_CONTENT: usize = 32 * 1024;
/// Contents up to this size may be cut from a larger buffer shared with others (the calls
/// floor cuts small encodings from a per-thread chunk): one that waits in the queue is copied
/// out first ([`Outgoing::detached`]). 1 KiB: a 512-byte message encodes to a few bytes more
/// (its kind and length), and at 512 each one cost a `malloc` and a `free` on both sides.
pub(crate) const SMALL_CONTENT: usize = 1024;
/// Content larger than this takes the queue even when nothing is ahead of it: writing it takes
/// long enough that the writer task doing it on another thread, while the sender goes on (a
/// server's reader to the next request), is worth the hand-off.
const DIRECT_MAX: usize = 256 * 1024;
/// The writer stops batching once this much is buffered.
const BATCH_LIMIT: usize = 64 * 1024;
/// How long a closing connection may spend flushing what is still queued (Go: 5 s).
pub(crate) const CLOSE_FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// A packet on its way out: a [`Packet`], or one whose content is a chain of parts ([`Encoded`]
/// as [`frpc_wire::Parts`] leaves it: an encoded message whose large `bytes` fields stay in
/// their own buffers), written with one vectored write and never copied; the header's length
/// is the whole chain's. The size of a `Packet`.
#[derive(Debug)]
pub(crate) enum Outgoing {
    One(Packet),
    Chain {
        id: u16,
        op: u16,
        /// Two parts or more.
        parts: Box<[Bytes]>,
    },
}

impl From<Packet> for Outgoing {
    #[inline]
    fn from(packet: Packet) -> Outgoing {
        Outgoing::One(packet)
    }
}

impl Outgoing {
    /// A packet whose content is `content`.
    #[inline]
    pub(crate) fn new(id: u16, op: u16, content: Encoded) -> Outgoing {
        match content.into_inner() {
            Ok(one) => Outgoing::One(Packet::new(id, op, one)),
            Err(parts) => Outgoing::Chain { id, op, parts },
        }
    }

    /// The packet as it waits in the queue: a small content that shares its buffer gets one of
    /// its own, so a peer that reads slowly keeps what it is owed alive, not the chunk it was
    /// cut from (with interleaved traffic, a chunk per queued packet). What the copy costs, the
    /// content's own allocation saved when it was encoded.
    #[inline]
    pub(crate) fn detached(mut self) -> Outgoing {
        fn detach(content: &mut Bytes) {
            // A buffer of its own (an extension header, anything not cut from a chunk) stays. A
            // content cut from the chunk shares it with the chunk itself until the chunk is full,
            // so the sender detaches it before it waits for anything.
            if !content.is_empty() && content.len() <= SMALL_CONTENT && !content.is_unique() {
                *content = Bytes::copy_from_slice(content);
            }
        }
        match &mut self {
            Outgoing::One(packet) => detach(&mut packet.content),
            // An extension header before the message, or the small parts between large ones.
            Outgoing::Chain { parts, .. } => parts.iter_mut().for_each(detach),
        }
        self
    }

    /// The length of the whole content.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        match self {
            Outgoing::One(packet) => packet.content.len(),
            Outgoing::Chain { parts, .. } => parts.iter().map(Bytes::len).sum(),
        }
    }

    /// The operation.
    #[inline]
    pub(crate) fn op(&self) -> u16 {
        match self {
            Outgoing::One(packet) => packet.op,
            Outgoing::Chain { op, .. } => *op,
        }
    }

    /// The content's parts, one after another.
    #[inline]
    fn parts(&self) -> &[Bytes] {
        match self {
            Outgoing::One(packet) => std::slice::from_ref(&packet.content),
            Outgoing::Chain { parts, .. } => parts,
        }
    }

    /// The packet's header; its length is checked against the limit (≤ u32) when queued.
    #[inline]
    fn header(&self) -> Header {
        let (id, op) = match self {
            Outgoing::One(packet) => (packet.id, packet.op),
            Outgoing::Chain { id, op, .. } => (*id, *op),
        };
        Header {
            id,
            op,
            len: self.len() as u32,
        }
    }
}

/// What the connection asks of its write side, whatever the socket type.
pub(crate) trait Outbound: Send + Sync {
    /// Writes `packet` at once if nothing is ahead of it and the writer is idle; gives it back
    /// to be queued otherwise.
    fn try_direct(&self, packet: Outgoing) -> Result<(), Outgoing>;
    /// A packet is about to be queued (the direct path closes until it is written).
    fn queued(&self);
    /// A packet counted by [`Outbound::queued`] never made it into the queue.
    fn unqueued(&self);
    /// Packets queued, half-written or corked (the direct path is open at 0).
    #[cfg(test)]
    fn outstanding(&self) -> usize;
    /// Appends `packet` to the cork if nothing is queued or half-written ahead of it; gives it
    /// back to be queued otherwise. `Ok(true)`: the cork was empty, so the caller must
    /// [`Outbound::flush_cork`] (once the packets joining it are in).
    fn try_cork(&self, packet: Outgoing) -> Result<bool, Outgoing>;
    /// Writes the cork if the socket takes it now, or leaves it to the writer task.
    fn flush_cork(&self);
}

/// The socket's write half and what the direct path left for the writer task.
struct Side<W> {
    /// `None` while the writer task writes (it takes it out of the lock), and once it has
    /// finished with it.
    write: Option<W>,
    /// Bytes a direct write could not hand to the socket.
    rest: BytesMut,
    /// What a direct write of a large packet could not hand to the socket after `rest`: the
    /// rest of its content, still in its own buffers.
    rest_parts: Vec<Bytes>,
    /// Whether a direct write left work (bytes or a flush) for the writer task.
    partial: bool,
    /// Whether `rest` holds corked packets that nobody tried to write yet (see the module
    /// docs). Corked or partial, `rest` counts as one outstanding packet.
    corked: bool,
    /// The direct path's encoding buffer, reused.
    scratch: BytesMut,
}

/// What the writer task takes out of the lock to write: the socket's write half, and the bytes
/// (and large contents) the direct path left, if it left any.
struct CheckedOut<W> {
    write: W,
    left: Option<(BytesMut, Vec<Bytes>)>,
}

/// The write side shared by the writer task and the senders.
pub(crate) struct Writer<W> {
    /// A std mutex, never held across an await: a tokio mutex's release alone took about a
    /// hundred instructions (it locks its waiter list), twice per call.
    side: Mutex<Side<W>>,
    /// Packets queued or half-written that the writer task has not finished yet.
    outstanding: AtomicUsize,
    /// Wakes the writer task for the rest of a direct write.
    wake: Notify,
    framing: Framing,
    /// The bytes of queued packets, given back as they are written.
    queue_bytes: Arc<QueueBytes>,
}

impl<W: AsyncWrite + Send + Unpin + 'static> Writer<W> {
    pub(crate) fn new(write: W, framing: Framing, queue_bytes: Arc<QueueBytes>) -> Writer<W> {
        Writer {
            queue_bytes,
            side: Mutex::new(Side {
                write: Some(write),
                rest: BytesMut::new(),
                rest_parts: Vec::new(),
                partial: false,
                corked: false,
                scratch: BytesMut::new(),
            }),
            outstanding: AtomicUsize::new(0),
            wake: Notify::new(),
            framing,
        }
    }

    /// Writes batches of queued packets until `closed` fires or a write fails; then flushes what
    /// is still queued (leaving heartbeats out when `keep` says the socket is handed back) and
    /// returns the write half when `keep` is true, or shuts it down.
    ///
    /// Once `closed` fires, the batch being written and the flush get `flush_limit()` between
    /// them (a peer that sent nothing for the idle timeout gets none): a peer that stopped
    /// reading otherwise held the task, the socket and the server's shutdown for good.
    pub(crate) async fn run(
        &self,
        mut queue: mpsc::Receiver<Outgoing>,
        closed: &CancellationToken,
        keep: impl FnOnce() -> bool,
        flush_limit: impl Fn() -> Duration,
    ) -> Result<Finished<W>, std::io::Error> {
        let mut buf = BytesMut::with_capacity(BATCH_LIMIT);
        let mut close_deadline = None;
        loop {
            let first = tokio::select! {
                biased;
                packet = queue.recv() => match packet {
                    Some(packet) => Some(packet),
                    None => break,
                },
                _ = self.wake.notified() => None,
                _ = closed.cancelled() => break,
            };
            let Some(mut out) = self.check_out() else { break };
            let outcome = {
                let batch = self.write_batch(&mut out, first, &mut queue, &mut buf);
                until_closed(batch, closed, &flush_limit).await
            };
            let written = match outcome {
                Batch::Written(written) => written,
                Batch::Closed(written, deadline) => {
                    close_deadline = Some(deadline);
                    written
                }
                // Given up: the write half is not put back, so `finish` has none.
                Batch::GivenUp => return Ok(Finished::Unflushed),
            };
            self.check_in(out, written.is_ok());
            written?;
            if close_deadline.is_some() {
                break;
            }
        }
        let deadline = close_deadline.unwrap_or_else(|| Instant::now() + flush_limit());
        Ok(self.finish(queue, buf, keep(), deadline).await)
    }

    /// Writes what the direct path left (if anything), then `first` and the packets queued
    /// behind it, in batches of up to [`BATCH_LIMIT`].
    async fn write_batch(
        &self,
        out: &mut CheckedOut<W>,
        first: Option<Outgoing>,
        queue: &mut mpsc::Receiver<Outgoing>,
        buf: &mut BytesMut,
    ) -> std::io::Result<()> {
        let write = &mut out.write;
        if let Some((rest, parts)) = &out.left {
            write_chain(write, rest, parts).await?;
            write.flush().await?;
        }
        let Some(packet) = first else { return Ok(()) };
        let (mut written, mut bytes) = (1, packet.len());
        write_packet(write, buf, self.framing, packet).await?;
        while buf.len() < BATCH_LIMIT {
            match queue.try_recv() {
                Ok(packet) => {
                    bytes += packet.len();
                    write_packet(write, buf, self.framing, packet).await?
                }
                Err(_) => break,
            }
            written += 1;
        }
        write.write_all(buf).await?;
        buf.clear();
        // Before the write half goes back: senders see the count only with it.
        self.outstanding.fetch_sub(written, Ordering::Release);
        self.queue_bytes.give_back(bytes);
        Ok(())
    }

    fn lock_side(&self) -> MutexGuard<'_, Side<W>> {
        self.side.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The lock if no one holds it now (a poisoned one too: the side stays consistent, as
    /// nothing in it panics halfway).
    fn try_lock_side(&self) -> Option<MutexGuard<'_, Side<W>>> {
        match self.side.try_lock() {
            Ok(side) => Some(side),
            Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// Takes the write half out of the lock for the writer task, with what the direct path
    /// left for it; `None` once the writer has finished.
    fn check_out(&self) -> Option<CheckedOut<W>> {
        let mut side = self.lock_side();
        let write = side.write.take()?;
        let left = (side.partial || side.corked).then(|| {
            (
                std::mem::take(&mut side.rest),
                std::mem::take(&mut side.rest_parts),
            )
        });
        Some(CheckedOut { write, left })
    }

    /// Puts the write half back. What the direct path left is done once `written`: its flags
    /// clear and its buffers come back empty (their room kept); after a failed write it is
    /// put back as it was, as the connection closes.
    fn check_in(&self, out: CheckedOut<W>, written: bool) {
        let mut side = self.lock_side();
        side.write = Some(out.write);
        let Some((mut rest, mut parts)) = out.left else {
            return;
        };
        if written {
            rest.clear();
            parts.clear();
            (side.partial, side.corked) = (false, false);
            self.outstanding.fetch_sub(1, Ordering::Release);
        }
        (side.rest, side.rest_parts) = (rest, parts);
    }

    /// Closing: flushes the rest of a direct write and what was queued before the close (a
    /// closing status reply, say), until `deadline`.
    async fn finish(
        &self,
        mut queue: mpsc::Receiver<Outgoing>,
        mut buf: BytesMut,
        keep: bool,
        deadline: Instant,
    ) -> Finished<W> {
        let (mut write, rest, rest_parts) = {
            let mut side = self.lock_side();
            let Some(write) = side.write.take() else {
                return Finished::Unflushed;
            };
            (
                write,
                std::mem::take(&mut side.rest),
                std::mem::take(&mut side.rest_parts),
            )
        };
        let flush = async {
            write_chain(&mut write, &rest, &rest_parts).await?;
            queue.close();
            while let Some(packet) = queue.recv().await {
                // A heartbeat would land in the raw byte stream of a taken-over connection.
                if keep && packet.op() <= op::PONG {
                    continue;
                }
                write_packet(&mut write, &mut buf, self.framing, packet).await?;
            }
            write.write_all(&buf).await?;
            write.flush().await
        };
        let flushed = matches!(tokio::time::timeout_at(deadline, flush).await, Ok(Ok(())));
        if keep {
            return Finished::Kept(write);
        }
        let _ = write.shutdown().await;
        match flushed {
            true => Finished::Flushed,
            false => Finished::Unflushed,
        }
    }
}

/// How the writer ended, the connection closed.
pub(crate) enum Finished<W> {
    /// The write half, kept for a takeover.
    Kept(W),
    /// Everything queued went out, and the write half was shut down.
    Flushed,
    /// What was queued did not all go out (a peer that does not read, a failed write).
    Unflushed,
}

/// What came of a batch raced against the connection's close.
enum Batch {
    /// Written (or failed) before any close.
    Written(std::io::Result<()>),
    /// The close came first; the batch was finished (or failed) within the flush limit, which
    /// ends at the deadline.
    Closed(std::io::Result<()>, Instant),
    /// The close came first and the flush limit passed with the batch unwritten.
    GivenUp,
}

/// Writes `batch` until `closed` fires, then for at most `flush_limit()` more.
async fn until_closed(
    batch: impl Future<Output = std::io::Result<()>>,
    closed: &CancellationToken,
    flush_limit: &impl Fn() -> Duration,
) -> Batch {
    tokio::pin!(batch);
    // Polled once first: a batch the socket takes at once (nearly all) never waits on the
    // close, whose wait registers with the token.
    if let Poll::Ready(written) = futures_util::poll!(&mut batch) {
        return Batch::Written(written);
    }
    tokio::select! {
        biased;
        written = &mut batch => Batch::Written(written),
        _ = closed.cancelled() => {
            let deadline = Instant::now() + flush_limit();
            match tokio::time::timeout_at(deadline, &mut batch).await {
                Ok(written) => Batch::Closed(written, deadline),
                Err(_) => Batch::GivenUp,
            }
        }
    }
}

impl<W: AsyncWrite + Send + Unpin + 'static> Writer<W> {
    /// Whether a packet may be written (or corked) ahead of the queue: the socket is ours (not
    /// out with the writer task), nothing is half-written, and nothing but the cork is
    /// outstanding. Checked under the lock, as the writer task decrements `outstanding` only
    /// while the write half is out, or holding the lock.
    fn first_in_line(&self, side: &Side<W>) -> bool {
        !side.partial
            && side.write.is_some()
            && self.outstanding.load(Ordering::Acquire) == usize::from(side.corked)
    }

    /// The write side, if a packet of `len` bytes may go (or be corked) ahead of the queue now
    /// (at most [`DIRECT_MAX`]): cheap checks first, then the lock without waiting, then
    /// [`first_in_line`].
    ///
    /// [`first_in_line`]: Writer::first_in_line
    fn ahead_of_queue(&self, len: usize) -> Option<MutexGuard<'_, Side<W>>> {
        if len > DIRECT_MAX || self.outstanding.load(Ordering::Acquire) > 1 {
            return None;
        }
        let side = self.try_lock_side()?;
        self.first_in_line(&side).then_some(side)
    }

    /// Writes a large packet ahead of the queue (after the cork, if there is one, which leaves
    /// with it) straight from its own buffers, in vectored writes: no copy and no hand-off to
    /// the writer task when the socket takes it. What the socket does not take now goes to the
    /// writer task, the content still in its own buffers.
    fn write_large(&self, side: &mut Side<W>, packet: &Outgoing) {
        let counted = std::mem::take(&mut side.corked);
        packet.header().encode(self.framing, &mut side.rest);
        let write = side.write.as_mut().expect("checked by first_in_line");
        let parts = packet.parts();
        let written = write_chain_now(write, &side.rest, parts);
        if written == side.rest.len() + packet.len() && flush_now(write) {
            side.rest.clear();
            if counted {
                self.outstanding.fetch_sub(1, Ordering::Release);
            }
            return;
        }
        let mut skip = written.saturating_sub(side.rest.len());
        side.rest.advance(written.min(side.rest.len()));
        for part in parts {
            if skip < part.len() {
                side.rest_parts.push(part.slice(skip..));
            }
            skip = skip.saturating_sub(part.len());
        }
        side.partial = true;
        if !counted {
            self.outstanding.fetch_add(1, Ordering::Release);
        }
        self.wake.notify_one();
    }

    /// Writes the cork as far as the socket takes it now; what is left (or a flush the writer
    /// needs, like TLS) goes to the writer task, before anything queued after it.
    fn write_cork(&self, side: &mut Side<W>) {
        let Some(write) = side.write.as_mut() else { return };
        let written = write_now(write, &side.rest);
        if written == side.rest.len() && flush_now(write) {
            side.rest.clear();
            side.corked = false;
            self.outstanding.fetch_sub(1, Ordering::Release);
            return;
        }
        side.rest.advance(written);
        (side.partial, side.corked) = (true, false);
        self.wake.notify_one();
    }
}

impl<W: AsyncWrite + Send + Unpin + 'static> Outbound for Writer<W> {
    fn try_direct(&self, packet: Outgoing) -> Result<(), Outgoing> {
        let Some(mut side) = self.ahead_of_queue(packet.len()) else {
            return Err(packet);
        };
        let side = &mut *side;
        if packet.len() >= LARGE_CONTENT {
            self.write_large(side, &packet);
            return Ok(());
        }
        if side.corked {
            // The cork leaves first, in the same write.
            encode(&mut side.rest, self.framing, &packet);
            self.write_cork(side);
            return Ok(());
        }
        let write = side.write.as_mut().expect("checked by first_in_line");
        side.scratch.clear();
        encode(&mut side.scratch, self.framing, &packet);
        let written = write_now(write, &side.scratch);
        if written < side.scratch.len() || !flush_now(write) {
            // The socket is full (or the writer needs a flush, like TLS): the writer task takes
            // it from here, before anything queued after us.
            side.rest.extend_from_slice(&side.scratch[written..]);
            side.partial = true;
            self.outstanding.fetch_add(1, Ordering::Release);
            self.wake.notify_one();
        }
        Ok(())
    }

    fn try_cork(&self, packet: Outgoing) -> Result<bool, Outgoing> {
        let Some(mut side) = self.ahead_of_queue(packet.len()) else {
            return Err(packet);
        };
        let side = &mut *side;
        if packet.len() >= LARGE_CONTENT {
            // Worth a write of its own: it leaves now, and takes the cork with it.
            self.write_large(side, &packet);
            return Ok(false);
        }
        encode(&mut side.rest, self.framing, &packet);
        let first = !side.corked;
        if first {
            side.corked = true;
            self.outstanding.fetch_add(1, Ordering::Release);
        }
        if side.rest.len() >= BATCH_LIMIT {
            // A long batch (a reader with plenty of input) leaves now, as the writer's would.
            self.write_cork(side);
        }
        Ok(first)
    }

    fn flush_cork(&self) {
        // Nothing outstanding, so nothing corked: the common case (a reader about to wait)
        // costs one load instead of the lock.
        if self.outstanding.load(Ordering::Acquire) == 0 {
            return;
        }
        let Some(mut side) = self.try_lock_side() else {
            // A sender holds it for a moment; the writer task takes the cork once woken.
            self.wake.notify_one();
            return;
        };
        let side = &mut *side;
        // Not corked: the writer task (or a direct write) wrote it already.
        if side.corked {
            self.write_cork(side);
        }
    }

    fn queued(&self) {
        self.outstanding.fetch_add(1, Ordering::Release);
    }

    fn unqueued(&self) {
        self.outstanding.fetch_sub(1, Ordering::Release);
    }

    #[cfg(test)]
    fn outstanding(&self) -> usize {
        self.outstanding.load(Ordering::Acquire)
    }
}

/// Writes as much of `bytes` as the socket takes without waiting.
fn write_now<W: AsyncWrite + Unpin>(write: &mut W, bytes: &[u8]) -> usize {
    let mut cx = Context::from_waker(Waker::noop());
    let mut written = 0;
    while written < bytes.len() {
        match Pin::new(&mut *write).poll_write(&mut cx, &bytes[written..]) {
            Poll::Ready(Ok(n)) if n > 0 => written += n,
            // Not now (or an error the writer task will meet and report).
            _ => break,
        }
    }
    written
}

/// Writes as much of `batch` then `parts` as the socket takes without waiting, with vectored
/// writes.
fn write_chain_now<W: AsyncWrite + Unpin>(write: &mut W, batch: &[u8], parts: &[Bytes]) -> usize {
    let mut cx = Context::from_waker(Waker::noop());
    let mut slices = io_slices(batch, parts);
    let mut slices = &mut slices[..];
    let mut written = 0;
    while !slices.is_empty() {
        match Pin::new(&mut *write).poll_write_vectored(&mut cx, slices) {
            Poll::Ready(Ok(n)) if n > 0 => {
                written += n;
                IoSlice::advance_slices(&mut slices, n);
            }
            // Not now (or an error the writer task will meet and report).
            _ => break,
        }
    }
    written
}

/// `batch` then `parts`, as the slices of a vectored write (empty ones left out).
fn io_slices<'a>(batch: &'a [u8], parts: &'a [Bytes]) -> Vec<IoSlice<'a>> {
    std::iter::once(batch)
        .chain(parts.iter().map(|part| &part[..]))
        .filter(|part| !part.is_empty())
        .map(IoSlice::new)
        .collect()
}

/// Flushes without waiting; `false` when the writer has more to do.
fn flush_now<W: AsyncWrite + Unpin>(write: &mut W) -> bool {
    let mut cx = Context::from_waker(Waker::noop());
    matches!(Pin::new(write).poll_flush(&mut cx), Poll::Ready(Ok(())))
}

/// Appends a packet's header and content to `buf`.
fn encode(buf: &mut BytesMut, framing: Framing, packet: &Outgoing) {
    packet.header().encode(framing, buf);
    for part in packet.parts() {
        buf.extend_from_slice(part);
    }
}

/// Appends a packet to the batch; a large content is written from its own buffers (each part
/// of a chain from its own) together with what is batched so far, in one vectored write, so it
/// is never copied.
async fn write_packet<W: AsyncWrite + Unpin>(
    write: &mut W,
    buf: &mut BytesMut,
    framing: Framing,
    packet: Outgoing,
) -> std::io::Result<()> {
    if packet.len() < LARGE_CONTENT {
        encode(buf, framing, &packet);
        return Ok(());
    }
    packet.header().encode(framing, buf);
    match &packet {
        Outgoing::One(packet) => write_both(write, buf, &packet.content).await?,
        Outgoing::Chain { parts, .. } => write_chain(write, buf, parts).await?,
    }
    buf.clear();
    Ok(())
}

/// Writes `first` then `second` with vectored writes (one syscall when the socket takes both).
async fn write_both<W: AsyncWrite + Unpin>(
    write: &mut W,
    first: &[u8],
    second: &[u8],
) -> std::io::Result<()> {
    let (mut first, mut second) = (first, second);
    while !first.is_empty() {
        let n = write
            .write_vectored(&[IoSlice::new(first), IoSlice::new(second)])
            .await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        if n < first.len() {
            first = &first[n..];
        } else {
            second = &second[n - first.len()..];
            first = &[];
        }
    }
    write.write_all(second).await
}

/// Writes `batch` then `parts`, one after another, with vectored writes (one syscall when the
/// socket takes them all).
async fn write_chain<W: AsyncWrite + Unpin>(
    write: &mut W,
    batch: &[u8],
    parts: &[Bytes],
) -> std::io::Result<()> {
    let mut slices = io_slices(batch, parts);
    let mut slices = &mut slices[..];
    while !slices.is_empty() {
        let n = write.write_vectored(slices).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        IoSlice::advance_slices(&mut slices, n);
    }
    Ok(())
}
