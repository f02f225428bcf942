//! A client connection's read loop, shared by its reader task and the one caller that may
//! drive it: a call alone on its connection polls the loop itself once its reply is due, so
//! the reply reaches it without a hop through the reader task (a task poll and a wake-up per
//! call, issue #29; hyper's single-task dispatch does the same).
//!
//! Whoever polls the loop polls it with one waker, [`Route`]'s: it wakes the driving caller
//! while there is one ([`WakeDriver`]: the calls floor wakes it where its reply lands) and the
//! reader task otherwise. So the socket, the stop signal and every other source the loop waits
//! on keep one registration, whoever polled last, and a caller that stops driving (its reply
//! in, or its future dropped) leaves nothing registered to it.
//!
//! One atomic word holds who may poll (`LOCKED`), whether a poller was turned away while
//! another polled (`WANTED`: the one releasing wakes the route, so an event the holder's poll
//! did not see is not lost), whether a caller drives (`DRIVING`), and whether the route woke
//! the driver since it last took the loop (`ROUTED`: a driver that stops driving then wakes
//! the reader task, which polls in its place).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

/// The loop, until it ends (then `None`).
type Loop = Option<Pin<Box<dyn Future<Output = ()> + Send>>>;

const LOCKED: u8 = 1;
const WANTED: u8 = 2;
const DRIVING: u8 = 4;
const ROUTED: u8 = 8;

/// The read loop of a connection whose callers may drive it.
pub(crate) struct SharedReader {
    /// Only the holder of `LOCKED` touches it: the mutex is never contended (it keeps the
    /// loop without `unsafe`).
    future: Mutex<Loop>,
    route: Arc<Route>,
    /// `route` as a waker, made once.
    waker: Waker,
}

/// Wakes the caller driving a connection's read loop: the calls floor keeps its waker (in its
/// call's entry, where the reply lands), so driving registers nothing here.
pub(crate) trait WakeDriver: Send + Sync + 'static {
    /// Wakes the driver; `false` when there is none to wake (the reader task is woken then).
    fn wake_driver(&self) -> bool;
}

/// Where a wake-up of the loop goes.
struct Route {
    state: AtomicU8,
    driver: Arc<dyn WakeDriver>,
    reader: WakerCell,
}

/// The reader task's waker. It stays registered when woken, unlike an `AtomicWaker`'s: the
/// reader task registers the waker it had at every poll, which costs a comparison, not a clone.
#[derive(Default)]
struct WakerCell(Mutex<Option<Waker>>);

impl WakerCell {
    fn register(&self, waker: &Waker) {
        let mut cell = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if !cell.as_ref().is_some_and(|w| w.will_wake(waker)) {
            *cell = Some(waker.clone());
        }
    }

    fn wake(&self) {
        // Woken outside the lock: waking may take a while (another thread to unpark).
        let waker = self.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl Wake for Route {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.route();
    }
}

impl Route {
    /// Wakes the driver if a caller drives, the reader task otherwise.
    #[inline]
    fn route(&self) {
        if self.state.fetch_or(ROUTED, Ordering::AcqRel) & DRIVING != 0 && self.driver.wake_driver() {
            return;
        }
        self.reader.wake();
    }
}

impl std::fmt::Debug for SharedReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedReader")
            .field("state", &self.route.state.load(Ordering::Relaxed))
            .finish()
    }
}

impl SharedReader {
    /// Shares `future`, the connection's read loop, whose driver `driver` wakes.
    pub(crate) fn new(
        future: impl Future<Output = ()> + Send + 'static,
        driver: Arc<dyn WakeDriver>,
    ) -> Arc<SharedReader> {
        let route = Arc::new(Route {
            state: AtomicU8::new(0),
            driver,
            reader: WakerCell::default(),
        });
        Arc::new(SharedReader {
            future: Mutex::new(Some(Box::pin(future))),
            waker: Waker::from(route.clone()),
            route,
        })
    }

    /// The reader task: polls the loop whenever the route wakes it, until the loop ends
    /// (whoever polled it last).
    pub(crate) async fn run(self: Arc<Self>) {
        std::future::poll_fn(|cx| {
            // Before polling: a wake-up from now on polls again.
            self.route.reader.register(cx.waker());
            match self.try_lock(false) {
                Some(mut polling) => polling.poll(),
                None => Poll::Pending,
            }
        })
        .await
    }

    /// A caller drives: wake-ups of the loop go to it ([`WakeDriver`]) until
    /// [`SharedReader::stop_driving`].
    pub(crate) fn drive(&self) {
        let _ = self
            .route
            .state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
                Some((s | DRIVING) & !ROUTED)
            });
    }

    /// The driver stops driving: the reader task takes over, woken if a wake-up went to the
    /// driver since it last took the loop.
    pub(crate) fn stop_driving(&self) {
        let was = self.route.state.fetch_and(!(DRIVING | ROUTED), Ordering::AcqRel);
        if was & (DRIVING | ROUTED) == DRIVING | ROUTED {
            self.route.reader.wake();
        }
    }

    /// The loop for the driver to poll, unless someone else polls it now: they then wake the
    /// route once done, which wakes the driver, so its waker must be where [`WakeDriver`]
    /// finds it, and the driver tries again if it was not (see `ClientCalls::drive_for`).
    #[inline]
    pub(crate) fn driver_turn(&self) -> Option<Polling<'_>> {
        self.try_lock(true)
    }

    /// Whether someone polls the loop now.
    pub(crate) fn is_polled(&self) -> bool {
        self.route.state.load(Ordering::Acquire) & LOCKED != 0
    }

    /// The loop, to poll, unless someone else polls it now (then they are told to wake the
    /// route once done). The driver taking it has seen every wake-up routed to it so far.
    #[inline]
    fn try_lock(&self, driver: bool) -> Option<Polling<'_>> {
        let mut state = self.route.state.load(Ordering::Acquire);
        loop {
            let (next, locked) = match state & LOCKED {
                0 if driver => ((state | LOCKED) & !ROUTED, true),
                0 => (state | LOCKED, true),
                _ => (state | WANTED, false),
            };
            match self
                .route
                .state
                .compare_exchange_weak(state, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) if locked => return Some(Polling { reader: self }),
                Ok(_) => return None,
                Err(now) => state = now,
            }
        }
    }
}

/// The right to poll the loop, released when dropped.
pub(crate) struct Polling<'a> {
    reader: &'a SharedReader,
}

impl Polling<'_> {
    /// Polls the loop once with the route's waker; `Ready` once it has ended (the reader task
    /// is woken to end too).
    #[inline]
    pub(crate) fn poll(&mut self) -> Poll<()> {
        let reader = self.reader;
        let mut future = match reader.future.lock() {
            Ok(future) => future,
            // A panic in an earlier poll: that loop is over, and not to be polled again.
            Err(poisoned) => {
                let mut future = poisoned.into_inner();
                *future = None;
                future
            }
        };
        let Some(running) = future.as_mut() else {
            return Poll::Ready(());
        };
        if running
            .as_mut()
            .poll(&mut Context::from_waker(&reader.waker))
            .is_pending()
        {
            return Poll::Pending;
        }
        *future = None;
        drop(future);
        reader.route.reader.wake();
        Poll::Ready(())
    }
}

impl Drop for Polling<'_> {
    #[inline]
    fn drop(&mut self) {
        let route = &self.reader.route;
        if route.state.fetch_and(!(LOCKED | WANTED), Ordering::AcqRel) & WANTED != 0 {
            route.route();
        }
    }
}
