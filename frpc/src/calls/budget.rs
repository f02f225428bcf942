//! [`ByteBudget`]: bytes held at once (stream messages buffered for their consumers), shared by
//! a connection or a whole server. A reader takes a message's share before routing it and
//! waits while the budget is full; the share goes back when the message is dropped.
//!
//! Counted with one atomic rather than a semaphore: taking and giving back a share costs a
//! compare-exchange and a subtraction on every streamed message, where a semaphore's release
//! takes its waiters' lock each time.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Notify;

use crate::transport::queue_bytes::Waiting;

/// A budget of bytes.
#[derive(Debug)]
pub(crate) struct ByteBudget {
    used: AtomicUsize,
    size: usize,
    /// Readers waiting for room: only then does giving back wake anyone.
    waiting: AtomicUsize,
    released: Notify,
}

/// A message's share of a [`ByteBudget`], given back when dropped.
#[derive(Debug)]
pub(crate) struct Share {
    budget: Arc<ByteBudget>,
    len: usize,
}

impl ByteBudget {
    /// A budget of `size` bytes (at least 1).
    pub(crate) fn new(size: usize) -> Arc<ByteBudget> {
        Arc::new(ByteBudget {
            used: AtomicUsize::new(0),
            size: size.max(1),
            waiting: AtomicUsize::new(0),
            released: Notify::new(),
        })
    }

    /// The share of a message of `len` bytes: its length, or the whole budget for a message
    /// larger than it (admitted once it is alone); none for an empty message.
    fn share_of(&self, len: usize) -> usize {
        len.min(self.size)
    }

    /// Takes the share of a message of `len` bytes if it fits now.
    pub(crate) fn try_take(self: &Arc<Self>, len: usize) -> Option<Option<Share>> {
        if len == 0 {
            return Some(None);
        }
        let share = self.share_of(len);
        let mut used = self.used.load(Ordering::SeqCst);
        loop {
            if used + share > self.size {
                return None;
            }
            match self
                .used
                .compare_exchange_weak(used, used + share, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => {
                    let budget = self.clone();
                    return Some(Some(Share { budget, len: share }));
                }
                Err(now) => used = now,
            }
        }
    }

    /// Takes the share of a message of `len` bytes, waiting until it fits.
    pub(crate) async fn take(self: &Arc<Self>, len: usize) -> Option<Share> {
        if let Some(share) = self.try_take(len) {
            return share;
        }
        loop {
            let released = self.released.notified();
            let mut released = std::pin::pin!(released);
            released.as_mut().enable();
            // Counted before the check, so a share given back after it wakes this wait
            // (`give_back` reads the count after freeing its bytes); and no longer once the
            // wait ends, dropped too.
            let _waiting = Waiting::new(&self.waiting);
            if let Some(share) = self.try_take(len) {
                return share;
            }
            released.await;
        }
    }

    fn give_back(&self, len: usize) {
        self.used.fetch_sub(len, Ordering::SeqCst);
        if self.waiting.load(Ordering::SeqCst) > 0 {
            self.released.notify_waiters();
        }
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        self.budget.give_back(self.len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_fit_and_come_back() {
        let budget = ByteBudget::new(100);
        let a = budget.try_take(60).unwrap();
        assert!(budget.try_take(60).is_none(), "60 + 60 > 100");
        let b = budget.try_take(40).unwrap();
        drop(a);
        assert!(budget.try_take(60).is_some());
        drop(b);
        assert!(
            matches!(budget.try_take(0), Some(None)),
            "empty messages take nothing"
        );
    }

    #[test]
    fn a_message_larger_than_the_budget_takes_all_of_it() {
        let budget = ByteBudget::new(100);
        let big = budget.try_take(1_000).unwrap();
        assert!(budget.try_take(1).is_none());
        drop(big);
        assert!(budget.try_take(100).is_some());
    }

    #[tokio::test]
    async fn a_waiting_reader_wakes_when_a_share_comes_back() {
        let budget = ByteBudget::new(100);
        let held = budget.try_take(100).unwrap();
        let waiter = tokio::spawn({
            let budget = budget.clone();
            async move { budget.take(50).await.is_some() }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        drop(held);
        assert!(waiter.await.unwrap());
    }
}
