//! [`GrpcChannel`]'s streaming calls, as bridged streams (`calls::stream::BridgedCall`): the
//! requests a `StreamSender` sends go through a bounded channel that is tonic's request
//! stream, the replies come from tonic's `Streaming` as the source of a `Streaming`, and the
//! trailers' status ends it (`Ok(None)` on OK, [`Error::Status`] code for code otherwise).
//!
//! A server-streaming call sends its one request and waits for the response's headers, as
//! tonic's clients do, so a refused call fails at the open. Client-streaming and bidi calls
//! return at once: the call runs in a task of its own until the headers come (a gRPC server
//! may hold them until it read every request), so requests flow before anyone reads.
//!
//! The call's timeout goes as `grpc-timeout` and bounds the whole call here too (sends,
//! headers, replies: [`Error::Timeout`]). Once the call's sender and replies are both gone (or
//! its time is up) tonic resets the HTTP/2 stream: the server sees a cancel.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_core::Stream;
use futures_util::{FutureExt, StreamExt};
use http::uri::PathAndQuery;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::{Instant, Sleep};
use tonic::CancellationHandle;

use super::client::{GrpcChannel, from_grpc, grpc_path, some, timed_out, unavailable, zero_timeout};
use super::{BytesCodec, request_metadata};
use crate::calls::stream::{BridgeSource, BridgedCall, Keep, Outbox, Outgoing};
use crate::metadata::{Metadata, MetadataSlot};
use crate::status::Error;

/// How many requests a sender may send ahead of HTTP/2 taking them (its window holds the
/// rest back).
const REQUEST_BUFFER: usize = 16;

/// A call's response as tonic gives it: the headers and the replies' stream.
type Response = tonic::Response<tonic::Streaming<Bytes>>;

/// What a call failed with before its response came: no connection (or no time left), or a
/// status.
enum Failed {
    Error(Error),
    Status(tonic::Status),
}

impl GrpcChannel {
    /// Opens a streaming call to `path`: a server-streaming one with `request`, else a
    /// client-streaming or bidi one (see the module's doc).
    pub(super) async fn open_stream(
        &self,
        path: &'static str,
        request: Option<Bytes>,
    ) -> Result<BridgedCall, Error> {
        let path = grpc_path(path)?;
        let deadline = match self.timeout {
            Some(limit) if limit.is_zero() => return Err(zero_timeout()),
            Some(limit) => Some((Instant::now() + limit, limit)),
            None => None,
        };
        match request {
            Some(body) => self.server_streaming(path, body, deadline).await,
            None => self.streaming(path, deadline),
        }
    }

    /// Sends the one request and waits for the response's headers.
    async fn server_streaming(
        &self,
        path: PathAndQuery,
        body: Bytes,
        deadline: Option<(Instant, Duration)>,
    ) -> Result<BridgedCall, Error> {
        self.check_request(&path, &body)?;
        let mut request = self.request(body)?;
        let call = self.call(request.cancellation_handle(), deadline);
        let mut grpc = self.grpc();
        let response = async move {
            ready(&mut grpc, &path).await?;
            grpc.server_streaming(request, path, BytesCodec)
                .await
                .map_err(Failed::Status)
        };
        let response = match deadline {
            None => response.await,
            Some((at, limit)) => tokio::time::timeout_at(at, response)
                .await
                .unwrap_or(Err(Failed::Error(Error::Timeout(limit)))),
        };
        let mut replies = Replies::new(call.clone(), State::Done);
        replies.answered(response)?;
        Ok(self.bridged(None, Box::pin(replies), call))
    }

    /// Starts a client-streaming or bidi call in a task of its own, its requests from a
    /// channel.
    fn streaming(
        &self,
        path: PathAndQuery,
        deadline: Option<(Instant, Duration)>,
    ) -> Result<BridgedCall, Error> {
        let (tx, mut rx) = mpsc::channel::<Outgoing>(REQUEST_BUFFER);
        let requests =
            futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx).map(|o| o.map(|o| o.content)));
        let mut request = self.request(requests)?;
        let call = self.call(request.cancellation_handle(), deadline);
        let mut grpc = self.grpc();
        let task = tokio::spawn(async move {
            ready(&mut grpc, &path).await?;
            grpc.streaming(request, path, BytesCodec)
                .await
                .map_err(Failed::Status)
        });
        let replies = Replies::new(call.clone(), State::Waiting(Task(task)));
        Ok(self.bridged(Some(tx), Box::pin(replies), call))
    }

    /// What a call shares between its sender and its replies.
    fn call(&self, cancel: CancellationHandle, deadline: Option<(Instant, Duration)>) -> Arc<Call> {
        Arc::new(Call {
            cancel,
            slot: self.response.clone(),
            deadline,
        })
    }

    /// The call as the stream machinery takes it: the sender keeps the call alive too.
    fn bridged(&self, requests: Option<Outbox>, replies: BridgeSource, call: Arc<Call>) -> BridgedCall {
        BridgedCall {
            requests,
            replies,
            limits: self.limits,
            max_encoding: self.max_encoding,
            deadline: call.deadline,
            keep: call as Keep,
        }
    }
}

/// Waits for the channel to take a call.
async fn ready(
    grpc: &mut tonic::client::Grpc<tonic::transport::Channel>,
    path: &PathAndQuery,
) -> Result<(), Failed> {
    grpc.ready()
        .await
        .map_err(|err| Failed::Error(unavailable(&path.to_string(), &err)))
}

/// A call, shared by its sender and its replies: the last one gone cancels it (an HTTP/2
/// reset, unless it is over).
struct Call {
    cancel: CancellationHandle,
    slot: Option<MetadataSlot>,
    deadline: Option<(Instant, Duration)>,
}

impl Call {
    /// Resets the call's HTTP/2 stream (nothing once its requests all went: then dropping
    /// its replies does).
    fn cancel(&self) {
        self.cancel.clone().cancel();
    }

    /// A status as the call's error: the call's timeout when its time is up (tonic's own
    /// timer; or, once ours passed too, the server's `DEADLINE_EXCEEDED`, or the `CANCELLED`
    /// tonic servers answer when their `grpc-timeout` timer wins the race), else the status.
    fn error(&self, status: &tonic::Status) -> Error {
        let late = |(at, _): (Instant, Duration)| {
            matches!(
                status.code(),
                tonic::Code::DeadlineExceeded | tonic::Code::Cancelled
            ) && Instant::now() >= at
        };
        match self.deadline {
            Some((at, limit)) if timed_out(status) || late((at, limit)) => Error::Timeout(limit),
            _ => Error::Status(from_grpc(status)),
        }
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        self.cancel();
    }
}

/// The task a client-streaming or bidi call runs in until its headers come; aborted with
/// its replies.
struct Task(JoinHandle<Result<Response, Failed>>);

impl Drop for Task {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Where a call's replies stand.
enum State {
    /// Before the response's headers (client-streaming and bidi calls: in their task).
    Waiting(Task),
    Reading(Box<tonic::Streaming<Bytes>>),
    Done,
}

/// A call's replies as a bridged stream's source: each reply, then the end the trailers say;
/// response metadata (headers, then headers and trailers) into the handle's slot.
struct Replies {
    state: State,
    call: Arc<Call>,
    /// The call's timer, made on the first wait.
    timer: Option<Pin<Box<Sleep>>>,
    /// The response's headers, as metadata.
    headers: Metadata,
}

impl Replies {
    fn new(call: Arc<Call>, state: State) -> Replies {
        Replies {
            state,
            call,
            timer: None,
            headers: Metadata::new(),
        }
    }

    /// The response came (its headers, and the replies to read), or the call failed.
    fn answered(&mut self, response: Result<Response, Failed>) -> Result<(), Error> {
        match response {
            Ok(response) => {
                self.headers = request_metadata(response.metadata());
                self.leave(None);
                self.state = State::Reading(Box::new(response.into_inner()));
                Ok(())
            }
            Err(failed) => Err(self.failed(failed)),
        }
    }

    /// The call failed: its error, the metadata that came with it left in the slot.
    fn failed(&mut self, failed: Failed) -> Error {
        self.state = State::Done;
        match failed {
            Failed::Error(err) => err,
            Failed::Status(status) => {
                self.leave(Some(request_metadata(status.metadata())));
                self.call.error(&status)
            }
        }
    }

    /// Leaves the response metadata in the slot: the headers, and `trailers` at the end.
    fn leave(&self, trailers: Option<Metadata>) {
        let Some(slot) = &self.call.slot else { return };
        let mut metadata = self.headers.clone();
        if let Some(trailers) = trailers {
            metadata.merge(&trailers);
        }
        slot.set(some(metadata));
    }

    /// The call's time is up: it ends here, and is reset.
    fn poll_timer(&mut self, cx: &mut TaskContext<'_>) -> Poll<Error> {
        let Some((at, limit)) = self.call.deadline else {
            return Poll::Pending;
        };
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => {
                self.state = State::Done;
                self.call.cancel();
                Poll::Ready(Error::Timeout(limit))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    /// The stream ended well: the trailers' metadata (tonic keeps them once the body ended).
    fn ended(&mut self) {
        if let State::Reading(replies) = &mut self.state {
            let trailers = replies.trailers().now_or_never().and_then(Result::ok).flatten();
            let trailers = trailers.map(|map| request_metadata(&map));
            self.leave(Some(trailers.unwrap_or_default()));
        }
        self.state = State::Done;
    }
}

impl Stream for Replies {
    type Item = Result<Bytes, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            let polled = match &mut this.state {
                State::Done => return Poll::Ready(None),
                State::Waiting(Task(task)) => match task.poll_unpin(cx) {
                    Poll::Ready(Ok(response)) => match this.answered(response) {
                        Ok(()) => continue,
                        Err(err) => return Poll::Ready(Some(Err(err))),
                    },
                    Poll::Ready(Err(_)) => {
                        this.state = State::Done;
                        return Poll::Ready(Some(Err(Error::Cancelled)));
                    }
                    Poll::Pending => Poll::Pending,
                },
                State::Reading(replies) => match replies.poll_next_unpin(cx) {
                    Poll::Ready(Some(Ok(reply))) => return Poll::Ready(Some(Ok(reply))),
                    Poll::Ready(Some(Err(status))) => {
                        let err = this.failed(Failed::Status(status));
                        return Poll::Ready(Some(Err(err)));
                    }
                    Poll::Ready(None) => {
                        this.ended();
                        return Poll::Ready(None);
                    }
                    Poll::Pending => Poll::Pending,
                },
            };
            return match (polled, this.poll_timer(cx)) {
                (_, Poll::Ready(err)) => Poll::Ready(Some(Err(err))),
                (polled, Poll::Pending) => polled,
            };
        }
    }
}
