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
/// No wait is shorter than [`Backoff::FLOOR`] (10 ms), whatever `initial`, `max` or the
/// jitter say: a zero backoff would otherwise redial a server that accepts and closes at once
/// in a tight loop (hundreds of connections a second per channel).
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
    /// The shortest wait [`Backoff::delay`] gives: shorter settings are raised to it.
    pub const FLOOR: Duration = Duration::from_millis(10);

    /// The first wait (default 100 ms; at least [`Backoff::FLOOR`]).
    pub fn initial(mut self, initial: Duration) -> Backoff {
        self.initial = initial;
        self
    }

    /// The longest wait (default 5 s; at least [`Backoff::FLOOR`]).
    pub fn max(mut self, max: Duration) -> Backoff {
        self.max = max;
        self
    }

    /// How much longer each wait is than the one before (default 2; values below 1 count as 1).
    pub fn multiplier(mut self, multiplier: f64) -> Backoff {
        self.multiplier = multiplier;
        self
    }

    /// The largest share of a wait cut at random (default 0.2; clamped to 0..=1, NaN counts
    /// as 0).
    pub fn jitter(mut self, jitter: f64) -> Backoff {
        self.jitter = jitter;
        self
    }

    /// The jitter as a share in 0..=1: `f64::clamp` keeps a NaN, which would make
    /// `Duration::mul_f64` panic (in a channel's reconnect task, leaving its calls hanging).
    fn jitter_share(&self) -> f64 {
        match self.jitter.is_nan() {
            true => 0.0,
            false => self.jitter.clamp(0.0, 1.0),
        }
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

    /// The wait after `failures` failed attempts in a row (0: the first wait), jitter included,
    /// never shorter than [`Backoff::FLOOR`].
    pub fn delay(&self, failures: u32) -> Duration {
        self.jittered(failures).max(Backoff::FLOOR)
    }

    /// [`Backoff::delay`] before the floor.
    fn jittered(&self, failures: u32) -> Duration {
        let base = self.base(failures);
        let jitter = self.jitter_share();
        if jitter == 0.0 {
            return base;
        }
        // A fresh `RandomState` is seeded at random: enough randomness for spreading reconnects.
        let random = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        let share = (random >> 11) as f64 / (1u64 << 53) as f64;
        // Checked: a factor that rounds to 1.0 times a base near `Duration::MAX` (no cap, a
        // huge first wait) rounds past it in `f64`, and `mul_f64` panicked.
        Duration::try_from_secs_f64(base.as_secs_f64() * (1.0 - jitter * share)).unwrap_or(base)
    }

    /// The longest wait, without jitter.
    pub(crate) fn longest(&self) -> Duration {
        self.max.max(Backoff::FLOOR)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nan_jitter_counts_as_none() {
        let backoff = Backoff::default().jitter(f64::NAN);
        assert_eq!(backoff.delay(0), Duration::from_millis(100));
        assert_eq!(backoff.delay(3), Duration::from_millis(800));
    }

    #[test]
    fn odd_settings_give_waits_within_the_floor_and_max() {
        let odd = [
            Backoff::default().multiplier(f64::NAN),
            Backoff::default().multiplier(f64::INFINITY),
            Backoff::default().jitter(f64::INFINITY),
            Backoff::default().jitter(-1.0),
            Backoff::default().initial(Duration::MAX).max(Duration::MAX),
            Backoff::default()
                .initial(Duration::MAX)
                .max(Duration::MAX)
                .jitter(1e-17),
            Backoff::default()
                .initial(Duration::from_secs(10))
                .max(Duration::from_millis(20)),
        ];
        for backoff in odd {
            for failures in [0, 1, 5, 64, u32::MAX] {
                let delay = backoff.delay(failures);
                assert!(
                    delay >= Backoff::FLOOR && delay <= backoff.longest(),
                    "{backoff:?}: {delay:?}"
                );
            }
        }
    }

    #[test]
    fn zero_waits_are_raised_to_the_floor() {
        for backoff in [
            Backoff::default().initial(Duration::ZERO),
            Backoff::default().max(Duration::ZERO),
            Backoff::default().initial(Duration::from_millis(1)).jitter(1.0),
        ] {
            assert_eq!(backoff.delay(0), Backoff::FLOOR, "{backoff:?}");
        }
        assert_eq!(Backoff::default().max(Duration::ZERO).longest(), Backoff::FLOOR);
    }
}
