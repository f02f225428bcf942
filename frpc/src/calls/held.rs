//! Ids given up before the peer answered them (a unary call's, a stream's), held out of use
//! while the peer's late answer may still come: it would otherwise reach whatever took the id
//! 65,535 calls or streams later. How long, and whether an id is still held. Calls floor: the
//! client's call table and the stream table use it.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};
use std::time::{Duration, Instant};

use super::ext;

/// How long an id stays held toward a peer that does not take CANCEL (Go's: its handler runs
/// on and answers whenever it is done) when its request may never have gone, or when it is a
/// stream's: far beyond most calls. Also the longest a search that found no free id waits
/// before it looks again.
const WITHOUT_CANCEL: Duration = Duration::from_secs(60);
/// How long an id whose request went to a peer without CANCEL is held: until its reply, which
/// such a peer always sends, however late. Held 60 s, a reply later than that reached whatever
/// call took the id next, as that call's result (session 33's Go interop probe). A handler
/// that never answers keeps its id until the connection closes; a method whose ids are all so
/// held fails its calls with RESOURCE_EXHAUSTED.
const UNTIL_REPLY: Duration = Duration::from_secs(100 * 365 * 24 * 3600);
/// How long after a CANCEL: the peer drops the call and sends nothing more, so a late answer
/// is one it wrote before it read the CANCEL, which comes within two trips of the network. Short, so that a client giving up
/// calls or streams by the thousand keeps ids to use (at 60 s, 1,100 give-ups a second took
/// all 65,536 ids for a minute at a time).
pub(crate) const AFTER_CANCEL: Duration = Duration::from_secs(10);
/// How long after a CANCEL a peer answers (bit 10): the answer frees the id, so this is only
/// for a peer that never sends it.
const UNTIL_ANSWERED: Duration = WITHOUT_CANCEL;

/// What frees an id given up, which says how long it is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Hold {
    /// No CANCEL went (the peer does not take it) and the request did: its answer comes when
    /// its handler is done, however late.
    #[default]
    Plain,
    /// No CANCEL went, and the request may not have either (given up while it waited for room
    /// in the write queue).
    Unsent,
    /// A stream toward a peer without CANCEL, ended with a Frisbee close (op 2, no content):
    /// the peer drops it, and writes nothing more on it once it read the close; held as long
    /// as before the close went (nothing confirms it), unlike a unary call's id.
    Closed,
    /// A CANCEL went: only what the peer wrote before it read it can come.
    Cancelled,
    /// A CANCEL went to a peer that answers it (bit 10): held until the answer comes.
    Answered,
}

impl Hold {
    /// The hold of a unary call's id given up on a connection with extension `bits`. `sent`:
    /// the call's request went out (one that never did gets no answer).
    pub(crate) fn of(bits: u32, sent: bool) -> Hold {
        match (bits & ext::EXT_CANCEL != 0, bits & ext::EXT_CANCEL_ANSWER != 0) {
            (false, _) if sent => Hold::Plain,
            (false, _) => Hold::Unsent,
            (true, true) if sent => Hold::Answered,
            (true, _) => Hold::Cancelled,
        }
    }

    /// The hold of the id of a stream this side opened on a connection with extension `bits`:
    /// toward a peer without CANCEL, its end sends a Frisbee close.
    pub(crate) fn of_stream(bits: u32) -> Hold {
        match bits & ext::EXT_CANCEL {
            0 => Hold::Closed,
            _ => Hold::of(bits, true),
        }
    }

    /// Whether a CANCEL goes to the peer for an id given up.
    pub(crate) fn cancels(self) -> bool {
        matches!(self, Hold::Cancelled | Hold::Answered)
    }

    /// How long an id given up is held.
    pub(crate) fn duration(self) -> Duration {
        match self {
            Hold::Plain => UNTIL_REPLY,
            Hold::Unsent | Hold::Closed => WITHOUT_CANCEL,
            Hold::Cancelled => AFTER_CANCEL,
            Hold::Answered => UNTIL_ANSWERED,
        }
    }

    /// When an id given up now is free again (unless the peer's answer frees it first).
    pub(crate) fn until(self) -> Instant {
        let now = Instant::now();
        now.checked_add(self.duration()).unwrap_or(now + WITHOUT_CANCEL)
    }
}

/// When a search that found every id taken may find one again, none of them held: at most
/// [`WITHOUT_CANCEL`] from now (the search is made again earlier if an id comes free).
pub(crate) fn until_any_free(soonest: Option<Instant>) -> Instant {
    let longest = Instant::now() + WITHOUT_CANCEL;
    soonest.map_or(longest, |soonest| soonest.min(longest))
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
    /// that does not answer; toward a peer without cancellation, until its reply once the
    /// request went (60 s if it may not have), 60 s for a stream's.
    #[test]
    fn the_hold_follows_what_the_peer_does_with_a_cancel() {
        let answers = ext::EXT_CANCEL | ext::EXT_CANCEL_ANSWER;
        assert_eq!(Hold::of(answers, true), Hold::Answered);
        assert_eq!(Hold::of(answers, false), Hold::Cancelled);
        assert_eq!(Hold::of(ext::EXT_CANCEL, true), Hold::Cancelled);
        assert_eq!(Hold::of(0, true), Hold::Plain);
        assert_eq!(Hold::of(0, false), Hold::Unsent);
        assert_eq!(Hold::of(ext::EXT_CANCEL_ANSWER, true), Hold::Plain, "needs bit 0");
        assert_eq!(Hold::of_stream(0), Hold::Closed);
        assert_eq!(Hold::of_stream(answers), Hold::Answered);
        assert_eq!(Hold::of_stream(ext::EXT_CANCEL), Hold::Cancelled);
        assert!(Hold::Answered.cancels() && Hold::Cancelled.cancels());
        assert!(!Hold::Plain.cancels() && !Hold::Unsent.cancels() && !Hold::Closed.cancels());
        assert_eq!(Hold::Answered.duration(), Duration::from_secs(60));
        assert_eq!(Hold::Cancelled.duration(), Duration::from_secs(10));
        assert_eq!(Hold::Closed.duration(), Duration::from_secs(60));
        assert_eq!(Hold::Unsent.duration(), Duration::from_secs(60));
        assert!(Hold::Plain.until() > Instant::now() + Duration::from_secs(50 * 365 * 24 * 3600));
        let soon = Instant::now() + Duration::from_secs(1);
        assert_eq!(until_any_free(Some(soon)), soon);
        assert!(until_any_free(None) <= Instant::now() + WITHOUT_CANCEL);
    }
}
