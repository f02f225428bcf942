//! Waiting on a [`tokio::sync::Notify`] until a condition holds: registered before each look,
//! so a notification between the look and the wait is not missed. A leaf.

use tokio::sync::Notify;

/// Returns once `done()` holds, looking again each time `notify` notifies its waiters.
pub(crate) async fn until(notify: &Notify, mut done: impl FnMut() -> bool) {
    loop {
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if done() {
            return;
        }
        notified.await;
    }
}
