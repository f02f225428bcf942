//! Open-loop pacing: a schedule of call starts at a fixed interval ([`Pacer`]). With every
//! in-flight slot paced, a cell's offered load is the same whichever framework serves it, so
//! each process's CPU time per call is its own cost at that load, not its share of cores that
//! a faster or slower partner left it (closed loops on a saturated machine).

use std::time::Duration;

use tokio::time::Instant;

/// How far a schedule may fall behind before its debt is dropped: a slot that cannot keep up
/// (the pair is slower than the rate asked for, or a stall held it up) then runs as a closed
/// loop instead of bursting later to make up for more than this. Above tokio's 1 ms timer
/// resolution, by which every wait can end late and which the schedule must absorb to hold its
/// rate.
pub const MAX_LAG: Duration = Duration::from_millis(10);

/// The longest time between starts a schedule keeps: a longer one is taken as this, so the
/// schedule's arithmetic cannot overflow however low a rate is asked for.
pub const MAX_INTERVAL: Duration = Duration::from_secs(3600);

/// A schedule of call starts, one every `interval` from the first: a call starts at its time,
/// or at once if that time has passed (within [`MAX_LAG`]).
#[derive(Debug, Clone)]
pub struct Pacer {
    next: Instant,
    interval: Duration,
}

impl Pacer {
    /// A schedule whose first start is `first` (an interval over [`MAX_INTERVAL`] is taken as
    /// that).
    pub fn new(interval: Duration, first: Instant) -> Pacer {
        Pacer {
            next: first,
            interval: interval.min(MAX_INTERVAL),
        }
    }

    /// The time between starts.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// Takes the next `n` starts (at least one) of the schedule at `now`: the time the last of
    /// them is due, or `None` when it is due already.
    pub fn take(&mut self, n: u32, now: Instant) -> Option<Instant> {
        if now > self.next + MAX_LAG {
            self.next = now;
        }
        let last = self.next + self.interval * n.saturating_sub(1);
        self.next = last + self.interval;
        (last > now).then_some(last)
    }

    /// Waits until the next `n` starts are due (see [`Pacer::take`]); returns when they start:
    /// `now` if they were due, or the clock read after the wait.
    pub async fn wait(&mut self, n: u32, now: Instant) -> Instant {
        match self.take(n, now) {
            None => now,
            Some(due) => {
                tokio::time::sleep_until(due).await;
                Instant::now()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn starts_follow_the_interval_and_a_late_slot_catches_up() {
        let t0 = Instant::now();
        let mut pacer = Pacer::new(10 * MS, t0);
        assert_eq!(pacer.take(1, t0), None, "the first start is due at once");
        assert_eq!(
            pacer.take(1, t0 + MS),
            Some(t0 + 10 * MS),
            "the second waits its turn"
        );
        // Woken 5 ms late (the timer's resolution): the third start is due already, and
        // the fourth keeps its own time: the rate holds.
        assert_eq!(pacer.take(1, t0 + 25 * MS), None);
        assert_eq!(pacer.take(1, t0 + 26 * MS), Some(t0 + 30 * MS));
    }

    #[test]
    fn several_starts_wait_for_the_last_of_them() {
        let t0 = Instant::now();
        let mut pacer = Pacer::new(2 * MS, t0);
        assert_eq!(pacer.take(3, t0), Some(t0 + 4 * MS));
        assert_eq!(pacer.take(2, t0 + 4 * MS), Some(t0 + 8 * MS));
        assert_eq!(pacer.take(0, t0 + 10 * MS), None, "zero counts as one");
        assert_eq!(pacer.take(1, t0 + 10 * MS), Some(t0 + 12 * MS));
        assert_eq!(pacer.interval(), 2 * MS);
    }

    #[test]
    fn a_debt_beyond_the_lag_limit_is_dropped() {
        let t0 = Instant::now();
        let mut pacer = Pacer::new(MS, t0);
        assert_eq!(pacer.take(1, t0), None);
        // A stall of 50 ms: no burst of 50 calls; the schedule restarts from now.
        let late = t0 + 50 * MS;
        assert_eq!(pacer.take(1, late), None);
        assert_eq!(pacer.take(1, late), Some(late + MS));
        // Within the limit the debt is kept: 5 starts due at once.
        let mut pacer = Pacer::new(MS, t0);
        let now = t0 + 4 * MS;
        assert!((0..5).all(|_| pacer.take(1, now).is_none()));
        assert_eq!(pacer.take(1, now), Some(t0 + 5 * MS));
    }

    #[test]
    fn an_absurd_interval_is_capped_not_overflowed() {
        let t0 = Instant::now();
        let mut pacer = Pacer::new(Duration::MAX, t0);
        assert_eq!(pacer.interval(), MAX_INTERVAL);
        assert_eq!(pacer.take(1, t0), None);
        assert_eq!(pacer.take(u32::MAX, t0), Some(t0 + MAX_INTERVAL * u32::MAX));
    }

    #[tokio::test(start_paused = true)]
    async fn wait_returns_at_once_when_due_and_after_the_time_otherwise() {
        let t0 = Instant::now();
        let mut pacer = Pacer::new(5 * MS, t0);
        assert_eq!(pacer.wait(1, t0).await, t0);
        let started = pacer.wait(1, Instant::now()).await;
        assert!(started >= t0 + 5 * MS, "waited for the second start");
    }
}
