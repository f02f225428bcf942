//! The multiplexed client: one connection, any number of concurrent calls from any number of
//! generated service clients. Services floor: it starts a transport connection with the calls
//! floor's client dispatcher and offers calls, streams, raw packets and takeover on top.

use std::fmt;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use frpc_wire::polyglot::Message;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::{TcpStream, ToSocketAddrs};
use tokio::sync::mpsc;

use crate::calls::client::{CallOptions, ClientCalls, Reply};
use crate::calls::ext;
use crate::calls::raw::{PacketSender, RawPackets, check_op};
use crate::calls::stream::{self, ClientSide, StreamSender, Streaming};
use crate::config::ClientConfig;
use crate::metadata::{Metadata, MetadataSlot};
use crate::status::{CloseReason, Error};
use crate::transport::connection::{Connection, Options};
use crate::transport::handback::Join;
use crate::transport::net;
use crate::types::Encoded;
use crate::types::NO_PEER_ADDR;

/// A connection to an frpc (or Go fRPC) server. Cheap to clone; clones share the connection,
/// which closes when the last of them, of their pending calls and of the stream handles they
/// opened ([`Streaming`], [`StreamSender`], [`crate::ClientStreamingCall`],
/// [`crate::BidiCall`]) is dropped (or at once with [`Client::close`]).
///
/// Generated clients (`FooClient::connect`) open one each; to share one connection between
/// several services, connect a `Client` and wrap it with `FooClient::new(client.clone())`:
///
#[cfg_attr(feature = "macros", doc = "```")]
#[cfg_attr(not(feature = "macros"), doc = "```ignore")]
/// # #[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
/// # pub struct Text { pub value: String }
/// #[frpc::service(package = "demo")]
/// pub trait Greeter {
///     async fn greet(&self, ctx: &frpc::Context, request: Text) -> Result<Text, frpc::Status>;
/// }
/// # struct Hello;
/// # impl Greeter for Hello {
/// #     async fn greet(&self, _: &frpc::Context, request: Text) -> Result<Text, frpc::Status> {
/// #         Ok(request)
/// #     }
/// # }
///
/// #[tokio::main]
/// async fn main() -> Result<(), Box<dyn std::error::Error>> {
///     let server = frpc::Server::builder()
///         .add_service(GreeterServer::new(Hello))
///         .bind("127.0.0.1:0")
///         .await?;
///     let addr = server.local_addr();
///     tokio::spawn(server.serve());
///
///     let client = frpc::Client::connect(addr).await?;
///     // Every call through this handle fails with `Error::Timeout` after 5 s.
///     let greeter = GreeterClient::new(client.with_timeout(std::time::Duration::from_secs(5)));
///     let reply = greeter.greet(Text { value: "hi".into() }).await?;
///     assert_eq!(reply.value, "hi");
///     assert_eq!(client.peer_addr(), addr);
///     assert_eq!(client.inflight(), 0);
///     client.close();
///     client.closed().await;
///     assert!(greeter.greet(Text::default()).await.is_err());
///     Ok(())
/// }
/// ```
#[derive(Clone)]
pub struct Client {
    handle: Arc<Handle>,
    timeout: Option<Duration>,
    stream_idle_timeout: Option<Duration>,
    /// Request metadata of this handle's calls (see [`Client::with_metadata`]).
    metadata: Option<Arc<Metadata>>,
    strict_metadata: bool,
    /// Where response metadata goes (see [`Client::with_response_metadata`]).
    response: Option<MetadataSlot>,
    /// Told when each stream of this handle ends (a [`crate::Channel`] with metrics).
    #[cfg(feature = "metrics")]
    stream_observer: Option<Arc<dyn crate::calls::stream::StreamObserver>>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("peer", &self.handle.conn.peer())
            .field("timeout", &self.timeout)
            .field("stream_idle_timeout", &self.stream_idle_timeout)
            .finish()
    }
}

/// Owned by the `Client` clones and the client's stream handles: dropping the last one closes
/// the connection.
#[derive(Debug)]
struct Handle {
    conn: Arc<Connection>,
    calls: Arc<ClientCalls>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.conn.close(CloseReason::Local("client dropped".into()));
    }
}

impl Client {
    /// Connects with the default [`ClientConfig`].
    pub async fn connect(addr: impl ToSocketAddrs) -> Result<Client, Error> {
        Client::connect_with(addr, ClientConfig::default()).await
    }

    /// Connects with `config`. An invalid `config` is [`Error::Config`] naming the field; a
    /// failed or timed-out (`connect_timeout`) connect is [`Error::Connect`] naming the address.
    pub async fn connect_with(addr: impl ToSocketAddrs, config: ClientConfig) -> Result<Client, Error> {
        config.check().map_err(Error::Config)?;
        let stream = net::connect(addr, config.connect_timeout).await?;
        Client::from_stream(stream, config)
    }

    /// Connects over TLS, checking the server's certificate for `server_name`.
    #[cfg(feature = "tls")]
    pub async fn connect_tls(
        addr: impl ToSocketAddrs,
        server_name: &str,
        tls: Arc<crate::tls::rustls::ClientConfig>,
        config: ClientConfig,
    ) -> Result<Client, Error> {
        use crate::tls::rustls::pki_types::ServerName;
        config.check().map_err(Error::Config)?;
        let name = ServerName::try_from(server_name.to_owned())
            .map_err(|err| Error::Config(format!("invalid TLS server name {server_name:?}: {err}")))?;
        let stream = net::connect(addr, config.connect_timeout).await?;
        stream.set_nodelay(config.connection.nodelay)?;
        let peer = stream.peer_addr()?;
        let handshake = crate::tls::TlsConnector::from(tls).connect(name, stream);
        let tls = match tokio::time::timeout(config.connect_timeout, handshake).await {
            Ok(result) => result.map_err(|err| tls_handshake_failed(peer, err))?,
            Err(_) => {
                let why = format!("no TLS handshake within {:?}", config.connect_timeout);
                let source = std::io::Error::new(std::io::ErrorKind::TimedOut, why);
                return Err(Error::Connect { addr: peer, source });
            }
        };
        let (read, write) = tokio::io::split(tls);
        // Takeover is not offered over TLS: no way to join the halves back.
        Ok(Client::start(read, write, None, peer, config))
    }

    /// Runs the client over an already connected TCP stream (an invalid `config` is
    /// [`Error::Config`]).
    pub fn from_stream(stream: TcpStream, config: ClientConfig) -> Result<Client, Error> {
        config.check().map_err(Error::Config)?;
        stream.set_nodelay(config.connection.nodelay)?;
        let peer = stream.peer_addr()?;
        let (read, write) = stream.into_split();
        let join: Join<_, _> =
            Box::new(|read: OwnedReadHalf, write| read.reunite(write).map_err(std::io::Error::other));
        Ok(Client::start(read, write, Some(join), peer, config))
    }

    /// Runs the client over any connected byte stream: a Unix domain socket, an in-memory
    /// [`tokio::io::duplex`] pipe (handy in tests), a stream some other library opened. Must be
    /// called within a Tokio runtime. [`Client::peer_addr`] reports `0.0.0.0:0`, and takeover
    /// ([`Client::into_raw`]) is TCP only.
    ///
    #[cfg_attr(feature = "macros", doc = "```")]
    #[cfg_attr(not(feature = "macros"), doc = "```ignore")]
    /// # #[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
    /// # pub struct Text { pub value: String }
    /// #[frpc::service(package = "demo")]
    /// pub trait Greeter {
    ///     async fn greet(&self, ctx: &frpc::Context, request: Text) -> Result<Text, frpc::Status>;
    /// }
    /// # struct Hello;
    /// # impl Greeter for Hello {
    /// #     async fn greet(&self, _: &frpc::Context, request: Text) -> Result<Text, frpc::Status> {
    /// #         Ok(request)
    /// #     }
    /// # }
    ///
    /// #[tokio::main]
    /// async fn main() -> Result<(), Box<dyn std::error::Error>> {
    ///     let server = frpc::Server::builder().add_service(GreeterServer::new(Hello)).build()?;
    ///     let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    ///     tokio::spawn(server.serve_io(server_end));
    ///     let client = frpc::Client::from_io(client_end, frpc::ClientConfig::default())?;
    ///     let reply = GreeterClient::new(client).greet(Text { value: "in memory".into() }).await?;
    ///     assert_eq!(reply.value, "in memory");
    ///     Ok(())
    /// }
    /// ```
    pub fn from_io<T>(io: T, config: ClientConfig) -> Result<Client, Error>
    where
        T: AsyncRead + AsyncWrite + Send + 'static,
    {
        config.check().map_err(Error::Config)?;
        let (read, write) = tokio::io::split(io);
        Ok(Client::start(read, write, None, NO_PEER_ADDR, config))
    }

    /// Connects to a server listening on the Unix domain socket at `path` (see
    /// [`Server::serve_unix`](crate::Server::serve_unix)). [`Client::peer_addr`] reports
    /// `0.0.0.0:0`, and takeover is TCP only.
    #[cfg(unix)]
    pub async fn connect_unix(
        path: impl AsRef<std::path::Path>,
        config: ClientConfig,
    ) -> Result<Client, Error> {
        config.check().map_err(Error::Config)?;
        let stream = tokio::net::UnixStream::connect(path).await?;
        let (read, write) = stream.into_split();
        Ok(Client::start(read, write, None, NO_PEER_ADDR, config))
    }

    fn start<R, W>(
        read: R,
        write: W,
        join: Option<Join<R, W>>,
        peer: SocketAddr,
        config: ClientConfig,
    ) -> Client
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let offer = match config.extensions {
            true => ext::supported(config.protobuf),
            false => 0,
        };
        let calls = ClientCalls::new(&config.connection, offer);
        let (conn, _tasks) = Connection::spawn(
            (read, write),
            join,
            peer,
            &config.connection,
            calls.dispatch(),
            Options {
                drain: None,
                shared_reader: Some(calls.clone()),
            },
        );
        if offer != 0 {
            // The first packet: nothing is queued yet, so it goes before any call or PING.
            let _ = conn.try_send(ext::hello(ext::OFFER, offer));
        }
        Client {
            handle: Arc::new(Handle { conn, calls }),
            timeout: config.timeout,
            stream_idle_timeout: config.stream_idle_timeout,
            metadata: None,
            strict_metadata: config.strict_metadata,
            response: None,
            #[cfg(feature = "metrics")]
            stream_observer: None,
        }
    }

    /// A handle to the same connection whose calls and streams carry `metadata` as request
    /// metadata (added to what this handle already carries, replacing keys set in both): use
    /// it for a client's default metadata, and again for one call's. Generated clients take the
    /// handle with `FooClient::new`. Metadata reaches [`crate::Context::metadata`] on an frpc
    /// server that negotiated extensions; to a Go server (or with extensions off) it is not
    /// sent and the call goes ahead, unless `ClientConfig::strict_metadata` is set. A call
    /// made right after connecting, with metadata or not, waits for the server's answer to the
    /// extension offer (one round trip, once per connection).
    ///
    #[cfg_attr(feature = "macros", doc = "```")]
    #[cfg_attr(not(feature = "macros"), doc = "```ignore")]
    /// # #[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
    /// # pub struct Text { pub value: String }
    /// #[frpc::service(package = "demo")]
    /// pub trait Auth {
    ///     async fn whoami(&self, ctx: &frpc::Context, request: Text) -> Result<Text, frpc::Status>;
    /// }
    ///
    /// struct Svc;
    ///
    /// impl Auth for Svc {
    ///     async fn whoami(&self, ctx: &frpc::Context, _: Text) -> Result<Text, frpc::Status> {
    ///         let Some(token) = ctx.metadata().get("authorization") else {
    ///             return Err(frpc::Status::unauthenticated("no token"));
    ///         };
    ///         let mut response = frpc::Metadata::new();
    ///         response.insert("request-id", "r-1").unwrap();
    ///         ctx.set_response_metadata(response);
    ///         Ok(Text { value: token.to_owned() })
    ///     }
    /// }
    ///
    /// #[tokio::main]
    /// async fn main() -> Result<(), Box<dyn std::error::Error>> {
    ///     let server = frpc::Server::builder()
    ///         .add_service(AuthServer::new(Svc))
    ///         .bind("127.0.0.1:0")
    ///         .await?;
    ///     let addr = server.local_addr();
    ///     tokio::spawn(server.serve());
    ///
    ///     let client = frpc::Client::connect(addr).await?;
    ///     let err = AuthClient::new(client.clone()).whoami(Text::default()).await.unwrap_err();
    ///     assert_eq!(err.code(), frpc::Code::Unauthenticated);
    ///
    ///     let mut md = frpc::Metadata::new();
    ///     md.insert("authorization", "Bearer 42")?;
    ///     let response = frpc::MetadataSlot::new();
    ///     let auth = AuthClient::new(client.with_metadata(md).with_response_metadata(&response));
    ///     assert_eq!(auth.whoami(Text::default()).await?.value, "Bearer 42");
    ///     assert_eq!(response.take().unwrap().get("request-id"), Some("r-1"));
    ///     Ok(())
    /// }
    /// ```
    pub fn with_metadata(&self, metadata: Metadata) -> Client {
        Client {
            metadata: Some(Metadata::layered(self.metadata.as_ref(), metadata)),
            ..self.clone()
        }
    }

    /// The request metadata this handle's calls carry.
    pub fn metadata(&self) -> Option<&Metadata> {
        self.metadata.as_deref()
    }

    /// A handle to the same connection whose calls leave their response metadata in `slot`
    /// (see [`Client::with_metadata`] for an example): a unary call's when its reply comes, a
    /// streaming call's when the server's end comes (read to the end; a client-streaming
    /// call's once its response came).
    pub fn with_response_metadata(&self, slot: &MetadataSlot) -> Client {
        Client {
            response: Some(slot.clone()),
            ..self.clone()
        }
    }

    /// Whether the server accepted frpc's extensions on this connection (`false` while its
    /// answer is pending, and for Go servers).
    pub fn extensions_accepted(&self) -> bool {
        self.handle.calls.negotiation().accepted() != 0
    }

    /// The file descriptors of every service the server serves, through the reflection
    /// extension (`docs/extensions.md` §13): an encoded `google.protobuf.FileDescriptorSet`, in
    /// which a file may repeat (keep the first of a name). `Ok(None)` when the server does not
    /// reflect (a Go fRPC server, extensions off on either side); the connection's error when
    /// it closed before the server answered anything (not a Frisbee peer, the other framing,
    /// TLS on one side only). Waits for negotiation first; bounded by the handle's timeout when
    /// it has one.
    pub async fn reflect(&self) -> Result<Option<Bytes>, Error> {
        let ask = async {
            if !self.negotiated().await
                || self.handle.calls.negotiation().accepted() & ext::EXT_REFLECTION == 0
            {
                return match self.is_closed() {
                    true => Err(self.closed_error()),
                    false => Ok(None),
                };
            }
            let answer = self.handle.calls.expect_reflection();
            self.handle
                .conn
                .send(frpc_wire::Packet::new(ext::REFLECT, ext::OP, Bytes::new()))
                .await?;
            match answer.await {
                Ok(set) => Ok(Some(set)),
                Err(_) => Err(self.closed_error()),
            }
        };
        match self.timeout {
            Some(limit) => tokio::time::timeout(limit, ask)
                .await
                .unwrap_or(Err(Error::Timeout(limit))),
            None => ask.await,
        }
    }

    /// Whether the server accepted the protobuf extension: calls and streams started from now
    /// on whose message types have a protobuf encoding (frpc-codegen's) travel in protobuf
    /// (`docs/extensions.md` §10). `false` while the answer is pending, and for Go servers.
    pub fn protobuf_accepted(&self) -> bool {
        self.handle.calls.negotiation().accepted() & ext::EXT_PROTOBUF != 0
    }

    /// Waits (within `limit`) until the connection has shown it works: the server's answer to
    /// the extension offer when one was made, else any packet, a PONG to the PING this sends
    /// at once. Fails with the close reason when it closes first, and with
    /// [`Error::Connect`] (`TimedOut`) when nothing came in time (a black hole).
    pub(crate) async fn answered_within(&self, limit: Duration) -> Result<(), Error> {
        let calls = &self.handle.calls;
        if !calls.has_answered() {
            // Also the negotiation's probe: a peer that ignores the offer answers it with PONG.
            calls.negotiation().take_probe();
            let _ = self.handle.conn.try_send(frpc_wire::Packet::ping());
        }
        let works = async {
            calls.answered().await;
            calls.negotiation().resolved().await;
        };
        let answered_nothing = |within: Duration| Error::Connect {
            addr: self.peer_addr(),
            source: std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("the server answered nothing within {within:?}"),
            ),
        };
        tokio::select! {
            biased;
            () = works => Ok(()),
            // An idle timeout shorter than `limit` closes a black hole first: the same failure.
            () = self.closed() => match self.close_reason() {
                Some(CloseReason::Idle(idle)) => Err(answered_nothing(idle)),
                _ => Err(self.closed_error()),
            },
            () = tokio::time::sleep(limit) => Err(answered_nothing(limit)),
        }
    }

    /// Why the connection closed, once it has (`None` while it is open): this side closed it,
    /// the peer did, it was idle, or reading or writing failed. Calls on it fail with
    /// [`Error::ConnectionClosed`] carrying the same text.
    pub fn close_reason(&self) -> Option<CloseReason> {
        self.handle.conn.close_reason()
    }

    /// Whether the server has answered a call (a reply or a stream message) on this connection.
    pub(crate) fn has_served(&self) -> bool {
        self.handle.calls.has_served()
    }

    /// Why the connection closed (the error its calls got).
    pub(crate) fn closed_error(&self) -> Error {
        self.handle.conn.closed_error()
    }

    /// Waits until it is known whether the server takes frpc's extensions (its answer to the
    /// offer, or a PONG showing it ignored the offer: at most about one round trip) and
    /// returns [`Client::extensions_accepted`]. Calls never need this; tests and tools do.
    pub async fn negotiated(&self) -> bool {
        let calls = &self.handle.calls;
        if !calls.negotiation().is_resolved() {
            if calls.negotiation().take_probe() {
                let _ = self.handle.conn.try_send(frpc_wire::Packet::ping());
            }
            calls.negotiation().resolved().await;
        }
        self.extensions_accepted()
    }

    /// Waits until the server has shown what it is, and says so: [`Negotiated::Extensions`]
    /// (an frpc server accepted the offer), [`Negotiated::Plain`] (a peer that ignores the
    /// offer, such as Go fRPC, or none was made: it answered a PING with a PONG), or
    /// [`Negotiated::Closed`] when the connection closed before the server answered anything
    /// (a server refusing at accept, a reset): unlike [`Client::negotiated`], a dead
    /// connection is not mistaken for a Go peer. It sends one PING if nothing has come yet, and
    /// waits without a limit: bound it with `tokio::time::timeout` (a black hole never answers).
    pub async fn negotiation(&self) -> Negotiated {
        let calls = &self.handle.calls;
        if !calls.has_answered() {
            calls.negotiation().take_probe();
            let _ = self.handle.conn.try_send(frpc_wire::Packet::ping());
        }
        let shown = async {
            calls.answered().await;
            calls.negotiation().resolved().await;
        };
        tokio::select! {
            biased;
            () = shown => {}
            () = self.closed() => {}
        }
        if self.extensions_accepted() {
            Negotiated::Extensions
        } else if calls.has_answered() {
            Negotiated::Plain
        } else {
            Negotiated::Closed(
                self.close_reason()
                    .unwrap_or_else(|| CloseReason::Local("closed".into())),
            )
        }
    }

    /// A handle to the same connection whose calls time out after `timeout`: a unary call's
    /// whole exchange, and a stream's whole life from its opening (every receive and send fails
    /// with [`Error::Timeout`] once it has passed, and the server is told). frpc servers see it
    /// as the call's [`Context::deadline`](crate::Context::deadline) and drop the handler there.
    /// For a limit on each wait of a long-lived stream instead, see
    /// [`ClientConfig::stream_idle_timeout`](crate::ClientConfig::stream_idle_timeout). A zero
    /// timeout is refused: calls made with it fail with [`Error::Config`]; one over a year
    /// (`Duration::MAX` for "no limit", say) counts as a year.
    pub fn with_timeout(&self, timeout: Duration) -> Client {
        Client {
            timeout: Some(timeout),
            ..self.clone()
        }
    }

    /// The timeout applied to this handle's calls, if any.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// The server's address.
    pub fn peer_addr(&self) -> std::net::SocketAddr {
        self.handle.conn.peer()
    }

    /// Whether the connection has closed.
    pub fn is_closed(&self) -> bool {
        self.handle.conn.is_closed()
    }

    /// Whether the server said it is shutting down (an frpc server tells clients that took the
    /// drain extension, `docs/extensions.md` §14): start nothing new here, connect again (a
    /// [`crate::Channel`] does so by itself). The calls sent before are served; later ones
    /// are refused (UNAVAILABLE, "the server is shutting down"). Never true with a Go server.
    pub fn is_draining(&self) -> bool {
        self.handle.calls.is_draining()
    }

    /// Whether the server takes the drain notice (it will tell this client when it shuts down).
    #[cfg_attr(
        not(feature = "macros"),
        allow(dead_code, reason = "read by the health watch")
    )]
    pub(crate) fn drain_accepted(&self) -> bool {
        self.handle.calls.drain_accepted()
    }

    /// Resolves once the server says it is shutting down (see [`Client::is_draining`]); never
    /// with a server that does not tell (Go fRPC, an older frpc).
    pub async fn draining(&self) {
        self.handle.calls.draining().await
    }

    /// Resolves when the connection closes.
    pub async fn closed(&self) {
        self.handle.conn.closed().await
    }

    /// Closes the connection; pending calls fail with [`Error::ConnectionClosed`].
    pub fn close(&self) {
        self.handle
            .conn
            .close(CloseReason::Local("closed by the client".into()));
    }

    /// Number of unary calls waiting for a reply.
    pub fn inflight(&self) -> usize {
        self.handle.calls.inflight()
    }

    /// Number of open streams on the connection.
    pub fn open_streams(&self) -> usize {
        self.handle.calls.streams().len()
    }

    /// Opens a stream for method `op`: registers it, then sends the open message (callers bound
    /// it with [`Client::within_timeout`], and wait for the server's acknowledgement with
    /// `Streaming::opened`). The stream's handles keep the connection open. The first stream
    /// of a connection opened before the answer to the extension offer waits for it (at most
    /// a round trip), so that it gets the open acknowledgement and flow control. `path` (the
    /// method's gRPC path, or empty) names the stream to a metrics observer.
    pub(crate) async fn open_stream<Req: Message, Resp: Message>(
        &self,
        op: u16,
        #[cfg_attr(not(feature = "metrics"), allow(unused_variables))] path: &'static str,
    ) -> Result<(StreamSender<Req>, Streaming<Resp>), Error> {
        let timeout = self.call_timeout()?;
        let client = ClientSide {
            keep_alive: Some(self.handle.clone()),
            idle: self.stream_idle_timeout,
            // The call's timeout bounds the whole stream, from its opening on.
            deadline: timeout.map(|limit| (tokio::time::Instant::now() + limit, limit)),
            response: self.response.clone(),
            #[cfg(feature = "metrics")]
            observed: self
                .stream_observer
                .clone()
                .map(|observer| crate::calls::stream::Observed {
                    observer,
                    op,
                    path,
                    started: std::time::Instant::now(),
                }),
        };
        let (conn, calls) = (&self.handle.conn, &self.handle.calls);
        calls.resolve(conn).await?;
        let metadata = self.metadata.as_deref();
        let bits = match metadata {
            None => calls.negotiation().accepted(),
            Some(_) => calls.extensions_for(conn, metadata, self.strict_metadata).await?,
        };
        // Protobuf for this stream only if both its message types have it (a Rust-first type
        // reads only polyglot), and then in both directions (the open message says so).
        let bits = match Req::PROTOBUF && Resp::PROTOBUF {
            true => bits,
            false => bits & !ext::EXT_PROTOBUF,
        };
        // The server learns the deadline (its `ctx.deadline()`, and the handler is dropped at
        // it) with the deadline extension, as a unary call's.
        let header = ext::Header {
            timeout: timeout.filter(|_| bits & ext::EXT_DEADLINE != 0),
            metadata: metadata
                .filter(|m| !m.is_empty() && bits & ext::EXT_METADATA != 0)
                .cloned(),
            ..ext::Header::default()
        };
        let header = (!header.is_empty()).then_some(header);
        stream::open(conn, calls.streams(), op, client, bits, header).await
    }

    /// This handle's call timeout; a zero one is refused, as `ClientConfig::timeout` is, and
    /// one over a year counts as a year (`Instant::now() + Duration::MAX` panicked).
    fn call_timeout(&self) -> Result<Option<Duration>, Error> {
        match self.timeout {
            Some(limit) if limit.is_zero() => Err(zero_timeout()),
            timeout => Ok(timeout.map(|limit| limit.min(crate::config::MAX_CALL_TIMEOUT))),
        }
    }

    /// Runs `work` (opening a stream, say) within this handle's call timeout, if any.
    pub(crate) async fn within_timeout<T>(
        &self,
        work: impl std::future::Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        match self.call_timeout()? {
            None => work.await,
            Some(limit) => tokio::time::timeout(limit, work)
                .await
                .unwrap_or(Err(Error::Timeout(limit))),
        }
    }

    /// Sends a raw packet with operation `op` (10 or more, one no RPC uses) and id `id`.
    pub async fn send_packet(&self, op: u16, id: u16, content: impl Into<Bytes>) -> Result<(), Error> {
        self.packet_sender().send(op, id, content).await
    }

    /// A sender for raw packets on this connection.
    pub fn packet_sender(&self) -> PacketSender {
        PacketSender::new(self.handle.conn.clone())
    }

    /// Receives the raw packets the server sends with operation `op`, in order. Registering an
    /// operation again replaces the earlier receiver. When the receiver falls
    /// `config.stream_buffer` packets behind, the connection waits for it (nothing is dropped).
    pub fn raw_packets(&self, op: u16) -> Result<RawPackets, Error> {
        check_op(op)?;
        let (tx, rx) = mpsc::channel(self.handle.conn.config().stream_buffer.max(1));
        self.handle.calls.raw().insert(op, tx);
        Ok(RawPackets::new(rx))
    }

    /// Arranges for frpc to stop reading as soon as no call is pending, so that the reply to the
    /// next call is the last packet parsed: bytes the server sends right behind it stay unparsed
    /// and come back from [`Client::into_raw`]. Arm it just before the last call.
    pub fn arm_takeover(&self) {
        self.handle.calls.arm_takeover();
    }

    /// Turns frpc off and hands back the TCP stream, plus the bytes already read from it that
    /// no packet consumed (Go loses those). Whatever was queued is flushed first. Pending calls
    /// fail; other clones of this client see a closed connection. A connection already closed
    /// (by either side) is [`Error::ConnectionClosed`].
    pub async fn into_raw(self) -> Result<(TcpStream, BytesMut), Error> {
        let conn = &self.handle.conn;
        let take = conn.request_handback()?;
        conn.close(CloseReason::Local("connection taken over".into()));
        take.await
    }

    /// Tells `observer` about the end of every stream this handle opens.
    #[cfg(feature = "metrics")]
    pub(crate) fn set_stream_observer(
        &mut self,
        observer: Option<Arc<dyn crate::calls::stream::StreamObserver>>,
    ) {
        self.stream_observer = observer;
    }

    /// Sets this handle's per-call options at once (a [`crate::Channel`] applies its own to the
    /// handle it takes from the current connection).
    pub(crate) fn set_options(
        &mut self,
        timeout: Option<Duration>,
        metadata: Option<Arc<Metadata>>,
        response: Option<MetadataSlot>,
    ) {
        self.timeout = timeout;
        self.metadata = metadata;
        self.response = response;
    }

    /// Whether the server's answer to the extension offer is known (always, with none made).
    pub(crate) fn is_negotiated(&self) -> bool {
        self.handle.calls.negotiation().is_resolved()
    }

    /// A unary call made before the server answered the extension offer: it waits for the
    /// answer (a round trip at most, within the call's timeout), then encodes the request as
    /// the connection takes it. Encoded at once in polyglot, the first calls of a connection
    /// went positional to a server that reads protobuf (fields declared in another order were
    /// read into each other) and without their deadline.
    pub(crate) async fn unary_once_negotiated(
        &self,
        op: u16,
        encode: impl FnOnce(bool) -> Encoded + Send,
    ) -> Result<Reply, Error> {
        let started = tokio::time::Instant::now();
        match self.call_timeout()? {
            Some(limit) => tokio::time::timeout(limit, self.negotiated())
                .await
                .map_err(|_| Error::Timeout(limit))?,
            None => self.negotiated().await,
        };
        let content = encode(self.protobuf_accepted());
        match self.timeout {
            // What is left of the call's timeout (at least a nanosecond: none left is a
            // timeout, not a zero timeout refused).
            Some(limit) => {
                let left = limit
                    .saturating_sub(started.elapsed())
                    .max(Duration::from_nanos(1));
                self.with_timeout(left).unary(op, content).await
            }
            None => self.unary(op, content).await,
        }
    }

    /// Sends one unary request and waits for the reply, within the handle's timeout. Inlined
    /// into the generated client's call (`codegen::traced_unary`), so its future is built where
    /// it stays.
    #[inline]
    pub(crate) fn unary(
        &self,
        op: u16,
        content: Encoded,
    ) -> Unary<'_, impl Future<Output = Result<Reply, Error>> + Send + '_> {
        let handle = &self.handle;
        let (timeout, refused) = match self.call_timeout() {
            Ok(timeout) => (timeout, false),
            Err(_) => (None, true),
        };
        let options = CallOptions {
            timeout,
            metadata: self.metadata.as_deref(),
            strict: self.strict_metadata,
        };
        Unary {
            call: handle.calls.call(&handle.conn, op, content, options),
            refused,
            sleep: None,
            limit: options.timeout,
            response: self.response.as_ref(),
        }
    }
}

pin_project_lite::pin_project! {
    /// [`Client::unary`]'s future: the call, and its timeout beside it. Written out rather than
    /// an `async fn` around `tokio::time::timeout`: a client keeps one per call in flight, and
    /// the `async fn` kept its arguments twice (as captured and as locals) beside a `Timeout`
    /// holding the call in its other state: 584 bytes, 408 with the call's own `async` blocks
    /// (docs/performance-log.md, "Smaller call futures"), 104 fewer with the timer boxed.
    #[must_use = "futures do nothing unless polled"]
    pub(crate) struct Unary<'a, F> {
        #[pin]
        call: F,
        // A zero timeout, refused when first polled (as the `async fn` did).
        refused: bool,
        // Started when first polled: the whole call's deadline, waiting for room in the write
        // queue included. Boxed: a `Sleep` is 112 bytes, which every call's future would carry
        // (and every move of it copy) while most calls have no timeout (the default).
        sleep: Option<Pin<Box<tokio::time::Sleep>>>,
        limit: Option<Duration>,
        response: Option<&'a MetadataSlot>,
    }
}

impl<F: Future<Output = Result<Reply, Error>>> Future for Unary<'_, F> {
    type Output = Result<Reply, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if *this.refused {
            return Poll::Ready(Err(zero_timeout()));
        }
        if let (Some(limit), None) = (*this.limit, this.sleep.as_ref()) {
            *this.sleep = Some(Box::pin(tokio::time::sleep(limit)));
        }
        // The call first, as `tokio::time::timeout` does: a reply that is there wins.
        if let Poll::Ready(reply) = this.call.poll(cx) {
            let mut reply = reply?;
            if let Some(slot) = this.response {
                slot.set(reply.metadata.take());
            }
            return Poll::Ready(Ok(reply));
        }
        match (this.sleep.as_mut(), *this.limit) {
            (Some(sleep), Some(limit)) => sleep.as_mut().poll(cx).map(|()| Err(Error::Timeout(limit))),
            _ => Poll::Pending, // no timeout
        }
    }
}

/// What a connection's server showed it is ([`Client::negotiation`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Negotiated {
    /// An frpc server: it accepted the extension offer ([`Client::protobuf_accepted`] says
    /// whether protobuf too).
    Extensions,
    /// The server answered but takes no extensions: a Go fRPC peer, or no offer was made.
    /// Calls go in plain fRPC.
    Plain,
    /// The connection closed before the server answered anything: it never worked. The
    /// reason is why it closed.
    Closed(CloseReason),
}

/// A failed TLS handshake as the connect's error, naming the server. The connection's end in
/// the middle of it (rustls: "tls handshake eof") is most often a server that does not speak
/// TLS: a plaintext frpc server drops what is not a Frisbee header.
#[cfg(feature = "tls")]
fn tls_handshake_failed(addr: std::net::SocketAddr, err: std::io::Error) -> Error {
    let text = match err.kind() {
        std::io::ErrorKind::UnexpectedEof => {
            format!("the server closed the connection during the TLS handshake ({err}): does it serve TLS?")
        }
        _ => format!("TLS handshake failed: {err}"),
    };
    Error::Connect {
        addr,
        source: std::io::Error::new(err.kind(), text),
    }
}

/// The error for a call made with a zero timeout (`with_timeout(Duration::ZERO)`): refused like
/// a zero `ClientConfig::timeout`, instead of failing every call at once as timed out.
fn zero_timeout() -> Error {
    Error::Config("the call timeout is zero; it must be above zero".into())
}
