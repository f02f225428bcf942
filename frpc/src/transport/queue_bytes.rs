//! The bytes waiting in a connection's write queue, held to `ConnectionConfig::write_queue_bytes`.
//!
//! The queue itself holds at most `write_queue` packets, whatever their size: a peer that stops
//! reading (while it keeps the connection alive with PINGs) made a server hold 1,024 replies or
//! stream messages of up to `max_content_length` each, 1 GiB for 1 MiB messages. Senders now
//! also wait for room in bytes; a packet larger than the budget goes alone, once the queue is
//! empty. Only what waits for the writer task counts: the direct path writes to the socket.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use tokio::sync::Notify;

/// Room in a write queue, in bytes.
#[derive(Debug)]
pub(crate) struct QueueBytes {
    queued: AtomicUsize,
    budget: usize,
    /// Senders waiting for room: the writer wakes them only when there are some.
    waiting: AtomicUsize,
    room: Notify,
}

impl QueueBytes {
    pub(crate) fn new(budget: usize) -> QueueBytes {
        QueueBytes {
            queued: AtomicUsize::new(0),
            budget: budget.max(1),
            waiting: AtomicUsize::new(0),
            room: Notify::new(),
        }
    }

    /// Takes room for `len` bytes if there is some now, and no sender waits ahead: always
    /// when nothing is queued.
    pub(crate) fn try_take(&self, len: usize) -> bool {
        self.take_if_room(len, false)
    }

    /// Takes room for `len` bytes if the queue is empty or `len` more fits the budget, and
    /// (unless `waiter`, a sender that is itself waiting) no sender waits ahead.
    fn take_if_room(&self, len: usize, waiter: bool) -> bool {
        let mut queued = self.queued.load(SeqCst);
        loop {
            let fits =
                queued.saturating_add(len) <= self.budget && (waiter || self.waiting.load(SeqCst) == 0);
            if queued != 0 && !fits {
                return false;
            }
            match self
                .queued
                .compare_exchange_weak(queued, queued + len, SeqCst, SeqCst)
            {
                Ok(_) => return true,
                Err(now) => queued = now,
            }
        }
    }

    /// Takes room for a packet that cannot wait (a heartbeat, credit, a cancel).
    pub(crate) fn force_take(&self, len: usize) {
        self.queued.fetch_add(len, SeqCst);
    }

    /// Waits for room for `len` bytes, for a sender [`QueueBytes::try_take`] refused; `false`
    /// once `closed()` says the connection is gone (its close wakes every waiter:
    /// [`QueueBytes::wake_all`]).
    pub(crate) async fn take(&self, len: usize, closed: impl Fn() -> bool) -> bool {
        // Counted until this wait ends, dropped too (a sender whose call timed out): a count
        // left behind made every later sender wait behind a sender that was gone.
        let _waiting = Waiting::new(&self.waiting);
        loop {
            let notified = self.room.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if closed() {
                return false;
            }
            // Checked once registered: room given back before it is seen here.
            if self.take_if_room(len, true) {
                return true;
            }
            notified.await;
        }
    }

    /// The writer wrote `len` queued bytes (or a queued packet never made it in).
    pub(crate) fn give_back(&self, len: usize) {
        self.queued.fetch_sub(len, SeqCst);
        if self.waiting.load(SeqCst) != 0 {
            self.room.notify_waiters();
        }
    }

    /// The bytes counted now.
    #[cfg(test)]
    pub(crate) fn queued(&self) -> usize {
        self.queued.load(SeqCst)
    }

    /// The connection closed: every waiter looks again (and gives up).
    pub(crate) fn wake_all(&self) {
        self.room.notify_waiters();
    }
}

/// One waiter in a count of waiters, for as long as it lives.
pub(crate) struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    pub(crate) fn new(count: &'a AtomicUsize) -> Waiting<'a> {
        count.fetch_add(1, SeqCst);
        Waiting(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_is_counted_in_bytes_and_a_large_packet_goes_alone() {
        let room = QueueBytes::new(100);
        assert!(room.try_take(60));
        assert!(room.try_take(40));
        assert!(!room.try_take(1), "the budget is full");
        room.give_back(100);
        assert!(room.try_take(1_000), "larger than the budget, alone");
        assert!(!room.try_take(1));
        room.give_back(1_000);
        room.force_take(5);
        assert!(room.try_take(95));
    }

    #[tokio::test]
    async fn a_waiting_sender_gets_room_given_back_or_gives_up_at_close() {
        let room = std::sync::Arc::new(QueueBytes::new(10));
        assert!(room.try_take(6));
        let waiter = tokio::spawn({
            let room = room.clone();
            async move { room.take(5, || false).await }
        });
        tokio::task::yield_now().await;
        assert!(
            !room.try_take(4),
            "4 bytes fit, but no one passes a waiting sender"
        );
        room.give_back(6);
        assert!(waiter.await.unwrap());
        room.give_back(5);

        assert!(room.try_take(10));
        let closed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let waiter = tokio::spawn({
            let (room, closed) = (room.clone(), closed.clone());
            async move { room.take(5, || closed.load(SeqCst)).await }
        });
        tokio::task::yield_now().await;
        closed.store(true, SeqCst);
        room.wake_all();
        assert!(!waiter.await.unwrap());
    }

    /// A sender that gives up waiting (its call timed out) is no longer counted as waiting:
    /// it was, for good, and no sender passed it again.
    #[test]
    fn a_sender_that_gives_up_waiting_no_longer_waits_ahead() {
        let room = QueueBytes::new(10);
        assert!(room.try_take(6));
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let mut waiter = Box::pin(room.take(5, || false));
        assert!(waiter.as_mut().poll(&mut cx).is_pending());
        assert!(!room.try_take(4), "no one passes a waiting sender");
        drop(waiter);
        assert!(room.try_take(4), "4 bytes fit, and no sender waits");
    }
}
