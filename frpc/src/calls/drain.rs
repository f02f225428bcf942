//! A server connection's drain notice (extension bit 9, `docs/extensions.md` §14): when the
//! server begins shutting down it tells a client that took the extension (DRAIN), serves the
//! unary calls that reach it until the client answers (DRAINED: nothing new follows), and only
//! then refuses and closes, so a client moving to another server loses no call on the way.
//! Calls floor: the server's dispatcher and its connection's shutdown share it.

use std::sync::atomic::{AtomicU8, Ordering};

use tokio::sync::Notify;

/// Where a connection's drain notice stands.
#[derive(Debug, Default)]
pub(crate) struct DrainNotice {
    state: AtomicU8,
    answered: Notify,
}

/// No DRAIN sent (the client did not take the extension, or the server is not shutting down).
const IDLE: u8 = 0;
/// DRAIN sent, DRAINED not yet read: the calls that arrive were sent before the client knew.
const SENT: u8 = 1;
/// DRAINED read: anything new is refused.
const ANSWERED: u8 = 2;

impl DrainNotice {
    /// DRAIN went out.
    pub(crate) fn sent(&self) {
        let _ = self
            .state
            .compare_exchange(IDLE, SENT, Ordering::AcqRel, Ordering::Acquire);
    }

    /// The client's DRAINED arrived (one without a DRAIN before it changes nothing).
    pub(crate) fn answered(&self) {
        if self
            .state
            .compare_exchange(SENT, ANSWERED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            self.answered.notify_waiters();
        }
    }

    /// Whether new unary calls are still served on a draining connection: DRAIN is out and
    /// the client has not answered it.
    pub(crate) fn awaiting(&self) -> bool {
        self.state.load(Ordering::Acquire) == SENT
    }

    /// Resolves once the client answered, at once if no DRAIN is awaiting an answer.
    pub(crate) async fn until_answered(&self) {
        crate::notify::until(&self.answered, || !self.awaiting()).await
    }
}
