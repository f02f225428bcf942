//! [`Backoff`]: how long a [`crate::Channel`] waits between failed connection attempts (and
//! [`crate::retry::Idempotent`] between retries): exponential with jitter.

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

/// Exponential backoff with jitter: the first wait is `initial`, each further one `multiplier`
/// times longer, never more than `max`; each is then cut by a random share of up to `jitter`
/// (so that many clients of one restarted server do not reconnect in lockstep).
///
/// The default (a [`crate::Channel`]'s reconnect backoff) is 100 ms, doubling, at most 5 s,
/// jitter 20 %: a restarted server gets its clients back within about 5 s.
///
/// ```
/// use std::time::Duration;
///
/// let backoff = frpc::channel::Backoff::default()
///     .initial(Duration::from_millis(10))
///     .max(Duration::from_secs(1))
///     .jitter(0.0);
/// assert_eq!(backoff.delay(0), Duration::from_millis(10));
/// assert_eq!(backoff.delay(3), Duration::from_millis(80));
/// assert_eq!(backoff.delay(30), Duration::from_secs(1));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    multiplier: f64,
    jitter: f64,
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(5),
            multiplier: 2.0,
            jitter: 0.2,
        }
    }
}

impl Backoff {
    /// The first wait (default 100 ms).
    pub fn initial(mut self, initial: Duration) -> Backoff {
        self.initial = initial;
        self
    }

    /// The longest wait (default 5 s).
    pub fn max(mut self, max: Duration) -> Backoff {
        self.max = max;
        self
    }

    /// How much longer each wait is than the one before (default 2; values below 1 count as 1).
    pub fn multiplier(mut self, multiplier: f64) -> Backoff {
        self.multiplier = multiplier;
        self
    }

    /// The largest share of a wait cut at random (default 0.2; clamped to 0..=1).
    pub fn jitter(mut self, jitter: f64) -> Backoff {
        self.jitter = jitter;
        self
    }

    /// The wait after `failures` failed attempts in a row, before jitter (0: the first wait).
    fn base(&self, failures: u32) -> Duration {
        let factor = self.multiplier.max(1.0).powi(failures.min(64) as i32);
        let secs = self.initial.as_secs_f64() * factor;
        match Duration::try_from_secs_f64(secs) {
            Ok(delay) => delay.min(self.max),
            Err(_) => self.max,
        }
    }

    /// The wait after `failures` failed attempts in a row (0: the first wait), jitter included.
    pub fn delay(&self, failures: u32) -> Duration {
        let base = self.base(failures);
        let jitter = self.jitter.clamp(0.0, 1.0);
        if jitter == 0.0 {
            return base;
        }
        // A fresh `RandomState` is seeded at random: enough randomness for spreading reconnects.
        let random = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        let share = (random >> 11) as f64 / (1u64 << 53) as f64;
        base.mul_f64(1.0 - jitter * share)
    }

    /// The longest wait, without jitter.
    pub(crate) fn longest(&self) -> Duration {
        self.max
    }
}
