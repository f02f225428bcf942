//! Flow-control credit given back to the peer from places that cannot wait (the connection's
//! reader, a stream handle being dropped, a consumer reading): written at once when the writer
//! is idle (the peer's producer may be waiting for it), queued when the write queue has room, else
//! summed per stream and sent by one flusher task per connection. A peer that stops reading
//! while it keeps sending thus costs at most one entry per stream, never a task or a queued
//! packet per message; and no credit is lost, so its streams never stall.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::ext::{self, Window};
use crate::transport::connection::Connection;

/// One connection's credit waiting for room in its write queue.
#[derive(Debug, Default)]
pub(crate) struct CreditBack {
    /// Credit per stream, not yet sent.
    pending: Mutex<HashMap<u16, Window>>,
    /// Whether a flusher task runs (set and cleared with `pending` locked).
    flushing: AtomicBool,
}

impl CreditBack {
    /// Gives `credit` on `stream` back to the peer of `conn`.
    pub(crate) fn give(self: &Arc<Self>, conn: &Arc<Connection>, stream: u16, credit: Window) {
        if conn.is_closed() {
            return;
        }
        let mut pending = self.lock();
        if pending.is_empty() && !self.flushing.load(Ordering::Acquire) {
            let packet = ext::stream_window(ext::CREDIT, stream, credit);
            if conn.try_send_now(packet).is_ok() {
                return;
            }
        }
        let owed = pending.entry(stream).or_default();
        owed.messages = owed.messages.saturating_add(credit.messages);
        owed.bytes = match (owed.bytes, credit.bytes) {
            (Some(owed), Some(more)) => Some(owed.saturating_add(more)),
            (owed, more) => owed.or(more),
        };
        if !self.flushing.swap(true, Ordering::AcqRel) {
            tokio::spawn(self.clone().flush(conn.clone()));
        }
    }

    /// Sends what is pending, waiting for room in the write queue, until nothing is left (or
    /// the connection closes).
    async fn flush(self: Arc<Self>, conn: Arc<Connection>) {
        loop {
            let batch: Vec<(u16, Window)> = {
                let mut pending = self.lock();
                if pending.is_empty() {
                    self.flushing.store(false, Ordering::Release);
                    return;
                }
                pending.drain().collect()
            };
            for (stream, credit) in batch {
                let packet = ext::stream_window(ext::CREDIT, stream, credit);
                if conn.send(packet).await.is_err() {
                    let mut pending = self.lock();
                    pending.clear();
                    self.flushing.store(false, Ordering::Release);
                    return;
                }
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u16, Window>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }
}
