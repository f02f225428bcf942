//! One gRPC call to a routed method, of any kind: its context (metadata, `grpc-timeout` as
//! the deadline, the server's shutdown signals), its request messages, the handler (through
//! the server's layers when there are any, as fRPC calls go) and its replies and status.
//!
//! Every kind goes through tonic's streaming entry point, so the request messages reach us
//! undecoded and their errors (a message over the size limit) are answered here, as gRPC
//! servers answer them. Unary and server-streaming calls read their one request first;
//! client-streaming and bidi handlers read theirs from a bridged [`ServerStream`].

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::{FutureExt, StreamExt};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::calls::budget::ByteBudget;
use crate::calls::ext::CallState;
use crate::calls::stream::{Bridge, BridgeSource, Headers, ServerStream};
use crate::config::DecodeLimits;
use crate::context::Context;
use crate::metadata::Metadata;
use crate::middleware::{CallRequest, Stack};
use crate::status::{Code, Status};
use crate::types::{BoxFuture, MethodKind};

use super::gate::{Gate, Place};
use super::stream::{REPLY_BUFFER, Replies, Starved, from_tonic, requests};
use super::{
    Route, Signals, grpc_health_reply, parse_timeout, request_metadata, response_metadata, to_tonic,
};

/// One gRPC call to a routed method.
#[derive(Clone)]
pub(super) struct Call {
    pub(super) route: Route,
    pub(super) stack: Option<Stack>,
    pub(super) peer: SocketAddr,
    pub(super) limits: DecodeLimits,
    /// The bytes of replies a stream's handler may send ahead of HTTP/2 taking them
    /// (`ConnectionConfig::stream_window_bytes`).
    pub(super) reply_window: usize,
    /// The fRPC server's call limits (a shared port).
    pub(super) gate: Gate,
    /// Fires when the connection closes.
    pub(super) closed: CancellationToken,
    pub(super) signals: Signals,
}

/// What a call's handler future returns: the encoded reply of a unary call, or a stream's end.
type Handler<T> = BoxFuture<Result<T, Status>>;

impl Call {
    /// Runs the call on a gRPC request: the reply (or replies) with the handler's response
    /// metadata in the headers, or its status.
    pub(super) async fn run(
        self,
        request: tonic::Request<tonic::Streaming<Bytes>>,
    ) -> Result<tonic::Response<Replies>, tonic::Status> {
        let deadline = match request.metadata().get("grpc-timeout") {
            Some(value) => Some(
                value
                    .to_str()
                    .ok()
                    .and_then(parse_timeout)
                    .map(|timeout| Instant::now() + timeout)
                    .ok_or_else(|| tonic::Status::invalid_argument("malformed grpc-timeout"))?,
            ),
            None => None,
        };
        let state = Arc::new(CallState::with(deadline, request_metadata(request.metadata())));
        let ctx = Context::grpc(
            self.peer,
            self.limits,
            self.closed.clone(),
            state.clone(),
            (self.signals.draining.clone(), self.signals.force.clone()),
        );
        let messages = request.into_inner();
        match self.route.method.kind {
            MethodKind::Unary => self.unary(ctx, messages, state).await,
            kind => self.streaming(ctx, kind, messages, state).await,
        }
    }

    /// The call's span, as fRPC calls have (`rpc` for a unary call, `stream` for the others,
    /// at DEBUG, with the service and method), with the peer's address: no connection span
    /// holds it here.
    fn span(&self) -> tracing::Span {
        let (service, method) = (self.route.service.name(), self.route.method);
        match method.kind {
            MethodKind::Unary => {
                tracing::debug_span!("rpc", op = method.op, service, method = method.name, peer = %self.peer, grpc = true)
            }
            _ => {
                tracing::debug_span!("stream", op = method.op, service, method = method.name, peer = %self.peer, grpc = true)
            }
        }
    }

    /// A unary call: its one request, the handler's reply.
    async fn unary(
        self,
        ctx: Context,
        messages: tonic::Streaming<Bytes>,
        state: Arc<CallState>,
    ) -> Result<tonic::Response<Replies>, tonic::Status> {
        // A dropped call (the client reset the stream, the connection closed) cancels the
        // context that tasks spawned by the handler hold.
        let guard = state.cancel_on_drop();
        let (gate, call) = (self.gate.clone(), self.clone());
        // Its place first, then its request: a request still arriving counts among the calls
        // in flight (`max_inflight`), so partly sent requests hold at most that many bodies (a
        // client held 5 MiB per stream, 4,096 streams per connection, uncounted). Both waits
        // count towards the deadline, as the handler's own does. The reply keeps the place
        // until it is sent (see `Place`).
        let span = self.span();
        let handler: Handler<(Bytes, Place)> = Box::pin(
            async move {
                let place = Place::from(gate.unary().await);
                let body = one_request(messages).await.map_err(from_tonic)?;
                Ok((call.unary_handler(ctx, body).await?, place))
            }
            .instrument(span.clone()),
        );
        let result = within_deadline(handler, state.clone()).await;
        if let Err(status) = &result {
            span.in_scope(|| tracing::debug!(code = %status.code(), error = status.message(), "call failed"));
        }
        guard.disarm();
        let result = match result {
            Ok((reply, place)) if self.route.grpc_health => {
                grpc_health_reply(reply).map(|reply| (reply, place))
            }
            other => other,
        };
        let metadata = state.take_response();
        match result {
            Ok((reply, place)) => Ok(with_headers(Replies::one(reply, state, place), metadata)),
            Err(status) => Err(to_tonic(&status, metadata)),
        }
    }

    /// A streaming call: the handler on a bridged stream, the response once it sent its
    /// first reply (or ended), the rest as it goes.
    async fn streaming(
        self,
        ctx: Context,
        kind: MethodKind,
        messages: tonic::Streaming<Bytes>,
        state: Arc<CallState>,
    ) -> Result<tonic::Response<Replies>, tonic::Status> {
        let place = self.gate.stream().map_err(|status| to_tonic(&status, None))?;
        let (source, starved) = match kind {
            // Its one request is read here, as for a unary call: a missing or oversize one is
            // answered before the handler runs.
            MethodKind::ServerStreaming => {
                // Within the deadline too: a request that stops half-way held its stream's
                // place past it, as a unary call's once did.
                let body = match state.deadline {
                    Some(deadline) => tokio::time::timeout_at(deadline, one_request(messages))
                        .await
                        .map_err(|_| to_tonic(&past_deadline(&state), None))??,
                    None => one_request(messages).await?,
                };
                let source = futures_util::stream::once(std::future::ready(Ok(body)));
                (Box::pin(source) as BridgeSource, None)
            }
            _ => {
                let starved = Arc::new(Starved::default());
                (requests(messages, starved.clone()), Some(starved))
            }
        };
        let (tx, rx) = mpsc::channel(REPLY_BUFFER);
        let headers = Arc::new(Headers::new(state.clone()));
        let stream = ServerStream::bridged(Bridge {
            source,
            limits: self.limits,
            replies: tx,
            reply_bytes: ByteBudget::new(self.reply_window),
            draining: self.signals.draining.clone(),
            headers: headers.clone(),
        });
        let handler = self.streaming_handler(ctx, stream);
        let state_for_handler = state.clone();
        let handler: Handler<()> = Box::pin(
            async move {
                let result = within_deadline(handler, state_for_handler).await;
                if let Err(status) = &result {
                    tracing::debug!(%status, "streaming call failed");
                }
                result
            }
            .instrument(self.span()),
        );
        let mut replies = Replies::streaming(rx, handler, state, starved, Place::from(place));
        let metadata = replies.headers(&headers).await?;
        let mut response = tonic::Response::new(replies);
        if let Some(metadata) = metadata {
            *response.metadata_mut() = metadata;
        }
        Ok(response)
    }

    /// The unary handler's future: through the server's layers when it has any (the same
    /// path fRPC calls take), straight to the service otherwise.
    fn unary_handler(&self, ctx: Context, body: Bytes) -> Handler<Bytes> {
        let (service, method) = (&self.route.service, self.route.method);
        match &self.stack {
            Some(stack) => {
                let request = self.request(ctx, body, None);
                let stack = stack.clone();
                Box::pin(async move { crate::middleware::unary_through(&stack, request).await })
            }
            None => service.call_unary(method.op, ctx, body),
        }
    }

    /// The streaming handler's future, through the layers as [`Call::unary_handler`]'s.
    fn streaming_handler(&self, ctx: Context, stream: ServerStream) -> Handler<()> {
        let (service, method) = (&self.route.service, self.route.method);
        match &self.stack {
            Some(stack) => {
                let call = self.clone();
                let stack = stack.clone();
                Box::pin(async move {
                    let request = |slot| Ok(call.request(ctx, Bytes::new(), Some(slot)));
                    crate::middleware::streaming_through(&stack, stream, request).await
                })
            }
            None => service.call_streaming(method.op, ctx, stream),
        }
    }

    /// The call as the layers see it.
    fn request(
        &self,
        ctx: Context,
        body: Bytes,
        stream: Option<crate::middleware::StreamSlot>,
    ) -> CallRequest {
        let method = self.route.method;
        CallRequest::new(
            self.route.service.clone(),
            method.name,
            method.op,
            method.kind,
            ctx,
            body,
            stream,
        )
    }
}

/// The one request message of a unary or server-streaming call (tonic's rule: a missing one is
/// `INTERNAL`), read to the end of the request.
async fn one_request(mut messages: tonic::Streaming<Bytes>) -> Result<Bytes, tonic::Status> {
    let failed = |status: tonic::Status| to_tonic(&from_tonic(status), None);
    let body = match messages.next().await {
        Some(Ok(body)) => body,
        Some(Err(status)) => return Err(failed(status)),
        None => return Err(tonic::Status::internal("Missing request message.")),
    };
    match messages.next().await {
        None => Ok(body),
        Some(Ok(_)) => Err(tonic::Status::internal(
            "more than one request message for a method that takes one",
        )),
        Some(Err(status)) => Err(failed(status)),
    }
}

/// Runs `handler` until the call's deadline: past it the handler is dropped, what it spawned
/// sees its context cancelled, and the client gets `DEADLINE_EXCEEDED`.
async fn within_deadline<T>(handler: Handler<T>, state: Arc<CallState>) -> Result<T, Status> {
    // A panic is an INTERNAL status, as on fRPC, rather than a reset stream.
    let handler = async move {
        let caught = std::panic::AssertUnwindSafe(handler).catch_unwind().await;
        caught.unwrap_or_else(|panic| Err(Status::from_panic(panic)))
    };
    let Some(deadline) = state.deadline else {
        return handler.await;
    };
    match tokio::time::timeout_at(deadline, handler).await {
        Ok(result) => result,
        Err(_) => Err(past_deadline(&state)),
    }
}

/// The call's deadline passed: its context is cancelled (for what the handler spawned) and
/// the client gets `DEADLINE_EXCEEDED`.
fn past_deadline(state: &CallState) -> Status {
    state.cancel();
    Status::with_code(Code::DeadlineExceeded, "deadline exceeded")
}

/// The response with the handler's metadata as its headers.
fn with_headers(replies: Replies, metadata: Option<Metadata>) -> tonic::Response<Replies> {
    let mut response = tonic::Response::new(replies);
    if let Some(metadata) = metadata {
        *response.metadata_mut() = response_metadata(&metadata);
    }
    response
}
