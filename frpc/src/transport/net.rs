//! Dialling and binding with errors that name the address. Transport floor: sockets only.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream, ToSocketAddrs, lookup_host};

use crate::status::Error;

/// Resolves `addr` and connects to each address it names in turn, all within `limit`. Errors
/// name the address tried; a name that does not resolve gives [`Error::Io`].
pub(crate) async fn connect(addr: impl ToSocketAddrs, limit: Duration) -> Result<TcpStream, Error> {
    let mut tried = None;
    let attempt = async {
        let mut last = None;
        for addr in resolve(addr).await? {
            tried = Some(addr);
            match TcpStream::connect(addr).await {
                Ok(stream) => return Ok(stream),
                Err(source) => last = Some(Error::Connect { addr, source }),
            }
        }
        Err(last.unwrap_or_else(nothing_resolved))
    };
    // `tokio::time::timeout` copes with any duration (a far deadline is clamped).
    let result = tokio::time::timeout(limit, attempt).await;
    result.unwrap_or_else(|_| match tried {
        Some(addr) => Err(Error::Connect {
            addr,
            source: io::Error::new(io::ErrorKind::TimedOut, format!("no answer within {limit:?}")),
        }),
        None => Err(Error::Timeout(limit)),
    })
}

/// Resolves `addr` and binds the first address it names that can be bound.
pub(crate) async fn bind(addr: impl ToSocketAddrs) -> Result<TcpListener, Error> {
    let mut last = None;
    for addr in resolve(addr).await? {
        match TcpListener::bind(addr).await {
            Ok(listener) => return Ok(listener),
            Err(source) => last = Some(Error::Bind { addr, source }),
        }
    }
    Err(last.unwrap_or_else(nothing_resolved))
}

async fn resolve(addr: impl ToSocketAddrs) -> Result<impl Iterator<Item = SocketAddr>, Error> {
    lookup_host(addr).await.map_err(|err| {
        Error::Io(io::Error::new(
            err.kind(),
            // The usual cause besides a wrong name: a URL where frpc takes `host:port`
            // (tonic's `http://…` habit), which the resolver reports as an unknown name.
            format!("cannot resolve the address (frpc takes `host:port`, without a scheme): {err}"),
        ))
    })
}

fn nothing_resolved() -> Error {
    Error::Io(io::Error::new(
        io::ErrorKind::InvalidInput,
        "the address resolved to no socket address",
    ))
}
