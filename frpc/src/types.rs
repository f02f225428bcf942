//! Small types every floor shares: the boxed future services return and the four RPC kinds.
//! A leaf: it imports nothing from the crate.
//! Also the encoded reply ([`Encoded`]) generated services hand the server.

use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::pin::Pin;

/// The peer address reported for connections that are not TCP (Unix domain sockets, in-memory
/// pipes): `0.0.0.0:0`.
pub(crate) const NO_PEER_ADDR: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0));

/// A boxed, sendable future: what a service returns for each call.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// An encoded unary reply (or request): one buffer, or a chain of parts one after another
/// (an encoding whose large `bytes::Bytes` fields were left in their own buffers, see
/// [`frpc_wire::Parts`]), which the connection writes with one vectored write instead of
/// copying. The size of a `Bytes`, so a reply in one buffer costs what it did. What generated
/// services hand the server ([`Service::call_unary_in`](crate::Service::call_unary_in));
/// not for applications.
#[doc(hidden)]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Encoded(Repr);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Repr {
    One(bytes::Bytes),
    /// Two parts or more.
    Chain(Box<[bytes::Bytes]>),
}

impl Default for Repr {
    fn default() -> Repr {
        Repr::One(bytes::Bytes::new())
    }
}

impl From<bytes::Bytes> for Encoded {
    #[inline]
    fn from(one: bytes::Bytes) -> Encoded {
        Encoded(Repr::One(one))
    }
}

impl Encoded {
    /// The finished chain of `parts`.
    pub fn from_parts(parts: frpc_wire::Parts) -> Encoded {
        Encoded::chain(parts.into_vec())
    }

    /// `parts`, one after another.
    pub(crate) fn chain(mut parts: Vec<bytes::Bytes>) -> Encoded {
        match parts.len() {
            0 | 1 => Encoded(Repr::One(parts.pop().unwrap_or_default())),
            _ => Encoded(Repr::Chain(parts.into_boxed_slice())),
        }
    }

    /// The one buffer, or the parts of a chain.
    #[inline]
    pub(crate) fn into_inner(self) -> Result<bytes::Bytes, Box<[bytes::Bytes]>> {
        match self.0 {
            Repr::One(one) => Ok(one),
            Repr::Chain(parts) => Err(parts),
        }
    }

    /// The length of the whole reply.
    #[inline]
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::One(one) => one.len(),
            Repr::Chain(parts) => parts.iter().map(bytes::Bytes::len).sum(),
        }
    }

    /// Whether the reply is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The whole reply in one buffer (copied together when in several parts).
    pub fn into_bytes(self) -> bytes::Bytes {
        match self.0 {
            Repr::One(one) => one,
            Repr::Chain(parts) => parts.concat().into(),
        }
    }
}

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
