//! [`StreamGuard`]: what every handle of one stream shares; the last one to go forgets the
//! stream (and cancels or ends it toward the peer).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use frpc_wire::{Packet, op};
use tokio::sync::Semaphore;

use crate::calls::ext;
use crate::metadata::Metadata;
use crate::status::{Error, Status};
use crate::transport::connection::Connection;

use super::bytes::ByteCredit;
use super::common::*;
use super::table::*;

/// Removes the stream from the table when the last handle to it goes.
#[derive(Debug)]
pub(super) struct StreamGuard {
    pub(super) conn: Arc<Connection>,
    pub(super) table: Arc<StreamTable>,
    pub(super) id: u16,
    /// Tells this stream's table entry from a newer one under the same id.
    pub(super) end: Arc<OnceLock<EndReason>>,
    /// Dropped after the entry is removed (fields drop after `Drop::drop`).
    pub(super) client: ClientSide,
    pub(super) ext: StreamExt,
    /// Set once the peer ended the stream (EOF or error): nothing left to cancel.
    pub(super) finished: AtomicBool,
    /// What this side may send (flow-controlled streams).
    pub(super) send_credit: Option<Arc<Semaphore>>,
    /// What this side may send, in bytes (flow control in bytes).
    pub(super) send_bytes: Option<Arc<ByteCredit>>,
    /// Set once this side ended its half (sent `EOF`).
    pub(super) ended: AtomicBool,
    /// Live [`super::StreamSender`]s of this stream (see [`SenderCount`]).
    pub(super) senders: SenderCount,
    /// Set once a send had to wait for credit: the producer outruns its consumer, so its
    /// messages go through the writer's queue, batched, from then on (see `send_raw`).
    pub(super) bulk: AtomicBool,
    /// Its messages each way and how it ended (read by `crate::metrics`).
    #[cfg(feature = "metrics")]
    pub(super) counts: Arc<super::counts::MessageCounts>,
}

impl StreamGuard {
    pub(super) fn new(
        conn: &Arc<Connection>,
        table: &Arc<StreamTable>,
        id: u16,
        inbound: &Inbound,
        client: ClientSide,
        ext: StreamExt,
    ) -> StreamGuard {
        StreamGuard {
            conn: conn.clone(),
            table: table.clone(),
            id,
            end: inbound.end.clone(),
            client,
            ext,
            finished: AtomicBool::new(false),
            send_credit: inbound.send_credit.clone(),
            send_bytes: inbound.send_bytes.clone(),
            ended: AtomicBool::new(false),
            senders: SenderCount::default(),
            bulk: AtomicBool::new(false),
            #[cfg(feature = "metrics")]
            counts: Arc::default(),
        }
    }

    /// A client stream whose peer took the cancellation extension and has not ended it yet:
    /// dropping it sends `CANCEL`.
    pub(super) fn cancels_on_drop(&self) -> bool {
        self.ext.bits & ext::EXT_CANCEL != 0
            && self.client.keep_alive.is_some()
            && !self.finished.load(Ordering::Relaxed)
            && !self.conn.is_closed()
    }

    /// The error of a stream this side failed (its peer overflowed it, say): it already sent
    /// its error and `EOF`, so it sends nothing more.
    pub(super) fn failed_here(&self) -> Option<Error> {
        self.end
            .get()
            .filter(|reason| reason.failed_here())
            .map(|reason| reason.error(self.id))
    }

    /// The response metadata a server's handler set, taken for the content that ends the
    /// stream (its error, or `EOF`): only on a server's stream whose client took the metadata
    /// extension (docs/extensions.md §7), and only once.
    pub(super) fn end_metadata(&self) -> Option<Metadata> {
        let state = self.ext.cancel.as_ref().filter(|state| state.carries_response)?;
        state.take_response().filter(|metadata| !metadata.is_empty())
    }

    /// The content that ends this side's half: `EOF`, with the response metadata on a server.
    pub(super) fn eof(&self) -> Bytes {
        eof_content(self.end_metadata())
    }

    /// The content of an error that ends the stream, with its code (status codes negotiated)
    /// and, on a server, the response metadata.
    pub(super) fn error(&self, status: &Status) -> Bytes {
        error_content(status, self.ext.bits & ext::EXT_STATUS != 0, self.end_metadata())
    }

    pub(super) fn is_cancelled(&self) -> bool {
        self.ext.cancel.as_ref().is_some_and(|state| state.is_cancelled())
    }

    /// The client's deadline passed: tells the server (with the cancellation extension) once,
    /// as dropping the stream would; the handles then fail with the timeout.
    pub(super) fn expire(&self) {
        let already = self.finished.swap(true, Ordering::Relaxed);
        if !already && self.ext.bits & ext::EXT_CANCEL != 0 && !self.conn.is_closed() {
            self.conn.send_control(ext::cancel(op::STREAM, self.id));
        }
    }

    /// A client stream toward a peer without CANCEL (Go's) that the peer has not closed: its
    /// end closes it (a Frisbee close: op 2, no content), as Frisbee's own streams do. Go
    /// keeps a stream until it is closed: 65,536 streams later, the id's next open went to the
    /// old stream, whose handler was gone, and hung (session 33's Go interop probe). A handler
    /// still sending stops (its writes fail).
    fn closes_on_drop(&self) -> bool {
        self.ext.bits & ext::EXT_CANCEL == 0
            && self.client.keep_alive.is_some()
            && !self.conn.is_closed()
            && !matches!(self.end.get(), Some(EndReason::PeerClosed))
    }

    /// A server stream its client cancelled, whose client takes answers to its CANCELs (bit
    /// 10), that has not ended: its last handle going is when nothing more can be sent on it,
    /// so it answers then (`EOF`), which frees the client's id.
    fn owes_cancel_answer(&self) -> bool {
        self.ext.bits & ext::EXT_CANCEL_ANSWER != 0
            && self.client.keep_alive.is_none()
            && self.is_cancelled()
            && self.end.get().is_none()
    }
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        // A client stream dropped before the server ended it: with the cancellation extension,
        // tell the server (its handler is dropped). Sent while the table still holds the id.
        if self.cancels_on_drop() {
            self.conn.send_control(ext::cancel(op::STREAM, self.id));
        } else if self.closes_on_drop() {
            self.conn
                .send_control(Packet::new(self.id, op::STREAM, Bytes::new()));
        }
        if self.owes_cancel_answer() && !self.ended.swap(true, Ordering::Relaxed) {
            let eof = Bytes::from_static(frpc_wire::polyglot::EOF_MESSAGE);
            self.conn.send_control(Packet::new(self.id, op::STREAM, eof));
        }
        self.table.remove(self.id, &self.end);
        #[cfg(feature = "metrics")]
        if let Some(observed) = &self.client.observed {
            observed
                .observer
                .ended(observed.op, observed.path, observed.started, &self.counts);
        }
    }
}
