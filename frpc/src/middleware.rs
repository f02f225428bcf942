//! Server middleware: the request and response a [`tower`] layer sees around every call
//! ([`Builder::layer`](crate::Builder::layer)), the interceptor shorthand
//! ([`Builder::interceptor`](crate::Builder::interceptor)), the conversion of middleware errors
//! into statuses, and the service at the bottom of a layer stack that runs the handler.
//! Services floor.
//!
//! A layered call goes: the server builds a [`CallRequest`] (names, operation, kind, context,
//! encoded request), waits until the layer stack is ready for one more call
//! ([`tower::Service::poll_ready`]), calls it, and the innermost service runs the method's
//! handler. The stack is built once per server and shared by every connection, so a
//! `RateLimitLayer` or `ConcurrencyLimitLayer` limits the whole server.

use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};

use bytes::Bytes;
use futures_util::TryFutureExt;
use futures_util::future::{Either, ErrInto, MapOk, Ready, ready};
use tower::util::BoxService;
use tower::{Layer, Service as TowerService};

use crate::calls::stream::ServerStream;
use crate::context::Context;
use crate::metadata::Metadata;
use crate::service::Service;
use crate::status::{Error, Status};
use crate::types::{BoxFuture, MethodKind};

/// The error type tower's middleware uses (`tower::BoxError`).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The service a server layer wraps: the rest of the stack, down to the handler, with its
/// errors already turned into [`Status`]es.
pub type CallService = BoxService<CallRequest, CallResponse, Status>;

/// A [`tower::Layer`] that can wrap calls: what [`Builder::layer`](crate::Builder::layer) and
/// [`LayeredService::layer`](crate::LayeredService::layer) take. Implemented for every layer
/// whose service takes a [`CallRequest`] and answers a [`CallResponse`] (tower's own, an
/// [`InterceptorLayer`], yours); there is nothing to implement by hand.
pub trait CallLayer: Send + Sync + 'static {
    /// Wraps `inner` and erases the result's type (its errors become statuses by
    /// [`status_from_error`]).
    fn wrap(&self, inner: CallService) -> CallService;
}

impl<L> CallLayer for L
where
    L: Layer<CallService> + Send + Sync + 'static,
    L::Service: TowerService<CallRequest, Response = CallResponse> + Send + 'static,
    <L::Service as TowerService<CallRequest>>::Future: Send + 'static,
    <L::Service as TowerService<CallRequest>>::Error: Into<BoxError>,
{
    fn wrap(&self, inner: CallService) -> CallService {
        erase(self.layer(inner))
    }
}

/// A built layer stack, shared by every connection. The lock serializes readiness and `call`
/// (tower services are `&mut`); it is held while the stack is not ready, so waiting calls
/// queue in arrival order, and never while a handler runs.
pub(crate) type Stack = Arc<tokio::sync::Mutex<CallService>>;

/// One layer of a stack to build, type-erased: wraps the rest of the stack.
pub(crate) type LayerFn = Box<dyn FnOnce(CallService) -> CallService + Send + Sync>;

/// Builds a stack of `layers`, the first the outermost, over the handler.
pub(crate) fn build_stack(layers: Vec<LayerFn>) -> Stack {
    let bottom = CallService::new(Handler);
    let service = layers.into_iter().rev().fold(bottom, |inner, layer| layer(inner));
    Arc::new(tokio::sync::Mutex::new(service))
}

/// Runs one call through a stack: waits until it is ready, calls it (both under its lock)
/// and awaits the response (without it).
pub(crate) async fn through(stack: &Stack, request: CallRequest) -> Result<CallResponse, Status> {
    let response = {
        let mut service = stack.lock().await;
        std::future::poll_fn(|cx| TowerService::poll_ready(&mut *service, cx)).await?;
        TowerService::call(&mut *service, request)
    };
    response.await
}

/// A unary call through a stack: the encoded reply.
pub(crate) async fn unary_through(stack: &Stack, request: CallRequest) -> Result<Bytes, Status> {
    through(stack, request)
        .await?
        .into_body()
        .ok_or_else(|| Status::internal("a layer answered a unary call as a stream"))
}

/// A stream's opening through a stack. `request` makes the call's request around the slot
/// the stream waits in for its handler: if a layer answers without running the handler (or
/// the request cannot be made), the stream is ended here with that status.
pub(crate) async fn streaming_through(
    stack: &Stack,
    stream: ServerStream,
    request: impl FnOnce(StreamSlot) -> Result<CallRequest, Status>,
) -> Result<(), Status> {
    let slot = Arc::new(Mutex::new(Some(stream)));
    let result = match request(slot.clone()) {
        Ok(request) => through(stack, request).await.map(drop),
        Err(status) => Err(status),
    };
    let left = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(stream) = left {
        // Never reached the handler: end the stream for it, as a handler would.
        let (_, sender) = stream.split::<(), ()>();
        ServerStream::finish(&sender, result.clone()).await;
    }
    result
}

/// Where a streaming call's stream waits for its handler, shared by the request and the
/// server.
pub(crate) type StreamSlot = Arc<Mutex<Option<ServerStream>>>;

/// One call as server middleware sees it: which method, the caller's context and metadata,
/// and the encoded request.
///
/// For a streaming method the request is the stream's opening: [`CallRequest::body`] is empty
/// (the messages are read by the handler, after the layers let the call through), and the
/// response comes when the handler has finished the stream.
pub struct CallRequest {
    service: &'static str,
    method: &'static str,
    op: u16,
    kind: MethodKind,
    ctx: Context,
    body: Bytes,
    /// The service that runs the call.
    target: Arc<dyn Service>,
    /// A streaming call's stream, shared with the server so it can refuse the stream when a
    /// layer answers without running the handler.
    stream: Option<StreamSlot>,
}

impl fmt::Debug for CallRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallRequest")
            .field("service", &self.service)
            .field("method", &self.method)
            .field("op", &self.op)
            .field("kind", &self.kind)
            .field("peer", &self.peer_addr())
            .field("body_len", &self.body.len())
            .finish()
    }
}

impl CallRequest {
    pub(crate) fn new(
        target: Arc<dyn Service>,
        method: &'static str,
        op: u16,
        kind: MethodKind,
        ctx: Context,
        body: Bytes,
        stream: Option<StreamSlot>,
    ) -> CallRequest {
        CallRequest {
            service: target.name(),
            method,
            op,
            kind,
            ctx,
            body,
            target,
            stream,
        }
    }

    /// A streaming call's message counts, which go on counting while the handler runs.
    #[cfg(feature = "metrics")]
    pub(crate) fn message_counts(&self) -> Option<Arc<crate::calls::stream::MessageCounts>> {
        let slot = self.stream.as_ref()?.lock().unwrap_or_else(|e| e.into_inner());
        slot.as_ref().and_then(ServerStream::message_counts)
    }

    /// The service's full proto name (`package.Service`).
    pub fn service(&self) -> &'static str {
        self.service
    }

    /// The method's proto name (`Echo`).
    pub fn method(&self) -> &'static str {
        self.method
    }

    /// The method's operation number.
    pub fn op(&self) -> u16 {
        self.op
    }

    /// Unary or which kind of stream.
    pub fn kind(&self) -> MethodKind {
        self.kind
    }

    /// The call's context, as the handler will get it.
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// The call's extensions: what layers before this one added ([`Context::extensions`]).
    pub fn extensions(&self) -> &http::Extensions {
        self.ctx.extensions()
    }

    /// The call's extensions, to add to: what a layer inserts here the handler reads from
    /// [`Context::extensions`], as tonic's `Request::extensions_mut` hands values from an
    /// interceptor to a service (an authenticated user, say). Interceptors see the call by
    /// reference; a layer that owns it adds to it, tower's `FilterLayer` when it may refuse
    /// the call too:
    ///
    /// ```
    /// #[derive(Clone)]
    /// struct User(String);
    ///
    /// // Refuses calls without a token; hands the user to the handler (`ctx.extensions()`).
    /// let auth = tower::filter::FilterLayer::new(|mut call: frpc::CallRequest| {
    ///     let user = match call.metadata().get("authorization") {
    ///         Some(token) => token.trim_start_matches("Bearer ").to_owned(),
    ///         None => return Err(frpc::Status::unauthenticated("no token")),
    ///     };
    ///     call.extensions_mut().insert(User(user));
    ///     Ok(call)
    /// });
    /// let builder = frpc::Server::builder().layer(auth);
    /// # drop(builder);
    /// ```
    pub fn extensions_mut(&mut self) -> &mut http::Extensions {
        self.ctx.extensions_mut()
    }

    /// The request metadata the client sent ([`Context::metadata`]: empty from plain fRPC
    /// clients).
    pub fn metadata(&self) -> &Metadata {
        self.ctx.metadata()
    }

    /// The client's address ([`Context::peer_addr`]).
    pub fn peer_addr(&self) -> SocketAddr {
        self.ctx.peer_addr()
    }

    /// The encoded request (polyglot, or frpc's protobuf marker and the message; the bare
    /// protobuf message over the gRPC face); empty for a streaming method.
    pub fn body(&self) -> &Bytes {
        &self.body
    }

    /// The encoded request, to change before the handler decodes it (unary methods only: a
    /// streaming method ignores it).
    pub fn body_mut(&mut self) -> &mut Bytes {
        &mut self.body
    }
}

/// What a call gives back through the layers: a unary method's encoded reply, or the end of a
/// stream (whose messages went out as the handler sent them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallResponse {
    body: Option<Bytes>,
}

impl CallResponse {
    /// A unary method's encoded reply.
    pub fn unary(body: Bytes) -> CallResponse {
        CallResponse { body: Some(body) }
    }

    /// A stream the handler has finished.
    pub fn stream_finished() -> CallResponse {
        CallResponse { body: None }
    }

    /// The encoded reply of a unary call; `None` for a stream.
    pub fn body(&self) -> Option<&Bytes> {
        self.body.as_ref()
    }

    /// The encoded reply of a unary call; `None` for a stream.
    pub fn into_body(self) -> Option<Bytes> {
        self.body
    }
}

/// The status a client gets for a middleware error:
///
/// | Error | Status |
/// |---|---|
/// | a [`Status`] (an interceptor's or a layer's own) | itself |
/// | an [`Error`] | [`Status::from`] |
/// | `tower::load_shed::error::Overloaded` (`LoadShedLayer` shed the call) | [`crate::Code::Unavailable`] |
/// | `tower::timeout::error::Elapsed` (`TimeoutLayer`) | [`crate::Code::DeadlineExceeded`] |
/// | anything else | [`crate::Code::Unknown`], with the error's text |
///
/// `Unavailable` for a shed call, as HTTP's 503: the server is busy now and the call is safe
/// to retry elsewhere (a balancer or retry policy treats it so).
pub fn status_from_error(error: BoxError) -> Status {
    let error = match error.downcast::<Status>() {
        Ok(status) => return *status,
        Err(error) => error,
    };
    let error = match error.downcast::<Error>() {
        Ok(error) => return Status::from(*error),
        Err(error) => error,
    };
    if error.is::<tower::load_shed::error::Overloaded>() {
        return Status::unavailable("the server is overloaded: the call was shed");
    }
    if error.is::<tower::timeout::error::Elapsed>() {
        return Status::deadline_exceeded("the call timed out on the server");
    }
    Status::unknown(error.to_string())
}

/// Erases a layer's service into a [`CallService`], its errors mapped by
/// [`status_from_error`].
pub(crate) fn erase<S>(service: S) -> CallService
where
    S: TowerService<CallRequest, Response = CallResponse> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
{
    BoxService::new(tower::ServiceExt::map_err(service, |error: S::Error| {
        status_from_error(error.into())
    }))
}

/// The bottom of every layer stack: runs the method's handler.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Handler;

type UnaryFuture = MapOk<BoxFuture<Result<Bytes, Status>>, fn(Bytes) -> CallResponse>;
type StreamFuture = MapOk<BoxFuture<Result<(), Status>>, fn(()) -> CallResponse>;

impl TowerService<CallRequest> for Handler {
    type Response = CallResponse;
    type Error = Status;
    type Future = Either<UnaryFuture, Either<StreamFuture, Ready<Result<CallResponse, Status>>>>;

    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), Status>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: CallRequest) -> Self::Future {
        let CallRequest {
            op,
            ctx,
            body,
            target,
            stream,
            ..
        } = request;
        let Some(slot) = stream else {
            let call = target.call_unary(op, ctx, body);
            return Either::Left(call.map_ok(CallResponse::unary as fn(Bytes) -> CallResponse));
        };
        let taken = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
        match taken {
            Some(stream) => {
                let call = target.call_streaming(op, ctx, stream);
                let finished = (|()| CallResponse::stream_finished()) as fn(()) -> CallResponse;
                Either::Right(Either::Left(call.map_ok(finished)))
            }
            None => Either::Right(Either::Right(ready(Err(Status::internal(
                "a layer called the handler of one stream twice",
            ))))),
        }
    }
}

/// A [`tower::Layer`] that runs a function on each call before it reaches the layers below
/// (and the handler): `Ok(())` lets it through, `Err(status)` answers the call with that
/// status. What [`Builder::interceptor`](crate::Builder::interceptor) adds.
#[derive(Debug, Clone)]
pub struct InterceptorLayer<F> {
    check: F,
}

impl<F> InterceptorLayer<F> {
    /// A layer checking each call with `check`.
    pub fn new(check: F) -> InterceptorLayer<F> {
        InterceptorLayer { check }
    }
}

impl<S, F: Clone> Layer<S> for InterceptorLayer<F> {
    type Service = Interceptor<S, F>;

    fn layer(&self, inner: S) -> Interceptor<S, F> {
        Interceptor {
            inner,
            check: self.check.clone(),
        }
    }
}

/// The service of an [`InterceptorLayer`].
#[derive(Debug, Clone)]
pub struct Interceptor<S, F> {
    inner: S,
    check: F,
}

impl<S, F> Interceptor<S, F> {
    /// Checks each call with `check` before `inner` sees it.
    pub fn new(inner: S, check: F) -> Interceptor<S, F> {
        Interceptor { inner, check }
    }
}

impl<S, F> TowerService<CallRequest> for Interceptor<S, F>
where
    S: TowerService<CallRequest, Response = CallResponse>,
    S::Error: Into<BoxError>,
    F: FnMut(&CallRequest) -> Result<(), Status>,
{
    type Response = CallResponse;
    type Error = BoxError;
    type Future = Either<ErrInto<S::Future, BoxError>, Ready<Result<CallResponse, BoxError>>>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: CallRequest) -> Self::Future {
        match (self.check)(&request) {
            Ok(()) => Either::Left(self.inner.call(request).err_into()),
            Err(status) => Either::Right(ready(Err(Box::new(status)))),
        }
    }
}
