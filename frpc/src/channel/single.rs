//! One endpoint's reconnecting connection: a supervisor task connects, watches the connection
//! and reconnects with backoff when it closes; callers read the current connection from a
//! `watch` cell (a read lock and a reference count, no task hop).
//!
//! States follow gRPC's: while an attempt is under way calls wait for it; between attempts
//! (after a failure, during the backoff) they fail at once with [`Error::Unavailable`].

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, watch};
use tokio_util::sync::{CancellationToken, DropGuard};

use super::endpoint::Endpoint;
use super::state::ChannelState;
use crate::client::Client;
#[cfg(feature = "macros")]
use crate::health::{HealthClient, HealthWatch, ServingStatus};
#[cfg(feature = "macros")]
use crate::status::Code;
use crate::status::{CloseReason, Error};

/// Where a connection stands.
#[derive(Debug, Clone)]
pub(crate) enum State {
    /// Lazy, not yet asked to connect.
    Idle,
    /// An attempt is under way.
    Connecting,
    /// Connected.
    Ready(Client),
    /// Connected, but the server reports `NOT_SERVING` (or is shutting down): a balanced
    /// channel sends it nothing new (see [`Endpoint::health_check`]).
    #[cfg_attr(not(feature = "macros"), allow(dead_code, reason = "set by the health watch"))]
    NotServing(Client),
    /// The last attempt failed (why); the next comes after the backoff.
    Down(String),
    /// Every handle is gone: the supervisor stopped.
    Closed,
}

impl State {
    /// The public view of this state.
    pub(crate) fn public(&self) -> ChannelState {
        match self {
            State::Idle => ChannelState::Idle,
            State::Connecting => ChannelState::Connecting,
            // A closed (or draining) connection: the supervisor is about to try again.
            State::Ready(client) if client.is_closed() || client.is_draining() => ChannelState::Connecting,
            State::Ready(_) => ChannelState::Ready,
            State::NotServing(_) => ChannelState::NotServing,
            State::Down(reason) => ChannelState::TransientFailure(reason.clone()),
            State::Closed => ChannelState::Shutdown,
        }
    }
}

/// How the supervisor starts.
#[derive(Debug)]
pub(crate) enum Start {
    /// Wait for the first call.
    Lazy,
    /// Connect at once.
    Now,
    /// Already connected (`Endpoint::connect`).
    Connected(Client),
}

/// Counts of a balanced channel's endpoints by state, and a signal when any changes.
#[derive(Debug, Default)]
pub(crate) struct Health {
    /// Endpoints ready, connecting and connected but `NOT_SERVING`, in one word ([`Counts`]):
    /// an endpoint moves between them in one atomic step, so that no reader sees it in
    /// neither (two counters read one after the other once showed an endpoint going from
    /// connecting to ready as "nothing connected or connecting", failing a call).
    counts: AtomicU64,
    /// Connected endpoints whose server accepted the protobuf extension.
    protobuf: AtomicUsize,
    pub(crate) changed: Notify,
    /// Why the last connection of any endpoint closed.
    last_close: Mutex<Option<CloseReason>>,
    /// The last failed attempt of any endpoint (or of discovery), for the error of a call
    /// that finds none connected.
    last_failure: Mutex<Option<String>>,
}

/// How many endpoints are in each state, read from [`Health`] at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Counts {
    pub(crate) ready: usize,
    pub(crate) connecting: usize,
    pub(crate) not_serving: usize,
}

/// Which count an endpoint's state is in, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Ready,
    Connecting,
    NotServing,
}

impl Slot {
    /// Bits per count: 2^21 (2 million) endpoints per state at most, three counts in 63 bits.
    const BITS: u32 = 21;

    fn of(state: &State) -> Option<Slot> {
        match state {
            State::Ready(_) => Some(Slot::Ready),
            State::Idle | State::Connecting => Some(Slot::Connecting),
            State::NotServing(_) => Some(Slot::NotServing),
            State::Down(_) | State::Closed => None,
        }
    }

    /// One endpoint in this count, as a value added to the packed word.
    fn one(self) -> u64 {
        1 << (self as u32 * Slot::BITS)
    }
}

impl Counts {
    fn unpack(word: u64) -> Counts {
        let count = |slot: Slot| ((word >> (slot as u32 * Slot::BITS)) & ((1 << Slot::BITS) - 1)) as usize;
        Counts {
            ready: count(Slot::Ready),
            connecting: count(Slot::Connecting),
            not_serving: count(Slot::NotServing),
        }
    }

    /// No endpoint is connected or connecting.
    pub(crate) fn all_down(&self) -> bool {
        self.ready == 0 && self.connecting == 0
    }
}

impl Health {
    /// The counts now, all read at one instant.
    pub(crate) fn counts(&self) -> Counts {
        Counts::unpack(self.counts.load(Ordering::Acquire))
    }

    /// The state of a balanced channel with these counts.
    pub(crate) fn public(&self) -> ChannelState {
        let counts = self.counts();
        match (counts.ready, counts.connecting) {
            (0, 0) if counts.not_serving > 0 => ChannelState::NotServing,
            (0, 0) => ChannelState::TransientFailure("no endpoint is connected".into()),
            (0, _) => ChannelState::Connecting,
            _ => ChannelState::Ready,
        }
    }

    /// What a call gets when no endpoint is ready and none is connecting.
    pub(crate) fn unavailable(&self) -> Error {
        let failure = self.last_failure.lock().unwrap_or_else(|e| e.into_inner());
        Error::Unavailable(match (self.counts().not_serving, &*failure) {
            (0, None) => "no endpoint is connected".into(),
            (0, Some(failure)) => format!("no endpoint is connected (last failure: {failure})"),
            (n, _) => format!("no endpoint is serving ({n} connected, NOT_SERVING)"),
        })
    }

    /// Notes a failed attempt (`what`: where, and why), for [`Health::unavailable`].
    pub(crate) fn record_failure(&self, what: String) {
        *self.last_failure.lock().unwrap_or_else(|e| e.into_inner()) = Some(what);
    }

    /// Why the last connection of any endpoint closed.
    pub(crate) fn last_close(&self) -> Option<CloseReason> {
        self.last_close.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Endpoints connected now.
    pub(crate) fn ready(&self) -> usize {
        self.counts().ready
    }

    /// Endpoints with an attempt under way.
    pub(crate) fn connecting(&self) -> usize {
        self.counts().connecting
    }

    /// Whether every connected endpoint takes protobuf-encoded messages (and one is connected).
    pub(crate) fn all_protobuf(&self) -> bool {
        let ready = self.ready();
        ready > 0 && self.protobuf.load(Ordering::Acquire) == ready
    }

    /// Moves one endpoint from `old`'s count to `new`'s; `protobuf` says whether each was a
    /// connection that negotiated protobuf.
    fn update(&self, old: Option<Slot>, new: Option<Slot>, protobuf: (bool, bool)) {
        match protobuf {
            (false, true) => self.protobuf.fetch_add(1, Ordering::AcqRel),
            (true, false) => self.protobuf.fetch_sub(1, Ordering::AcqRel),
            _ => 0,
        };
        self.move_endpoint(old, new);
    }

    /// Moves one endpoint between counts in one atomic step (wrapping arithmetic: the word
    /// gains one in `new`'s count and loses one in `old`'s, neither going below zero).
    fn move_endpoint(&self, old: Option<Slot>, new: Option<Slot>) {
        let add = new.map_or(0, Slot::one);
        let remove = old.map_or(0, Slot::one);
        self.counts.fetch_add(add.wrapping_sub(remove), Ordering::AcqRel);
        self.changed.notify_waiters();
    }
}

#[derive(Debug)]
struct Shared {
    endpoint: Endpoint,
    state: watch::Sender<State>,
    /// A lazy channel's first call asks for the first attempt.
    wake: Notify,
    health: Option<Arc<Health>>,
    /// Whether the current state is a connection that negotiated protobuf (read once, when
    /// the state is set, so the health counts stay balanced).
    protobuf: AtomicBool,
    /// The endpoint was retired: its state is `Closed` for good.
    retired: AtomicBool,
    /// Connections made after the first.
    reconnects: AtomicU64,
    /// Why the last connection closed.
    last_close: Mutex<Option<CloseReason>>,
}

impl Shared {
    /// Notes why a connection closed, for the channel (and its balanced parent).
    fn record_close(&self, reason: Option<CloseReason>) {
        let Some(reason) = reason else { return };
        if let Some(health) = &self.health {
            *health.last_close.lock().unwrap_or_else(|e| e.into_inner()) = Some(reason.clone());
        }
        *self.last_close.lock().unwrap_or_else(|e| e.into_inner()) = Some(reason);
    }

    /// Publishes a new state, then counts it: whoever the counts wake sees the new state. Once
    /// the endpoint is retired, only `Closed` (the supervisor may publish a connection it made
    /// as [`Handle::retire`] runs on another thread: it is not published).
    fn set(&self, new: State) {
        let protobuf = matches!(&new, State::Ready(client) if client.protobuf_accepted());
        let slot = Slot::of(&new);
        let closing = matches!(new, State::Closed);
        if let (Some(health), State::Down(reason)) = (&self.health, &new) {
            let address = self.endpoint.address();
            health.record_failure(match reason.contains(address) {
                true => reason.clone(),
                false => format!("{address}: {reason}"),
            });
        }
        // Under the cell's lock, so that two writers (the supervisor, `retire`) count each
        // change once, from the state it replaced.
        let mut moved = None;
        self.state.send_if_modified(|state| {
            if self.retired.load(Ordering::Acquire) && !closing {
                return false;
            }
            let old = std::mem::replace(state, new);
            let was = self.protobuf.swap(protobuf, Ordering::AcqRel);
            moved = Some((Slot::of(&old), was));
            true
        });
        if let (Some(health), Some((old, was))) = (&self.health, moved) {
            health.update(old, slot, (was, protobuf));
        }
    }
}

/// A handle on one endpoint's connection; the supervisor stops when the last clone is dropped.
#[derive(Debug, Clone)]
pub(crate) struct Handle {
    shared: Arc<Shared>,
    stop: CancellationToken,
    _stop_on_drop: Arc<DropGuard>,
}

impl Handle {
    /// Starts the supervisor of `endpoint`'s connection (within a Tokio runtime).
    pub(crate) fn spawn(endpoint: Endpoint, start: Start, health: Option<Arc<Health>>) -> Handle {
        let initial = match &start {
            Start::Lazy => State::Idle,
            Start::Now => State::Connecting,
            Start::Connected(client) => State::Ready(client.clone()),
        };
        let protobuf = matches!(&initial, State::Ready(client) if client.protobuf_accepted());
        if let Some(health) = &health {
            health.update(None, Slot::of(&initial), (false, protobuf));
        }
        let shared = Arc::new(Shared {
            endpoint,
            state: watch::Sender::new(initial),
            wake: Notify::new(),
            health,
            protobuf: AtomicBool::new(protobuf),
            retired: AtomicBool::new(false),
            reconnects: AtomicU64::new(0),
            last_close: Mutex::new(None),
        });
        let stop = CancellationToken::new();
        tokio::spawn(supervise(shared.clone(), stop.clone(), start));
        Handle {
            shared,
            stop: stop.clone(),
            _stop_on_drop: Arc::new(stop.drop_guard()),
        }
    }

    /// Stops reconnecting and drops the connection (calls in flight on it finish): the
    /// endpoint was removed from its balanced channel.
    pub(crate) fn retire(&self) {
        // Closed at once, not when the supervisor gets to it: the endpoint leaves the counts
        // now, so that a call or stream made after the removal neither waits on it nor finds
        // it counted as ready while it is not.
        self.shared.retired.store(true, Ordering::Release);
        self.stop.cancel();
        self.shared.set(State::Closed);
    }

    /// Where the connection stands.
    pub(crate) fn state(&self) -> ChannelState {
        self.shared.state.borrow().public()
    }

    /// Connections made after the first.
    pub(crate) fn reconnects(&self) -> u64 {
        self.shared.reconnects.load(Ordering::Relaxed)
    }

    /// Why the last connection closed.
    pub(crate) fn last_close(&self) -> Option<CloseReason> {
        self.shared
            .last_close
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The endpoint.
    pub(crate) fn endpoint(&self) -> &Endpoint {
        &self.shared.endpoint
    }

    /// The current connection, when one is up (and its server is not shutting down) and the
    /// endpoint was not retired.
    pub(crate) fn ready_client(&self) -> Option<Client> {
        if self.is_retired() {
            return None;
        }
        match &*self.shared.state.borrow() {
            State::Ready(client) if takes_calls(client) => Some(client.clone()),
            _ => None,
        }
    }

    /// Whether a connection is up and takes new calls (the endpoint was not retired).
    pub(crate) fn is_ready(&self) -> bool {
        let ready = matches!(&*self.shared.state.borrow(), State::Ready(client) if takes_calls(client));
        ready && !self.is_retired()
    }

    /// Whether the endpoint was retired ([`Handle::retire`]): set at once, before the
    /// supervisor stops, so that nothing new goes there from then on.
    pub(crate) fn is_retired(&self) -> bool {
        self.shared.retired.load(Ordering::Acquire)
    }

    /// The connection for a call a balancer admitted (the endpoint was ready when it picked
    /// it), taken now: the current one, even if the server stopped serving or the endpoint was
    /// retired since, as long as it is open.
    pub(crate) fn admitted_client(&self) -> Option<Client> {
        match &*self.shared.state.borrow() {
            State::Ready(client) | State::NotServing(client) if takes_calls(client) => Some(client.clone()),
            _ => None,
        }
    }

    /// A receiver of state changes (the current state counts as seen).
    pub(crate) fn subscribe(&self) -> watch::Receiver<State> {
        self.shared.state.subscribe()
    }

    /// The connection to call on: the current one; while an attempt is under way (or a lazy
    /// channel's first), the outcome of that attempt; between attempts, [`Error::Unavailable`].
    pub(crate) async fn client(&self) -> Result<Client, Error> {
        if let Some(client) = self.ready_client() {
            return Ok(client);
        }
        self.wait_client().await
    }

    /// [`Handle::client`] within `limit`, if any: waiting for an attempt counts towards it.
    /// Returns the connection and what is left of `limit` for the call itself.
    pub(crate) async fn client_within(
        &self,
        limit: Option<Duration>,
    ) -> Result<(Client, Option<Duration>), Error> {
        if let Some(client) = self.ready_client() {
            return Ok((client, limit));
        }
        let Some(limit) = limit else {
            return Ok((self.wait_client().await?, None));
        };
        // Tokio's clock, as the timeout's: the two agree under a paused clock too.
        let started = tokio::time::Instant::now();
        match tokio::time::timeout(limit, self.wait_client()).await {
            Ok(client) => Ok((client?, Some(left_of(limit, started)?))),
            Err(_) => Err(Error::Timeout(limit)),
        }
    }

    async fn wait_client(&self) -> Result<Client, Error> {
        let mut rx = self.shared.state.subscribe();
        let reason = loop {
            match &*rx.borrow_and_update() {
                // A call the balancer admitted just before the server stopped serving goes on.
                State::Ready(client) | State::NotServing(client) if takes_calls(client) => {
                    return Ok(client.clone());
                }
                // Closed, and the supervisor is about to try again: wait for that attempt.
                State::Ready(_) | State::NotServing(_) | State::Connecting => {}
                State::Idle => self.shared.wake.notify_one(),
                State::Down(reason) => break reason.clone(),
                State::Closed => break "the channel is closed".into(),
            }
            if rx.changed().await.is_err() {
                break "the channel is closed".into();
            }
        };
        // Failing at once never waits: yield, so that a caller retrying in a loop does not hold
        // its worker thread away from the reconnection and the timers it waits for.
        tokio::task::yield_now().await;
        Err(Error::Unavailable(reason))
    }

    /// Waits until `done(connected)` holds, `connected` being whether a connection is up; a
    /// lazy channel starts connecting.
    pub(crate) async fn wait(&self, mut done: impl FnMut(bool) -> bool) {
        let mut rx = self.shared.state.subscribe();
        loop {
            let ready = match &*rx.borrow_and_update() {
                State::Ready(client) => takes_calls(client),
                State::Idle => {
                    self.shared.wake.notify_one();
                    false
                }
                _ => false,
            };
            if done(ready) {
                return;
            }
            // A closed connection is noticed by the supervisor, which then changes the state.
            if rx.changed().await.is_err() {
                return;
            }
        }
    }
}

/// Whether new calls may go to `client`: it is open, and its server has not said it is
/// shutting down (its DRAIN: the supervisor is connecting anew).
fn takes_calls(client: &Client) -> bool {
    !client.is_closed() && !client.is_draining()
}

/// What is left of a call's `limit` once it has waited since `started` for a connection: the
/// timeout of the call itself. A wait that used it all (the connection came as the limit ran
/// out) leaves the call timed out, as any call past its deadline: handed on, a zero timeout
/// would be refused as a configuration error the caller never made.
pub(crate) fn left_of(limit: Duration, started: tokio::time::Instant) -> Result<Duration, Error> {
    match limit.saturating_sub(started.elapsed()) {
        Duration::ZERO => Err(Error::Timeout(limit)),
        left => Ok(left),
    }
}

/// Connects, watches the connection, reconnects: the first attempt after a close goes at once,
/// each after a failure waits out the backoff. A server that says it is shutting down (DRAIN)
/// is left at once for a new connection (its calls in flight finish on the old one).
async fn supervise(shared: Arc<Shared>, stop: CancellationToken, start: Start) {
    let mut current = match start {
        Start::Lazy => {
            tokio::select! {
                _ = shared.wake.notified() => None,
                _ = stop.cancelled() => return shared.set(State::Closed),
            }
        }
        Start::Now => None,
        Start::Connected(client) => Some(client),
    };
    let backoff = *shared.endpoint.reconnect_backoff();
    let mut failures = 0;
    let mut connected_before = current.is_some();
    loop {
        let client = match current.take() {
            Some(client) => client,
            None => {
                shared.set(State::Connecting);
                let attempt = tokio::select! {
                    biased;
                    _ = stop.cancelled() => break,
                    attempt = shared.endpoint.connect_client() => attempt,
                };
                // Retired while connecting: the new connection is not published.
                if stop.is_cancelled() {
                    break;
                }
                match attempt {
                    Ok(client) => {
                        if std::mem::replace(&mut connected_before, true) {
                            shared.reconnects.fetch_add(1, Ordering::Relaxed);
                        }
                        // A watched endpoint stays connecting until its server's first health
                        // answer (`follow_health`), as in gRPC: a server NOT_SERVING from its
                        // start got calls and streams meanwhile.
                        if !watches_health(&shared, &client) {
                            shared.set(State::Ready(client.clone()));
                        }
                        client
                    }
                    Err(err) => {
                        let delay = backoff.delay(failures);
                        failures = failures.saturating_add(1);
                        tracing::debug!(endpoint = shared.endpoint.address(), %err, ?delay, "connect failed");
                        shared.set(State::Down(err.to_string()));
                        tokio::select! {
                            _ = tokio::time::sleep(delay) => continue,
                            _ = stop.cancelled() => break,
                        }
                    }
                }
            }
        };
        let up_since = Instant::now();
        let draining = tokio::select! {
            _ = client.closed() => false,
            // Left before it closes: the server's shutdown is why.
            () = client.draining() => true,
            _ = stop.cancelled() => break,
            never = follow_health(&shared, &client) => match never {},
        };
        let reason = match draining {
            true => "the server is shutting down".to_owned(),
            false => client.closed_error().to_string(),
        };
        match draining {
            true => shared.record_close(Some(CloseReason::PeerClosed(reason.clone()))),
            false => shared.record_close(client.close_reason()),
        }
        // A connection that served a call (or stayed up for the longest backoff) worked:
        // reconnect at once. One that died (closed at accept, reset during or right after the
        // handshake) or drained before failed: back off as after a failed connect, and fail
        // calls fast meanwhile, or a server refusing connections (or draining each one at
        // once) would be dialled in a tight loop.
        if client.has_served() || up_since.elapsed() >= backoff.longest() {
            failures = 0;
            tracing::debug!(endpoint = shared.endpoint.address(), %reason, "reconnecting");
            continue;
        }
        let delay = backoff.delay(failures);
        failures = failures.saturating_add(1);
        tracing::debug!(endpoint = shared.endpoint.address(), %reason, ?delay, "connection ended before it served a call");
        shared.set(State::Down(format!(
            "the connection ended before it served a call: {reason}"
        )));
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = stop.cancelled() => break,
        }
    }
    // Calls in flight keep their own handle on the connection: it closes when they finish.
    shared.set(State::Closed);
}

/// Whether the supervisor follows the health of `client`'s server: a balanced channel's
/// endpoint with [`Endpoint::health_check`] on, connected to a server that took the extensions
/// (Go fRPC serves no `frpc::health`).
#[cfg(feature = "macros")]
fn watches_health(shared: &Shared, client: &Client) -> bool {
    shared.health.is_some() && shared.endpoint.is_health_checked() && client.extensions_accepted()
}

/// Without the `macros` feature there is no `frpc::health`: nothing is watched.
#[cfg(not(feature = "macros"))]
fn watches_health(_: &Shared, _: &Client) -> bool {
    false
}

/// Follows the whole server's `frpc::health` status on `client` when [`watches_health`]: the
/// connection, published as connecting until then, is `Ready` once the first answer says the
/// server serves and `NotServing` while it reports `NOT_SERVING` or once the watch ends (the
/// server is shutting down). A server that serves no health (the open is UNIMPLEMENTED), whose
/// first watch fails, or that gives no first answer within the endpoint's `connect_timeout`
/// is used as an unwatched one (`Ready`) until a watch says otherwise. Runs until the
/// supervisor drops it (the connection closed, or the endpoint was retired).
#[cfg(feature = "macros")]
async fn follow_health(shared: &Shared, client: &Client) -> std::convert::Infallible {
    if watches_health(shared, client) {
        let limit = shared.endpoint.config().connect_timeout;
        let watching = watch_health(shared, client);
        tokio::pin!(watching);
        if tokio::time::timeout(limit, watching.as_mut()).await.is_err() {
            tracing::debug!(
                endpoint = shared.endpoint.address(),
                ?limit,
                "no health answer: used unwatched"
            );
            publish_if_connecting(shared, client);
            watching.await;
        }
    }
    std::future::pending().await
}

/// The watch loop of [`follow_health`]: returns once there is nothing more to follow (no
/// health service, or the server is stopping). A watch that fails (a layer of an older server
/// cut it, or refused it: a timeout, a full concurrency limit) says nothing of the server's
/// health: the status stays, and the watch opens again after a pause (100 ms, doubling to
/// 10 s while it keeps failing).
#[cfg(feature = "macros")]
async fn watch_health(shared: &Shared, client: &Client) {
    // Without the call timeout of the endpoint (`Endpoint::timeout`), which bounds a stream's
    // whole life: the watch was cut and opened again every timeout.
    let mut watching = client.clone();
    watching.set_options(None, None, None);
    let health = HealthClient::new(watching);
    let mut pause = FIRST_PAUSE;
    loop {
        let end = match health.watch("").await {
            Ok(mut watch) => follow_watch(shared, client, &mut watch, &mut pause).await,
            Err(err) if err.code() == Code::Unimplemented => {
                publish_serving(shared, client, true);
                return;
            }
            Err(_) => WatchEnd::Failed,
        };
        match end {
            // A server that takes the drain notice sends it as the watch ends (its reader
            // does, before its next packet): the supervisor then leaves for a new
            // connection. Going NOT_SERVING first failed a balanced channel's calls for
            // that moment ("no endpoint is serving"), where the server still served them.
            WatchEnd::ServerStopping if client.drain_accepted() => {
                tokio::time::sleep(DRAIN_NOTICE_WAIT).await;
                publish_serving(shared, client, false);
                return;
            }
            WatchEnd::ServerStopping => {
                publish_serving(shared, client, false);
                return;
            }
            WatchEnd::Idle => {}
            WatchEnd::Failed => {
                // Before any answer: used as unwatched, rather than kept out.
                publish_if_connecting(shared, client);
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(LONGEST_PAUSE);
            }
        }
    }
}

/// How long a watch's end waits for the drain notice that follows it before the endpoint goes
/// NOT_SERVING (a notice that could not be sent: the server's write queue was full).
#[cfg(feature = "macros")]
const DRAIN_NOTICE_WAIT: Duration = Duration::from_secs(1);

/// The pause before a failed health watch opens again, doubling up to [`LONGEST_PAUSE`].
#[cfg(feature = "macros")]
const FIRST_PAUSE: Duration = Duration::from_millis(100);
#[cfg(feature = "macros")]
const LONGEST_PAUSE: Duration = Duration::from_secs(10);

/// How a health watch ended.
#[cfg(feature = "macros")]
enum WatchEnd {
    /// The server ended it: it is shutting down.
    ServerStopping,
    /// Quiet past the stream idle timeout (`stream_idle_timeout`): open it again at once.
    Idle,
    /// It failed, or could not open: open it again after a pause.
    Failed,
}

/// Publishes each status `watch` reports until it ends; a status resets the pause before the
/// next open.
#[cfg(feature = "macros")]
async fn follow_watch(
    shared: &Shared,
    client: &Client,
    watch: &mut HealthWatch,
    pause: &mut Duration,
) -> WatchEnd {
    loop {
        match watch.message().await {
            Ok(Some(reply)) => {
                *pause = FIRST_PAUSE;
                publish_serving(shared, client, reply != ServingStatus::NotServing);
            }
            Ok(None) => return WatchEnd::ServerStopping,
            Err(Error::Timeout(_)) => return WatchEnd::Idle,
            Err(_) => return WatchEnd::Failed,
        }
    }
}

/// Without the `macros` feature there is no `frpc::health`: nothing to follow.
#[cfg(not(feature = "macros"))]
async fn follow_health(_: &Shared, _: &Client) -> std::convert::Infallible {
    std::future::pending().await
}

/// Publishes `client` as serving or not, if that changes its state (connecting, until the
/// first answer, is neither).
#[cfg(feature = "macros")]
fn publish_serving(shared: &Shared, client: &Client, serving: bool) {
    let now = match &*shared.state.borrow() {
        State::Ready(_) => Some(true),
        State::NotServing(_) => Some(false),
        _ => None,
    };
    if now != Some(serving) {
        shared.set(match serving {
            true => State::Ready(client.clone()),
            false => State::NotServing(client.clone()),
        });
    }
}

/// Publishes `client` as ready if no health answer came yet (it is still connecting).
#[cfg(feature = "macros")]
fn publish_if_connecting(shared: &Shared, client: &Client) {
    if matches!(&*shared.state.borrow(), State::Connecting) {
        shared.set(State::Ready(client.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An endpoint going back and forth between connecting and ready is never seen in neither
    /// count, by a reader looking as often as it can from another thread.
    #[test]
    fn an_endpoint_moving_between_counts_is_always_counted() {
        let health = Arc::new(Health::default());
        health.move_endpoint(None, Some(Slot::Connecting));
        let stop = Arc::new(AtomicBool::new(false));
        let mover = {
            let (health, stop) = (health.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    health.move_endpoint(Some(Slot::Connecting), Some(Slot::Ready));
                    health.move_endpoint(Some(Slot::Ready), Some(Slot::Connecting));
                }
            })
        };
        let mut seen_ready = 0;
        for _ in 0..2_000_000 {
            let counts = health.counts();
            assert!(!counts.all_down(), "{counts:?}");
            assert_eq!(counts.ready + counts.connecting, 1, "{counts:?}");
            seen_ready += counts.ready;
        }
        stop.store(true, Ordering::Relaxed);
        mover.join().unwrap();
        assert!(seen_ready > 0, "the mover never ran");
    }

    #[test]
    fn counts_are_kept_apart_in_the_word() {
        let health = Health::default();
        for (slot, n) in [(Slot::Ready, 3), (Slot::Connecting, 5), (Slot::NotServing, 7)] {
            for _ in 0..n {
                health.move_endpoint(None, Some(slot));
            }
        }
        health.move_endpoint(Some(Slot::Connecting), Some(Slot::NotServing));
        health.move_endpoint(Some(Slot::Ready), None);
        let want = Counts {
            ready: 2,
            connecting: 4,
            not_serving: 8,
        };
        assert_eq!(health.counts(), want);
        assert!(matches!(health.public(), ChannelState::Ready));
    }
}
