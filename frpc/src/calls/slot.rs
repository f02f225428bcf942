//! The slot a connection's unary handlers run in ([`UnarySlot`]): one allocation per connection,
//! reused by every call whose future has the layout of the one before, where a boxed future
//! would cost a `malloc` and a `free` per call. What a connection keeps between calls is
//! bounded: a future larger than [`KEEP_MAX`] is freed as it finishes.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio_util::sync::ReusableBoxFuture;

use crate::status::Status;
use crate::types::Encoded;

/// The largest call future a slot keeps between calls (bytes): generated handlers' futures are a
/// few hundred bytes; one holding a large array is freed when it finishes, so an idle
/// connection never holds more than this.
pub(crate) const KEEP_MAX: usize = 4096;

/// Where a unary call's future runs: kept by the connection's reader from one call to the
/// next, so a handler's future (the same type call after call for one method) reuses the
/// allocation of the last one. Generated services fill it
/// ([`Service::call_unary_in`](crate::Service::call_unary_in)); not for applications.
#[doc(hidden)]
pub struct UnarySlot {
    call: ReusableBoxFuture<'static, Result<Encoded, Status>>,
    /// Whether the future in the slot has finished (it then holds nothing of its call: an
    /// `async` block drops what it captured as it returns).
    done: bool,
}

impl UnarySlot {
    /// An empty slot (its placeholder future is a zero-sized type: no allocation).
    pub(crate) fn new() -> UnarySlot {
        UnarySlot {
            call: ReusableBoxFuture::new(std::future::pending()),
            done: true,
        }
    }

    /// Puts `call` in the slot, in the allocation of the future before it where the layouts
    /// match (the last call's future is dropped first).
    #[inline]
    pub fn set<F>(&mut self, call: F)
    where
        F: Future<Output = Result<Encoded, Status>> + Send + 'static,
    {
        // `try_set` rather than `set`, which is the same: this way it inlines into the
        // generated code (through `set`, the handler's future was copied once more per call).
        if let Err(call) = self.call.try_set(call) {
            self.call = ReusableBoxFuture::new(call);
        }
        self.done = false;
    }

    /// The call in the slot, taken out to run elsewhere (a handler that waits moves to a task
    /// of its own); the slot is left empty.
    pub(crate) fn take(&mut self) -> UnarySlot {
        std::mem::take(self)
    }

    /// Empties the slot, freeing its future. Out of line: the poll that may call it is on
    /// every call's path, this almost never.
    #[cold]
    #[inline(never)]
    fn empty(&mut self) {
        *self = UnarySlot::new();
    }

    /// Drops a call that did not finish (its deadline passed, or the client cancelled it), so
    /// what it holds is let go of now, not when the next call replaces it.
    pub(crate) fn release(&mut self) {
        if !self.done {
            self.empty();
        }
    }
}

impl Default for UnarySlot {
    fn default() -> UnarySlot {
        UnarySlot::new()
    }
}

impl std::fmt::Debug for UnarySlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UnarySlot").field("done", &self.done).finish()
    }
}

impl Future for UnarySlot {
    type Output = Result<Encoded, Status>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let poll = this.call.poll(cx);
        if poll.is_ready() {
            this.done = true;
            // A future too large to keep between calls (its size, from its vtable).
            if std::mem::size_of_val(&*this.call.get_pin()) > KEEP_MAX {
                this.empty();
            }
        }
        poll
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts its drops: what a handler's future holds.
    struct Held(Arc<AtomicUsize>);

    impl Drop for Held {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn poll_now(slot: &mut UnarySlot) -> Poll<Result<Encoded, Status>> {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        Pin::new(slot).poll(&mut cx)
    }

    #[test]
    fn a_finished_call_leaves_nothing_held_and_the_next_reuses_its_allocation() {
        let drops = Arc::new(AtomicUsize::new(0));
        let mut slot = UnarySlot::new();
        let call = |held: Held| async move {
            let _held = held;
            Ok(Encoded::from(Bytes::from_static(b"reply")))
        };
        slot.set(call(Held(drops.clone())));
        assert!(matches!(poll_now(&mut slot), Poll::Ready(Ok(reply)) if reply.len() == 5));
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "a finished call dropped what it held"
        );
        let first = &*slot.call.get_pin() as *const _ as *const u8;
        slot.set(call(Held(drops.clone())));
        let second = &*slot.call.get_pin() as *const _ as *const u8;
        assert_eq!(first, second, "a future of the same layout reuses the allocation");
        assert!(poll_now(&mut slot).is_ready());
    }

    #[test]
    fn release_drops_a_call_that_did_not_finish_and_keeps_one_that_did() {
        let drops = Arc::new(AtomicUsize::new(0));
        let mut slot = UnarySlot::new();
        let held = Held(drops.clone());
        slot.set(async move {
            let _held = held;
            std::future::pending::<()>().await;
            Ok(Encoded::default())
        });
        assert!(poll_now(&mut slot).is_pending());
        slot.release();
        assert_eq!(drops.load(Ordering::SeqCst), 1, "the unfinished call was dropped");

        slot.set(async { Ok(Encoded::default()) });
        assert!(poll_now(&mut slot).is_ready());
        let before = &*slot.call.get_pin() as *const _ as *const u8;
        slot.release();
        let after = &*slot.call.get_pin() as *const _ as *const u8;
        assert_eq!(before, after, "a finished call's allocation stays for the next");
    }

    #[test]
    fn a_call_future_over_the_limit_is_freed_as_it_finishes() {
        let held = |slot: &mut UnarySlot| std::mem::size_of_val(&*slot.call.get_pin());
        let mut slot = UnarySlot::new();
        let large = [7u8; KEEP_MAX + 1];
        slot.set(async move {
            std::future::ready(()).await;
            Ok(Encoded::from(Bytes::copy_from_slice(&large[..1])))
        });
        assert!(held(&mut slot) > KEEP_MAX);
        assert!(matches!(poll_now(&mut slot), Poll::Ready(Ok(reply)) if reply.len() == 1));
        assert_eq!(held(&mut slot), 0, "nothing kept beyond the limit");

        slot.set(async { Ok(Encoded::default()) });
        assert!(poll_now(&mut slot).is_ready());
        assert!(
            held(&mut slot) > 0,
            "a small finished future keeps its allocation"
        );
    }

    #[test]
    fn take_moves_the_call_out_and_leaves_the_slot_empty() {
        let mut slot = UnarySlot::new();
        slot.set(async { Err(Status::new("failed")) });
        let mut taken = slot.take();
        assert!(slot.done, "the slot left behind is empty");
        assert!(matches!(poll_now(&mut taken), Poll::Ready(Err(status)) if status.message() == "failed"));
        assert!(
            poll_now(&mut slot).is_pending(),
            "an empty slot's placeholder never finishes"
        );
    }
}
