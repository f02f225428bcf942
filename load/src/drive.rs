//! The client loops: a [`Caller`] makes one call at a time, and [`drive`] keeps several of them
//! outstanding on one connection, from tasks of their own or joined on one task ([`Callers`]).

use std::fmt;
use std::future::Future;
use std::str::FromStr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use tokio::time::Instant;

use crate::outcome::{Failure, Limit, Outcome};

/// One call of an RPC client, with a request of type `Req` made once per run.
pub trait Caller<Req>: Clone + Send + 'static {
    /// Sends `request` and waits for the reply.
    ///
    /// Each in-flight slot owns its request, so a caller may move what it needs out of it and
    /// put back what the reply brought (an echo's message): the next call then sends that
    /// without the load generator copying the message per call, as a raw client resends one
    /// encoded buffer.
    fn call(&mut self, request: &mut Req) -> impl Future<Output = Result<(), Failure>> + Send;
}

/// How a client issues its in-flight calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Callers {
    /// One task per in-flight call, all sharing the client's connection.
    Tasks,
    /// One future per in-flight call, joined on the client's task.
    Joined,
}

impl Callers {
    /// Both modes.
    pub const ALL: [Callers; 2] = [Callers::Tasks, Callers::Joined];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Callers::Tasks => "tasks",
            Callers::Joined => "joined",
        }
    }
}

impl fmt::Display for Callers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Callers {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Callers::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| format!("unknown callers {s:?} (tasks, joined)"))
    }
}

/// Keeps `inflight` calls outstanding through `caller`, all sharing its connection, until
/// `limit` says stop: no more slots than the calls its total leaves, and a call still
/// outstanding when the window ends is abandoned (dropped: it would not count), so a run
/// ends with its window however slow the calls are. The slots run in a task of their own:
/// with [`Callers::Tasks`] one slot runs on it and the others on tasks of their own (like the
/// goroutines of fRPC's benchmark); with [`Callers::Joined`] all run on it.
///
/// The slots of one client record into one [`Outcome`], as the raw client does: a histogram per
/// slot would spread every client's records over ten times the memory, and the cache misses
/// would count as the client's CPU time.
pub async fn drive<Req, C>(
    caller: &C,
    request: &Req,
    inflight: usize,
    callers: Callers,
    limit: Limit,
) -> Outcome
where
    Req: Clone + Send + Sync + 'static,
    C: Caller<Req>,
{
    let outcome = Arc::new(Mutex::new(Outcome::new()));
    // A slot more than the calls left would only wait for nothing (and `-c` in the millions
    // with `-n 5` would allocate as many).
    let inflight = match &limit.total {
        Some(left) => inflight.min(usize::try_from(left.load(Ordering::Relaxed)).unwrap_or(usize::MAX)),
        None => inflight,
    };
    let end = limit.window.end;
    let mut slots: Vec<_> = (0..inflight)
        .map(|_| slot(caller.clone(), request.clone(), limit.clone(), outcome.clone()))
        .collect();
    let run = async move {
        if callers == Callers::Joined {
            futures_util::future::join_all(slots).await;
            return;
        }
        let first = slots.pop();
        // Aborted with the run, once the window ends.
        let mut others = tokio::task::JoinSet::new();
        for other in slots {
            others.spawn(other);
        }
        if let Some(first) = first {
            first.await;
        }
        while let Some(done) = others.join_next().await {
            done.expect("call slot");
        }
    };
    // The run in a task of its own, which this one aborts at the window's end: calls still
    // outstanding then are dropped, uncounted. A timer beside the calls, polled whenever one
    // is (a select per call, or a timeout around the run), cost the measured client 260
    // instructions a call (callgrind).
    let mut run = tokio::spawn(run);
    tokio::select! {
        done = &mut run => done.expect("call slots"),
        () = tokio::time::sleep_until(end) => run.abort(),
    }
    Arc::try_unwrap(outcome)
        .map(|outcome| outcome.into_inner().unwrap_or_else(|e| e.into_inner()))
        .unwrap_or_else(|shared| shared.lock().unwrap_or_else(|e| e.into_inner()).clone())
}

/// One in-flight slot: a call at a time until `limit` says stop; when paced, each call waits
/// for its start in the slot's schedule. The clock read when a call completes is also the next
/// call's start (one read per call, as the raw client's one per batch).
async fn slot<Req, C: Caller<Req>>(
    mut caller: C,
    mut request: Req,
    limit: Limit,
    outcome: Arc<Mutex<Outcome>>,
) {
    let mut done = 0;
    let mut now = Instant::now();
    let mut pacer = limit.pacer(1, now);
    loop {
        if let Some(pacer) = pacer.as_mut() {
            now = pacer.wait(1, now).await;
        }
        if !limit.more_at(done, now) {
            break;
        }
        let sent = now;
        let result = caller.call(&mut request).await;
        now = Instant::now();
        let mut outcome = outcome.lock().unwrap_or_else(|e| e.into_inner());
        match result {
            Ok(()) => limit.window.record_at(sent, now, &mut outcome),
            Err(failure) => limit.window.record_failure_at(failure, now, &mut outcome),
        }
        done += 1;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Duration;

    use super::*;
    use crate::outcome::Window;

    /// Counts its calls; every `fail_every`-th fails.
    #[derive(Clone)]
    struct Counter {
        calls: Arc<AtomicU64>,
        fail_every: u64,
    }

    impl Caller<()> for Counter {
        async fn call(&mut self, _: &mut ()) -> Result<(), Failure> {
            tokio::task::yield_now().await;
            let n = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
            match n % self.fail_every {
                0 => Err("UNAVAILABLE".into()),
                _ => Ok(()),
            }
        }
    }

    fn counter(fail_every: u64) -> Counter {
        Counter {
            calls: Arc::default(),
            fail_every,
        }
    }

    fn open_window() -> Window {
        Window::new(Duration::ZERO, Duration::from_secs(3600))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_total_is_shared_exactly_by_every_slot() {
        for callers in Callers::ALL {
            let caller = counter(5);
            let limit = Limit::total(open_window(), 1003);
            let outcome = drive(&caller, &(), 16, callers, limit).await;
            assert_eq!(caller.calls.load(Ordering::Relaxed), 1003, "{callers}");
            assert_eq!((outcome.calls, outcome.failed()), (803, 200), "{callers}");
            assert_eq!(outcome.latency.len(), 803);
            assert_eq!(outcome.errors.keys().collect::<Vec<_>>(), ["UNAVAILABLE"]);
        }
    }

    #[tokio::test]
    async fn per_slot_limits_and_the_window_stop_callers() {
        let caller = counter(u64::MAX);
        let outcome = drive(
            &caller,
            &(),
            4,
            Callers::Joined,
            Limit::per_slot(open_window(), 10),
        )
        .await;
        assert_eq!(outcome.calls, 40);
        // A window that has ended starts no call.
        let ended = Window::new(Duration::ZERO, Duration::ZERO);
        tokio::time::sleep(Duration::from_millis(1)).await;
        let outcome = drive(&caller, &(), 4, Callers::Tasks, Limit::window(ended)).await;
        assert_eq!((outcome.calls, caller.calls.load(Ordering::Relaxed)), (0, 40));
    }

    /// Paced, each slot starts a call per interval however fast its calls complete: on tokio's
    /// paused clock, which moves only while every task waits, 4 slots every 10 ms for 100 ms
    /// make exactly 40 calls, at 0, 10, … 90 ms (the call due at 100 ms would start as the
    /// window ends). Unpaced, the same slots make their per-slot limit at once.
    #[tokio::test(start_paused = true)]
    async fn paced_slots_start_one_call_per_interval() {
        let interval = Duration::from_millis(10);
        for callers in Callers::ALL {
            let caller = counter(u64::MAX);
            let window = Window::new(Duration::ZERO, 10 * interval);
            let started = Instant::now();
            let limit = Limit::window(window).paced(interval);
            let outcome = drive(&caller, &(), 4, callers, limit).await;
            assert_eq!(outcome.calls, 40, "{callers}");
            assert_eq!(
                started.elapsed(),
                10 * interval,
                "{callers}: the last wait ends the window"
            );
        }
        let caller = counter(u64::MAX);
        let limit = Limit::per_slot(open_window(), 50).paced(Duration::ZERO);
        let started = Instant::now();
        assert_eq!(drive(&caller, &(), 4, Callers::Joined, limit).await.calls, 200);
        assert_eq!(started.elapsed(), Duration::ZERO, "a zero interval does not pace");
    }

    /// Passes the relay on: records the request it got and leaves the next one in its place.
    #[derive(Clone, Default)]
    struct Relay(Arc<Mutex<Vec<u64>>>);

    impl Caller<u64> for Relay {
        async fn call(&mut self, request: &mut u64) -> Result<(), Failure> {
            self.0.lock().unwrap().push(*request);
            *request += 1;
            Ok(())
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn what_a_call_leaves_in_its_request_is_its_slots_next_request() {
        for callers in Callers::ALL {
            let relay = Relay::default();
            let limit = Limit::per_slot(open_window(), 4);
            let outcome = drive(&relay, &10, 3, callers, limit).await;
            assert_eq!(outcome.calls, 12, "{callers}");
            let mut seen = relay.0.lock().unwrap().clone();
            seen.sort_unstable();
            assert_eq!(
                seen,
                [10, 10, 10, 11, 11, 11, 12, 12, 12, 13, 13, 13],
                "{callers}"
            );
        }
    }

    /// A call that never completes, counting the slots made (each clones it).
    struct Hang(Arc<AtomicU64>);

    impl Clone for Hang {
        fn clone(&self) -> Self {
            self.0.fetch_add(1, Ordering::Relaxed);
            Hang(self.0.clone())
        }
    }

    impl Caller<()> for Hang {
        async fn call(&mut self, _: &mut ()) -> Result<(), Failure> {
            std::future::pending().await
        }
    }

    /// Calls outstanding when the window ends are dropped, uncounted: the run ends with its
    /// window (it waited for them, forever for calls never answered), paced or not. On tokio's
    /// paused clock, so no real waiting.
    #[tokio::test(start_paused = true)]
    async fn the_window_ends_calls_never_answered() {
        let window = Duration::from_millis(100);
        for callers in Callers::ALL {
            for pace in [Duration::ZERO, Duration::from_secs(3600)] {
                let started = Instant::now();
                let limit = Limit::window(Window::new(Duration::ZERO, window)).paced(pace);
                let outcome = drive(&Hang(Arc::default()), &(), 3, callers, limit).await;
                assert_eq!((outcome.calls, outcome.failed()), (0, 0), "{callers}");
                assert_eq!(started.elapsed(), window, "{callers}, paced every {pace:?}");
            }
        }
    }

    /// A total below the calls in flight makes only as many slots as it has calls.
    #[tokio::test(start_paused = true)]
    async fn no_more_slots_than_calls() {
        for callers in Callers::ALL {
            let made = Arc::new(AtomicU64::new(0));
            let limit = Limit::total(Window::new(Duration::ZERO, Duration::from_millis(10)), 5);
            drive(&Hang(made.clone()), &(), 1_000_000, callers, limit).await;
            assert_eq!(made.load(Ordering::Relaxed), 5, "{callers}");
        }
    }

    #[test]
    fn callers_parse_by_name() {
        assert_eq!("joined".parse::<Callers>(), Ok(Callers::Joined));
        assert!("threads".parse::<Callers>().is_err());
    }
}
