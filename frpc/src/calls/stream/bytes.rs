//! Flow control in bytes (`docs/extensions.md` §9, bit 7): the sender's byte credit, which may
//! overdraw by one message, and the receiver's count of what the peer may still send.
//!
//! A sender may send a data message while its byte credit is **above zero**, and the message's
//! size is then taken in full, so a message larger than the whole window still passes (alone)
//! and no message is ever split. The receiver keeps the same count of the peer's credit and
//! fails the stream when a data message arrives while it is at or below zero. Its buffered
//! bytes are therefore bounded by the window plus one message.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use tokio::sync::Notify;

/// The most byte credit a side may hold: grants beyond it are dropped (as message credit is
/// capped), so the count never overflows whatever a peer grants.
const MAX_BYTE_CREDIT: i64 = u32::MAX as i64;

/// A sender's byte credit on one stream.
#[derive(Debug)]
pub(crate) struct ByteCredit {
    credit: AtomicI64,
    /// Set once the stream ended: sends no longer wait (as a closed message semaphore).
    closed: AtomicBool,
    granted: Notify,
}

impl ByteCredit {
    pub(crate) fn new(initial: i64) -> ByteCredit {
        ByteCredit {
            credit: AtomicI64::new(initial),
            closed: AtomicBool::new(false),
            granted: Notify::new(),
        }
    }

    /// Adds the peer's grant (capped at [`MAX_BYTE_CREDIT`]) and wakes waiting senders.
    pub(crate) fn grant(&self, bytes: i64) {
        let _ = self
            .credit
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |credit| {
                Some(credit.saturating_add(bytes).min(MAX_BYTE_CREDIT))
            });
        self.granted.notify_waiters();
    }

    /// The stream ended: waiting and later sends go on without credit.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.granted.notify_waiters();
    }

    /// Takes `len` bytes if the credit is above zero (or the stream ended).
    pub(crate) fn try_take(&self, len: usize) -> bool {
        if self.closed.load(Ordering::Acquire) {
            return true;
        }
        let len = i64::try_from(len).unwrap_or(i64::MAX);
        self.credit
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |credit| {
                (credit > 0).then(|| credit.saturating_sub(len))
            })
            .is_ok()
    }

    /// Waits until the credit is above zero, then takes `len` bytes.
    pub(crate) async fn take(&self, len: usize) {
        crate::notify::until(&self.granted, || self.try_take(len)).await
    }
}

/// The receiver's count of the bytes the peer may still send on one stream, and the window it
/// announced.
#[derive(Debug)]
pub(crate) struct ByteWindow {
    pub(crate) left: AtomicI64,
    pub(crate) window: u32,
}

impl ByteWindow {
    pub(crate) fn new(window: u32) -> ByteWindow {
        ByteWindow {
            left: AtomicI64::new(i64::from(window)),
            window,
        }
    }

    /// Counts a data message of `len` bytes; `false` when the peer had no byte credit left.
    pub(crate) fn receive(&self, len: usize) -> bool {
        let len = i64::try_from(len).unwrap_or(i64::MAX);
        self.left
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
                (left > 0).then(|| left.saturating_sub(len))
            })
            .is_ok()
    }

    /// Counts bytes given back to the peer (before the grant leaves, so that the peer's next
    /// message finds it).
    pub(crate) fn give_back(&self, bytes: u32) {
        self.left.fetch_add(i64::from(bytes), Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_larger_than_the_window_passes_alone() {
        let credit = ByteCredit::new(100);
        assert!(credit.try_take(1_000));
        assert!(!credit.try_take(1));
        credit.grant(900);
        assert!(!credit.try_take(1), "credit is back at 0, not above");
        credit.grant(1);
        assert!(credit.try_take(1));
        credit.close();
        assert!(credit.try_take(1_000_000), "an ended stream sends freely");
    }

    #[test]
    fn the_receiver_counts_as_the_sender_does() {
        let window = ByteWindow::new(100);
        assert!(window.receive(1_000));
        assert!(
            !window.receive(1),
            "the peer overdrew: nothing more until a grant"
        );
        window.give_back(1_000);
        assert!(window.receive(1));
    }

    #[test]
    fn grants_are_capped() {
        let credit = ByteCredit::new(0);
        credit.grant(i64::MAX);
        credit.grant(i64::MAX);
        assert!(credit.try_take(usize::MAX));
        assert!(!credit.try_take(1));
    }

    #[tokio::test]
    async fn a_waiting_sender_wakes_on_a_grant() {
        let credit = std::sync::Arc::new(ByteCredit::new(0));
        let waiter = tokio::spawn({
            let credit = credit.clone();
            async move { credit.take(10).await }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        credit.grant(5);
        waiter.await.unwrap();
        assert!(!credit.try_take(1), "5 - 10 is below zero");
    }
}
