//! [`Gate`]: the fRPC server's call limits, applied to the gRPC face's calls on a shared port
//! ([`crate::Builder::grpc`]), so that a gRPC client cannot go past what an fRPC client may:
//! unary handlers wait for `Concurrency::Limited(n)`'s permits (else `max_inflight`'s), held
//! until the reply is written ([`Place`]), and a stream beyond `max_open_streams`, counted
//! across both faces, is refused. A standalone [`super::GrpcServer`] has no gate.

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

/// What a call holds of the server's limits, kept by its response until the response is sent
/// or dropped: a reply the client does not read (HTTP/2's window at 0) is held by hyper as long
/// as the stream lives, so releasing the place when the handler returned left such replies
/// unbounded (1,000 unary calls of 5 MB each held 4.9 GB on one connection).
#[derive(Debug, Default)]
pub(crate) struct Place {
    /// A unary call's permit ([`Gate::unary`]), held for its drop.
    unary: Option<OwnedSemaphorePermit>,
    /// A stream's place among the open streams ([`Gate::stream`]), held for its drop.
    stream: Option<OpenStream>,
}

impl Place {
    /// Whether it holds anything (a standalone server's calls hold nothing).
    pub(crate) fn is_held(&self) -> bool {
        self.unary.is_some() || self.stream.is_some()
    }
}

impl From<Option<OwnedSemaphorePermit>> for Place {
    fn from(permit: Option<OwnedSemaphorePermit>) -> Place {
        Place {
            unary: permit,
            stream: None,
        }
    }
}

impl From<Option<OpenStream>> for Place {
    fn from(open: Option<OpenStream>) -> Place {
        Place {
            unary: None,
            stream: open,
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
