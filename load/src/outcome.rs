//! What a load run measures: the [`Window`] calls count in, when a caller stops ([`Limit`]),
//! and what the calls did ([`Outcome`]).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hdrhistogram::Histogram;
use tokio::time::Instant;

use crate::cpu::CpuUse;
use crate::pace::Pacer;

/// What failed a call: a status code's name (`UNAVAILABLE`), or any short label.
pub type Failure = Cow<'static, str>;

/// What a run did (or one client, or one in-flight slot).
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Calls that succeeded in the measured window.
    pub calls: u64,
    /// Calls that failed in the measured window, by what failed them (a status code's name).
    pub errors: BTreeMap<Failure, u64>,
    /// Latency of the successful calls, in microseconds.
    pub latency: Histogram<u64>,
    /// CPU time of the server and the clients over the measured window (a whole sample's;
    /// a slot's own outcome has none).
    pub cpu: CpuUse,
}

impl Outcome {
    /// No calls yet.
    pub fn new() -> Outcome {
        Outcome {
            calls: 0,
            errors: BTreeMap::new(),
            latency: Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid bounds"),
            cpu: CpuUse::default(),
        }
    }

    /// Adds up several outcomes.
    pub fn merge(outcomes: impl IntoIterator<Item = Outcome>) -> Outcome {
        let mut total = Outcome::new();
        for outcome in outcomes {
            total.calls += outcome.calls;
            for (failure, count) in outcome.errors {
                *total.errors.entry(failure).or_default() += count;
            }
            total.latency.add(&outcome.latency).expect("same bounds");
            total.cpu = total.cpu.plus(outcome.cpu);
        }
        total
    }

    /// Calls that failed.
    pub fn failed(&self) -> u64 {
        self.errors.values().sum()
    }
}

impl Default for Outcome {
    fn default() -> Self {
        Outcome::new()
    }
}

/// The measured window, shared by every task of a run.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    /// Calls completing before this are warm-up.
    pub start: Instant,
    /// No call starts after this; calls completing after it do not count.
    pub end: Instant,
}

impl Window {
    /// A window opening after `warmup` and lasting `duration`.
    pub fn new(warmup: Duration, duration: Duration) -> Window {
        let start = Instant::now() + warmup;
        Window {
            start,
            end: start + duration,
        }
    }

    /// Whether a call completing at `now` counts.
    fn contains(&self, now: Instant) -> bool {
        now >= self.start && now <= self.end
    }

    /// Records a call that started at `sent` and completed now.
    pub fn record(&self, sent: Instant, outcome: &mut Outcome) {
        self.record_at(sent, Instant::now(), outcome)
    }

    /// Records a call that started at `sent` and completed at `now`, if inside the window.
    pub fn record_at(&self, sent: Instant, now: Instant, outcome: &mut Outcome) {
        if self.contains(now) {
            outcome.calls += 1;
            let _ = outcome.latency.record((now - sent).as_micros().max(1) as u64);
        }
    }

    /// Records a call that failed now, if inside the window.
    pub fn record_failure(&self, failure: Failure, outcome: &mut Outcome) {
        self.record_failure_at(failure, Instant::now(), outcome)
    }

    /// Records a call that failed at `now`, if inside the window.
    pub fn record_failure_at(&self, failure: Failure, now: Instant, outcome: &mut Outcome) {
        if self.contains(now) {
            *outcome.errors.entry(failure).or_default() += 1;
        }
    }
}

/// When a caller stops: at the end of the window, after `calls` calls of each in-flight slot,
/// or when a total shared by every slot runs out, whichever comes first; and, when paced, how
/// often each slot starts a call.
#[derive(Debug, Clone)]
pub struct Limit {
    /// The measured window.
    pub window: Window,
    /// Calls per in-flight slot.
    pub calls: u64,
    /// Calls left for every slot together (`None`: no total).
    pub total: Option<Arc<AtomicU64>>,
    /// The time between a slot's call starts (`None`: each call starts as the one before
    /// completes, a closed loop). See [`Limit::paced`].
    pub pace: Option<Duration>,
}

impl Limit {
    /// Calls until the window ends.
    pub fn window(window: Window) -> Limit {
        Limit::per_slot(window, u64::MAX)
    }

    /// At most `calls` calls per in-flight slot (criterion runs a fixed number of iterations).
    pub fn per_slot(window: Window, calls: u64) -> Limit {
        Limit {
            window,
            calls,
            total: None,
            pace: None,
        }
    }

    /// At most `calls` calls in all, however many slots share them (`frpc bench -n`).
    pub fn total(window: Window, calls: u64) -> Limit {
        Limit {
            window,
            calls: u64::MAX,
            total: Some(Arc::new(AtomicU64::new(calls))),
            pace: None,
        }
    }

    /// The same limit with each in-flight slot starting a call every `interval` (an open loop;
    /// see [`Pacer`]): `n` slots then offer `n / interval` calls per second, as long as their
    /// calls complete in time. A zero interval leaves the loop closed; one over
    /// [`MAX_INTERVAL`](crate::MAX_INTERVAL) is taken as that.
    ///
    /// ```
    /// use std::time::Duration;
    /// use frpc_load::{Caller, Callers, Failure, Limit, Window};
    ///
    /// #[derive(Clone)]
    /// struct Immediate;
    ///
    /// impl Caller<()> for Immediate {
    ///     async fn call(&mut self, _: &mut ()) -> Result<(), Failure> {
    ///         Ok(())
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
    /// // Two slots, a call every 10 ms each, for 100 ms: 20 calls however fast they complete
    /// // (closed loops would make millions). (On tokio's paused clock: no real waiting.)
    /// let window = Window::new(Duration::ZERO, Duration::from_millis(100));
    /// let limit = Limit::window(window).paced(Duration::from_millis(10));
    /// let outcome = frpc_load::drive(&Immediate, &(), 2, Callers::Joined, limit).await;
    /// assert_eq!(outcome.calls, 20);
    /// # }
    /// ```
    pub fn paced(self, interval: Duration) -> Limit {
        Limit {
            pace: Some(interval).filter(|i| !i.is_zero()),
            ..self
        }
    }

    /// The schedule of a slot (or of a client's slots together, `slots` of them) whose first
    /// call may start at `first`, when paced.
    pub fn pacer(&self, slots: usize, first: Instant) -> Option<Pacer> {
        let interval = self.pace? / u32::try_from(slots.max(1)).unwrap_or(u32::MAX);
        Some(Pacer::new(interval, first))
    }

    /// Whether a slot that has made `done` calls starts another at `now` (taking it from the
    /// total).
    pub(crate) fn more_at(&self, done: u64, now: Instant) -> bool {
        if done >= self.calls || now >= self.window.end {
            return false;
        }
        match &self.total {
            None => true,
            Some(left) => left
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                .is_ok(),
        }
    }
}
