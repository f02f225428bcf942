//! The two ends of a gRPC call's messages: the request messages as the handler's source
//! (tonic's decoder over the HTTP/2 body, its size-limit error answered as gRPC servers answer
//! it), and [`Replies`], the response body's messages, which also drives the handler.
//!
//! The handler runs in a task of its own and the response body drains what it sent. The
//! client's HTTP/2 window still holds the handler back (its sends wait on a bounded channel and
//! the stream's byte budget), and a client that resets the stream drops the body, which aborts
//! the task (its [`Context::cancelled`](crate::Context::cancelled) fires). The handler's own
//! task is what lets its deadline drop it: hyper does not poll a body whose send window is 0,
//! so a deadline timed inside the body never fired for a client that stopped reading.
//!
//! The response's headers carry the metadata the handler set before its first reply, so they
//! wait for that reply, or the handler's end, or (client-streaming and bidi) the handler
//! waiting for a request that has not come: a client may wait for the headers before it sends
//! (tonic's generated clients do), and would wait forever.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context as TaskContext, Poll, Waker};

use bytes::Bytes;
use futures_core::Stream;
use futures_util::StreamExt;
use futures_util::task::AtomicWaker;
use tokio::sync::mpsc;

use crate::calls::ext::{CallState, CancelOnDrop};
use crate::calls::stream::{BridgeSource, Headers, Outgoing};
use crate::status::{Code, Error, Status};
use crate::types::BoxFuture;
use tokio_util::task::AbortOnDropHandle;
use tonic::metadata::MetadataMap;

use super::gate::Place;
use super::{response_metadata, to_tonic, with_trailers};

/// How many replies a streaming handler may send ahead of the client's reading (HTTP/2's
/// window holds the rest back); in bytes, the stream's reply budget bounds them too
/// ([`crate::ConnectionConfig::stream_window_bytes`]).
pub(super) const REPLY_BUFFER: usize = 16;

/// The request messages of a call (frpc's protobuf contents), as a bridged stream's source;
/// `starved` says when the handler waits for one that has not come.
pub(super) fn requests(messages: tonic::Streaming<Bytes>, starved: Arc<Starved>) -> BridgeSource {
    Box::pin(Requests { messages, starved })
}

/// Whether a handler waits for a request that has not come, and who waits for that: the
/// response's headers. The handler may read its requests in a task of its own, so the wait
/// is woken, not only looked at after polling the handler.
#[derive(Default)]
pub(super) struct Starved {
    flag: AtomicBool,
    /// The headers' wait, until they went.
    waiter: AtomicWaker,
}

impl Starved {
    fn set(&self, starved: bool) {
        self.flag.store(starved, Ordering::Release);
        if starved {
            self.waiter.wake();
        }
    }

    fn is_set(&self, waiter: &Waker) -> bool {
        self.waiter.register(waiter);
        self.flag.load(Ordering::Acquire)
    }
}

/// See [`requests`].
struct Requests {
    messages: tonic::Streaming<Bytes>,
    starved: Arc<Starved>,
}

impl Stream for Requests {
    type Item = Result<Bytes, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        let polled = self.messages.poll_next_unpin(cx);
        self.starved.set(polled.is_pending());
        polled.map(|item| item.map(|item| item.map_err(|status| Error::Status(from_tonic(status)))))
    }
}

/// A status tonic's decoder failed a request with, as the handler sees it. A message over the
/// size limit is `RESOURCE_EXHAUSTED`, as gRPC servers answer it (tonic says `OUT_OF_RANGE`,
/// the only status its decoder gives that code).
pub(super) fn from_tonic(status: tonic::Status) -> Status {
    let code = match status.code() {
        tonic::Code::OutOfRange => Code::ResourceExhausted,
        code => Code::from_u8(code as u8).unwrap_or(Code::Unknown),
    };
    Status::with_code(code, status.message())
}

/// A unary reply with its call's place, as [`Replies::carry_place`] sends it.
struct Carried {
    frame: Bytes,
    /// Held for its drop.
    _place: Place,
}

impl AsRef<[u8]> for Carried {
    fn as_ref(&self) -> &[u8] {
        &self.frame
    }
}

/// The status of a handler whose task ended without an outcome: its panics are caught inside
/// it (`within_deadline`) and it is aborted only with the body, so this is not expected.
fn task_failed(err: tokio::task::JoinError) -> Status {
    Status::with_code(Code::Internal, format!("the handler's task failed: {err}"))
}

/// A response body's messages: replies a handler sent, then its outcome (the trailers).
pub(super) struct Replies {
    /// A reply taken out early (the response's headers wait for the first one).
    first: Option<Bytes>,
    /// What the handler sends (streaming methods), each holding its share of the stream's
    /// byte budget until taken from here.
    rx: Option<mpsc::Receiver<Outgoing>>,
    /// The handler's task, until it returns; dropped with the body, it aborts the handler.
    handler: Option<AbortOnDropHandle<Result<(), Status>>>,
    /// Its outcome, once the replies it sent are out.
    outcome: Option<Result<(), Status>>,
    state: Arc<CallState>,
    /// Cancels the call's context if the body is dropped before the handler returned.
    guard: Option<CancelOnDrop>,
    /// Set while the handler waits for a request (client-streaming and bidi).
    starved: Option<Arc<Starved>>,
    /// The call's place in the server's limits: a stream's until the body is dropped, a unary
    /// call's until its reply is written ([`Replies::carry_place`]), so replies a client leaves
    /// unread count against the limits (see [`Place`]).
    place: Place,
}

impl Replies {
    /// A unary call's one reply, holding the call's `place` until it is sent.
    pub(super) fn one(reply: Bytes, state: Arc<CallState>, place: Place) -> Replies {
        Replies {
            first: Some(reply),
            rx: None,
            handler: None,
            outcome: Some(Ok(())),
            state,
            guard: None,
            starved: None,
            place,
        }
    }

    /// A streaming call's replies: what `handler` (spawned here) sends into `rx`, then its
    /// outcome.
    pub(super) fn streaming(
        rx: mpsc::Receiver<Outgoing>,
        handler: BoxFuture<Result<(), Status>>,
        state: Arc<CallState>,
        starved: Option<Arc<Starved>>,
        place: Place,
    ) -> Replies {
        let guard = state.cancel_on_drop();
        Replies {
            first: None,
            rx: Some(rx),
            handler: Some(AbortOnDropHandle::new(tokio::spawn(handler))),
            outcome: None,
            state,
            guard: Some(guard),
            starved,
            place,
        }
    }

    /// Runs the handler until the response's headers can go (see the module's doc): `Ok` with
    /// their metadata to answer with a body (a first reply kept for it), `Err` with the
    /// handler's failure before any reply (a trailers-only response).
    pub(super) async fn headers(&mut self, headers: &Headers) -> Result<Option<MetadataMap>, tonic::Status> {
        let first = std::future::poll_fn(|cx| match Pin::new(&mut *self).poll_next(cx) {
            Poll::Pending if self.is_starved(cx.waker()) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
            Poll::Ready(item) => Poll::Ready(Some(item)),
        });
        let first = first.await;
        if let Some(starved) = &self.starved {
            // Nobody waits for it now: later waits for requests wake no one.
            starved.waiter.take();
        }
        match first {
            Some(Some(Ok(reply))) => self.first = Some(reply),
            // The handler failed before any reply: its metadata goes beside the status.
            Some(Some(Err(status))) if status.code() != tonic::Code::Ok => return Err(status),
            // Ended OK with no reply, its trailers' metadata taken: it goes in the headers.
            Some(Some(Err(status))) => return Ok(Some(status.metadata().clone())),
            Some(None) | None => {}
        }
        Ok(headers.get().map(response_metadata))
    }

    /// `frame`, the reply as it goes out; a unary call's (its only one) carries the call's
    /// place with it, released once HTTP/2 wrote the last of it or dropped it (the stream
    /// reset, the connection closed). The body's end is no mark of that: hyper hands a reply
    /// to h2 whole as soon as the client's window has a byte of room, and h2 keeps it until
    /// the window lets it out.
    pub(super) fn carry_place(&mut self, frame: Bytes) -> Bytes {
        if self.handler.is_some() || self.rx.is_some() || !self.place.is_held() {
            return frame;
        }
        let place = std::mem::take(&mut self.place);
        Bytes::from_owner(Carried { frame, _place: place })
    }

    /// Whether the handler waits for a request; if not, `waiter` is woken when it does.
    fn is_starved(&self, waiter: &Waker) -> bool {
        self.starved
            .as_ref()
            .is_some_and(|starved| starved.is_set(waiter))
    }

    /// The handler returned `outcome`: nothing more comes from it, and its context is not
    /// cancelled for having finished.
    fn finished(&mut self, outcome: Result<(), Status>) {
        self.handler = None;
        if let Some(guard) = self.guard.take() {
            guard.disarm();
        }
        if let Some(rx) = &mut self.rx {
            rx.close();
        }
        self.outcome = Some(outcome);
    }

    /// The trailers' status: the handler's outcome with the response metadata it set since
    /// the headers went (`None`: a plain `OK`).
    fn end(&mut self) -> Option<tonic::Status> {
        let metadata = self.state.take_response();
        match self.outcome.take()? {
            Err(status) => Some(to_tonic(&status, metadata)),
            Ok(()) => metadata
                .map(|metadata| with_trailers(tonic::Status::new(tonic::Code::Ok, ""), Some(metadata))),
        }
    }
}

impl Stream for Replies {
    type Item = Result<Bytes, tonic::Status>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if let Some(reply) = this.first.take() {
            return Poll::Ready(Some(Ok(reply)));
        }
        if let (Some(handler), Some(rx)) = (&mut this.handler, &mut this.rx) {
            if let Poll::Ready(Some(reply)) = rx.poll_recv(cx) {
                return Poll::Ready(Some(Ok(reply.content)));
            }
            match Pin::new(handler).poll(cx) {
                Poll::Ready(outcome) => this.finished(outcome.unwrap_or_else(|err| Err(task_failed(err)))),
                Poll::Pending => return Poll::Pending,
            }
        }
        // The handler is done: what it sent before it returned, then its outcome.
        if let Some(reply) = this.rx.as_mut().and_then(|rx| rx.try_recv().ok()) {
            return Poll::Ready(Some(Ok(reply.content)));
        }
        Poll::Ready(this.end().map(Err))
    }
}
