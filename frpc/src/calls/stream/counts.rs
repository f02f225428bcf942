//! What one stream carried (feature `metrics`): its messages each way and how it ended, for
//! [`crate::metrics`]. Two relaxed atomic adds per message; without the feature this file is
//! not compiled and streams count nothing.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::Instant;

use crate::status::{Code, Error};

/// One stream's message counts and outcome.
#[derive(Debug, Default)]
pub(crate) struct MessageCounts {
    received: AtomicU64,
    sent: AtomicU64,
    /// The code it ended with, plus one (0: not ended yet).
    code: AtomicU8,
}

impl MessageCounts {
    /// Messages received (requests on a server, replies on a client).
    pub(crate) fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }

    /// Messages sent.
    pub(crate) fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// How the peer ended the stream, as this side saw it (`None`: it never did).
    pub(crate) fn code(&self) -> Option<Code> {
        Code::from_u8(self.code.load(Ordering::Relaxed).checked_sub(1)?)
    }

    #[inline]
    pub(super) fn count_received(&self) {
        self.received.fetch_add(1, Ordering::Relaxed);
    }

    #[inline]
    pub(super) fn count_sent(&self) {
        self.sent.fetch_add(1, Ordering::Relaxed);
    }

    /// Notes how the stream ended (the first end counts).
    pub(super) fn end(&self, result: Result<(), &Error>) {
        self.end_with(result.map_or_else(Error::code, |()| Code::Ok));
    }

    /// Notes the code the stream ended with (the first end counts).
    pub(super) fn end_with(&self, code: Code) {
        let _ = self
            .code
            .compare_exchange(0, code as u8 + 1, Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// Told when a client stream's last handle goes (a [`crate::Channel`] with metrics).
pub(crate) trait StreamObserver: Send + Sync {
    /// The stream of method `op` (gRPC path `path`, empty if opened by number), opened at
    /// `started`, is over; `counts` is what it carried.
    fn ended(&self, op: u16, path: &'static str, started: Instant, counts: &MessageCounts);
}

/// The observer of one client stream.
#[derive(Clone)]
pub(crate) struct Observed {
    pub(crate) observer: Arc<dyn StreamObserver>,
    pub(crate) op: u16,
    pub(crate) path: &'static str,
    pub(crate) started: Instant,
}

impl fmt::Debug for Observed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Observed").field("op", &self.op).finish()
    }
}
