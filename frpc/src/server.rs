//! The server: accepts connections, routes each request to its service by operation number
//! and runs handlers as the [`Concurrency`] mode says; shuts down gracefully.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use frpc_wire::polyglot::{self, Decoder, Kind};
use frpc_wire::{Framing, Packet, op};
use futures_util::FutureExt;
use std::net::SocketAddr;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::{TcpListener, TcpStream, ToSocketAddrs};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use crate::codegen::{BoxFuture, MethodKind, Service};
use crate::config::{Concurrency, ServerConfig};
use crate::connection::{Connection, Dispatch, Tasks};
use crate::context::Context;
use crate::hash::IdMap;
use crate::raw::{RawHandler, Takeover, raw_handler};
use crate::status::{Error, Status};
use crate::stream::ServerStream;

/// How long a shutting-down server waits for in-flight calls before closing connections.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Builds a [`Server`]: services, concurrency and connection settings.
pub struct Builder {
    services: Vec<Arc<dyn Service>>,
    raw: Vec<(u16, RawHandler)>,
    config: ServerConfig,
    #[cfg(feature = "tls")]
    tls: Option<crate::tls::TlsAcceptor>,
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<_> = self.services.iter().map(|s| s.name()).collect();
        f.debug_struct("Builder")
            .field("services", &names)
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
        self.raw.push((op, raw_handler(handler)));
        self
    }

    /// Serves over TLS: every connection does a TLS handshake first (within the idle timeout).
    #[cfg(feature = "tls")]
    pub fn tls(mut self, config: Arc<crate::tls::rustls::ServerConfig>) -> Builder {
        self.tls = Some(crate::tls::TlsAcceptor::from(config));
        self
    }

    /// Sets how handlers are scheduled. Default: [`Concurrency::PerRpc`].
    pub fn concurrency(mut self, concurrency: Concurrency) -> Builder {
        self.config.concurrency = concurrency;
        self
    }

    /// Sets the framing. Default: [`Framing::Frisbee`].
    pub fn framing(mut self, framing: Framing) -> Builder {
        self.config.connection.framing = framing;
        self
    }

    /// Replaces the whole configuration.
    pub fn config(mut self, config: ServerConfig) -> Builder {
        self.config = config;
        self
    }

    /// Checks the routes and builds the server. Two services claiming one operation number
    /// (two .proto files both numbering from 10, say) are refused here rather than mis-routed.
    pub fn build(self) -> Result<Server, Error> {
        let mut routes: IdMap<u16, Route> = IdMap::default();
        let mut claim = |op: u16, route: Route, what: String| -> Result<(), Error> {
            if op::is_reserved(op) {
                return Err(Error::Config(format!(
                    "{what} uses operation {op}, reserved by Frisbee (0-9)"
                )));
            }
            match routes.insert(op, route) {
                Some(_) => Err(Error::Config(format!(
                    "operation {op} is claimed twice (second claim: {what}); services from different \
                     .proto files both number their methods from 10"
                ))),
                None => Ok(()),
            }
        };
        for (index, service) in self.services.iter().enumerate() {
            for method in service.methods() {
                let route = Route::Method {
                    service: index,
                    kind: method.kind,
                };
                claim(method.op, route, format!("{}.{}", service.name(), method.name))?;
            }
        }
        for (index, (op, _)) in self.raw.iter().enumerate() {
            claim(*op, Route::Raw(index), format!("raw route #{index}"))?;
        }
        let limit = match self.config.concurrency {
            Concurrency::Limited(n) => Some(Arc::new(Semaphore::new(n.max(1)))),
            _ => None,
        };
        Ok(Server {
            shared: Arc::new(Shared {
                services: self.services,
                raw: self.raw.into_iter().map(|(_, handler)| handler).collect(),
                #[cfg(feature = "tls")]
                tls: self.tls,
                routes,
                config: self.config,
                limit,
                connections: AtomicUsize::new(0),
                open_streams: Arc::default(),
            }),
        })
    }

    /// Builds, binds `addr` and serves until an error.
    pub async fn serve(self, addr: impl ToSocketAddrs) -> Result<(), Error> {
        let server = self.build()?;
        server.serve(TcpListener::bind(addr).await?).await
    }
}

#[derive(Debug, Clone, Copy)]
enum Route {
    Method { service: usize, kind: MethodKind },
    Raw(usize),
}

struct Shared {
    services: Vec<Arc<dyn Service>>,
    raw: Vec<RawHandler>,
    #[cfg(feature = "tls")]
    tls: Option<crate::tls::TlsAcceptor>,
    routes: IdMap<u16, Route>,
    config: ServerConfig,
    limit: Option<Arc<Semaphore>>,
    connections: AtomicUsize,
    open_streams: Arc<AtomicUsize>,
}

/// An frpc server, built with [`Server::builder`]. Cheap to clone.
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
            config: ServerConfig::default(),
            #[cfg(feature = "tls")]
            tls: None,
        }
    }

    /// Number of connections being served.
    pub fn connections(&self) -> usize {
        self.shared.connections.load(Ordering::Relaxed)
    }

    /// Number of streams open across every connection.
    pub fn open_streams(&self) -> usize {
        self.shared.open_streams.load(Ordering::Relaxed)
    }

    /// Serves connections from `listener` until an accept error that is not transient.
    pub async fn serve(&self, listener: TcpListener) -> Result<(), Error> {
        self.serve_with_shutdown(listener, std::future::pending()).await
    }

    /// Serves until `signal` resolves, then shuts down gracefully: stops accepting, handles the
    /// requests already received, lets running calls finish and their replies flush (for up to
    /// 5 s; handlers see [`Context::cancelled`] fire), then closes every connection.
    pub async fn serve_with_shutdown(
        &self,
        listener: TcpListener,
        signal: impl Future<Output = ()>,
    ) -> Result<(), Error> {
        let shutdown = CancellationToken::new();
        let force = CancellationToken::new();
        let connections = TaskTracker::new();
        tokio::pin!(signal);
        let result = loop {
            let accepted = tokio::select! {
                _ = &mut signal => break Ok(()),
                accepted = listener.accept() => accepted,
            };
            match accepted {
                Ok((stream, _)) => self.accept(stream, &connections, &shutdown, &force),
                Err(err) if is_transient(&err) => {
                    tracing::warn!(error = %err, "accept failed; backing off");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(err) => break Err(Error::Io(err)),
            }
        };
        drop(listener);
        shutdown.cancel();
        connections.close();
        if tokio::time::timeout(SHUTDOWN_GRACE, connections.wait())
            .await
            .is_err()
        {
            tracing::warn!("calls still running after the shutdown grace period; closing connections");
            force.cancel();
            connections.wait().await;
        }
        result
    }

    fn accept(
        &self,
        stream: TcpStream,
        connections: &TaskTracker,
        shutdown: &CancellationToken,
        force: &CancellationToken,
    ) {
        let shared = &self.shared;
        if shared.connections.load(Ordering::Relaxed) >= shared.config.max_connections {
            tracing::warn!(
                limit = shared.config.max_connections,
                "refusing a connection over the limit"
            );
            return;
        }
        shared.connections.fetch_add(1, Ordering::Relaxed);
        let task = serve_connection(shared.clone(), stream, shutdown.clone(), force.clone());
        let shared = shared.clone();
        connections.spawn(async move {
            task.await;
            shared.connections.fetch_sub(1, Ordering::Relaxed);
        });
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
        let handshake = tokio::time::timeout(config.idle_timeout, acceptor.accept(stream)).await;
        let tls = match handshake {
            Ok(Ok(tls)) => tls,
            Ok(Err(err)) => return tracing::debug!(%peer, error = %err, "TLS handshake failed"),
            Err(_) => return tracing::debug!(%peer, "TLS handshake timed out"),
        };
        let (read, write) = tokio::io::split(tls);
        let no_takeover = |_, _| {
            Err(std::io::Error::other(
                "connection takeover is not available over TLS",
            ))
        };
        return run_connection(shared, (read, write), peer, shutdown, force, no_takeover).await;
    }
    let join = |read: OwnedReadHalf, write| read.reunite(write).map_err(std::io::Error::other);
    run_connection(shared, stream.into_split(), peer, shutdown, force, join).await;
}

async fn run_connection<R, W>(
    shared: Arc<Shared>,
    (read, write): (R, W),
    peer: SocketAddr,
    shutdown: CancellationToken,
    force: CancellationToken,
    join: impl FnOnce(R, W) -> std::io::Result<TcpStream>,
) where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let rpcs = TaskTracker::new();
    let takeover = Arc::new(Takeover::default());
    let dispatch = ServerDispatch {
        inflight: Arc::new(Semaphore::new(shared.config.max_inflight_per_connection.max(1))),
        shared: shared.clone(),
        rpcs: rpcs.clone(),
        shutdown: shutdown.clone(),
        takeover: takeover.clone(),
        context: OnceLock::new(),
    };
    let config = &shared.config.connection;
    let gauge = shared.open_streams.clone();
    let (conn, tasks) = Connection::spawn((read, write), peer, config, dispatch, Some(shutdown), gauge);
    let mut reader = tasks.reader;
    let read_half = tokio::select! {
        read_half = &mut reader => read_half.ok(),
        _ = force.cancelled() => {
            conn.close("server shut down");
            None
        }
    };
    if let (true, Some(read_half)) = (takeover.requested(), read_half) {
        // A handler asked for the socket: hand it over once the writer has flushed.
        takeover.deliver(Tasks::reunite(read_half, tasks.writer, join).await);
        return;
    }
    // The reader stopped: the connection closed, or the server is shutting down and every
    // request already received has been dispatched. Let those calls finish and reply.
    rpcs.close();
    tokio::select! {
        _ = rpcs.wait() => {}
        _ = force.cancelled() => {}
    }
    conn.close("server shut down");
    let _ = tasks.writer.await;
}

struct ServerDispatch {
    shared: Arc<Shared>,
    /// Calls running on this connection (bounded by `max_inflight_per_connection`).
    inflight: Arc<Semaphore>,
    rpcs: TaskTracker,
    shutdown: CancellationToken,
    takeover: Arc<Takeover>,
    context: OnceLock<Context>,
}

impl ServerDispatch {
    fn context(&self, conn: &Arc<Connection>) -> Context {
        self.context
            .get_or_init(|| Context::new(conn.clone(), self.shutdown.clone(), self.takeover.clone()))
            .clone()
    }

    /// Runs a call as the concurrency mode says. Waiting for a permit stops the reader, which
    /// is the backpressure a flooding peer gets.
    async fn run(&self, conn: &Arc<Connection>, job: impl Future<Output = ()> + Send + 'static) {
        match self.shared.config.concurrency {
            Concurrency::Inline => conn.busy(job).await,
            Concurrency::PerRpc => {
                let Ok(permit) = self.inflight.clone().acquire_owned().await else {
                    return;
                };
                self.rpcs.spawn(async move {
                    job.await;
                    drop(permit);
                });
            }
            Concurrency::Limited(_) => {
                let Ok(local) = self.inflight.clone().acquire_owned().await else {
                    return;
                };
                let global = self.shared.limit.clone().expect("limited mode has a semaphore");
                let Ok(global) = global.acquire_owned().await else {
                    return;
                };
                self.rpcs.spawn(async move {
                    job.await;
                    drop((local, global));
                });
            }
        }
    }
}

impl Dispatch for ServerDispatch {
    async fn packet(&self, conn: &Arc<Connection>, packet: Packet) {
        match self.shared.routes.get(&packet.op).copied() {
            Some(Route::Method {
                service,
                kind: MethodKind::Unary,
            }) => {
                let ctx = self.context(conn);
                let service = &self.shared.services[service];
                let call = service.call_unary(packet.op, ctx.clone(), packet.content);
                let span = tracing::debug_span!("rpc", op = packet.op, id = packet.id);
                let job = reply(conn.clone(), ctx, packet.id, packet.op, call).instrument(span);
                self.run(conn, job).await;
            }
            Some(Route::Raw(index)) => {
                let ctx = self.context(conn);
                let (id, op) = (packet.id, packet.op);
                let handler = (self.shared.raw[index])(ctx.clone(), packet);
                let result = std::panic::AssertUnwindSafe(handler).catch_unwind().await;
                match result {
                    Ok(Some(content)) => {
                        let _ = conn.send(Packet::new(id, op, content)).await;
                    }
                    Ok(None) => {}
                    Err(panic) => tracing::warn!(op, "raw handler panicked: {}", panic_status(panic)),
                }
                if ctx.takeover_requested() {
                    conn.take_over();
                }
            }
            Some(Route::Method { .. }) => {
                tracing::debug!(
                    op = packet.op,
                    "a streaming method's number used as a packet operation"
                );
            }
            // Go drops unknown operations silently; the connection stays usable.
            None => tracing::debug!(
                op = packet.op,
                id = packet.id,
                "dropping a packet for an unknown operation"
            ),
        }
    }

    async fn new_stream(&self, conn: &Arc<Connection>, id: u16, first: Bytes) {
        let method = match Decoder::from_bytes(&first).u16() {
            Ok(method) => method,
            // A late EOF or error for a stream we already finished: nothing to do.
            Err(_) if first.first() == Some(&Kind::Error.byte()) => return,
            Err(_) => {
                // Not a stream-open message: close the stream, as Go does.
                let _ = conn.send(Packet::new(id, op::STREAM, Bytes::new())).await;
                return;
            }
        };
        let service = match self.shared.routes.get(&method) {
            Some(Route::Method { service, kind }) if *kind != MethodKind::Unary => *service,
            _ => {
                let status = Status::new(format!("unknown streaming method {method}"));
                ServerStream::refuse(conn, id, status).await;
                return;
            }
        };
        let stream = match ServerStream::accept(conn, id) {
            Ok(stream) => stream,
            Err(err) => return ServerStream::refuse(conn, id, Status::new(err.to_string())).await,
        };
        let call = self.shared.services[service].call_streaming(method, self.context(conn), stream);
        // Streams always get their own task: they consume packets the reader has yet to read.
        let span = tracing::debug_span!("stream", method, id);
        self.rpcs.spawn(
            async move {
                if let Err(status) = call.await {
                    tracing::debug!(%status, "streaming call failed");
                }
            }
            .instrument(span),
        );
    }

    fn closed(&self, _conn: &Arc<Connection>) {}
}

/// Runs a unary call and queues its reply under the request's id and operation.
async fn reply(
    conn: Arc<Connection>,
    ctx: Context,
    id: u16,
    op: u16,
    call: BoxFuture<Result<Bytes, Status>>,
) {
    let result = std::panic::AssertUnwindSafe(call)
        .catch_unwind()
        .await
        .unwrap_or_else(|panic| Err(panic_status(panic)));
    let (content, close) = match result {
        Ok(content) => (content, false),
        Err(status) => (
            polyglot::error_to_bytes(status.message()),
            status.closes_connection(),
        ),
    };
    let content = match conn.check_len(content.len()) {
        Ok(()) => content,
        // Go closes the whole connection here; failing just this call is enough.
        Err(err) => polyglot::error_to_bytes(&format!("response too large: {err}")),
    };
    let _ = conn.send(Packet::new(id, op, content)).await;
    if ctx.takeover_requested() {
        conn.take_over();
    } else if close {
        conn.close("handler returned a closing status");
    }
}

/// Turns a caught panic into the status the caller receives.
pub(crate) fn panic_status(panic: Box<dyn std::any::Any + Send>) -> Status {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    Status::new(format!("handler panicked: {message}"))
}
