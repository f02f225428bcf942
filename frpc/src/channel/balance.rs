//! Balanced channels: tower's power-of-two-choices balancer (`tower::balance::p2c`) over a
//! `tower::discover` stream of endpoints, one reconnecting connection each, weighed by
//! `tower::load::PendingRequests`. The balancer sits behind a `tower::buffer::Buffer` so that
//! clones share it. An endpoint reports itself not ready while its connection is down, so the
//! balancer skips it until it reconnects.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::hash::Hash;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Waker, ready};

use futures_core::Stream;
use tokio::sync::{mpsc, oneshot};
use tower::balance::p2c::Balance;
use tower::buffer::Buffer;
use tower::discover::Change;
use tower::load::{CompleteOnResponse, PendingRequests};
use tower::util::BoxService;
use tower::{BoxError, Service, ServiceExt};

use super::endpoint::Endpoint;
use super::single::{Handle, Health, Start};
use super::state::ChannelState;
use crate::caller::{Reply, Request};
use crate::client::Client;
use crate::status::{CloseReason, Error};

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// How many calls may queue for the balancer before callers wait.
const BUFFER: usize = 1024;

/// The shared part of a balanced channel.
#[derive(Clone)]
pub(crate) struct Balanced {
    buffer: Buffer<Routed, BoxFuture<Result<Reply, BoxError>>>,
    endpoints: Arc<Endpoints>,
    /// Asks the forwarder to apply every change sent so far, then answer.
    sync: mpsc::UnboundedSender<oneshot::Sender<()>>,
    /// Whether a change sent is not applied yet (see [`Unapplied`]).
    unapplied: Arc<dyn Fn() -> bool + Send + Sync>,
    /// Keeps a fixed list's discovery stream open.
    _list: Option<Arc<mpsc::Sender<Change<usize, Endpoint>>>>,
}

impl std::fmt::Debug for Balanced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Balanced")
            .field("ready", &self.endpoints.health.ready())
            .field("connecting", &self.endpoints.health.connecting())
            .finish()
    }
}

/// Every live endpoint of a balanced channel, for streams (which open on one connection, not
/// through the balancer) and for counts.
#[derive(Debug, Default)]
struct Endpoints {
    health: Arc<Health>,
    handles: Mutex<Vec<Weak<Handle>>>,
    next: AtomicUsize,
    /// Discovery ([`crate::discover::Dns`]) has not given its first answer: calls wait for it
    /// instead of failing for want of endpoints.
    discovering: AtomicBool,
}

/// Held by a discovery until its first answer is sent: the channel's calls wait for it.
#[derive(Debug)]
pub(crate) struct FirstAnswer(Arc<Endpoints>);

impl FirstAnswer {
    /// The channel's endpoint counts, where discovery notes its failures.
    pub(crate) fn health(&self) -> Arc<Health> {
        self.0.health.clone()
    }
}

impl Drop for FirstAnswer {
    fn drop(&mut self) {
        self.0.discovering.store(false, Ordering::Release);
        self.0.health.changed.notify_waiters();
    }
}

impl Balanced {
    /// A balanced channel whose endpoints come and go through the returned sender.
    pub(crate) fn new<K>(capacity: usize) -> (Balanced, mpsc::Sender<Change<K, Endpoint>>)
    where
        K: Hash + Eq + Clone + Send + 'static,
    {
        let capacity = capacity.max(1);
        let (tx, rx) = mpsc::channel::<Change<K, Endpoint>>(capacity);
        let (sync, syncs) = mpsc::unbounded_channel();
        let endpoints = Arc::new(Endpoints::default());
        let pending = Arc::new(Mutex::new(Pending::default()));
        let applying = Arc::new(AtomicBool::new(false));
        let forwarder = Forwarder {
            registry: endpoints.clone(),
            live: HashMap::new(),
            pending: pending.clone(),
            applying: applying.clone(),
        };
        tokio::spawn(forwarder.run(rx, syncs));
        let balance = Balance::new(Discovered { pending });
        let buffer = Buffer::new(BoxService::new(balance), BUFFER);
        let unapplied = Unapplied {
            changes: tx.downgrade(),
            applying,
        };
        let balanced = Balanced {
            buffer,
            endpoints,
            sync,
            unapplied: Arc::new(move || unapplied.any()),
            _list: None,
        };
        (balanced, tx)
    }

    /// A balanced channel over a fixed list of endpoints.
    pub(crate) fn list(list: impl IntoIterator<Item = Endpoint>) -> Balanced {
        let list: Vec<Endpoint> = list.into_iter().collect();
        let (mut balanced, tx) = Balanced::new(list.len());
        for (key, endpoint) in list.into_iter().enumerate() {
            // Room for every one: the channel holds `list.len()` changes.
            let _ = tx.try_send(Change::Insert(key, endpoint));
        }
        balanced._list = Some(Arc::new(tx));
        balanced
    }

    /// Makes calls wait for endpoints until the returned guard is dropped (a discovery's first
    /// answer).
    pub(crate) fn first_answer(&self) -> FirstAnswer {
        self.endpoints.discovering.store(true, Ordering::Release);
        FirstAnswer(self.endpoints.clone())
    }

    /// Where the channel stands, from its endpoints' counts.
    pub(crate) fn state(&self) -> ChannelState {
        self.endpoints.health.public()
    }

    /// The endpoints' counts and their change signal.
    pub(crate) fn health(&self) -> Arc<Health> {
        self.endpoints.health.clone()
    }

    /// Reconnections of its current endpoints.
    pub(crate) fn reconnects(&self) -> u64 {
        let handles = self.endpoints.handles.lock().unwrap_or_else(|e| e.into_inner());
        handles
            .iter()
            .filter_map(Weak::upgrade)
            .map(|handle| handle.reconnects())
            .sum()
    }

    /// Why the last connection of any endpoint closed.
    pub(crate) fn last_close(&self) -> Option<CloseReason> {
        self.endpoints.health.last_close()
    }

    /// Endpoints connected now.
    pub(crate) fn ready(&self) -> usize {
        self.endpoints.health.ready()
    }

    /// Whether every connected endpoint takes protobuf-encoded messages: then requests are
    /// encoded in protobuf before the balancer picks one.
    pub(crate) fn protobuf(&self) -> bool {
        self.endpoints.health.all_protobuf()
    }

    /// One unary call on the least loaded of two ready endpoints. With none connected, the
    /// call waits while some are connecting and fails with [`Error::Unavailable`] when none is.
    pub(crate) async fn call(&self, request: Request) -> Result<Reply, Error> {
        let limit = request.timeout;
        let work = async {
            let mut request = request;
            loop {
                self.wait_ready().await?;
                match self.route(request).await {
                    Ok(reply) => return reply,
                    // Picked for an endpoint removed before the call took its connection: the
                    // call never started, so it goes through the balancer again.
                    Err(again) => request = again,
                }
            }
        };
        match limit {
            None => work.await,
            Some(limit) => tokio::time::timeout(limit, work)
                .await
                .unwrap_or(Err(Error::Timeout(limit))),
        }
    }

    /// One pass of `request` through the balancer: its outcome, or the request back when the
    /// endpoint picked was removed before the call took its connection.
    async fn route(&self, request: Request) -> Result<Result<Reply, Error>, Request> {
        let taken = Arc::new(AtomicBool::new(false));
        let routed = Routed {
            request,
            taken: taken.clone(),
        };
        let mut reply = send(self.buffer.clone(), routed);
        // The balancer waits while no endpoint is ready; give up when none is connecting
        // either (every endpoint went down or was removed since the check above), unless
        // an endpoint took the call already: that one runs on its connection, which
        // answers it or fails it when it closes (a removed or draining endpoint's calls
        // finish, as tower's balancer lets them).
        tokio::select! {
            biased;
            reply = &mut reply => return outcome(reply),
            () = self.all_down() => {}
        }
        match taken.load(Ordering::Acquire) {
            true => outcome(reply.await),
            false => Ok(Err(self.endpoints.health.unavailable())),
        }
    }

    /// Has the forwarder apply the changes sent and not yet applied, if any: a call or stream
    /// made after `changes.send(..)` returned sees that change (a removed endpoint is not
    /// picked, an inserted one is waited for). Costs nothing beyond two atomic reads when
    /// every change is applied.
    async fn catch_up(&self) {
        if (self.unapplied)() {
            let (done, applied) = oneshot::channel();
            if self.sync.send(done).is_ok() {
                let _ = applied.await;
            }
        }
    }

    /// Returns once an endpoint is connected; fails when none is connected or connecting,
    /// unless discovery has not answered yet (then it waits).
    pub(crate) async fn wait_ready(&self) -> Result<(), Error> {
        self.catch_up().await;
        let health = &self.endpoints.health;
        // Whether the forwarder has applied every change sent before discovery's first answer
        // was in: only then do no endpoints connected or connecting mean there are none.
        let mut synced = false;
        loop {
            let changed = health.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let counts = health.counts();
            if counts.ready > 0 {
                return Ok(());
            }
            // Discovery that has not answered yet: wait for it (within the call's timeout); its
            // answer's changes are sent before the flag clears, which notifies `changed`.
            let answered = !self.endpoints.discovering.load(Ordering::Acquire);
            if counts.connecting == 0 && answered {
                if synced {
                    // Yield, as a one-endpoint channel does (see `single::Handle::wait_client`).
                    tokio::task::yield_now().await;
                    return Err(health.unavailable());
                }
                // An endpoint inserted just before this call (or by the first answer) may not
                // be applied yet: have the forwarder apply everything sent so far, then look
                // again. (A sync made while discovery had not answered would prove nothing.)
                let (done, applied) = oneshot::channel();
                synced = true;
                if self.sync.send(done).is_ok() {
                    let _ = applied.await;
                }
                continue;
            }
            changed.await;
        }
    }

    /// Resolves once no endpoint is connected or connecting.
    async fn all_down(&self) {
        let health = &self.endpoints.health;
        self.wait(|_| health.counts().all_down()).await
    }

    /// Waits until `done(connected endpoints)` holds.
    pub(crate) async fn wait(&self, mut done: impl FnMut(usize) -> bool) {
        let health = &self.endpoints.health;
        crate::notify::until(&health.changed, || done(health.ready())).await
    }

    /// A connection to open a stream on: the connected endpoints in turn.
    pub(crate) async fn stream_client(&self) -> Result<Client, Error> {
        self.wait_ready().await?;
        let handles: Vec<Arc<Handle>> = {
            let handles = self.endpoints.handles.lock().unwrap_or_else(|e| e.into_inner());
            handles.iter().filter_map(Weak::upgrade).collect()
        };
        let start = self.endpoints.next.fetch_add(1, Ordering::Relaxed);
        (0..handles.len())
            .find_map(|i| handles[(start + i) % handles.len()].ready_client())
            .ok_or_else(|| self.endpoints.health.unavailable())
    }
}

/// A call on its way through the balancer: `taken` is set once an endpoint takes it.
struct Routed {
    request: Request,
    taken: Arc<AtomicBool>,
}

/// A call the balancer gave to an endpoint removed after the pick and before the call took
/// the endpoint's connection (the forwarder retires an endpoint before the balancer reads
/// its removal): the call, not started, goes through the balancer again.
#[derive(Debug)]
struct Retired(Request);

impl std::fmt::Display for Retired {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the endpoint picked for the call was removed")
    }
}

impl std::error::Error for Retired {}

/// A call's outcome from the balancer, or its request back when it must go again ([`Retired`]).
fn outcome(reply: Result<Reply, BoxError>) -> Result<Result<Reply, Error>, Request> {
    match reply {
        Ok(reply) => Ok(Ok(reply)),
        Err(err) => match err.downcast::<Retired>() {
            Ok(retired) => Err(retired.0),
            Err(err) => Ok(Err(Error::from_layer(err))),
        },
    }
}

/// Whether a change sent to a balanced channel is not applied yet: queued, or taken by the
/// forwarder and being applied.
struct Unapplied<K> {
    /// Weak: the channel must not keep its own changes open (a discovery stops when the
    /// channel's clones are gone and its receiver with them).
    changes: mpsc::WeakSender<Change<K, Endpoint>>,
    /// Set by the forwarder before it takes a change and cleared once it applied it.
    applying: Arc<AtomicBool>,
}

impl<K> Unapplied<K> {
    fn any(&self) -> bool {
        // The queue first: a change taken from it was taken after `applying` was set, so a
        // change no longer queued is seen applying or applied.
        let queued = self
            .changes
            .upgrade()
            .is_some_and(|tx| tx.capacity() < tx.max_capacity());
        queued || self.applying.load(Ordering::SeqCst)
    }
}

/// Hands `routed` to the balancer. A plain function: the buffer's future is proved `Send`
/// here, where its error type is concrete (inside an `async` block rustc cannot prove it).
fn send(
    buffer: Buffer<Routed, BoxFuture<Result<Reply, BoxError>>>,
    routed: Routed,
) -> BoxFuture<Result<Reply, BoxError>> {
    Box::pin(buffer.oneshot(routed))
}

/// Applies the changes sent to a balanced channel: starts each inserted endpoint's connection
/// at once (the balancer only reads its discovery stream when a unary call comes) and retires
/// removed (and replaced) endpoints at once, so that they stop counting as connected and are
/// not picked as soon as their state says so; then leaves the change for the balancer
/// ([`Pending`]), without waiting for it to be read.
struct Forwarder<K> {
    registry: Arc<Endpoints>,
    live: HashMap<K, Arc<Handle>>,
    pending: Arc<Mutex<Pending<K>>>,
    /// Set while a change is being taken and applied (see [`Unapplied`]).
    applying: Arc<AtomicBool>,
}

impl<K: Hash + Eq + Clone + Send + 'static> Forwarder<K> {
    async fn run(
        mut self,
        mut changes: mpsc::Receiver<Change<K, Endpoint>>,
        mut syncs: mpsc::UnboundedReceiver<oneshot::Sender<()>>,
    ) {
        let applying = self.applying.clone();
        loop {
            tokio::select! {
                biased;
                change = next_change(&mut changes, &applying) => {
                    let Some(change) = change else { return };
                    let applied = self.apply(change);
                    self.applying.store(false, Ordering::SeqCst);
                    if !applied {
                        return;
                    }
                }
                sync = syncs.recv() => {
                    // Every clone of the channel is gone (each holds a sync sender): its
                    // endpoints stop with this task, whoever still holds the change sender
                    // (a discovery then stops too, its receiver gone).
                    let Some(done) = sync else { return };
                    if !self.apply_queued(&mut changes) {
                        return;
                    }
                    let _ = done.send(());
                }
            }
        }
    }

    /// Applies every change queued now (every one whose `send` returned before a sync was
    /// asked); `false` once the balancer is gone.
    fn apply_queued(&mut self, changes: &mut mpsc::Receiver<Change<K, Endpoint>>) -> bool {
        self.applying.store(true, Ordering::SeqCst);
        let mut open = true;
        while open && let Ok(change) = changes.try_recv() {
            open = self.apply(change);
        }
        self.applying.store(false, Ordering::SeqCst);
        open
    }

    /// Applies one change; `false` once the balancer is gone.
    fn apply(&mut self, change: Change<K, Endpoint>) -> bool {
        match change {
            Change::Insert(key, endpoint) => {
                let health = Some(self.registry.health.clone());
                let handle = Arc::new(Handle::spawn(endpoint, Start::Now, health));
                if let Some(old) = self.live.insert(key.clone(), handle.clone()) {
                    old.retire();
                }
                {
                    let mut handles = self.registry.handles.lock().unwrap_or_else(|e| e.into_inner());
                    handles.retain(|h| h.strong_count() > 0);
                    handles.push(Arc::downgrade(&handle));
                }
                let service = EndpointService { handle, wait: None };
                let service = PendingRequests::new(service, CompleteOnResponse::default());
                lock(&self.pending).push(key, Some(service))
            }
            Change::Remove(key) => {
                if let Some(old) = self.live.remove(&key) {
                    old.retire();
                }
                lock(&self.pending).push(key, None)
            }
        }
    }
}

/// The next change sent, with `applying` set from before it is taken until the caller has
/// applied it (cleared here only when there is none to take).
async fn next_change<K>(
    changes: &mut mpsc::Receiver<Change<K, Endpoint>>,
    applying: &AtomicBool,
) -> Option<Change<K, Endpoint>> {
    std::future::poll_fn(|cx| {
        applying.store(true, Ordering::SeqCst);
        let polled = changes.poll_recv(cx);
        if polled.is_pending() {
            applying.store(false, Ordering::SeqCst);
        }
        polled
    })
    .await
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// An endpoint as the balancer takes it.
type Loaded = PendingRequests<EndpointService>;

/// The changes the balancer has not read yet: the latest per key (`None`: removed), since it
/// reads them only when a unary call polls it, which a channel used for streams alone never
/// does. A later change of a key replaces the earlier one, which the balancer would only have
/// overridden, so this holds at most one change per endpoint however long nobody reads it,
/// and the forwarder never waits for the balancer.
struct Pending<K> {
    changes: HashMap<K, Option<Loaded>>,
    /// The keys the balancer holds an endpoint for: the removal of another key is dropped
    /// (it was inserted and removed before the balancer read it).
    known: HashSet<K>,
    /// The balancer, waiting for a change.
    waker: Option<Waker>,
    /// The balancer is gone (every clone of the channel was dropped).
    closed: bool,
}

impl<K> Default for Pending<K> {
    fn default() -> Pending<K> {
        Pending {
            changes: HashMap::new(),
            known: HashSet::new(),
            waker: None,
            closed: false,
        }
    }
}

impl<K: Hash + Eq + Clone> Pending<K> {
    /// Leaves a change of `key` for the balancer; `false` once the balancer is gone.
    fn push(&mut self, key: K, change: Option<Loaded>) -> bool {
        if self.closed {
            return false;
        }
        match change {
            None if !self.known.contains(&key) => drop(self.changes.remove(&key)),
            change => drop(self.changes.insert(key, change)),
        }
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
        true
    }

    /// One change for the balancer, if any.
    fn take(&mut self) -> Option<Change<K, Loaded>> {
        let key = self.changes.keys().next()?.clone();
        match self.changes.remove(&key)? {
            Some(service) => {
                self.known.insert(key.clone());
                Some(Change::Insert(key, service))
            }
            None => {
                self.known.remove(&key);
                Some(Change::Remove(key))
            }
        }
    }
}

/// The discovery stream the balancer reads: endpoints as they are inserted and removed. It
/// never ends: the balancer stops with the channel.
struct Discovered<K> {
    pending: Arc<Mutex<Pending<K>>>,
}

impl<K: Hash + Eq + Clone> Stream for Discovered<K> {
    type Item = Result<Change<K, Loaded>, std::convert::Infallible>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut pending = lock(&self.pending);
        match pending.take() {
            Some(change) => Poll::Ready(Some(Ok(change))),
            None => {
                pending.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

impl<K> Drop for Discovered<K> {
    fn drop(&mut self) {
        lock(&self.pending).closed = true;
    }
}

/// One endpoint as the balancer sees it: ready while its connection is up.
struct EndpointService {
    handle: Arc<Handle>,
    /// Waiting for the connection to change state (boxed only while it is down).
    wait: Option<BoxFuture<()>>,
}

impl Service<Routed> for EndpointService {
    type Response = Reply;
    type Error = BoxError;
    type Future = BoxFuture<Result<Reply, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        loop {
            if let Some(wait) = &mut self.wait {
                ready!(wait.as_mut().poll(cx));
                self.wait = None;
            }
            // Subscribed before looking, so that a change right after is not missed.
            let mut rx = self.handle.subscribe();
            if self.handle.is_ready() {
                return Poll::Ready(Ok(()));
            }
            self.wait = Some(Box::pin(async move {
                let _ = rx.changed().await;
            }));
        }
    }

    /// Takes the connection now, while the balancer's pick holds: the endpoint may be
    /// retired (removed) before the returned future runs, and a call picked for it still runs
    /// on its connection, which stays open until the call ends.
    fn call(&mut self, routed: Routed) -> Self::Future {
        let Routed { request, taken } = routed;
        if let Some(client) = self.handle.admitted_client() {
            taken.store(true, Ordering::Release);
            return Box::pin(unary(client, request));
        }
        // Retired, its connection gone already: the call goes to another endpoint.
        if self.handle.is_retired() {
            return Box::pin(std::future::ready(Err(Retired(request).into())));
        }
        // The connection closed since the pick: the call waits for the attempt under way.
        taken.store(true, Ordering::Release);
        let handle = self.handle.clone();
        Box::pin(async move {
            let client = handle.client().await?;
            unary(client, request).await
        })
    }
}

/// Runs `request` on `client`.
async fn unary(mut client: Client, request: Request) -> Result<Reply, BoxError> {
    // No timeout on the channel's handle: the endpoint's own (`Endpoint::timeout`).
    let timeout = request.timeout.or(client.timeout());
    client.set_options(timeout, request.metadata, None);
    Ok(client.unary(request.op, request.body.into()).await?)
}
