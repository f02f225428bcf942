//! Small types every floor shares: the boxed future services return and the four RPC kinds.
//! A leaf: it imports nothing from the crate.

use std::future::Future;
use std::pin::Pin;

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
