//! Ids given up before the peer answered them (a unary call's, a stream's), held out of use
//! while the peer's late answer may still come: it would otherwise reach whatever took the id
//! 65,535 calls or streams later. How long, and whether an id is still held. Calls floor: the
//! client's call table and the stream table use it.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};
use std::time::{Duration, Instant};

use super::ext;

/// How long an id stays held with a peer that does not take CANCEL (Go's: its handler runs on
/// and answers whenever it is done): far beyond most calls.
const WITHOUT_CANCEL: Duration = Duration::from_secs(60);
/// How long after a CANCEL: the peer drops the call and sends nothing more, so a late answer is
/// one it wrote before it read the CANCEL, which comes within two trips of the network. Short,
/// so that a client giving up calls or streams by the thousand keeps ids to use (at 60 s,
/// 1,100 give-ups a second took all 65,536 ids for a minute at a time).
pub(crate) const AFTER_CANCEL: Duration = Duration::from_secs(10);
/// How long after a CANCEL a peer answers (bit 10): the answer frees the id, so this is only
/// for a peer that never sends it.
const UNTIL_ANSWERED: Duration = WITHOUT_CANCEL;

/// What frees an id given up, which says how long it is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Hold {
    /// No CANCEL went (the peer does not take it): its answer comes when its handler is done.
    #[default]
    Plain,
    /// A CANCEL went: only what the peer wrote before it read it can come.
    Cancelled,
    /// A CANCEL went to a peer that answers it (bit 10): held until the answer comes.
    Answered,
}

impl Hold {
    /// The hold of an id given up on a connection with extension `bits`. `sent`: the call's
    /// request went out (one that never did gets no answer).
    pub(crate) fn of(bits: u32, sent: bool) -> Hold {
        match (bits & ext::EXT_CANCEL != 0, bits & ext::EXT_CANCEL_ANSWER != 0) {
            (false, _) => Hold::Plain,
            (true, true) if sent => Hold::Answered,
            (true, _) => Hold::Cancelled,
        }
    }

    /// Whether a CANCEL goes to the peer for an id given up.
    pub(crate) fn cancels(self) -> bool {
        self != Hold::Plain
    }

    /// How long an id given up is held.
    pub(crate) fn duration(self) -> Duration {
        match self {
            Hold::Plain => WITHOUT_CANCEL,
            Hold::Cancelled => AFTER_CANCEL,
            Hold::Answered => UNTIL_ANSWERED,
        }
    }

    /// When an id given up now is free again (unless the peer's answer frees it first).
    pub(crate) fn until(self) -> Instant {
        Instant::now() + self.duration()
    }
}

/// When a search that found every id taken may find one again, none of them held: the longest
/// hold (the search is made again earlier if an id comes free).
pub(crate) fn until_any_free(soonest: Option<Instant>) -> Instant {
    soonest.unwrap_or_else(|| Hold::Plain.until())
}

/// Whether `key` is still held at `now` (an entry past its time is dropped: the id is free
/// again); `soonest` keeps the soonest end of a hold seen, for a search that finds none free.
pub(crate) fn still_held<K: Hash + Eq, S: BuildHasher>(
    held: &mut HashMap<K, Instant, S>,
    key: &K,
    now: Instant,
    soonest: &mut Option<Instant>,
) -> bool {
    match held.get(key) {
        Some(&until) if now < until => {
            *soonest = Some(soonest.map_or(until, |soonest| soonest.min(until)));
            true
        }
        Some(_) => {
            held.remove(key);
            false
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An id given up is held until the peer's answer only where the peer answers CANCELs and
    /// the request went out (one that never did gets no answer); 10 s after a CANCEL to a peer
    /// that does not answer; 60 s toward a peer without cancellation.
    #[test]
    fn the_hold_follows_what_the_peer_does_with_a_cancel() {
        let answers = ext::EXT_CANCEL | ext::EXT_CANCEL_ANSWER;
        assert_eq!(Hold::of(answers, true), Hold::Answered);
        assert_eq!(Hold::of(answers, false), Hold::Cancelled);
        assert_eq!(Hold::of(ext::EXT_CANCEL, true), Hold::Cancelled);
        assert_eq!(Hold::of(0, true), Hold::Plain);
        assert_eq!(Hold::of(ext::EXT_CANCEL_ANSWER, true), Hold::Plain, "needs bit 0");
        assert!(Hold::Answered.cancels() && Hold::Cancelled.cancels() && !Hold::Plain.cancels());
        assert_eq!(Hold::Answered.duration(), Duration::from_secs(60));
        assert_eq!(Hold::Cancelled.duration(), Duration::from_secs(10));
    }
}
