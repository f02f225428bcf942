//! Small types every floor shares: the boxed future services return and the four RPC kinds.
//! A leaf: it imports nothing from the crate.

use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::pin::Pin;

/// The peer address reported for connections that are not TCP (Unix domain sockets, in-memory
/// pipes): `0.0.0.0:0`.
pub(crate) const NO_PEER_ADDR: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0));

/// A boxed, sendable future: what a service returns for each call.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// The four RPC kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MethodKind {
    /// One request, one response.
    Unary,
    /// One request, a stream of responses.
    ServerStreaming,
    /// A stream of requests, one response.
    ClientStreaming,
    /// Streams both ways.
    Bidi,
}

impl MethodKind {
    /// Whether calls of this kind travel as a stream (everything but unary).
    pub fn is_streaming(self) -> bool {
        self != MethodKind::Unary
    }
}
