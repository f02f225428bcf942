//! What a handler knows about the call it serves.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::connection::Connection;

/// The context of a server-side call: the peer and a cancellation signal. Cheap to clone (one
/// per connection, shared by its calls).
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
