//! What a handler knows about the call it serves. Services floor.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::calls::codec::Encoding;
use crate::calls::ext::CallInfo;
use crate::calls::raw::PacketSender;
use crate::metadata::Metadata;
use crate::status::Error;
use crate::transport::connection::Connection;
use crate::transport::handback::TakeConnection;

/// The context of a server-side call: the peer, a cancellation signal and, from an frpc client
/// that negotiated extensions, the call's own cancellation, deadline and metadata. Cheap to
/// clone.
///
/// On a plain fRPC connection (a Go client, or extensions off) [`Context::cancelled`] fires
/// only when the connection closes or the server shuts down, [`Context::deadline`] is `None`
/// and [`Context::metadata`] is empty.
///
#[cfg_attr(feature = "macros", doc = "```")]
#[cfg_attr(not(feature = "macros"), doc = "```ignore")]
/// # #[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
/// # pub struct Text { pub value: String }
/// #[frpc::service(package = "demo")]
/// pub trait WhoAmI {
///     async fn ask(&self, ctx: &frpc::Context, request: Text) -> Result<Text, frpc::Status>;
/// }
///
/// struct Svc;
///
/// impl WhoAmI for Svc {
///     async fn ask(&self, ctx: &frpc::Context, _request: Text) -> Result<Text, frpc::Status> {
///         if ctx.is_cancelled() {
///             return Err(frpc::Status::new("shutting down"));
///         }
///         Ok(Text { value: ctx.peer_addr().ip().to_string() })
///     }
/// }
///
/// #[tokio::main]
/// async fn main() -> Result<(), Box<dyn std::error::Error>> {
///     let server = frpc::Server::builder()
///         .add_service(WhoAmIServer::new(Svc))
///         .bind("127.0.0.1:0")
///         .await?;
///     let addr = server.local_addr();
///     tokio::spawn(server.serve());
///
///     let reply = WhoAmIClient::connect(addr).await?.ask(Text::default()).await?;
///     assert_eq!(reply.value, "127.0.0.1");
///     Ok(())
/// }
/// ```
pub struct Context {
    inner: Arc<Inner>,
    /// The call's extension state (connections that negotiated extensions only).
    call: Option<CallInfo>,
    /// What the server's layers gave the handler ([`crate::CallRequest::extensions_mut`]);
    /// `None` until one did.
    extensions: Option<Arc<http::Extensions>>,
}

impl Clone for Context {
    /// A clone outlives the handler's borrow (a task it spawns holds it), so a call whose
    /// extension state is made on demand gets it now, while the call is live: the clone's
    /// [`Context::cancelled`] then sees the client's cancel.
    fn clone(&self) -> Context {
        Context {
            inner: self.inner.clone(),
            call: self.call.as_ref().map(|call| match call {
                CallInfo::Lazy { .. } => CallInfo::State(call.state()),
                CallInfo::State(_) => call.clone(),
            }),
            extensions: self.extensions.clone(),
        }
    }
}

/// The metadata of calls that carry none.
static NO_METADATA: Metadata = Metadata::new_const();

/// Where a call came from: an fRPC connection, or (the `grpc` feature) an HTTP/2 stream.
enum Origin {
    Frpc(Arc<Connection>),
    /// A gRPC call: its peer, its decode limits, and a token fired when the call ends (the
    /// client reset the stream, or the connection closed).
    #[cfg_attr(not(feature = "grpc"), allow(dead_code))]
    Grpc {
        peer: SocketAddr,
        limits: crate::config::DecodeLimits,
        closed: CancellationToken,
    },
}

impl Origin {
    fn is_closed(&self) -> bool {
        match self {
            Origin::Frpc(conn) => conn.is_closed(),
            Origin::Grpc { closed, .. } => closed.is_cancelled(),
        }
    }

    async fn closed(&self) {
        match self {
            Origin::Frpc(conn) => conn.closed().await,
            Origin::Grpc { closed, .. } => closed.cancelled().await,
        }
    }
}

struct Inner {
    origin: Origin,
    /// Fires when a server shutdown begins.
    draining: CancellationToken,
    /// Fires when a server shutdown's grace is over.
    shutdown: CancellationToken,
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("peer", &self.peer_addr())
            .finish()
    }
}

impl Context {
    pub(crate) fn new(
        conn: Arc<Connection>,
        draining: CancellationToken,
        shutdown: CancellationToken,
    ) -> Context {
        Context {
            inner: Arc::new(Inner {
                origin: Origin::Frpc(conn),
                draining,
                shutdown,
            }),
            call: None,
            extensions: None,
        }
    }

    /// The context of one gRPC call (its state carries cancellation, deadline and metadata);
    /// `closed` fires when the call's connection goes away, `draining` and `shutdown` when its
    /// server begins shutting down and when the shutdown's grace is over.
    #[cfg(feature = "grpc")]
    pub(crate) fn grpc(
        peer: SocketAddr,
        limits: crate::config::DecodeLimits,
        closed: CancellationToken,
        call: Arc<crate::calls::ext::CallState>,
        (draining, shutdown): (CancellationToken, CancellationToken),
    ) -> Context {
        Context {
            inner: Arc::new(Inner {
                origin: Origin::Grpc { peer, limits, closed },
                draining,
                shutdown,
            }),
            call: Some(CallInfo::State(call)),
            extensions: None,
        }
    }

    /// This connection's context for one call with extension state.
    pub(crate) fn with_call(&self, call: CallInfo) -> Context {
        Context {
            inner: self.inner.clone(),
            call: Some(call),
            extensions: None,
        }
    }

    /// What the server's layers or interceptors put in the call's extensions, for the handler,
    /// as tonic's `Request::extensions`: an authenticated user, a request id (see
    /// [`crate::CallRequest::extensions_mut`]). Empty when none did.
    ///
    /// ```
    /// # #[derive(Clone)] struct User(String);
    /// fn greet(ctx: &frpc::Context) -> String {
    ///     match ctx.extensions().get::<User>() {
    ///         Some(User(name)) => format!("hello, {name}"),
    ///         None => "hello, stranger".into(),
    ///     }
    /// }
    /// ```
    pub fn extensions(&self) -> &http::Extensions {
        static NONE: std::sync::OnceLock<http::Extensions> = std::sync::OnceLock::new();
        match &self.extensions {
            Some(extensions) => extensions,
            None => NONE.get_or_init(http::Extensions::new),
        }
    }

    /// The call's extensions, to add to (the first addition allocates them; a clone of the
    /// context made before keeps what it had).
    pub(crate) fn extensions_mut(&mut self) -> &mut http::Extensions {
        Arc::make_mut(self.extensions.get_or_insert_with(Default::default))
    }

    /// When the client stops waiting for this call: its timeout, sent by an frpc client with
    /// extensions. When it passes, the handler is dropped (its [`Context::cancelled`] fires for
    /// tasks it spawned) and the client gets a [`crate::Code::DeadlineExceeded`] status.
    /// A stream's deadline bounds the whole stream (sent in its opening). `None` for calls
    /// without a timeout and plain fRPC clients (Go).
    pub fn deadline(&self) -> Option<std::time::Instant> {
        self.call.as_ref()?.deadline().map(|deadline| deadline.into_std())
    }

    /// The request metadata an frpc client sent with this call (empty when none, and always
    /// from Go clients).
    pub fn metadata(&self) -> &Metadata {
        self.call
            .as_ref()
            .and_then(CallInfo::metadata)
            .unwrap_or(&NO_METADATA)
    }

    /// Sets the response metadata of this call, sent to an frpc client that takes metadata:
    /// a unary call's with its reply (success or error), a streaming call's with the stream's
    /// end (its `EOF`, or the error that ends it), as gRPC's trailers. Setting it again
    /// replaces it. On the gRPC face, set before a stream's first reply it goes in the
    /// response's headers, set after in its trailers.
    ///
    /// Returns `false` where nothing is sent: a client that does not take metadata (a Go
    /// client, or extensions off on either side).
    pub fn set_response_metadata(&self, metadata: Metadata) -> bool {
        let Some(call) = &self.call else { return false };
        let state = call.state();
        if !state.carries_response {
            return false;
        }
        *state.response.lock().unwrap_or_else(|e| e.into_inner()) = Some(metadata);
        true
    }

    /// A sender for raw packets to this client, to keep and use later (pub/sub). A gRPC
    /// call's sender has no fRPC connection: its sends fail with [`Error::Config`].
    pub fn packet_sender(&self) -> PacketSender {
        match &self.inner.origin {
            Origin::Frpc(conn) => PacketSender::new(conn.clone()),
            Origin::Grpc { peer, .. } => PacketSender::detached(*peer),
        }
    }

    /// Asks for the connection to be handed back once this call's reply (if any) is queued and
    /// flushed: frpc stops reading at once, lets the calls already running on the connection
    /// finish (for at most the shutdown grace, `ServerConfig::shutdown_grace`: those still
    /// running then are dropped, without a reply), flushes their replies and resolves the
    /// returned future to the TCP stream plus the bytes already read but not parsed. Await it
    /// outside the handler (spawn a task): it resolves only after the handler has returned.
    /// Streams open on the connection are not ended: what their handlers send goes out ahead
    /// of the raw bytes, and they hold the handback up to the grace; end them first.
    ///
    /// Race-free when called from a raw route ([`crate::Builder::route`]) or with
    /// [`crate::Concurrency::Inline`]: nothing after the triggering packet is parsed. With
    /// per-RPC tasks the peer must wait for the reply before it sends raw bytes.
    /// A gRPC call has no fRPC connection to hand back ([`Error::Config`]).
    pub fn take_connection(&self) -> Result<TakeConnection, Error> {
        match &self.inner.origin {
            Origin::Frpc(conn) => conn.request_handback(),
            Origin::Grpc { .. } => Err(Error::Config("a gRPC call has no fRPC connection to take".into())),
        }
    }

    /// The address of the client.
    pub fn peer_addr(&self) -> SocketAddr {
        match &self.inner.origin {
            Origin::Frpc(conn) => conn.peer(),
            Origin::Grpc { peer, .. } => *peer,
        }
    }

    /// Whether the connection has closed, a server shutdown's grace is over
    /// ([`crate::ServerConfig::shutdown_grace`]), or (with extensions) the client cancelled this
    /// call or its deadline passed.
    pub fn is_cancelled(&self) -> bool {
        self.inner.origin.is_closed()
            || self.inner.shutdown.is_cancelled()
            || self.call.as_ref().is_some_and(CallInfo::is_cancelled)
    }

    /// Resolves when the server begins shutting down (or the connection closes): a long-lived
    /// stream (a watch, a subscription) can end here rather than wait out the shutdown grace.
    /// Its stream cannot send from then on anyway ([`crate::Error::ShuttingDown`]).
    pub async fn shutting_down(&self) {
        tokio::select! {
            _ = self.inner.origin.closed() => {}
            _ = self.inner.draining.cancelled() => {}
        }
    }

    /// How a unary request is encoded, and what decoding the client's messages may cost
    /// (`ConnectionConfig::decode`): an fRPC request says by its first byte, a gRPC call's is
    /// always bare protobuf (its reply goes out gRPC-framed). One look at the origin for both.
    #[inline]
    pub(crate) fn request_encoding(&self, request: &[u8]) -> (Encoding, crate::config::DecodeLimits) {
        match &self.inner.origin {
            Origin::Frpc(conn) => (Encoding::of(request), conn.decode_limits()),
            Origin::Grpc { limits, .. } => (Encoding::Grpc, *limits),
        }
    }

    /// Whether the server has begun shutting down (or the connection closed).
    pub fn is_shutting_down(&self) -> bool {
        self.inner.origin.is_closed() || self.inner.draining.is_cancelled()
    }

    /// Resolves when the connection closes or a server shutdown's grace is over (handlers get
    /// [`crate::ServerConfig::shutdown_grace`] to finish; streams cannot send meanwhile), and, from an
    /// frpc client with extensions, when the client cancels this call (drops its future or
    /// stream, or its timeout fires) or the call's deadline passes: a long handler, or a task
    /// it spawned, can `select!` on it to stop work nobody will receive. (On cancellation the
    /// handler's own future is dropped anyway, except under [`crate::Concurrency::Inline`],
    /// where a running handler holds up the connection's reader, so the cancel is read only
    /// once it returns; its deadline still ends it.)
    pub async fn cancelled(&self) {
        let call = async {
            match &self.call {
                Some(call) => call.state().cancelled().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = self.inner.origin.closed() => {}
            _ = self.inner.shutdown.cancelled() => {}
            _ = call => {}
        }
    }
}
