//! The server: accepts connections and serves each with the calls floor's dispatcher over a
//! transport connection; routes each operation to its service or raw route and shuts down
//! gracefully. Services floor.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use frpc_wire::{Framing, Packet, op};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::{TcpListener, TcpStream, ToSocketAddrs};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::calls::ext::{self, CallInfo};
use crate::calls::server::{Handlers, Limits, ServerDispatch, Target};
use crate::calls::slot::UnarySlot;
use crate::calls::stream::ServerStream;
use crate::config::{Concurrency, ServerConfig};
use crate::context::Context;
use crate::hash::IdMap;
use crate::middleware::{self, CallLayer, CallRequest, CallService, LayerFn, Stack, StreamSlot};
use crate::service::Service;
use crate::status::{CloseReason, Error, Status};
use crate::transport::connection::{Connection, Options};
use crate::transport::handback::Join;
use crate::types::{BoxFuture, Encoded, MethodKind, NO_PEER_ADDR};

/// A server's handler for raw packets on one operation (see [`Builder::route`]).
type RawHandler = Arc<dyn Fn(Context, Packet) -> BoxFuture<Option<Bytes>> + Send + Sync>;

/// One layer of [`Builder::layer`] or [`Builder::interceptor`], type-erased: wraps the rest of
/// the stack; the flag says whether interceptors also check the health service
/// ([`Builder::intercept_health`]).
type ServerLayerFn = Box<dyn FnOnce(CallService, bool) -> CallService + Send + Sync>;

/// Builds a [`Server`]: services, concurrency and connection settings.
///
#[cfg_attr(feature = "macros", doc = "```")]
#[cfg_attr(not(feature = "macros"), doc = "```ignore")]
/// # #[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
/// # pub struct Text { pub value: String }
/// # #[frpc::service(package = "demo")]
/// # pub trait Greeter {
/// #     async fn greet(&self, ctx: &frpc::Context, request: Text) -> Result<Text, frpc::Status>;
/// # }
/// # struct Hello;
/// # impl Greeter for Hello {
/// #     async fn greet(&self, _: &frpc::Context, request: Text) -> Result<Text, frpc::Status> {
/// #         Ok(request)
/// #     }
/// # }
/// #[tokio::main]
/// async fn main() -> Result<(), Box<dyn std::error::Error>> {
///     let mut config = frpc::ServerConfig::default();
///     config.max_connections = 100;
///     let server = frpc::Server::builder()
///         .config(config) // the base; the builder's own settings apply over it, before or after
///         .concurrency(frpc::Concurrency::Limited(64))
///         .framing(frpc::Framing::Frisbee)
///         .add_service(GreeterServer::new(Hello))
///         .bind("127.0.0.1:0")
///         .await?;
///     let addr = server.local_addr();
///     tokio::spawn(server.serve());
///
///     let reply = GreeterClient::connect(addr).await?.greet(Text { value: "hi".into() }).await?;
///     assert_eq!(reply.value, "hi");
///     Ok(())
/// }
/// ```
pub struct Builder {
    services: Vec<Arc<dyn Service>>,
    raw: Vec<(u16, RawHandler)>,
    /// In the order added: the first is the outermost.
    layers: Vec<ServerLayerFn>,
    /// Whether server-wide interceptors also check calls to the health service.
    intercept_health: bool,
    /// The base configuration ([`Builder::config`]).
    config: ServerConfig,
    /// The builder's own settings, applied over the base whatever the order of the calls.
    overrides: Overrides,
    #[cfg(feature = "tls")]
    tls: Option<crate::tls::TlsAcceptor>,
    /// Whether the listener also speaks gRPC ([`Builder::grpc`]).
    #[cfg(feature = "grpc")]
    grpc: bool,
}

/// The settings [`Builder`] sets itself, kept apart from its base configuration so that
/// `Builder::config` does not drop them.
#[derive(Debug, Default)]
struct Overrides {
    concurrency: Option<Concurrency>,
    framing: Option<Framing>,
    shutdown_grace: Option<Duration>,
}

impl Overrides {
    fn apply(&self, config: &mut ServerConfig) {
        if let Some(concurrency) = self.concurrency {
            config.concurrency = concurrency;
        }
        if let Some(framing) = self.framing {
            config.connection.framing = framing;
        }
        if let Some(grace) = self.shutdown_grace {
            config.shutdown_grace = grace;
        }
    }
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<_> = self.services.iter().map(|s| s.name()).collect();
        f.debug_struct("Builder")
            .field("services", &names)
            .field("layers", &self.layers.len())
            .field("config", &self.config)
            .finish()
    }
}

impl Builder {
    /// Adds a generated service server (`FooServer::new(impl)`).
    pub fn add_service(mut self, service: impl Service) -> Builder {
        self.services.push(Arc::new(service));
        self
    }

    /// Serves the services to gRPC clients too, on the same listener (feature `grpc`): each
    /// connection's first byte tells an HTTP/2 client's preface (`P`) from a Frisbee header
    /// (`00`), with no byte consumed and no wait beyond that byte. The gRPC face is
    /// [`crate::grpc::GrpcServer`] over the same service objects (messages up to
    /// `ConnectionConfig::max_content_length`). With [`Builder::tls`] every connection is TLS:
    /// the server advertises ALPN `h2`, and a client that chose it is a gRPC client, any other
    /// (no ALPN, or another protocol) an fRPC one. (A cleartext legacy-framing client whose
    /// first packet id is 0x50xx would be taken for HTTP/2; clients number ids from 0.)
    #[cfg(feature = "grpc")]
    pub fn grpc(mut self, on: bool) -> Builder {
        self.grpc = on;
        self
    }

    /// Handles raw packets with operation `op` (one no service uses, 10 or more) with `handler`,
    /// for custom patterns beside RPCs such as pub/sub. The handler runs on the connection's
    /// reader, in arrival order (keep it short: spawn long work); a returned `Some(content)` is
    /// sent back with the packet's id and operation. [`Context::packet_sender`] pushes packets
    /// to the client later.
    pub fn route<F, Fut>(mut self, op: u16, handler: F) -> Builder
    where
        F: Fn(Context, Packet) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Option<Bytes>> + Send + 'static,
    {
        let handler: RawHandler = Arc::new(move |ctx, packet| Box::pin(handler(ctx, packet)));
        self.raw.push((op, handler));
        self
    }

    /// Wraps every call to the services in `layer`, a [`tower::Layer`]: a concurrency or rate
    /// limit, load shedding, a timeout, an auth check, metrics. The service it wraps takes a
    /// [`CallRequest`] (service and method names, operation, kind, [`Context`] with the
    /// request metadata, the encoded request) and answers a [`CallResponse`](crate::CallResponse)
    /// (the encoded reply) or an error that becomes the call's status
    /// ([`middleware::status_from_error`]:
    /// tower's `Overloaded` is `Unavailable`, `Elapsed` is `DeadlineExceeded`).
    ///
    /// - **Order**: like [`tower::ServiceBuilder`], the layer added first is the outermost
    ///   and sees each call first: `.layer(a).layer(b)` runs `a`, then `b`, then the handler.
    /// - **One stack per server**: the layers wrap the handlers once, at [`Builder::build`],
    ///   and every connection's calls go through that one service, so a limit is server-wide.
    ///   Readiness ([`tower::Service::poll_ready`]) is awaited for every call before it is
    ///   called; while the stack is not ready (a rate limit's next slot, a full concurrency
    ///   limit) calls wait in arrival order, each within its own deadline.
    /// - **Streams** go through the layers when they open: the request's body is empty, and
    ///   the response comes once the handler has finished the stream (so a concurrency limit
    ///   counts open streams and a timeout bounds the whole stream). A stream a layer refuses
    ///   ends at once with the layer's status.
    /// - **Health**: the health service's `Check` calls go through the layers; its `Watch`
    ///   streams do not (unless [`Builder::intercept_health`] makes interceptors check them:
    ///   then they go through every layer). A balanced [`Channel`](crate::Channel) keeps a
    ///   watch open on each of its connections for the connection's life: a concurrency limit
    ///   would count each one as a call that never ends, and a timeout would cut it.
    /// - Under [`Concurrency::Inline`] a call waiting for readiness holds up its connection's
    ///   reader, as its handler would; with the other modes it waits in its own task.
    /// - Raw routes ([`Builder::route`]) are not layered.
    /// - With no layer the calls take the same path as before, at no cost.
    ///
    #[cfg_attr(feature = "macros", doc = "```")]
    #[cfg_attr(not(feature = "macros"), doc = "```ignore")]
    /// # #[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
    /// # pub struct Text { pub value: String }
    /// # #[frpc::service(package = "demo")]
    /// # pub trait Greeter {
    /// #     async fn greet(&self, ctx: &frpc::Context, request: Text) -> Result<Text, frpc::Status>;
    /// # }
    /// # struct Hello;
    /// # impl Greeter for Hello {
    /// #     async fn greet(&self, _: &frpc::Context, request: Text) -> Result<Text, frpc::Status> {
    /// #         Ok(request)
    /// #     }
    /// # }
    /// use std::time::Duration;
    /// use tower::limit::ConcurrencyLimitLayer;
    /// use tower::timeout::TimeoutLayer;
    ///
    /// #[tokio::main]
    /// async fn main() -> Result<(), Box<dyn std::error::Error>> {
    ///     let server = frpc::Server::builder()
    ///         .layer(TimeoutLayer::new(Duration::from_secs(1))) // outermost: sees calls first
    ///         .layer(ConcurrencyLimitLayer::new(64)) // at most 64 calls run at once
    ///         .add_service(GreeterServer::new(Hello))
    ///         .bind("127.0.0.1:0")
    ///         .await?;
    ///     let addr = server.local_addr();
    ///     tokio::spawn(server.serve());
    ///
    ///     let reply = GreeterClient::connect(addr).await?.greet(Text { value: "hi".into() }).await?;
    ///     assert_eq!(reply.value, "hi");
    ///     Ok(())
    /// }
    /// ```
    pub fn layer<L: CallLayer>(mut self, layer: L) -> Builder {
        self.layers.push(Box::new(move |inner, _| layer.wrap(inner)));
        self
    }

    /// Checks every call with `check` before it reaches the layers added after it and the
    /// handler, like tonic's interceptors: `Err(status)` answers the call with that status
    /// (its code reaches frpc clients with extensions), `Ok(())` lets it through. It sees the
    /// method, the request metadata and the peer's address ([`CallRequest`]). A layer
    /// ([`middleware::InterceptorLayer`]) in the order of [`Builder::layer`].
    ///
    /// **Health checks pass.** Calls to frpc's health service ([`crate::health`]) are not
    /// checked, so an auth interceptor does not lock out load balancers and probes (which
    /// rarely hold the token); [`Builder::intercept_health`] makes interceptors check them
    /// too. Layers ([`Builder::layer`]) cover every call, health's `Check` included (its
    /// `Watch` streams skip the layers). To check only one
    /// service's calls, put the interceptor on that service instead
    /// ([`LayeredService`](crate::LayeredService), `FooServer::new(svc).with_interceptor(..)`).
    ///
    /// ```
    /// # async fn demo() -> Result<(), frpc::Error> {
    /// let server = frpc::Server::builder()
    ///     .interceptor(|call: &frpc::CallRequest| {
    ///         match call.metadata().get("authorization") {
    ///             Some("Bearer secret") => Ok(()),
    ///             _ => Err(frpc::Status::unauthenticated("no valid token")),
    ///         }
    ///     })
    ///     .bind("127.0.0.1:0")
    ///     .await?;
    /// # drop(server); Ok(()) }
    /// ```
    pub fn interceptor<F>(mut self, mut check: F) -> Builder
    where
        F: FnMut(&CallRequest) -> Result<(), Status> + Send + Sync + 'static,
    {
        self.layers.push(Box::new(move |inner, health| {
            let check = move |call: &CallRequest| match !health && is_health(call.service()) {
                true => Ok(()),
                false => check(call),
            };
            middleware::erase(middleware::Interceptor::new(inner, check))
        }));
        self
    }

    /// Whether the server-wide interceptors ([`Builder::interceptor`], wherever they are in the
    /// chain) also check calls to the health service. Default: `false` (health checks pass
    /// them, so probes without credentials see the server's health).
    pub fn intercept_health(mut self, intercept: bool) -> Builder {
        self.intercept_health = intercept;
        self
    }

    /// Serves over TLS: every connection does a TLS handshake first (within the idle timeout).
    #[cfg(feature = "tls")]
    pub fn tls(mut self, config: Arc<crate::tls::rustls::ServerConfig>) -> Builder {
        self.tls = Some(crate::tls::TlsAcceptor::from(config));
        self
    }

    /// Sets how handlers are scheduled. Default: [`Concurrency::PerRpc`]. Applies over
    /// [`config`](Self::config), whichever comes first.
    pub fn concurrency(mut self, concurrency: Concurrency) -> Builder {
        self.overrides.concurrency = Some(concurrency);
        self
    }

    /// Sets the framing. Default: [`Framing::Frisbee`]. Applies over
    /// [`config`](Self::config), whichever comes first.
    pub fn framing(mut self, framing: Framing) -> Builder {
        self.overrides.framing = Some(framing);
        self
    }

    /// Sets how long a shutdown waits for running calls before it cancels them and closes
    /// the connections ([`ServerConfig::shutdown_grace`]). Default: 5 s. Applies over
    /// [`config`](Self::config), whichever comes first.
    pub fn shutdown_grace(mut self, grace: Duration) -> Builder {
        self.overrides.shutdown_grace = Some(grace);
        self
    }

    /// Sets the base configuration: everything the builder's own setters
    /// ([`concurrency`](Self::concurrency), [`framing`](Self::framing),
    /// [`shutdown_grace`](Self::shutdown_grace)) do not set. Those apply over it whether they
    /// come before or after, so `.concurrency(Inline).config(cfg)` keeps `Inline`.
    pub fn config(mut self, config: ServerConfig) -> Builder {
        self.config = config;
        self
    }

    /// Checks the routes and builds the server. Two services claiming one operation number
    /// (two .proto files both numbering from 10, say) are refused here rather than mis-routed,
    /// and so is any claim of operation 0xFFFF (65535), which frpc's extensions use. frpc's
    /// health service (`frpc::health`) claims 0xFF00 and 0xFF01 like any service, so a route
    /// on either beside it is refused too.
    ///
    /// An invalid configuration (see [`ServerConfig`] and [`crate::ConnectionConfig`]) is
    /// refused here with [`Error::Config`] naming the field.
    pub fn build(mut self) -> Result<Server, Error> {
        self.overrides.apply(&mut self.config);
        self.config.check().map_err(Error::Config)?;
        let mut routes: IdMap<u16, Route> = IdMap::default();
        // Who claimed each operation, to name both sides of a collision.
        let mut claims: HashMap<u16, String> = Default::default();
        let mut claim = |op: u16, route: Route, what: String| -> Result<(), Error> {
            if op::is_reserved(op) {
                return Err(Error::Config(format!(
                    "{what} uses operation {op}, reserved by Frisbee (0-9)"
                )));
            }
            if op == ext::OP {
                return Err(Error::Config(format!(
                    "{what} uses operation {op} (0xFFFF), reserved for frpc's extension \
                     negotiation (see docs/extensions.md)"
                )));
            }
            if let Some(first) = claims.get(&op) {
                return Err(Error::Config(format!(
                    "operation {op} is claimed twice, by {first} and by {what}: services of \
                     different .proto files both number their methods from 10 (generate them in \
                     one `compile` with `frpc_codegen::configure().operation_numbering(\
                     OperationNumbering::Shared)`, or serve them on different servers), as do \
                     Rust-first services (number the second's past the first's: \
                     `#[frpc::service(first_op = N)]`)"
                )));
            }
            routes.insert(op, route);
            claims.insert(op, what);
            Ok(())
        };
        for (index, service) in self.services.iter().enumerate() {
            for method in service.methods() {
                let route = Route::Method {
                    service: index,
                    kind: method.kind,
                    name: method.name,
                };
                claim(method.op, route, format!("{}.{}", service.name(), method.name))?;
            }
        }
        for (index, (op, _)) in self.raw.iter().enumerate() {
            claim(*op, Route::Raw(index), format!("raw route #{index}"))?;
        }
        let unlayered = health_watch(&routes, &self.services).filter(|_| !self.intercept_health);
        // No layers: no stack, and calls take the plain path.
        let health = self.intercept_health;
        let stack = (!self.layers.is_empty()).then(|| {
            let layers = self.layers.into_iter();
            middleware::build_stack(
                layers
                    .map(|layer| -> LayerFn { Box::new(move |inner| layer(inner, health)) })
                    .collect(),
            )
        });
        // The protobuf extension only where every service reads it.
        let protobuf = self.services.iter().all(|service| service.protobuf());
        // Off: the answer a server with nothing to describe gives (docs/extensions.md §13).
        let reflection = match self.config.reflection {
            true => reflection(&self.services),
            false => Bytes::new(),
        };
        let limits = Arc::new(Limits::new(&self.config, protobuf).with_reflection(reflection));
        #[cfg(feature = "grpc")]
        let grpc = self.grpc.then(|| {
            let max = self.config.connection.max_content_length as usize;
            // Both directions, as on the fRPC face (a reply over it fails its call).
            let face = crate::grpc::GrpcServer::new()
                .max_decoding_message_size(max)
                .max_encoding_message_size(max)
                .idle_timeout(self.config.connection.idle_timeout)
                .reflection(self.config.reflection)
                .with_stack(stack.clone(), &self.config.connection, self.intercept_health)
                .with_gate(limits.grpc_gate());
            self.services
                .iter()
                .fold(face, |face, service| face.add_shared(service.clone()))
        });
        #[cfg(feature = "tls")]
        let tls = self.tls;
        // A shared port over TLS advertises ALPN `h2`, which gRPC clients require.
        #[cfg(all(feature = "tls", feature = "grpc"))]
        let tls = tls.map(|tls| match grpc.is_some() {
            true => crate::grpc::tls::advertise_h2(tls),
            false => tls,
        });
        Ok(Server {
            shared: Arc::new(Shared {
                services: self.services,
                stack,
                raw: self.raw.into_iter().map(|(_, handler)| handler).collect(),
                #[cfg(feature = "tls")]
                tls,
                #[cfg(feature = "grpc")]
                grpc,
                unlayered,
                routes,
                limits,
                config: self.config,
                connections: AtomicUsize::new(0),
                per_address: Default::default(),
            }),
        })
    }

    /// Builds, binds `addr` and serves until an error. A failed bind is [`Error::Bind`],
    /// naming the address.
    ///
    /// The ways to serve, all named the same: `serve` runs until an error, `serve_with_shutdown`
    /// until a signal and then shuts down gracefully; each takes what its receiver still
    /// lacks: here the address, on a [`Bound`] (see [`bind`](Self::bind): it knows its port
    /// first) nothing, on a built [`Server`] the listener
    /// ([`Server::serve_listener`], and `serve_unix`, `serve_io`).
    pub async fn serve(self, addr: impl ToSocketAddrs) -> Result<(), Error> {
        let server = self.build()?;
        server
            .serve_listener(crate::transport::net::bind(addr).await?)
            .await
    }

    /// Builds, binds `addr` and serves until `signal` resolves, then shuts down gracefully
    /// ([`Server::serve_listener_with_shutdown`]).
    pub async fn serve_with_shutdown(
        self,
        addr: impl ToSocketAddrs,
        signal: impl Future<Output = ()>,
    ) -> Result<(), Error> {
        let server = self.build()?;
        let listener = crate::transport::net::bind(addr).await?;
        server.serve_listener_with_shutdown(listener, signal).await
    }

    /// Builds and binds `addr` without serving yet: the returned [`Bound`] knows its
    /// [`local_addr`](Bound::local_addr) (bind `127.0.0.1:0` for a free port) and accepts
    /// connections once its [`serve`](Bound::serve) future runs. Connections made before that
    /// wait in the listen backlog, so a client can connect right after `bind` returns.
    ///
    /// ```
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// let bound = frpc::Server::builder().bind("127.0.0.1:0").await?;
    /// let addr = bound.local_addr();
    /// let server = tokio::spawn(bound.serve());
    /// let client = frpc::Client::connect(addr).await?;
    /// assert_eq!(client.peer_addr(), addr);
    /// # server.abort();
    /// # Ok(()) }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(demo()).unwrap();
    /// ```
    pub async fn bind(self, addr: impl ToSocketAddrs) -> Result<Bound, Error> {
        let server = self.build()?;
        server.bind(addr).await
    }
}

/// A [`Server`] bound to a TCP listener and not serving yet, from [`Builder::bind`] or
/// [`Server::bind`]: read its address, then run (or spawn) [`Bound::serve`].
#[derive(Debug)]
pub struct Bound {
    server: Server,
    listener: TcpListener,
    local_addr: SocketAddr,
}

impl Bound {
    /// The address the listener is bound to (with the port the system picked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The server (a clone shares its counters, as [`Server::connections`]).
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// Serves until an accept error that is not transient, as [`Server::serve_listener`]. The
    /// future is `Send + 'static`: `tokio::spawn(bound.serve())`.
    pub async fn serve(self) -> Result<(), Error> {
        self.server.serve_listener(self.listener).await
    }

    /// Serves until `signal` resolves, then shuts down gracefully, as
    /// [`Server::serve_listener_with_shutdown`].
    ///
    /// ```
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// let bound = frpc::Server::builder().bind("127.0.0.1:0").await?;
    /// let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    /// let server = tokio::spawn(bound.serve_with_shutdown(async {
    ///     let _ = stopped.await;
    /// }));
    /// stop.send(()).unwrap();
    /// server.await??;
    /// # Ok(()) }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(demo()).unwrap();
    /// ```
    pub async fn serve_with_shutdown(self, signal: impl Future<Output = ()>) -> Result<(), Error> {
        self.server
            .serve_listener_with_shutdown(self.listener, signal)
            .await
    }

    /// Splits into the server and its listener, to serve them some other way.
    pub fn into_parts(self) -> (Server, TcpListener) {
        (self.server, self.listener)
    }
}

#[derive(Debug, Clone, Copy)]
enum Route {
    Method {
        service: usize,
        kind: MethodKind,
        /// The method's proto name, for spans.
        name: &'static str,
    },
    Raw(usize),
}

struct Shared {
    services: Vec<Arc<dyn Service>>,
    /// The layer stack ([`Builder::layer`]), when there is one.
    stack: Option<Stack>,
    raw: Vec<RawHandler>,
    #[cfg(feature = "tls")]
    tls: Option<crate::tls::TlsAcceptor>,
    /// The gRPC face on the same listener ([`Builder::grpc`]).
    #[cfg(feature = "grpc")]
    grpc: Option<crate::grpc::GrpcServer>,
    routes: IdMap<u16, Route>,
    /// The health service's `Watch`, which skips the layers (see [`Builder::layer`]), unless
    /// interceptors check health ([`Builder::intercept_health`]).
    unlayered: Option<u16>,
    config: ServerConfig,
    limits: Arc<Limits>,
    connections: AtomicUsize,
    /// Connections per IP address, when `max_connections_per_address` limits them.
    per_address: Mutex<HashMap<IpAddr, usize>>,
}

/// An frpc server, built with [`Server::builder`]. Cheap to clone.
///
/// [`Builder::bind`] then [`Bound::serve`] (or [`Bound::serve_with_shutdown`]) starts one on a
/// port the system picks; [`Builder::serve`] binds and serves a fixed address.
///
#[cfg_attr(feature = "macros", doc = "```")]
#[cfg_attr(not(feature = "macros"), doc = "```ignore")]
/// # #[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
/// # pub struct Text { pub value: String }
/// #[frpc::service(package = "demo")]
/// pub trait Greeter {
///     async fn greet(&self, ctx: &frpc::Context, request: Text) -> Result<Text, frpc::Status>;
/// }
///
/// struct Hello;
///
/// impl Greeter for Hello {
///     async fn greet(&self, _ctx: &frpc::Context, request: Text) -> Result<Text, frpc::Status> {
///         Ok(Text { value: format!("hello, {}", request.value) })
///     }
/// }
///
/// #[tokio::main]
/// async fn main() -> Result<(), Box<dyn std::error::Error>> {
///     let server = frpc::Server::builder()
///         .concurrency(frpc::Concurrency::Inline) // handlers run in order on each connection
///         .add_service(GreeterServer::new(Hello))
///         .build()?; // checks that no two services claim one operation number
///     let bound = server.bind("127.0.0.1:0").await?;
///     let addr = bound.local_addr();
///     let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
///     let serving = tokio::spawn(bound.serve_with_shutdown(async {
///         let _ = stopped.await;
///     }));
///
///     let client = GreeterClient::connect(addr).await?;
///     let reply = client.greet(Text { value: "server".into() }).await?;
///     assert_eq!(reply.value, "hello, server");
///     assert_eq!(server.connections(), 1);
///
///     stop.send(()).unwrap(); // graceful: running calls finish, then connections close
///     serving.await??;
///     client.client().closed().await;
///     Ok(())
/// }
/// ```
#[derive(Clone)]
pub struct Server {
    shared: Arc<Shared>,
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<_> = self.shared.services.iter().map(|s| s.name()).collect();
        f.debug_struct("Server")
            .field("services", &names)
            .field("config", &self.shared.config)
            .finish()
    }
}

impl Server {
    /// Starts building a server with the default [`ServerConfig`].
    pub fn builder() -> Builder {
        Builder {
            services: Vec::new(),
            raw: Vec::new(),
            layers: Vec::new(),
            intercept_health: false,
            config: ServerConfig::default(),
            overrides: Overrides::default(),
            #[cfg(feature = "tls")]
            tls: None,
            #[cfg(feature = "grpc")]
            grpc: false,
        }
    }

    /// Binds `addr` for this server without serving yet (see [`Builder::bind`]).
    pub async fn bind(&self, addr: impl ToSocketAddrs) -> Result<Bound, Error> {
        let listener = crate::transport::net::bind(addr).await?;
        let local_addr = listener.local_addr()?;
        Ok(Bound {
            server: self.clone(),
            listener,
            local_addr,
        })
    }

    /// The configuration it serves with (the builder's settings applied over its base).
    pub fn config(&self) -> &ServerConfig {
        &self.shared.config
    }

    /// Number of connections being served.
    pub fn connections(&self) -> usize {
        self.shared.connections.load(Ordering::Relaxed)
    }

    /// Number of streams open across every connection.
    pub fn open_streams(&self) -> usize {
        self.shared.limits.open_streams.load(Ordering::Relaxed)
    }

    /// Serves connections from `listener` (one you bound yourself) until an accept error that
    /// is not transient.
    pub async fn serve_listener(&self, listener: TcpListener) -> Result<(), Error> {
        self.serve_listener_with_shutdown(listener, std::future::pending())
            .await
    }

    /// Serves until `signal` resolves, then shuts down gracefully: stops accepting, tells frpc
    /// clients (the drain notice: they connect anew, and the unary calls they sent before they
    /// knew are served), refuses the
    /// calls and streams started after it with UNAVAILABLE (as HTTP/2's GOAWAY; the connections
    /// are still read, so client streams can finish), lets running calls finish and their
    /// replies flush for up to
    /// [`ServerConfig::shutdown_grace`] (streams' sends fail with [`Error::ShuttingDown`] from
    /// the start), then fires handlers' [`Context::cancelled`] and closes every connection.
    pub async fn serve_listener_with_shutdown(
        &self,
        listener: TcpListener,
        signal: impl Future<Output = ()>,
    ) -> Result<(), Error> {
        let shutdown = CancellationToken::new();
        let force = CancellationToken::new();
        let connections = TaskTracker::new();
        let result = accept_until(
            || listener.accept(),
            signal,
            |(stream, _)| self.accept(stream, &connections, &shutdown, &force),
        )
        .await;
        drop(listener);
        drain(&connections, &shutdown, &force, self.shared.config.shutdown_grace).await;
        result
    }

    /// Serves one connection over any byte stream (an in-memory [`tokio::io::duplex`] pipe, a
    /// stream some other library accepted) until it closes; spawn it. [`Context::peer_addr`]
    /// reports `0.0.0.0:0` on it, and takeover and TLS are TCP only. Counts towards
    /// [`Server::connections`] (but is served even over `max_connections`: the caller accepted
    /// it).
    pub fn serve_io<T>(&self, io: T) -> impl Future<Output = ()> + Send + 'static
    where
        T: AsyncRead + AsyncWrite + Send + 'static,
    {
        let shared = self.shared.clone();
        async move {
            let _counted = Counted::new(&shared);
            let never = CancellationToken::new();
            let io = tokio::io::split(io);
            run_connection(shared.clone(), io, None, NO_PEER_ADDR, never.clone(), never).await;
        }
    }

    /// Serves connections from a Unix domain socket listener until an accept error that is not
    /// transient. [`Context::peer_addr`] reports `0.0.0.0:0`; takeover and TLS are TCP only.
    /// Clients connect with [`Client::connect_unix`](crate::Client::connect_unix).
    #[cfg(unix)]
    pub async fn serve_unix(&self, listener: tokio::net::UnixListener) -> Result<(), Error> {
        self.serve_unix_with_shutdown(listener, std::future::pending())
            .await
    }

    /// [`Server::serve_unix`] until `signal` resolves, then shuts down gracefully as
    /// [`Server::serve_listener_with_shutdown`] does.
    #[cfg(unix)]
    pub async fn serve_unix_with_shutdown(
        &self,
        listener: tokio::net::UnixListener,
        signal: impl Future<Output = ()>,
    ) -> Result<(), Error> {
        let shutdown = CancellationToken::new();
        let force = CancellationToken::new();
        let connections = TaskTracker::new();
        let result = accept_until(
            || listener.accept(),
            signal,
            |(stream, _)| self.accept_unix(stream, &connections, &shutdown, &force),
        )
        .await;
        drop(listener);
        drain(&connections, &shutdown, &force, self.shared.config.shutdown_grace).await;
        result
    }

    /// A [`Counted`] for one more connection, or `None` (logged) at `max_connections`.
    fn admit(&self) -> Option<Counted> {
        let shared = &self.shared;
        if shared.connections.load(Ordering::Relaxed) >= shared.config.max_connections {
            tracing::warn!(
                limit = shared.config.max_connections,
                "refusing a connection over the limit"
            );
            return None;
        }
        Some(Counted::new(shared))
    }

    fn accept(
        &self,
        stream: TcpStream,
        connections: &TaskTracker,
        shutdown: &CancellationToken,
        force: &CancellationToken,
    ) {
        let Some(counted) = self.admit() else { return };
        let Some(address) = AddressPlace::admit(&self.shared, &stream) else {
            return;
        };
        let task = serve_connection(self.shared.clone(), stream, shutdown.clone(), force.clone());
        connections.spawn(async move {
            let _counted = (counted, address);
            task.await;
        });
    }

    #[cfg(unix)]
    fn accept_unix(
        &self,
        stream: tokio::net::UnixStream,
        connections: &TaskTracker,
        shutdown: &CancellationToken,
        force: &CancellationToken,
    ) {
        let Some(counted) = self.admit() else { return };
        let (shared, shutdown, force) = (self.shared.clone(), shutdown.clone(), force.clone());
        connections.spawn(async move {
            let _counted = counted;
            run_connection(shared, stream.into_split(), None, NO_PEER_ADDR, shutdown, force).await;
        });
    }
}

/// Counts a TCP connection against its IP address's `max_connections_per_address` while it
/// lives; nothing when that is unlimited (the default: no map, no lock).
struct AddressPlace(Option<(Arc<Shared>, IpAddr)>);

impl AddressPlace {
    /// The connection's place, or `None` (logged) when its address has as many as allowed.
    fn admit(shared: &Arc<Shared>, stream: &TcpStream) -> Option<AddressPlace> {
        let limit = shared.config.max_connections_per_address;
        let Ok(peer) = stream.peer_addr() else {
            return Some(AddressPlace(None));
        };
        if limit == usize::MAX {
            return Some(AddressPlace(None));
        }
        let mut counts = shared.per_address.lock().unwrap_or_else(|e| e.into_inner());
        let count = counts.entry(peer.ip()).or_insert(0);
        if *count >= limit {
            tracing::warn!(%peer, limit, "refusing a connection over the limit of its address");
            return None;
        }
        *count += 1;
        Some(AddressPlace(Some((shared.clone(), peer.ip()))))
    }
}

impl Drop for AddressPlace {
    fn drop(&mut self) {
        let Some((shared, ip)) = self.0.take() else { return };
        let mut counts = shared.per_address.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = counts.get_mut(&ip) {
            *count -= 1;
            if *count == 0 {
                counts.remove(&ip);
            }
        }
    }
}

/// Counts a connection in [`Server::connections`] while it lives (dropped futures included).
struct Counted(Arc<Shared>);

impl Counted {
    fn new(shared: &Arc<Shared>) -> Counted {
        shared.connections.fetch_add(1, Ordering::Relaxed);
        Counted(shared.clone())
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Accepts with `accept` until `signal` resolves or accepting fails for good, handing each
/// accepted stream to `serve`; transient failures (out of file descriptors, a connection reset
/// before it was accepted) back off 20 ms and go on.
async fn accept_until<S, F>(
    accept: impl Fn() -> F,
    signal: impl Future<Output = ()>,
    mut serve: impl FnMut(S),
) -> Result<(), Error>
where
    F: Future<Output = std::io::Result<S>>,
{
    tokio::pin!(signal);
    loop {
        let accepted = tokio::select! {
            _ = &mut signal => return Ok(()),
            accepted = accept() => accepted,
        };
        match accepted {
            Ok(stream) => serve(stream),
            Err(err) if is_transient(&err) => {
                tracing::warn!(error = %err, "accept failed; backing off");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(err) => return Err(Error::Io(err)),
        }
    }
}

fn is_transient(err: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        err.kind(),
        ConnectionAborted | ConnectionReset | Interrupted | WouldBlock
    ) || err.raw_os_error().is_some_and(|code| code == 24 || code == 23) // EMFILE, ENFILE
}

async fn serve_connection(
    shared: Arc<Shared>,
    stream: TcpStream,
    shutdown: CancellationToken,
    force: CancellationToken,
) {
    let config = &shared.config.connection;
    let Ok(peer) = stream.peer_addr() else { return };
    let _ = stream.set_nodelay(config.nodelay);
    #[cfg(feature = "tls")]
    if let Some(acceptor) = shared.tls.clone() {
        let handshake = tokio::time::timeout(config.idle_timeout, acceptor.accept(stream));
        let tls = match until_shutdown(&shutdown, handshake).await {
            Some(Ok(Ok(tls))) => tls,
            Some(Ok(Err(err))) => return tracing::debug!(%peer, error = %err, "TLS handshake failed"),
            Some(Err(_)) => return tracing::debug!(%peer, "TLS handshake timed out"),
            None => return tracing::debug!(%peer, "shutting down during a TLS handshake"),
        };
        // Over TLS, gRPC clients are those that chose ALPN `h2`.
        #[cfg(feature = "grpc")]
        if let Some(grpc) = &shared.grpc
            && crate::grpc::tls::chose_h2(&tls)
        {
            return grpc
                .serve_io_until(tls, peer, grpc_signals(&shutdown, &force))
                .await;
        }
        // Takeover is not offered over TLS: no way to join the halves back.
        return run_connection(shared, tokio::io::split(tls), None, peer, shutdown, force).await;
    }
    #[cfg(feature = "grpc")]
    if let Some(grpc) = &shared.grpc {
        use crate::grpc::FirstByte;
        let first = crate::grpc::first_byte(&stream, config.idle_timeout);
        match until_shutdown(&shutdown, first)
            .await
            .unwrap_or(FirstByte::Silent)
        {
            FirstByte::Http2 => {
                return grpc
                    .serve_io_until(stream, peer, grpc_signals(&shutdown, &force))
                    .await;
            }
            FirstByte::Silent => return tracing::debug!(%peer, "closing a silent connection"),
            FirstByte::Frpc => {}
        }
    }
    let join: Join<_, _> =
        Box::new(|read: OwnedReadHalf, write| read.reunite(write).map_err(std::io::Error::other));
    run_connection(shared, stream.into_split(), Some(join), peer, shutdown, force).await;
}

/// `work` (a connection's TLS handshake, or its first byte), unless the server begins shutting
/// down first (`None`): a connection that has made no call yet is dropped then, instead of
/// holding the shutdown up to its idle timeout.
#[cfg(any(feature = "tls", feature = "grpc"))]
async fn until_shutdown<T>(shutdown: &CancellationToken, work: impl Future<Output = T>) -> Option<T> {
    tokio::select! {
        done = work => Some(done),
        () = shutdown.cancelled() => None,
    }
}

/// What a gRPC connection on the shared port follows: the server's shutdown and its end.
#[cfg(feature = "grpc")]
fn grpc_signals(shutdown: &CancellationToken, force: &CancellationToken) -> crate::grpc::Signals {
    crate::grpc::Signals {
        draining: shutdown.clone(),
        force: force.clone(),
    }
}

/// Serves one connection until it closes. When the server begins shutting down (the reader
/// reads on, refusing new calls) or a handler takes the connection over (the reader stops),
/// the calls already running finish and reply before the connection is closed (a takeover then
/// hands the socket back). When the reader stops
/// because the peer closed (its FIN, a half-close included, as Go reads it), the connection is
/// closed already: the calls still running are dropped (their client is taken to be gone).
async fn run_connection<R, W>(
    shared: Arc<Shared>,
    io: (R, W),
    join: Option<Join<R, W>>,
    peer: SocketAddr,
    shutdown: CancellationToken,
    force: CancellationToken,
) where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let rpcs = TaskTracker::new();
    let router = Router {
        shared: shared.clone(),
        draining: shutdown.clone(),
        expired: force.clone(),
        context: OnceLock::new(),
    };
    let dispatch = ServerDispatch::new(router, shared.limits.clone(), rpcs.clone());
    let drain_notice = dispatch.drain_notice();
    let options = Options {
        drain: Some(shutdown.clone()),
        shared_reader: None,
    };
    let config = &shared.config.connection;
    let (conn, tasks) = Connection::spawn(io, join, peer, config, dispatch, options);
    let mut reader = tasks.reader;
    tokio::select! {
        _ = &mut reader => {}
        _ = force.cancelled() => {}
        // The reader reads on at shutdown, refusing new calls (see `read_loop`), while the
        // calls it started finish: it marks the connection draining between two packets, so
        // a call it was starting is among `rpcs` by then.
        () = conn.drain_started() => {}
    }
    // From here on the connection's streams send no more messages, and it takes no new call
    // (but for the unary calls a client told of the drain sent before it knew: served until it
    // answers, which comes behind them).
    if shutdown.is_cancelled() {
        conn.start_draining();
        tokio::select! {
            () = drain_notice.until_answered() => {}
            _ = conn.closed() => {}
            _ = force.cancelled() => {}
        }
    }
    rpcs.close();
    let replied_while_draining = shutdown.is_cancelled() && !rpcs.is_empty();
    // A takeover waits for the calls still running for at most the shutdown grace: then they
    // are dropped (the close below), and the socket is handed back.
    let takeover_grace = async {
        match conn.handback_requested() {
            true => tokio::time::sleep(shared.config.shutdown_grace).await,
            false => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = rpcs.wait() => {}
        _ = force.cancelled() => {}
        _ = takeover_grace => {}
    }
    if replied_while_draining {
        // A Go client waits for a reply and for the connection's end at once, and takes
        // whichever it sees first: closing right behind the last replies lost them (0 of 5
        // replies reached a frisbee-go client in most runs). Let them be read first.
        tokio::select! {
            _ = tokio::time::sleep(SHUTDOWN_LINGER) => {}
            _ = force.cancelled() => {}
        }
    }
    conn.close(CloseReason::Local("server shut down".into()));
    // The writer flushes what is queued (for at most 5 s to a peer that does not read), but
    // not past the grace: the shutdown then ends at once.
    let mut writer = tasks.writer;
    tokio::select! {
        _ = &mut writer => {}
        _ = force.cancelled() => writer.abort(),
    }
}

/// How long a connection that answered calls during a graceful shutdown stays open after its
/// last reply (within the shutdown grace), so that its peer reads the replies before the end.
const SHUTDOWN_LINGER: Duration = Duration::from_millis(100);

/// Routes one connection's operations to the server's services and raw routes.
struct Router {
    shared: Arc<Shared>,
    /// Fires when a shutdown begins.
    draining: CancellationToken,
    /// Fires once a shutdown's grace is over: handlers' contexts are cancelled.
    expired: CancellationToken,
    /// One context per connection, shared by its calls.
    context: OnceLock<Context>,
}

impl Router {
    fn context(&self, conn: &Arc<Connection>, call: Option<CallInfo>) -> Context {
        let context = self
            .context
            .get_or_init(|| Context::new(conn.clone(), self.draining.clone(), self.expired.clone()));
        match call {
            None => context.clone(),
            Some(call) => context.with_call(call),
        }
    }

    /// The service of method `op` (the dispatcher asks only for operations [`Handlers::target`]
    /// routes, so a miss is answered like an unknown operation).
    fn service(&self, op: u16) -> Result<&Arc<dyn Service>, Status> {
        match self.shared.routes.get(&op) {
            Some(Route::Method { service, .. }) => Ok(&self.shared.services[*service]),
            _ => Err(unknown_operation(op)),
        }
    }
}

/// The status of a call to an operation nothing on this server serves.
fn unknown_operation(op: u16) -> Status {
    Status::unimplemented(format!("unknown operation {op}"))
}

impl Router {
    /// A unary call through the layer stack.
    fn layered_unary(
        &self,
        stack: &Stack,
        conn: &Arc<Connection>,
        op: u16,
        body: Bytes,
        call: Option<CallInfo>,
        slot: &mut UnarySlot,
    ) {
        let request = self.shared.call_request(op, self.context(conn, call), body, None);
        let stack = stack.clone();
        slot.set(async move {
            middleware::unary_through(&stack, request?)
                .await
                .map(Encoded::from)
        })
    }

    /// A stream's opening through the layer stack.
    fn layered_streaming(
        &self,
        stack: &Stack,
        conn: &Arc<Connection>,
        op: u16,
        stream: ServerStream,
        call: Option<CallInfo>,
    ) -> BoxFuture<Result<(), Status>> {
        let context = self.context(conn, call);
        let (shared, stack) = (self.shared.clone(), stack.clone());
        Box::pin(async move {
            let request = |slot| shared.call_request(op, context, Bytes::new(), Some(slot));
            middleware::streaming_through(&stack, stream, request).await
        })
    }
}

impl Shared {
    /// The request the layers see for method `op` (with `stream` for a streaming one).
    fn call_request(
        &self,
        op: u16,
        context: Context,
        body: Bytes,
        stream: Option<StreamSlot>,
    ) -> Result<CallRequest, Status> {
        match self.routes.get(&op) {
            Some(Route::Method { service, kind, name }) => Ok(CallRequest::new(
                self.services[*service].clone(),
                name,
                op,
                *kind,
                context,
                body,
                stream,
            )),
            _ => Err(unknown_operation(op)),
        }
    }
}

impl Handlers for Router {
    fn target(&self, op: u16) -> Option<Target> {
        Some(match self.shared.routes.get(&op)? {
            Route::Method { kind, .. } if kind.is_streaming() => Target::Streaming,
            Route::Method { service, .. } => Target::Unary(*service),
            Route::Raw(_) => Target::Raw,
        })
    }

    fn unary(
        &self,
        conn: &Arc<Connection>,
        op: u16,
        service: usize,
        request: Bytes,
        call: Option<CallInfo>,
        slot: &mut UnarySlot,
    ) {
        if let Some(stack) = &self.shared.stack {
            return self.layered_unary(stack, conn, op, request, call, slot);
        }
        match self.shared.services.get(service) {
            Some(service) => service.call_unary_in(op, self.context(conn, call), request, slot),
            None => slot.set(std::future::ready(Err(unknown_operation(op)))),
        }
    }

    fn streaming(
        &self,
        conn: &Arc<Connection>,
        op: u16,
        stream: ServerStream,
        call: Option<CallInfo>,
    ) -> BoxFuture<Result<(), Status>> {
        if let Some(stack) = &self.shared.stack
            && self.shared.unlayered != Some(op)
        {
            return self.layered_streaming(stack, conn, op, stream, call);
        }
        match self.service(op) {
            Ok(service) => service.call_streaming(op, self.context(conn, call), stream),
            Err(status) => Box::pin(std::future::ready(Err(status))),
        }
    }

    fn names(&self, op: u16) -> Option<(&'static str, &'static str)> {
        match self.shared.routes.get(&op)? {
            Route::Method { service, name, .. } => Some((self.shared.services[*service].name(), name)),
            Route::Raw(_) => None,
        }
    }

    fn raw(&self, conn: &Arc<Connection>, packet: Packet) -> BoxFuture<Option<Bytes>> {
        match self.shared.routes.get(&packet.op) {
            Some(Route::Raw(index)) => (self.shared.raw[*index])(self.context(conn, None), packet),
            _ => Box::pin(std::future::ready(None)),
        }
    }
}

/// Shuts the served connections down: they stop reading, running calls get `grace` to
/// finish, then what is left is cancelled and closed.
async fn drain(
    connections: &TaskTracker,
    shutdown: &CancellationToken,
    force: &CancellationToken,
    grace: Duration,
) {
    shutdown.cancel();
    connections.close();
    if tokio::time::timeout(grace, connections.wait()).await.is_err() {
        tracing::warn!("calls still running after the shutdown grace period; closing connections");
        force.cancel();
        connections.wait().await;
    }
}

/// The operation of the health service's `Watch`, if the server serves health. The layers do
/// not wrap it: a balanced channel keeps one open on each of its connections, for as long as
/// the connection lives, so a concurrency limit would count every such channel as a call that
/// never ends (idle channels took a server's 256 places), and a timeout would cut the watch.
fn health_watch(routes: &IdMap<u16, Route>, services: &[Arc<dyn Service>]) -> Option<u16> {
    #[cfg(feature = "macros")]
    return match routes.get(&crate::health::WATCH_OP)? {
        Route::Method { service, .. } if is_health(services[*service].name()) => {
            Some(crate::health::WATCH_OP)
        }
        _ => None,
    };
    #[cfg(not(feature = "macros"))]
    return {
        let _ = (routes, services);
        None
    };
}

/// Whether `service` is frpc's health service, which server-wide interceptors let through
/// unless [`Builder::intercept_health`] says otherwise.
fn is_health(service: &str) -> bool {
    #[cfg(feature = "macros")]
    return service == crate::health::SERVICE_NAME;
    #[cfg(not(feature = "macros"))]
    return {
        let _ = service;
        false
    };
}

/// What the server answers a reflection request with (docs/extensions.md §13): the distinct
/// descriptor sets of its services, concatenated, which is itself an encoded
/// `FileDescriptorSet` (protobuf appends repeated fields); services of one package share a set.
/// Then the operation number of each of their methods, in field 1000.
///
/// The health service has a descriptor, but alone it makes no answer: a server whose own
/// services have none (Rust-first ones) offers no reflection, so clients ask for `.proto`
/// files rather than find only health.
fn reflection(services: &[Arc<dyn crate::service::Service>]) -> Bytes {
    let described = |s: &&Arc<dyn crate::service::Service>| !s.file_descriptor_set().is_empty();
    if services.iter().filter(described).all(|s| is_health(s.name())) {
        return Bytes::new();
    }
    let mut sets: Vec<&'static [u8]> = Vec::new();
    for set in services.iter().map(|s| s.file_descriptor_set()) {
        if !set.is_empty() && !sets.contains(&set) {
            sets.push(set);
        }
    }
    let mut answer = sets.concat();
    for service in services.iter().filter(|s| !s.file_descriptor_set().is_empty()) {
        for method in service.methods() {
            let operation = ReflectedOperation {
                method: format!("{}.{}", service.name(), method.name),
                op: method.op.into(),
            };
            prost::encoding::message::encode(REFLECTED_OPERATIONS, &operation, &mut answer);
        }
    }
    Bytes::from(answer)
}

/// The field of the REFLECTION answer (a `FileDescriptorSet`, whose readers skip it) that
/// carries each reflected method's operation number (docs/extensions.md §13): a server
/// numbering across files (`OperationNumbering::PerPackage`, `Shared`) cannot be told from
/// its files, which number per file.
const REFLECTED_OPERATIONS: u32 = 1000;

/// One method's operation number, in the REFLECTION answer.
#[derive(Clone, PartialEq, prost::Message)]
struct ReflectedOperation {
    /// `pkg.Service.Method`.
    #[prost(string, tag = "1")]
    method: String,
    #[prost(uint32, tag = "2")]
    op: u32,
}
