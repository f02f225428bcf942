//! TLS around the byte stream (feature `tls`), as Go fRPC's `tls.Config`: the Frisbee packets
//! travel inside a rustls session, nothing else changes.
//!
//! Build a [`rustls::ServerConfig`] / [`rustls::ClientConfig`] as usual, wrap it in an
//! [`Arc`](std::sync::Arc) and hand it to [`crate::Builder::tls`] / [`crate::Client::connect_tls`].
//! Connection takeover is not available over TLS. Beside the transport: the services floor wraps
//! the byte stream before it starts a connection on it.

pub use tokio_rustls::rustls;
pub use tokio_rustls::{TlsAcceptor, TlsConnector};
