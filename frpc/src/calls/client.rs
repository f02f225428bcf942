//! The client's side of calls: the in-flight table of unary calls, the streams and the raw
//! receivers of one connection, and the [`Dispatch`] that routes what the server sends to them.
//! Calls floor: it sends through the transport's connection and knows nothing of services.
//!
//! Unary calls follow Go fRPC: a per-method u16 request id (first id 1, wrapping), the reply
//! matched by (operation, id). An id still in flight is never reused. The in-flight table is the
//! one lock a call takes (to register, when the reply lands, and when its caller takes it):
//! the reply waits in the caller's entry, so a call allocates nothing beyond its messages (a
//! oneshot channel per call cost an allocation and about 250 instructions).
//!
//! A call registered alone drives the connection's read loop (`Table::driver`,
//! [`crate::transport::shared_reader`]): woken when input arrives, it polls the loop itself and
//! reads its own reply, with no hop through the reader task. A call that joins it ends that.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use frpc_wire::{Header, Packet, op};
use tokio::sync::oneshot;

use super::ext::{self, Negotiation};
use super::held::{self, Hold};
use super::raw::RawRoutes;
use super::stream::{Budget, Routed, StreamTable};
use crate::config::{ConnectionConfig, DecodeLimits};
use crate::hash::IdMap;
use crate::metadata::Metadata;
use crate::status::{Code, Error, Status};
use crate::transport::connection::{Connection, Dispatch, Sent};
use crate::transport::shared_reader::WakeDriver;
use crate::transport::writer::Outgoing;
use crate::types::Encoded;

type Outcome = Result<Bytes, Error>;

/// Everything a client connection routes to: shared by the [`ClientDispatch`] on the reader and
/// the `Client` handles.
#[derive(Debug)]
pub(crate) struct ClientCalls {
    inflight: Mutex<Table>,
    streams: Arc<StreamTable>,
    raw: RawRoutes,
    ext: Negotiation,
    /// Set once the server sent anything (a PONG, ACCEPT, a reply): the connection works.
    answered: AtomicBool,
    /// Set once the server answered a call in flight or sent a message on a stream this side
    /// opened: the connection served a call. Not by any packet: a server that sent one reply
    /// nobody asked for, then closed, had a channel redial it at once, 12,000 times a second.
    served: AtomicBool,
    first_answer: tokio::sync::Notify,
    /// The call polling the read loop itself right now, as `key + 1` (0: none): its reply lands
    /// without a wake-up, as it looks once done polling (a wake-up would poll its task once more
    /// for nothing). Written only by the one polling the loop.
    driving_now: AtomicU64,
    /// Reflection requests waiting for their answers, oldest first (the server answers in
    /// order).
    reflections: Mutex<std::collections::VecDeque<oneshot::Sender<Bytes>>>,
    /// Set once the server said it is shutting down (its DRAIN): nothing new should start on
    /// the connection; a channel moves to a new one.
    draining: AtomicBool,
    drain_told: tokio::sync::Notify,
}

/// What a unary call carries beside its request.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CallOptions<'a> {
    /// The whole call's timeout (sent to the server when it takes deadlines).
    pub(crate) timeout: Option<Duration>,
    /// Request metadata.
    pub(crate) metadata: Option<&'a Metadata>,
    /// Fail instead of dropping metadata the peer does not take.
    pub(crate) strict: bool,
}

/// A unary call's reply as a tower service sees it: the encoded message or remote error, with
/// the status code and response metadata an frpc server sent along.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The encoded reply (a message or a remote error).
    pub body: Bytes,
    /// The status code of an error reply, when the server sent one.
    pub code: Option<Code>,
    /// Response metadata, when the server sent some.
    pub metadata: Option<Metadata>,
    /// What decoding the reply may cost: the `ConnectionConfig::decode` of the connection it
    /// came on.
    pub limits: DecodeLimits,
}

#[derive(Debug, Default)]
struct Table {
    /// Every call from its registration until its caller takes the reply (or gives up).
    calls: IdMap<u32, Slot>,
    /// The entries of `calls` that are `Done`: replies handed to their callers and not yet
    /// read by them. While some are, the next call is not alone (its siblings are likely to
    /// call too), and is corked.
    unread: usize,
    next_ids: IdMap<u16, u16>,
    /// Calls given up before their reply came (a timeout, a dropped future), with until when:
    /// their ids are not reused while a late reply may still come (see [`held`]), or
    /// the reply would go to the newer call (a probe got another call's answer, 65,535 calls
    /// after a timeout). Cleared by the late reply, or when the id comes round again after
    /// that.
    abandoned: IdMap<u32, std::time::Instant>,
    /// The call that drives the connection's read loop (`SharedReader`): one registered alone,
    /// until it has its reply, gives up, or another call joins it.
    driver: Option<u32>,
    closed: bool,
    takeover_armed: bool,
    /// DRAINED went: the answer to a server's DRAIN (`ClientCalls::draining`), sent once no
    /// call waits for its reply, so that every call registered before it is written before it
    /// (one waiting for room in the write queue would be overtaken, and refused).
    drained: bool,
    /// Methods found with no free id, until when none can be (the soonest hold to end): their
    /// calls fail at once meanwhile, instead of each searching all 65,536 ids under the lock
    /// (a soak had every call of a connection wait on such searches). Cleared whenever a call
    /// leaves the table.
    exhausted: IdMap<u16, std::time::Instant>,
}

/// A call's entry in the in-flight table.
#[derive(Debug)]
enum Slot {
    /// Sent (or being sent), its reply not here yet: whom to wake when it lands.
    Waiting(Option<Waker>),
    /// The reply (or the error that ended the call), for its caller to take.
    Done(Outcome),
}

impl Table {
    /// The calls still waiting for their reply.
    fn waiting(&self) -> usize {
        self.calls.len() - self.unread
    }

    /// Whether DRAINED is due now (the server is `draining` and no call waits): noted as sent.
    fn drained_due(&mut self, draining: bool) -> bool {
        let due = draining && !self.drained && self.waiting() == 0;
        self.drained |= due;
        due
    }

    /// Ends the drive of the read loop if `key` (or, for `None`, any call) drives it. Called
    /// under the lock, so that a call registering alone next drives from then on.
    fn end_drive(&mut self, key: Option<u32>, conn: &Connection) {
        if self.driver.is_none() || key.is_some_and(|key| self.driver != Some(key)) {
            return;
        }
        self.driver = None;
        if let Some(shared) = conn.shared_reader() {
            shared.stop_driving();
        }
    }

    /// Registers a call of `op` under the method's next free id (Go's pre-increment counter:
    /// first id 1), `waker` to wake once its reply is in: the id, and whether the call is alone
    /// (the only entry). `None`: all 65,536 ids of `op` are in flight.
    fn register(&mut self, op: u16, waker: Option<Waker>) -> Option<(u16, bool)> {
        use std::collections::hash_map::Entry;
        if !self.exhausted.is_empty() && self.still_exhausted(op) {
            return None;
        }
        // The clock is read once per search, and only with ids held.
        let now = (!self.abandoned.is_empty()).then(std::time::Instant::now);
        let mut soonest = None;
        // One lookup of the counter and, as a free id is the rule, one of the calls.
        let next = self.next_ids.entry(op).or_insert(0);
        for _ in 0..=u16::MAX {
            *next = next.wrapping_add(1);
            let key = key(op, *next);
            if let Some(now) = now
                && held::still_held(&mut self.abandoned, &key, now, &mut soonest)
            {
                continue;
            }
            if let Entry::Vacant(slot) = self.calls.entry(key) {
                slot.insert(Slot::Waiting(waker));
                return Some((*next, self.calls.len() == 1));
            }
        }
        self.exhausted.insert(op, held::until_any_free(soonest));
        None
    }

    /// Whether `op` was found with no free id and none can have come free since.
    fn still_exhausted(&mut self, op: u16) -> bool {
        match self.exhausted.get(&op) {
            Some(until) if std::time::Instant::now() < *until => true,
            Some(_) => {
                self.exhausted.remove(&op);
                false
            }
            None => false,
        }
    }

    /// The id under `key`, in flight, is now held until `until`: a method found with no free
    /// id, every one in flight, has one again then at the latest (its note said 60 s, while
    /// calls given up after a CANCEL hold theirs 10 s).
    fn held_until(&mut self, key: u32, until: std::time::Instant) {
        if let Some(noted) = self.exhausted.get_mut(&((key >> 16) as u16)) {
            *noted = (*noted).min(until);
        }
    }

    /// The call under `key` left the table (or its held id came free): its method may have an
    /// id again (only its own: a finished call of another method frees none of this one's).
    #[inline]
    fn freed(&mut self, key: u32) {
        if !self.exhausted.is_empty() {
            self.exhausted.remove(&((key >> 16) as u16));
        }
    }
}

/// A request's content as it goes out: with the extension header that `bits` (the extensions
/// the server took) and `options` call for, within the connection's size limit.
#[inline]
fn request_content(
    conn: &Connection,
    content: Encoded,
    bits: u32,
    options: &CallOptions<'_>,
) -> Result<Encoded, Error> {
    let content = match bits {
        0 => content,
        _ => {
            let header = ext::Header {
                timeout: options.timeout.filter(|_| bits & ext::EXT_DEADLINE != 0),
                metadata: options
                    .metadata
                    .filter(|m| !m.is_empty() && bits & ext::EXT_METADATA != 0)
                    .cloned(),
                code: None,
                open: None,
            };
            match header.is_empty() {
                true => content,
                false => header.encode_parts(content),
            }
        }
    };
    conn.check_len(content.len())?;
    Ok(content)
}

/// Tells the draining server nothing new follows (DRAINED), even with the write queue full.
fn send_drained(conn: &Arc<Connection>) {
    conn.send_control(ext::drain(ext::DRAINED));
}

fn key(op: u16, id: u16) -> u32 {
    (u32::from(op) << 16) | u32::from(id)
}

impl ClientCalls {
    /// The calls of a client that offers the extensions `offer` (0: none).
    pub(crate) fn new(config: &ConnectionConfig, offer: u32) -> Arc<ClientCalls> {
        Arc::new(ClientCalls {
            answered: AtomicBool::new(false),
            served: AtomicBool::new(false),
            first_answer: tokio::sync::Notify::new(),
            ext: Negotiation::new(offer),
            inflight: Mutex::default(),
            driving_now: AtomicU64::new(0),
            streams: Arc::new(StreamTable::new(config, Default::default(), usize::MAX)),
            raw: RawRoutes::default(),
            reflections: Mutex::default(),
            draining: AtomicBool::new(false),
            drain_told: tokio::sync::Notify::new(),
        })
    }

    /// Whether the server takes the drain notice ([`ext::EXT_DRAIN`]).
    #[cfg_attr(
        not(feature = "macros"),
        allow(dead_code, reason = "read by the health watch")
    )]
    pub(crate) fn drain_accepted(&self) -> bool {
        self.ext.accepted() & ext::EXT_DRAIN != 0
    }

    /// Whether the server said it is shutting down (see [`ext::EXT_DRAIN`]).
    pub(crate) fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }

    /// Resolves once the server says it is shutting down.
    pub(crate) async fn draining(&self) {
        crate::notify::until(&self.drain_told, || self.is_draining()).await
    }

    /// The server's DRAIN: answered with DRAINED once no call waits for its reply (at once if
    /// none does: see `Table::drained`; the server serves those calls, then refuses what may
    /// still follow), and told to whoever waits.
    fn drain(&self, conn: &Arc<Connection>) {
        if self.draining.swap(true, Ordering::AcqRel) {
            return;
        }
        let due = self.lock().drained_due(true);
        if due {
            send_drained(conn);
        }
        self.drain_told.notify_waiters();
    }

    /// Registers a reflection request (before sending it): the receiver gets the answer, or
    /// an error when the connection closes first.
    pub(crate) fn expect_reflection(&self) -> oneshot::Receiver<Bytes> {
        let (tx, rx) = oneshot::channel();
        self.reflections
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back(tx);
        rx
    }

    /// Hands a reflection answer to the oldest waiting request (if any is still waiting).
    fn reflection(&self, answer: Bytes) {
        let waiter = self
            .reflections
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front();
        if let Some(tx) = waiter {
            let _ = tx.send(answer);
        }
    }

    /// The dispatcher for the connection's reader.
    pub(crate) fn dispatch(self: &Arc<Self>) -> ClientDispatch {
        ClientDispatch { calls: self.clone() }
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.inflight.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The connection's streams.
    pub(crate) fn streams(&self) -> &Arc<StreamTable> {
        &self.streams
    }

    /// The receivers of raw packets.
    pub(crate) fn raw(&self) -> &RawRoutes {
        &self.raw
    }

    /// Whether the server has sent anything yet (a PONG, ACCEPT, a reply).
    pub(crate) fn has_answered(&self) -> bool {
        self.answered.load(Ordering::Acquire)
    }

    /// Whether the server has answered a call or a stream yet.
    pub(crate) fn has_served(&self) -> bool {
        self.served.load(Ordering::Relaxed)
    }

    fn mark_served(&self) {
        if !self.served.load(Ordering::Relaxed) {
            self.served.store(true, Ordering::Relaxed);
        }
    }

    /// Resolves once the server has sent anything.
    pub(crate) async fn answered(&self) {
        crate::notify::until(&self.first_answer, || self.has_answered()).await
    }

    /// Notes that the server sent something.
    fn mark_answered(&self) {
        if !self.answered.swap(true, Ordering::AcqRel) {
            self.first_answer.notify_waiters();
        }
    }

    /// Where extension negotiation stands.
    pub(crate) fn negotiation(&self) -> &Negotiation {
        &self.ext
    }

    /// Waits until the answer to the offer is known (at most a round trip, once per
    /// connection: it sends a PING whose PONG tells a peer that ignored the offer).
    pub(crate) async fn resolve(&self, conn: &Connection) -> Result<(), Error> {
        if self.ext.is_resolved() {
            return Ok(());
        }
        if self.ext.take_probe() {
            let _ = conn.try_send(Packet::ping());
        }
        self.ext.resolved().await;
        match conn.is_closed() {
            true => Err(conn.closed_error()),
            false => Ok(()),
        }
    }

    /// The extensions to use for a call carrying `metadata`: what is accepted now, except that
    /// a call with metadata first waits for the answer to the offer (at most a round trip,
    /// once per connection; it sends a PING whose PONG tells a peer that ignored the offer).
    /// Strict calls fail when the peer does not take metadata.
    pub(crate) async fn extensions_for(
        &self,
        conn: &Connection,
        metadata: Option<&Metadata>,
        strict: bool,
    ) -> Result<u32, Error> {
        let bits = self.ext.accepted();
        let Some(metadata) = metadata.filter(|m| !m.is_empty()) else {
            return Ok(bits);
        };
        let bits = match self.ext.is_resolved() {
            true => bits,
            false => {
                // Boxed: only the first calls of a connection wait for the answer, and the wait
                // would otherwise make every call's future larger.
                Box::pin(self.resolve(conn)).await?;
                self.ext.accepted()
            }
        };
        if strict && bits & ext::EXT_METADATA == 0 {
            return Err(Error::Metadata(format!(
                "the peer does not take metadata ({} keys not sent): a Go fRPC server, or \
                 extensions off on one side",
                metadata.len()
            )));
        }
        Ok(bits)
    }

    /// Number of unary calls waiting for a reply.
    pub(crate) fn inflight(&self) -> usize {
        self.lock().waiting()
    }

    /// Makes the reader stop as soon as no call is pending (see `Client::arm_takeover`).
    pub(crate) fn arm_takeover(&self) {
        self.lock().takeover_armed = true;
    }

    /// Sends one unary request and waits for the reply. The caller applies `options.timeout`
    /// around it (`Client::unary`), waiting for room in the write queue included, or a peer
    /// that stops reading would hold the call forever; dropping the future on timeout removes
    /// its entry (`PendingCall`).
    ///
    /// A function returning an `async` block rather than an `async fn`: an `async fn` keeps each
    /// argument twice in its future (as captured, and as the local it is moved to), and a
    /// call's future is what a client keeps per call in flight.
    #[allow(clippy::manual_async_fn, reason = "an async fn keeps its arguments twice")]
    pub(crate) fn call<'a>(
        &'a self,
        conn: &'a Arc<Connection>,
        op: u16,
        content: Encoded,
        options: CallOptions<'a>,
    ) -> impl Future<Output = Result<Reply, Error>> + Send + 'a {
        async move {
            let mut bits = self.ext.accepted();
            if options.metadata.is_some() {
                bits = self
                    .extensions_for(conn, options.metadata, options.strict)
                    .await?;
            }
            // Prepared elsewhere: a local this block borrows is kept in its future after it is
            // moved on (rustc keeps any borrowed local's storage until its scope ends).
            let content = request_content(conn, content, bits, &options)?;
            // Registered with this poll's waker, which a reply handed over wakes from now on.
            let (id, alone) =
                std::future::poll_fn(|cx| Poll::Ready(self.register(op, conn, cx.waker()))).await?;
            // Registered alone, it drives the read loop (see `Table::driver`).
            let driving = alone && conn.shared_reader().is_some();
            let mut pending = PendingCall {
                calls: self,
                conn,
                key: key(op, id),
                taken: false,
                hold: Hold::of(bits, false),
            };
            // Alone (ping-pong), it is written at once if the writer is idle (no hand-off to its
            // task). With others in flight, or replies just handed over whose callers may call
            // again, it is corked: calls joined on this task (or made by the tasks queued behind
            // it) leave in one write, made by the first of them once the others are in, again
            // with no hand-off to the writer task.
            let sent = conn.send_or_cork(Outgoing::new(id, op, content), !alone).await?;
            // On its way, whatever happens to this call now (a cork is written even if the
            // call is dropped before it writes it): its reply will come. Set only after the
            // cork's write, a call dropped during that yield was held as if never sent (60 s
            // toward Go, whose late reply then reached a newer call: session 33's re-probe).
            pending.hold = Hold::of(bits, true);
            if sent == Sent::Corked {
                conn.write_cork_after_yield().await;
            }
            let at_once = sent == Sent::AtOnce;
            // Sent within the poll that registered the call: a reply handed over since has
            // woken that poll's waker, so the table is first looked at once woken (a lock and
            // a lookup less per call). After a wait the waker may be another: looked at now,
            // which registers the current one.
            let mut woken = !at_once;
            let reply = std::future::poll_fn(|cx| match std::mem::replace(&mut woken, true) {
                false => Poll::Pending,
                true if driving => self.drive_for(pending.key, cx, conn),
                true => self.poll_reply(pending.key, cx, conn),
            })
            .await;
            pending.taken = true;
            let body = reply?;
            // Only a client that offered gets extension headers (and no fRPC content starts so).
            if !(self.ext.offered() && ext::has_prefix(&body)) {
                return Ok(Reply {
                    body,
                    code: None,
                    metadata: None,
                    limits: conn.decode_limits(),
                });
            }
            // A malformed header fails this call only (the connection stays up): an INTERNAL status,
            // since the server sent something no frpc server sends; metadata over the limit fails
            // it with RESOURCE_EXHAUSTED.
            let (header, body) = ext::split(&body, conn.max_metadata_size()).map_err(|err| match err {
                ext::HeaderError::Malformed(reason) => {
                    Error::Status(Status::internal(format!("malformed reply: {reason}")))
                }
                too_large => Error::Status(Status::resource_exhausted(too_large.to_string())),
            })?;
            Ok(Reply {
                body,
                code: header.code,
                metadata: header.metadata,
                limits: conn.decode_limits(),
            })
        }
    }

    /// Registers the caller under the method's next free id ([`Table::register`]); also says
    /// whether it is alone: the only call in flight, with no reply handed over but not yet read
    /// (whose caller may be about to call again).
    ///
    /// A call alone drives the connection's read loop until its reply is in (when its
    /// connection lets callers drive); a call that joins it ends that, as the driver's task
    /// would then poll the loop for others too, and may be slow to run (busy with other work).
    fn register(&self, op: u16, conn: &Connection, waker: &Waker) -> Result<(u16, bool), Error> {
        let mut table = self.lock();
        if table.closed {
            return Err(conn.closed_error());
        }
        let (id, alone) = table.register(op, Some(waker.clone())).ok_or_else(|| {
            Error::Status(Status::resource_exhausted(format!(
                "all 65,536 ids of operation {op} are in flight or given up lately"
            )))
        })?;
        match (alone, conn.shared_reader()) {
            (true, Some(shared)) => {
                table.driver = Some(key(op, id));
                shared.drive();
            }
            (true, None) => {}
            (false, _) => table.end_drive(None, conn),
        }
        Ok((id, alone))
    }

    /// Takes the reply of call `key` once it is there (registering the caller's waker until
    /// then). A reply taken is read (see `Table::unread`).
    fn poll_reply(&self, key: u32, cx: &mut Context<'_>, conn: &Connection) -> Poll<Outcome> {
        let mut table = self.lock();
        match Self::take_reply(&mut table, key, cx, conn) {
            Poll::Ready(outcome) => Self::taken(table, key, conn, outcome),
            Poll::Pending => Poll::Pending,
        }
    }

    /// [`ClientCalls::poll_reply`] for the driver of the read loop: it polls the loop first,
    /// which reads its reply if it is in. A driver another call has joined since
    /// (`Table::driver` no longer its key) may still poll it: whoever polls it, it is polled
    /// with the route's waker.
    fn drive_for(&self, key: u32, cx: &mut Context<'_>, conn: &Connection) -> Poll<Outcome> {
        let Some(shared) = conn.shared_reader() else {
            // Never: only a connection that shares its reader has drivers.
            return self.poll_reply(key, cx, conn);
        };
        loop {
            if let Some(mut polling) = shared.driver_turn() {
                self.driving_now.store(u64::from(key) + 1, Ordering::Relaxed);
                let _ = polling.poll();
                self.driving_now.store(0, Ordering::Relaxed);
                // Released before the table is locked: a release may wake the route, which
                // locks it ([`WakeDriver`]).
                drop(polling);
                return self.poll_reply(key, cx, conn);
            }
            // Someone else polls the loop: they wake the route once done, which wakes the
            // waker in this call's entry, registered now.
            let poll = self.poll_reply(key, cx, conn);
            // A release before the registration woke the waker there was before: try again.
            if poll.is_ready() || shared.is_polled() {
                return poll;
            }
        }
    }

    /// The reply of call `key` if it is in, the caller's waker registered otherwise.
    #[inline]
    fn take_reply(table: &mut Table, key: u32, cx: &mut Context<'_>, conn: &Connection) -> Poll<Outcome> {
        use std::collections::hash_map::Entry;
        // One lookup, whether the reply is there or not.
        let Entry::Occupied(mut entry) = table.calls.entry(key) else {
            // Never: the entry stays until its caller takes the reply or gives up.
            return Poll::Ready(Err(conn.closed_error()));
        };
        if let Slot::Waiting(waker) = entry.get_mut() {
            if !waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *waker = Some(cx.waker().clone());
            }
            return Poll::Pending;
        }
        let Slot::Done(outcome) = entry.remove() else {
            unreachable!("an entry not waiting is done")
        };
        table.unread -= 1;
        table.freed(key);
        Poll::Ready(outcome)
    }

    /// A reply taken: its call stops driving the read loop if it did.
    #[inline]
    fn taken(
        mut table: MutexGuard<'_, Table>,
        key: u32,
        conn: &Connection,
        outcome: Outcome,
    ) -> Poll<Outcome> {
        table.end_drive(Some(key), conn);
        Poll::Ready(outcome)
    }

    /// Hands a reply to its caller; a reply nobody waits for (timed out, dropped) is discarded.
    /// Returns whether an armed takeover should happen now.
    fn complete(&self, conn: &Arc<Connection>, op: u16, id: u16, content: Bytes) -> bool {
        let (waker, take_over) = {
            let mut table = self.lock();
            let key = key(op, id);
            let Some(waker) = Self::hand_over(&mut table, key, Ok(content)) else {
                tracing::trace!(op, id, "dropping a reply nobody waits for");
                return false;
            };
            self.mark_served();
            // The driver polling the loop looks for its reply once done.
            let waker = waker.filter(|_| self.driving_now.load(Ordering::Relaxed) != u64::from(key) + 1);
            if table.drained_due(self.is_draining()) {
                send_drained(conn);
            }
            (waker, table.takeover_armed && table.waiting() == 0)
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        take_over
    }

    /// Fails one pending call (its reply was too large to read); unknown calls are ignored.
    fn fail(&self, conn: &Arc<Connection>, op: u16, id: u16, err: Error) {
        let waker = {
            let mut table = self.lock();
            let waker = Self::hand_over(&mut table, key(op, id), Err(err)).flatten();
            if table.drained_due(self.is_draining()) {
                send_drained(conn);
            }
            waker
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Leaves `outcome` in call `key`'s entry if it still waits, counted as unread until its
    /// caller takes it; returns the caller's waker to wake once the lock is released (`None`:
    /// no such call waits).
    fn hand_over(table: &mut Table, key: u32, outcome: Outcome) -> Option<Option<Waker>> {
        let Some(slot) = table.calls.get_mut(&key) else {
            // The late reply of a call given up: its id is free from now on.
            if !table.abandoned.is_empty() && table.abandoned.remove(&key).is_some() {
                table.freed(key);
            }
            return None;
        };
        let Slot::Waiting(waker) = slot else { return None };
        let waker = waker.take();
        *slot = Slot::Done(outcome);
        table.unread += 1;
        Some(waker)
    }

    /// Fails every pending call at once and refuses new ones.
    fn fail_all(&self, err: &Error) {
        self.ext.close();
        let wakers: Vec<Waker> = {
            let mut table = self.lock();
            table.closed = true;
            let table = &mut *table;
            let mut wakers = Vec::with_capacity(table.waiting());
            for slot in table.calls.values_mut() {
                if let Slot::Waiting(waker) = slot {
                    wakers.extend(waker.take());
                    *slot = Slot::Done(Err(err.duplicate()));
                }
            }
            table.unread = table.calls.len();
            wakers
        };
        wakers.into_iter().for_each(Waker::wake);
    }
}

impl WakeDriver for ClientCalls {
    fn wake_driver(&self) -> bool {
        let waker = {
            let table = self.lock();
            let Some(driver) = table.driver else {
                return false;
            };
            match table.calls.get(&driver) {
                Some(Slot::Waiting(Some(waker))) => waker.clone(),
                // Its reply is in: it looks once woken (or once done polling), and stops
                // driving; the route then wakes the reader task if a wake-up was missed.
                Some(Slot::Done(_)) => return true,
                _ => return false,
            }
        };
        waker.wake();
        true
    }
}

/// Removes a call's entry when the caller stops waiting (timeout, or its future dropped), and
/// with the cancellation extension tells the server.
struct PendingCall<'a> {
    calls: &'a ClientCalls,
    conn: &'a Arc<Connection>,
    key: u32,
    /// Whether the caller took its reply (the entry is gone).
    taken: bool,
    /// How long the id is held if the caller gives the call up (and whether a CANCEL goes).
    hold: Hold,
}

impl Drop for PendingCall<'_> {
    fn drop(&mut self) {
        if self.taken {
            return;
        }
        let mut table = self.calls.lock();
        table.end_drive(Some(self.key), self.conn);
        match table.calls.remove(&self.key) {
            // A reply that landed but was never read: the call is over, nothing to cancel.
            Some(Slot::Done(_)) => {
                table.unread -= 1;
                table.freed(self.key);
            }
            Some(Slot::Waiting(_)) if !self.conn.is_closed() => {
                // Its reply may still come: the id stays out of use until it does (or long
                // enough that it will not).
                let until = self.hold.until();
                table.abandoned.insert(self.key, until);
                table.held_until(self.key, until);
                if self.hold.cancels() {
                    // Sent under the lock, the id not yet free, so no newer call can have
                    // taken it; with the write queue full, as soon as there is room (a
                    // handler left running would hold its server's places). A cancel for a
                    // call that already finished is ignored.
                    let (op, id) = ((self.key >> 16) as u16, self.key as u16);
                    self.conn.send_control(ext::cancel(op, id));
                }
            }
            Some(Slot::Waiting(_)) => table.freed(self.key),
            None => {}
        }
        // The last call a draining server's DRAINED waited for may be this one.
        if table.drained_due(self.calls.is_draining()) {
            send_drained(self.conn);
        }
    }
}

/// Routes what a server sends: replies to their calls, stream packets to their streams, raw
/// packets to their receivers.
#[derive(Debug)]
pub(crate) struct ClientDispatch {
    calls: Arc<ClientCalls>,
}

impl ClientDispatch {
    /// A packet on the extension operation: the server's answer to the offer, a stream's
    /// credit or open acknowledgement, a reflection answer.
    fn extension(&self, conn: &Arc<Connection>, packet: Packet) {
        let calls = &self.calls;
        match packet.id {
            ext::DRAIN if calls.ext.accepted() & ext::EXT_DRAIN != 0 => calls.drain(conn),
            ext::ACCEPT => {
                if let Some((_, bits)) = ext::parse_hello(&packet.content) {
                    calls.ext.accept(bits);
                }
            }
            ext::CREDIT => {
                if let Some((stream, grant)) = ext::parse_stream_window(&packet.content) {
                    calls.streams.credit(stream, grant);
                }
            }
            ext::OPENED => {
                if let Some((stream, window)) = ext::parse_stream_window(&packet.content) {
                    calls.streams.opened(stream, window);
                }
            }
            ext::REFLECTION => calls.reflection(packet.content),
            _ => tracing::debug!(id = packet.id, "ignoring an extension packet"),
        }
    }
}

impl Dispatch for ClientDispatch {
    type Scratch = ();
    /// A stream's message (it may wait for the buffers' budget) or a raw route's packet (it
    /// may wait for room in the route's channel).
    type Later = Packet;

    fn packet_now(&self, conn: &Arc<Connection>, packet: Packet, _: &mut ()) -> Option<Packet> {
        let calls = &self.calls;
        if !calls.answered.load(Ordering::Relaxed) {
            calls.mark_answered();
        }
        if packet.op != ext::OP && !calls.ext.is_resolved() {
            // Anything the server sends (a reply, a stream message) answers a packet sent after
            // the offer: with no ACCEPT before it, the server ignored the offer (§2.1), as a PONG
            // would show. Streams opened from then on need no PING to know it.
            calls.ext.pong();
        }
        if packet.op == op::STREAM {
            return Some(packet);
        }
        if packet.op == ext::OP {
            self.extension(conn, packet);
            return None;
        }
        if calls.raw.get(packet.op).is_some() {
            return Some(packet);
        }
        if calls.complete(conn, packet.op, packet.id, packet.content) {
            conn.stop_reading();
        }
        None
    }

    async fn packet(&self, conn: &Arc<Connection>, packet: Packet, _: &mut ()) {
        let calls = &self.calls;
        if packet.op == op::STREAM {
            let len = packet.content.len();
            // Busy while it waits: the server's packets wait unread, their silence is ours
            // (see the server's `buffer_budget`).
            let busy = conn.mark_busy();
            let budget = Budget {
                connection: calls.streams.buffer_budget(len, calls.ext.accepted()).await,
                server: None,
            };
            drop(busy);
            let message = !packet.content.is_empty();
            match calls.streams.route(conn, packet.id, packet.content, budget) {
                // Servers never open streams toward clients in fRPC; like Go's client, drop them.
                Routed::Opens(_) => {
                    tracing::trace!(stream = packet.id, "dropping a stream the server opened")
                }
                // A message on one of ours (a close of an unknown stream is nothing).
                Routed::Done if message => calls.mark_served(),
                Routed::Done => {}
                Routed::Full(full) => {
                    calls.mark_served();
                    calls.streams.deliver(conn, full).await;
                }
            }
            return;
        }
        if let Some(tx) = calls.raw.get(packet.op) {
            calls.mark_served();
            let _ = tx.send(packet).await;
        }
    }

    async fn oversize(&self, conn: &Arc<Connection>, header: Header) {
        let max = conn.max_content_length();
        if header.op == op::STREAM {
            return self
                .calls
                .streams
                .reject_oversize(conn, header.id, header.len, max);
        }
        let err = Error::TooLarge {
            len: header.len as usize,
            max,
        };
        self.calls.fail(conn, header.op, header.id, err);
    }

    fn pong(&self) {
        self.calls.mark_answered();
        self.calls.ext.pong();
    }

    fn closed(&self, err: &Error) {
        self.calls.fail_all(err);
        self.calls.streams.close_all(err);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_count_up_per_method_and_skip_those_in_flight() {
        let mut table = Table::default();
        assert_eq!(table.register(10, None), Some((1, true)));
        assert_eq!(table.register(10, None), Some((2, false)));
        assert_eq!(
            table.register(11, None),
            Some((1, false)),
            "each method counts on its own"
        );
        // Near the end of the range: the counter wraps past 0 and skips the ids still taken.
        table.next_ids.insert(10, u16::MAX - 1);
        assert_eq!(table.register(10, None), Some((u16::MAX, false)));
        assert_eq!(table.register(10, None), Some((0, false)));
        assert_eq!(
            table.register(10, None),
            Some((3, false)),
            "1 and 2 are in flight"
        );
        table.calls.remove(&key(10, 1));
        table.next_ids.insert(10, 0);
        assert_eq!(
            table.register(10, None),
            Some((1, false)),
            "a finished call's id is free again"
        );
    }

    /// A method found with every id held (given up lately) fails at once until the soonest
    /// hold ends or a call leaves the table, without searching again: each search walked all
    /// 65,536 ids under the lock, and a soak's other calls waited on them for seconds.
    #[test]
    fn a_method_out_of_ids_is_noted_until_one_can_be_free() {
        let mut table = Table::default();
        let until = std::time::Instant::now() + held::AFTER_CANCEL;
        table
            .abandoned
            .extend((0..=u16::MAX).map(|id| (key(7, id), until)));
        assert_eq!(table.register(7, None), None);
        assert_eq!(
            table.exhausted.get(&7),
            Some(&until),
            "noted until the soonest hold ends"
        );
        table.abandoned.remove(&key(7, 5));
        assert_eq!(table.register(7, None), None, "noted: no search");
        assert_eq!(
            table.register(8, None),
            Some((1, true)),
            "other methods still have ids"
        );
        table.freed(key(8, 1));
        assert_eq!(
            table.register(7, None),
            None,
            "another method's call frees none of 7's ids"
        );
        table.freed(key(7, 9));
        assert_eq!(
            table.register(7, None),
            Some((5, false)),
            "searched again once one may be free"
        );
    }

    #[test]
    fn a_method_with_every_id_in_flight_is_refused() {
        let mut table = Table::default();
        for id in 0..=u16::MAX {
            table.calls.insert(key(7, id), Slot::Waiting(None));
        }
        assert_eq!(table.register(7, None), None);
        assert_eq!(
            table.register(8, None),
            Some((1, false)),
            "other methods still have ids"
        );
        // Given up, an id held 10 s: the method is refused that long, not the 60 s its note
        // said (session 33's churn probe).
        let soon = std::time::Instant::now() + held::AFTER_CANCEL;
        assert!(table.exhausted[&7] > soon + std::time::Duration::from_secs(30));
        table.held_until(key(7, 3), soon);
        assert_eq!(table.exhausted[&7], soon);
    }
}
