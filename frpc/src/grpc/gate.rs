//! [`Gate`]: the fRPC server's call limits, applied to the gRPC face's calls on a shared port
//! ([`crate::Builder::grpc`]), so that a gRPC client cannot go past what an fRPC client may:
//! unary handlers wait for `Concurrency::Limited(n)`'s permits (else `max_inflight`'s), and a
//! stream beyond `max_open_streams`, counted across both faces, is refused. A standalone
//! [`super::GrpcServer`] has no gate.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::calls::stream::{reserve_open_stream, too_many_open_streams};
use crate::status::Status;

/// The limits a shared port's gRPC calls share with its fRPC calls.
#[derive(Debug, Clone, Default)]
pub(crate) struct Gate {
    /// Unary handlers at once: `Limited(n)`'s permits, else `max_inflight`'s.
    pub(crate) unary: Option<Arc<Semaphore>>,
    /// Streams open at once across every connection of both faces, and the most allowed.
    pub(crate) streams: Option<(Arc<AtomicUsize>, usize)>,
    /// HTTP/2 streams (calls of any kind) at once on one connection (`max_streams`), as
    /// SETTINGS_MAX_CONCURRENT_STREAMS: clients queue calls beyond it.
    pub(crate) per_connection: Option<u32>,
}

impl Gate {
    /// A unary call's place, waited for (within the call's deadline, where the caller puts
    /// it); `None` without a gate.
    pub(crate) async fn unary(&self) -> Option<OwnedSemaphorePermit> {
        self.unary.clone()?.acquire_owned().await.ok()
    }

    /// A stream's place, held until it is dropped; RESOURCE_EXHAUSTED beyond the limit, as an
    /// fRPC stream open is refused.
    pub(crate) fn stream(&self) -> Result<Option<OpenStream>, Status> {
        let Some((open, max)) = &self.streams else {
            return Ok(None);
        };
        match reserve_open_stream(open, *max) {
            true => Ok(Some(OpenStream(open.clone()))),
            false => Err(Status::resource_exhausted(too_many_open_streams(*max))),
        }
    }
}

/// A stream counted in the server's open streams until dropped.
#[derive(Debug)]
pub(crate) struct OpenStream(Arc<AtomicUsize>);

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}
