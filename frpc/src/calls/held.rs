//! Ids given up before the peer answered them (a unary call's, a stream's), held out of use
//! while the peer's late answer may still come: it would otherwise reach whatever took the id
//! 65,535 calls or streams later. How long, and whether an id is still held. Calls floor: the
//! client's call table and the stream table use it.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};
use std::time::{Duration, Instant};

/// How long an id stays held with a peer that does not take CANCEL (Go's: its handler runs on
/// and answers whenever it is done): far beyond most calls.
const WITHOUT_CANCEL: Duration = Duration::from_secs(60);
/// How long after a CANCEL: the peer drops the call and sends nothing more, so a late answer is
/// one it wrote before it read the CANCEL, which comes within two trips of the network. Short,
/// so that a client giving up calls or streams by the thousand keeps ids to use (at 60 s,
/// 1,100 give-ups a second took all 65,536 ids for a minute at a time).
pub(crate) const AFTER_CANCEL: Duration = Duration::from_secs(10);

/// How long an id given up is held: shorter when a CANCEL went (`cancelled`).
pub(crate) fn hold(cancelled: bool) -> Duration {
    match cancelled {
        true => AFTER_CANCEL,
        false => WITHOUT_CANCEL,
    }
}

/// When an id given up now is free again.
pub(crate) fn until(cancelled: bool) -> Instant {
    Instant::now() + hold(cancelled)
}

/// When a search that found every id taken may find one again, none of them held: the longest
/// hold (the search is made again earlier if an id comes free).
pub(crate) fn until_any_free(soonest: Option<Instant>) -> Instant {
    soonest.unwrap_or_else(|| until(false))
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
