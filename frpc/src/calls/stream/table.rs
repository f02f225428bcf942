//! The per-connection stream table: routes packets to their streams, counts credit, refuses
//! streams over the limits and fails the ones a peer overflows.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use frpc_wire::op;
use tokio::sync::{Semaphore, mpsc};

use crate::calls::budget::{ByteBudget, Share};
use crate::calls::credit::CreditBack;
use crate::calls::ext::{self, CallState, Window};
use crate::calls::held::{self, Hold};
use crate::status::{Error, Status};
use crate::transport::connection::Connection;
use crate::transport::writer::SMALL_CONTENT;

use super::bytes::{ByteCredit, ByteWindow};
use super::common::*;

/// How the peer learns that this side failed a stream (its peer overflowed it, exceeded its
/// credit, or sent a message over the limit).
#[derive(Debug, Clone, Copy)]
enum Notice {
    /// CANCEL, as dropping the stream would send: a stream this side opened, whose peer takes
    /// cancellation. Its handler is dropped; an error would not reach a server-streaming
    /// handler, which never reads the client's half, and it would run on, holding its place.
    Cancel,
    /// The error (with its code when `codes`) and `EOF`: for a stream the peer opened, or a
    /// peer without cancellation (Go's).
    Error { codes: bool },
}

impl Notice {
    /// Sends the notice without waiting (best effort: with the write queue full the peer is
    /// not reading anyway).
    fn send(self, conn: &Arc<Connection>, id: u16, status: Status) {
        match self {
            Notice::Cancel => conn.send_control(ext::cancel(op::STREAM, id)),
            Notice::Error { codes } => send_detached(conn, id, status, codes),
        }
    }
}

#[derive(Debug)]
pub(super) struct Route {
    pub(super) tx: mpsc::Sender<Buffered>,
    pub(super) end: Arc<OnceLock<EndReason>>,
    /// The call the peer's CANCEL cancels (server streams on connections with extensions).
    pub(super) cancel: Option<Arc<CallState>>,
    /// Data messages the peer may still send (flow-controlled streams): the reader takes one
    /// per message, the consumer gives back what it read.
    pub(super) recv_credit: Option<Arc<AtomicU32>>,
    /// What this side may send (flow-controlled streams). Closed once the stream ends, which
    /// lets waiting senders go on (and fail on a closed connection, or send what the peer
    /// drops, as without flow control).
    pub(super) send_credit: Option<Arc<Semaphore>>,
    /// The peer's byte credit as this side counts it (flow control in bytes).
    pub(super) recv_bytes: Option<Arc<ByteWindow>>,
    /// What this side may send, in bytes (flow control in bytes).
    pub(super) send_bytes: Option<Arc<ByteCredit>>,
    /// Opened by this side: the peer's error or `EOF` means it reads no more.
    pub(super) local: bool,
    /// Opened by this side, and the peer ended it (its error or `EOF` came): nothing more of
    /// the peer's is on its way, so its id is free once its handles go.
    pub(super) peer_ended: bool,
    /// Waiting for the peer's OPENED.
    pub(super) awaiting_ack: bool,
    /// The stream's errors carry a status code (status codes negotiated).
    pub(super) codes: bool,
    /// What frees its id if this side gives it up before the peer ended it; for a stream this
    /// side opened whose peer takes cancellation, this side failing it tells the peer with
    /// CANCEL (see [`Notice`]). `Plain` for a stream the peer opened.
    pub(super) hold: Hold,
    /// Set by the consumer while it waits on an empty buffer (see [`Arena`]).
    pub(super) parked: Arc<AtomicBool>,
    /// Where small messages wait, copied out of the read buffer.
    pub(super) arena: Arena,
}

impl Route {
    /// How the peer learns that this side failed the stream.
    fn notice(&self) -> Notice {
        match self.hold.cancels() {
            true => Notice::Cancel,
            false => Notice::Error { codes: self.codes },
        }
    }

    /// Ends this side's sending credit: nothing more will come.
    pub(super) fn close_credit(&self) {
        if let Some(credit) = &self.send_credit {
            credit.close();
        }
        if let Some(credit) = &self.send_bytes {
            credit.close();
        }
    }
}

#[derive(Debug, Default)]
pub(super) struct Table {
    pub(super) routes: HashMap<u16, Route>,
    pub(super) next_id: u16,
    /// Streams this side opened and gave up before the peer ended them (their handles dropped,
    /// a deadline, a failure here), with until when: their ids stay out of use while the
    /// peer's late messages may still come (see `calls::held`), or they would reach the
    /// stream that took the id 65,535 streams later. Cleared by the peer's end (its error,
    /// `EOF` or close), or when the id comes round again after that.
    pub(super) given_up: HashMap<u16, Instant>,
    /// Found with no free id: until when none can be (the soonest hold to end). Opens fail at
    /// once meanwhile, instead of each searching all 65,536 ids under the lock (a soak had a
    /// connection's every call wait on such searches). Cleared when a stream is forgotten.
    pub(super) exhausted_until: Option<Instant>,
    pub(super) closed: Option<Option<String>>,
}

/// The streams open on one connection, keyed by stream id (one namespace for both peers).
#[derive(Debug)]
pub(crate) struct StreamTable {
    pub(super) table: Mutex<Table>,
    pub(super) max_streams: usize,
    pub(super) buffer: usize,
    /// The receive window of flow-controlled streams, in messages.
    pub(super) window: u32,
    /// The receive window of flow-controlled streams, in bytes (when negotiated).
    pub(super) window_bytes: u32,
    /// This connection's buffered-bytes budget (`ConnectionConfig::max_buffered_bytes`).
    buffered: Arc<ByteBudget>,
    /// A stream of this connection receives without a window in bytes (it opened before flow
    /// control in bytes was negotiated, or its peer announced no window): from then on every
    /// stream message of the connection takes the budget, as a plain peer's do. Without it, a
    /// server announcing a window of 0 in OPENED had its client buffer gigabytes on one stream.
    unwindowed: AtomicBool,
    /// Open streams across every connection sharing it (a server's, say). A stream the peer
    /// opened counts as long as its handler's task runs ([`StreamPlace`]), not only while its
    /// route stands: a peer that closes or fails its streams (an empty `STREAM` packet) must
    /// not free their places while their handlers run on; and a task the handler spawned
    /// with a clone of its sender does not hold the place once the handler's task is gone
    /// (its connection closed, the peer cancelled the stream).
    pub(super) gauge: Arc<AtomicUsize>,
    /// Streams the peer opened whose handlers' tasks still run (see `gauge`), at most
    /// `max_streams` too.
    pub(super) remote_live: AtomicUsize,
    /// The most `gauge` may reach (a server's `max_open_streams`; no limit on a client).
    pub(super) max_total: usize,
    /// Credit given back from places that cannot wait, coalesced while the queue is full.
    pub(super) credit_back: Arc<CreditBack>,
}

/// The id after `table.next_id` that no open stream uses and none given up holds (an entry
/// past its hold is dropped); `None` when there is none, noted in `exhausted_until`.
fn free_id(table: &mut Table) -> Option<u16> {
    // The clock is read once per search, and only with ids held.
    let now = match (table.given_up.is_empty(), table.exhausted_until) {
        (true, _) => None,
        (false, Some(until)) => {
            let now = Instant::now();
            if now < until {
                return None;
            }
            Some(now)
        }
        (false, None) => Some(Instant::now()),
    };
    table.exhausted_until = None;
    let mut soonest: Option<Instant> = None;
    let mut id = table.next_id;
    for _ in 0..=u16::MAX {
        id = id.wrapping_add(1);
        if table.routes.contains_key(&id) {
            continue;
        }
        if let Some(now) = now
            && held::still_held(&mut table.given_up, &id, now, &mut soonest)
        {
            continue;
        }
        table.next_id = id;
        return Some(id);
    }
    // Open streams free ids when they end (which clears this); held ones at their time.
    table.exhausted_until = Some(held::until_any_free(soonest));
    None
}

/// The receiving end of one registered stream.
#[derive(Debug)]
pub(crate) struct Inbound {
    pub(super) rx: mpsc::Receiver<Buffered>,
    pub(super) end: Arc<OnceLock<EndReason>>,
    /// The credit the peer has left, and the window (flow-controlled streams).
    pub(super) recv: Option<(Arc<AtomicU32>, u32)>,
    /// The peer's byte credit as this side counts it (flow control in bytes).
    pub(super) recv_bytes: Option<Arc<ByteWindow>>,
    pub(super) send_credit: Option<Arc<Semaphore>>,
    pub(super) send_bytes: Option<Arc<ByteCredit>>,
    pub(super) awaiting_ack: bool,
    /// Set while the consumer waits on an empty buffer: the next message is taken at once.
    pub(super) parked: Arc<AtomicBool>,
}

impl StreamTable {
    /// The table of a connection configured by `config`; `gauge` counts the open streams of
    /// every connection sharing it, at most `max_total`.
    pub(crate) fn new(
        config: &crate::config::ConnectionConfig,
        gauge: Arc<AtomicUsize>,
        max_total: usize,
    ) -> StreamTable {
        StreamTable {
            table: Mutex::new(Table::default()),
            max_streams: config.max_streams,
            buffer: config.stream_buffer.max(1),
            window: config.stream_window.max(1),
            window_bytes: config.stream_window_bytes.max(1),
            buffered: ByteBudget::new(config.max_buffered_bytes),
            unwindowed: AtomicBool::new(false),
            gauge,
            remote_live: AtomicUsize::new(0),
            max_total,
            credit_back: Arc::default(),
        }
    }

    /// The receive window of flow-controlled streams this side announces, in messages and,
    /// with `bytes` (flow control in bytes negotiated), in bytes.
    pub(crate) fn window(&self, bytes: bool) -> Window {
        Window {
            messages: self.window,
            bytes: bytes.then_some(self.window_bytes),
        }
    }

    /// The share of this connection's buffered-bytes budget for a stream message of `len`
    /// bytes, waited for (so the connection is not read meanwhile: TCP's window then holds the
    /// peer back); a message larger than the whole budget takes all of it. A connection whose
    /// streams all have windows in bytes (`bits`, the negotiated extensions, and none
    /// `unwindowed`) takes none: each stream holds at most its window and one message.
    pub(crate) async fn buffer_budget(&self, len: usize, bits: u32) -> Option<Share> {
        if bits & ext::EXT_BYTES != 0 && !self.unwindowed.load(Ordering::Acquire) {
            return None;
        }
        match self.buffered.try_take(len) {
            Some(share) => share,
            None => self.buffered.take(len).await,
        }
    }

    /// Removes stream `id`'s route: its next packets open a new stream. A stream this side
    /// opened gives its place back now; one the peer opened when its handler's task ends
    /// ([`StreamPlace`]).
    pub(super) fn forget(&self, table: &mut Table, id: u16) {
        if let Some(route) = table.routes.remove(&id) {
            table.exhausted_until = None;
            route.close_credit();
            if route.local {
                self.gauge.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }

    /// Fails stream `id` because of what its peer did (overflowed it, sent more than its
    /// credit): forgets it and, for a stream the peer opened, cancels its handler, which
    /// nothing will read from or send to any more.
    pub(super) fn forget_failed(&self, table: &mut Table, id: u16) {
        if let Some(route) = table.routes.get(&id)
            && !route.local
            && let Some(state) = &route.cancel
        {
            state.cancel();
        }
        self.forget(table, id);
    }

    /// A stream the peer opened is done (its handler's task ended): its places, in this
    /// connection's count and the server's, are free.
    fn release_remote(&self) {
        self.remote_live.fetch_sub(1, Ordering::Relaxed);
        self.gauge.fetch_sub(1, Ordering::Relaxed);
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Number of open streams.
    pub(crate) fn len(&self) -> usize {
        self.lock().routes.len()
    }

    /// Registers a stream this side opens, with an id no open stream uses and none given up
    /// lately (first id 1).
    pub(crate) fn open_local(&self, setup: StreamSetup) -> Result<(u16, Inbound), Error> {
        let mut table = self.lock();
        self.check_open(&table)?;
        let id = free_id(&mut table).ok_or_else(|| {
            Error::Status(Status::resource_exhausted(
                "all 65,536 stream ids are open or given up lately",
            ))
        })?;
        Ok((id, self.insert(&mut table, id, None, setup, true)))
    }

    /// Registers a stream the peer opened; `cancel` fires when the peer cancels it. The
    /// stream's place in the limits is held by the returned [`StreamPlace`], which its
    /// handler's task keeps.
    pub(crate) fn accept(
        self: &Arc<Self>,
        id: u16,
        cancel: Option<Arc<CallState>>,
        setup: StreamSetup,
    ) -> Result<(Inbound, StreamPlace), Error> {
        let mut table = self.lock();
        self.check_open(&table)?;
        self.remote_live.fetch_add(1, Ordering::Relaxed);
        let inbound = self.insert(&mut table, id, cancel, setup, false);
        let place = StreamPlace {
            table: self.clone(),
            id,
            end: inbound.end.clone(),
        };
        Ok((inbound, place))
    }

    /// The peer's CREDIT for stream `id`: more messages (and bytes) this side may send.
    /// Ignored for a stream nobody here knows or one without flow control; capped at
    /// [`MAX_CREDIT`].
    pub(crate) fn credit(&self, id: u16, grant: Window) {
        let table = self.lock();
        let Some(route) = table.routes.get(&id) else {
            return;
        };
        if let Some(credit) = &route.send_credit {
            add_credit(credit, grant.messages);
        }
        if let (Some(credit), Some(bytes)) = (&route.send_bytes, grant.bytes) {
            credit.grant(i64::from(bytes));
        }
    }

    /// The server's OPENED for stream `id`, with its receive window: the stream's opening
    /// resolves, and with flow control the client's credit becomes that window (of which it
    /// had one message already). A window of 0 means the server does not flow-control the
    /// stream. A second OPENED, or one for a stream not waiting, is ignored.
    pub(crate) fn opened(&self, id: u16, window: Window) {
        let mut table = self.lock();
        let Some(route) = table.routes.get_mut(&id) else {
            return;
        };
        if !std::mem::replace(&mut route.awaiting_ack, false) {
            return;
        }
        match (&route.send_credit, window.messages) {
            (None, _) => {}
            (Some(_), 0) => {
                // The server takes no credit: send freely, and count nothing of its sends.
                route.close_credit();
                route.recv_credit = None;
                route.recv_bytes = None;
                self.unwindowed.store(true, Ordering::Release);
            }
            (Some(credit), messages) => {
                add_credit(credit, messages - 1);
                // The opener started with one byte of credit (its first message passes
                // whatever its size), which the server's window counts. A server that
                // announces no byte window does not count bytes: neither side does.
                match (&route.send_bytes, window.bytes) {
                    (Some(credit), Some(bytes)) => credit.grant(i64::from(bytes) - 1),
                    (Some(credit), None) => {
                        credit.close();
                        route.recv_bytes = None;
                        self.unwindowed.store(true, Ordering::Release);
                    }
                    (None, _) => {}
                }
            }
        }
        // The mark the opener waits for; the buffer keeps room for it.
        let _ = route.tx.try_send(Buffered {
            content: Bytes::new(),
            _budget: Budget::default(),
        });
    }

    /// The peer cancelled stream `id`: fires its token (a stream nobody here knows, or one
    /// without a token, is left alone).
    pub(crate) fn cancel(&self, id: u16) {
        let table = self.lock();
        let Some(route) = table.routes.get(&id) else {
            return;
        };
        if let Some(state) = &route.cancel {
            state.cancel();
            // Sends waiting for credit (a clone of the sender in a task of its own, say) wake
            // up and fail with `Cancelled`.
            route.close_credit();
        }
    }

    /// Refuses a stream over a limit; otherwise reserves its place in the server-wide count
    /// (the caller then inserts it).
    pub(super) fn check_open(&self, table: &Table) -> Result<(), Error> {
        if let Some(reason) = &table.closed {
            return Err(Error::ConnectionClosed {
                reason: reason.clone(),
            });
        }
        // Streams the peer opened count while their handlers run, routes or not.
        let open = table.routes.len().max(self.remote_live.load(Ordering::Relaxed));
        if open >= self.max_streams {
            tracing::warn!(limit = self.max_streams, "refusing a stream over the limit");
            return Err(Error::closed(format!(
                "too many open streams (limit {})",
                self.max_streams
            )));
        }
        // Reserved here, atomically: readers of several connections open streams at once, and
        // a check apart from the count would let each of them pass at the limit.
        if !reserve_open_stream(&self.gauge, self.max_total) {
            tracing::warn!(
                limit = self.max_total,
                "refusing a stream over the server's limit"
            );
            return Err(Error::closed(too_many_open_streams(self.max_total)));
        }
        Ok(())
    }

    pub(super) fn insert(
        &self,
        table: &mut Table,
        id: u16,
        cancel: Option<Arc<CallState>>,
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
        let recv_bytes = setup
            .recv_bytes
            .filter(|_| setup.recv_window > 0)
            .map(|window| Arc::new(ByteWindow::new(window)));
        if recv_bytes.is_none() {
            self.unwindowed.store(true, Ordering::Release);
        }
        let send_bytes = setup
            .send_bytes
            .filter(|_| send_credit.is_some())
            .map(|credit| Arc::new(ByteCredit::new(credit)));
        let parked = Arc::new(AtomicBool::new(false));
        let route = Route {
            tx,
            parked: parked.clone(),
            arena: Arena::default(),
            end: end.clone(),
            cancel,
            recv_credit: recv_credit.clone(),
            send_credit: send_credit.clone(),
            recv_bytes: recv_bytes.clone(),
            send_bytes: send_bytes.clone(),
            hold: match local {
                true => setup.hold,
                false => Hold::Plain,
            },
            local,
            peer_ended: false,
            awaiting_ack: setup.awaiting_ack,
            codes: setup.codes,
        };
        // `check_open` counted the stream; one replacing another under its id adds none.
        if let Some(old) = table.routes.insert(id, route) {
            old.close_credit();
            if old.local {
                self.gauge.fetch_sub(1, Ordering::Relaxed);
            }
        }
        Inbound {
            rx,
            end,
            recv: recv_credit.map(|credit| (credit, setup.recv_window)),
            recv_bytes,
            send_credit,
            send_bytes,
            awaiting_ack: setup.awaiting_ack,
            parked,
        }
    }

    /// Forgets a stream when its handles are gone, unless a newer stream has taken its id. The
    /// id of one this side opened that the peer has not ended stays out of use a while.
    pub(super) fn remove(&self, id: u16, end: &Arc<OnceLock<EndReason>>) {
        let mut table = self.lock();
        if table
            .routes
            .get(&id)
            .is_some_and(|route| Arc::ptr_eq(&route.end, end))
        {
            self.forget_mine(&mut table, id);
        }
    }

    /// Forgets stream `id` because this side is done with it; the id of one this side opened
    /// that the peer has not ended (nor closed) stays out of use a while.
    fn forget_mine(&self, table: &mut Table, id: u16) {
        let given_up = table.routes.get(&id).and_then(|route| {
            let given_up =
                route.local && !route.peer_ended && !matches!(route.end.get(), Some(EndReason::PeerClosed));
            // A peer that takes CANCEL got one (the stream's last handle, its deadline or its
            // failure here sent it).
            given_up.then_some(route.hold)
        });
        self.forget(table, id);
        if let Some(hold) = given_up
            && table.closed.is_none()
        {
            table.given_up.insert(id, hold.until());
        }
    }

    /// Delivers a `STREAM` packet; `budget`: its shares of the buffered-bytes budgets, held
    /// while it waits in the stream's buffer. See [`Routed`] for what is left to do.
    pub(crate) fn route(&self, conn: &Arc<Connection>, id: u16, content: Bytes, budget: Budget) -> Routed {
        let mut table = self.lock();
        let Some(route) = table.routes.get_mut(&id) else {
            // The peer's end of a stream given up here: its id is free from now on.
            if !table.given_up.is_empty()
                && (content.is_empty() || is_control(&content))
                && table.given_up.remove(&id).is_some()
            {
                table.exhausted_until = None;
            }
            // A close for an unknown stream is ignored.
            return match content.is_empty() {
                true => Routed::Done,
                false => Routed::Opens(content),
            };
        };
        if content.is_empty() {
            // A Frisbee close (a plain client's stream whose handles are gone): as Go's, what
            // is buffered can still be read, then reads and sends fail; the handler is not
            // cancelled (it reads a request stream's `EOF` ahead of the close, and ends).
            let _ = route.end.set(EndReason::PeerClosed);
            self.forget(&mut table, id);
            return Routed::Done;
        }
        // Anything from the server means it accepted the stream: a later OPENED only adds
        // credit.
        route.awaiting_ack = false;
        if is_control(&content) {
            if route.local {
                // The server is done: it grants nothing more.
                route.close_credit();
                route.peer_ended = true;
            }
        } else if let Some(credit) = &route.recv_credit
            && (credit
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| left.checked_sub(1))
                .is_err()
                || route
                    .recv_bytes
                    .as_ref()
                    .is_some_and(|bytes| !bytes.receive(content.len())))
        {
            tracing::warn!(
                stream = id,
                "the peer sent beyond its flow-control credit; failing the stream"
            );
            let notice = route.notice();
            let _ = route.end.set(EndReason::CreditExceeded);
            self.forget_failed(&mut table, id);
            drop(table);
            let status =
                Status::resource_exhausted(format!("stream {id}: more than the flow-control credit granted"));
            notice.send(conn, id, status);
            return Routed::Done;
        }
        // A consumer waiting on an empty buffer takes this message at once: no need for an
        // allocation of its own.
        let taken_at_once =
            route.parked.swap(false, Ordering::AcqRel) && route.tx.capacity() == route.tx.max_capacity();
        let content = match taken_at_once {
            true => content,
            false => route.arena.detach(content),
        };
        match route.tx.try_send(Buffered {
            content,
            _budget: budget,
        }) {
            Ok(()) => Routed::Done,
            // The consumer is behind (a stream without flow control, which buffers
            // `stream_buffer` messages): the reader waits for room, as Go's does.
            Err(mpsc::error::TrySendError::Full(message)) => Routed::Full(Full {
                id,
                tx: route.tx.clone(),
                end: route.end.clone(),
                message,
            }),
            Err(mpsc::error::TrySendError::Closed(Buffered { content, .. })) => {
                self.late(conn, &mut table, id, &content);
                Routed::Done
            }
        }
    }

    /// Waits for room in a full stream's buffer and delivers the message there; the connection
    /// is not read meanwhile (TCP's window then holds the peer back: nothing is lost, and the
    /// wait is not idleness), until its consumer reads or goes, or the connection closes.
    pub(crate) async fn deliver(&self, conn: &Arc<Connection>, full: Full) {
        let Full { id, tx, end, message } = full;
        let _busy = conn.mark_busy();
        let sent = tokio::select! {
            sent = tx.send(message) => sent,
            _ = conn.closed() => return,
        };
        if let Err(mpsc::error::SendError(Buffered { content, .. })) = sent {
            let mut table = self.lock();
            if table
                .routes
                .get(&id)
                .is_some_and(|route| Arc::ptr_eq(&route.end, &end))
            {
                self.late(conn, &mut table, id, &content);
            }
        }
    }

    /// A message for stream `id` whose local handle is gone: dropped.
    fn late(&self, conn: &Arc<Connection>, table: &mut Table, id: u16, content: &[u8]) {
        let Some(route) = table.routes.get(&id) else {
            return;
        };
        match &route.recv_credit {
            // A server handler that dropped its inbound stream may still be sending on it:
            // the stream stays (for its own credit), and the peer gets its message's credit
            // back so its sends do not stall.
            Some(credit) if !is_control(content) => {
                credit.fetch_add(1, Ordering::AcqRel);
                let bytes = route.recv_bytes.as_ref().map(|window| {
                    let bytes = u32::try_from(content.len()).unwrap_or(u32::MAX);
                    window.give_back(bytes);
                    bytes
                });
                self.credit_back.give(conn, id, Window { messages: 1, bytes });
            }
            Some(_) => {}
            None => self.forget_mine(table, id),
        }
    }

    /// Fails stream `id` because the peer sent it a message of `len` bytes, over the limit `max`
    /// (the transport skipped its content): the local reader gets [`Error::TooLarge`], the peer
    /// an error and `EOF`. A stream nobody here knows is left alone.
    pub(crate) fn reject_oversize(&self, conn: &Arc<Connection>, id: u16, len: u32, max: u32) {
        let mut table = self.lock();
        let Some(route) = table.routes.get(&id) else {
            return;
        };
        let notice = route.notice();
        let _ = route.end.set(EndReason::TooLarge { len, max });
        self.forget_failed(&mut table, id);
        drop(table);
        let status = Status::resource_exhausted(format!(
            "stream message of {len} bytes exceeds the limit of {max} bytes"
        ));
        notice.send(conn, id, status);
    }

    /// Ends every stream because the connection closed (the dispatchers' close handler).
    pub(crate) fn close_all(&self, err: &Error) {
        let reason = match err {
            Error::ConnectionClosed { reason } => reason.clone(),
            other => Some(other.to_string()),
        };
        let mut table = self.lock();
        // Streams the peer opened give their places back as their handles go (their handlers
        // are dropped with the connection).
        let local = table.routes.values().filter(|route| route.local).count();
        self.gauge.fetch_sub(local, Ordering::Relaxed);
        for (_, route) in table.routes.drain() {
            let _ = route.end.set(EndReason::ConnectionClosed(reason.clone()));
            route.close_credit();
        }
        table.closed = Some(reason);
    }
}

/// What [`StreamTable::route`] left to do with a `STREAM` packet.
#[derive(Debug)]
pub(crate) enum Routed {
    /// Nothing: delivered, dropped, or its stream failed.
    Done,
    /// It opens a stream nobody here knows: its content, for the dispatcher.
    Opens(Bytes),
    /// Its stream's buffer is full: [`StreamTable::deliver`] waits for room.
    Full(Full),
}

/// A message waiting for room in its stream's buffer.
#[derive(Debug)]
pub(crate) struct Full {
    id: u16,
    tx: mpsc::Sender<Buffered>,
    /// The stream's, to tell it from a newer stream on the same id.
    end: Arc<OnceLock<EndReason>>,
    message: Buffered,
}

/// Where a stream's small messages wait: copied out of the connection's read buffer into
/// chunks of the stream's own. A slice of the read buffer keeps the whole allocation it was cut
/// from alive (64 KiB and more), which the buffered-bytes budgets, charging its length, never
/// see: 4-byte messages buffered on 16 streams, each behind 65,000 bytes the peer padded them
/// with, held 1 GiB of one server (2026-11-29). A chunk holds only its stream's messages, read
/// in order, so it is freed once its last one is read: a stream holds at most one chunk more
/// than what its messages count. Only small messages (up to 1 KiB, the writer's
/// [`SMALL_CONTENT`]) are copied: they are where a slice holds the most for what it counts, and
/// their copy is cheap (a chunk's allocation serves many); copying every message up to 64 KiB
/// made streams of 4 KiB messages 25% slower. A message its consumer is parked for
/// ([`Route::parked`]) does not wait, and is not copied at all.
#[derive(Debug, Default)]
pub(super) struct Arena(BytesMut);

impl Arena {
    /// A chunk's size.
    const CHUNK: usize = 2048;

    fn detach(&mut self, content: Bytes) -> Bytes {
        if content.len() > SMALL_CONTENT || content.is_unique() {
            return content;
        }
        if self.0.capacity() < content.len() {
            self.0 = BytesMut::with_capacity(Self::CHUNK);
        }
        self.0.extend_from_slice(&content);
        self.0.split().freeze()
    }
}

/// A stream the peer opened, counted in its connection's and its server's open streams until
/// dropped: its handler's task holds it. Its end is the stream's: its route goes too, whatever
/// handles a task the handler spawned still holds (their sends then reach nobody, and fail
/// once the peer is gone).
#[derive(Debug)]
pub(crate) struct StreamPlace {
    table: Arc<StreamTable>,
    id: u16,
    /// Tells this stream's route from a newer one under the same id.
    end: Arc<OnceLock<EndReason>>,
}

impl Drop for StreamPlace {
    fn drop(&mut self) {
        self.table.remove(self.id, &self.end);
        self.table.release_remote();
    }
}

/// Counts one more open stream in `gauge` unless it holds `max` already (a server's
/// `max_open_streams`, which its gRPC face's streams count in too); whether it did.
pub(crate) fn reserve_open_stream(gauge: &AtomicUsize, max: usize) -> bool {
    let reserve = |open: usize| (open < max).then_some(open + 1);
    gauge
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, reserve)
        .is_ok()
}

/// Why a stream beyond a server's `max_open_streams` is refused.
pub(crate) fn too_many_open_streams(max: usize) -> String {
    format!("too many open streams on this server (max_open_streams {max})")
}

/// Adds `messages` of credit, capped at [`MAX_CREDIT`] in all.
pub(super) fn add_credit(credit: &Semaphore, messages: u32) {
    let room = MAX_CREDIT.saturating_sub(credit.available_permits());
    credit.add_permits((messages as usize).min(room));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream given up holds its id as long as its `Hold` says: 10 s after a CANCEL (only
    /// what the peer wrote before reading it can come), 60 s toward a peer that does not take
    /// CANCEL (after a Frisbee close), 60 s at most toward one that answers it (the answer
    /// frees it); one the peer ended holds nothing.
    #[test]
    fn given_up_ids_are_held_by_what_frees_them() {
        let table = StreamTable::new(
            &crate::config::ConnectionConfig::default(),
            Arc::default(),
            usize::MAX,
        );
        let held_for = |hold: Hold, ended: bool| {
            let setup = StreamSetup {
                hold,
                ..StreamSetup::default()
            };
            let (id, inbound) = table.open_local(setup).unwrap();
            if ended {
                table.lock().routes.get_mut(&id).unwrap().peer_ended = true;
            }
            let before = Instant::now();
            table.remove(id, &inbound.end);
            table
                .lock()
                .given_up
                .get(&id)
                .map(|until| until.duration_since(before))
        };
        let second = std::time::Duration::from_secs(1);
        for hold in [Hold::Cancelled, Hold::Closed, Hold::Answered] {
            let held = held_for(hold, false).unwrap();
            let wanted = hold.duration();
            assert!(held >= wanted && held < wanted + second, "{hold:?}: {held:?}");
            assert_eq!(held_for(hold, true), None, "{hold:?}: the peer ended it");
        }
        assert_eq!(Hold::Cancelled.duration(), held::AFTER_CANCEL);
        assert_eq!(Hold::Closed.duration(), std::time::Duration::from_secs(60));
    }

    /// Ids given up lately are skipped, older ones are free again, and with every id taken or
    /// given up there is none (an error for the caller, not an endless search).
    #[test]
    fn free_ids_skip_the_ones_given_up_lately() {
        let mut table = Table::default();
        let now = Instant::now();
        table.given_up.insert(1, now + Hold::Closed.duration());
        table.given_up.insert(2, now);
        assert_eq!(free_id(&mut table), Some(2), "1 skipped, 2's hold over");
        assert!(!table.given_up.contains_key(&2));
        table
            .given_up
            .extend((0..=u16::MAX).map(|id| (id, now + held::AFTER_CANCEL)));
        assert_eq!(free_id(&mut table), None);
        // Noted: the next search fails at once, until the soonest hold ends, or a stream ends.
        assert_eq!(table.exhausted_until, Some(now + held::AFTER_CANCEL));
        table.given_up.retain(|id, _| *id != 7);
        assert_eq!(free_id(&mut table), None, "still noted as exhausted");
        table.exhausted_until = None;
        assert_eq!(free_id(&mut table), Some(7));
    }
}
