//! What a handler knows about the call it serves. Services floor.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::calls::raw::PacketSender;
use crate::status::Error;
use crate::transport::connection::Connection;
use crate::transport::handback::TakeConnection;

/// The context of a server-side call: the peer and a cancellation signal. Cheap to clone (one
/// per connection, shared by its calls).
///
/// ```
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
#[derive(Clone)]
pub struct Context {
    inner: Arc<Inner>,
}

struct Inner {
    conn: Arc<Connection>,
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
    pub(crate) fn new(conn: Arc<Connection>, shutdown: CancellationToken) -> Context {
        Context {
            inner: Arc::new(Inner { conn, shutdown }),
        }
    }

    /// A sender for raw packets to this client, to keep and use later (pub/sub).
    pub fn packet_sender(&self) -> PacketSender {
        PacketSender::new(self.inner.conn.clone())
    }

    /// Asks for the connection to be handed back once this call's reply (if any) is queued and
    /// flushed: frpc stops reading at once, lets the calls already running on the connection
    /// finish (for at most the shutdown grace of 5 s), flushes their replies and resolves the
    /// returned future to the TCP stream plus the bytes already read but not parsed. Await it
    /// outside the handler (spawn a task): it resolves only after the handler has returned.
    ///
    /// Race-free when called from a raw route ([`crate::Builder::route`]) or with
    /// [`crate::Concurrency::Inline`]: nothing after the triggering packet is parsed. With
    /// per-RPC tasks the peer must wait for the reply before it sends raw bytes.
    pub fn take_connection(&self) -> Result<TakeConnection, Error> {
        self.inner.conn.request_handback()
    }

    /// The address of the client.
    pub fn peer_addr(&self) -> SocketAddr {
        self.inner.conn.peer()
    }

    /// Whether the connection has closed or the server is shutting down.
    pub fn is_cancelled(&self) -> bool {
        self.inner.conn.is_closed() || self.inner.shutdown.is_cancelled()
    }

    /// Resolves when the connection closes or the server starts shutting down: a long handler
    /// can `select!` on it to stop work nobody will receive.
    pub async fn cancelled(&self) {
        tokio::select! {
            _ = self.inner.conn.closed() => {}
            _ = self.inner.shutdown.cancelled() => {}
        }
    }
}
