//! Errors: [`Status`] is what a handler returns and what travels on the wire (text only, as in
//! Go fRPC); [`Error`] is what a caller gets back, telling apart where a failure came from.
//! A leaf: it imports nothing from the crate.

use std::fmt;

use frpc_wire::{DecodeError, FrameError};

/// An RPC failure as the remote side reported it, or as a handler returns it.
///
/// On the wire a status is only its message (polyglot Error), since Go fRPC has no codes. A
/// *closing* status (Go's `CloseError`) is sent and then the connection is closed.
///
/// ```
/// # #[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
/// # pub struct Text { pub value: String }
/// #[frpc::service(package = "demo")]
/// pub trait Strict {
///     async fn check(&self, ctx: &frpc::Context, request: Text) -> Result<Text, frpc::Status>;
/// }
///
/// struct Svc;
///
/// impl Strict for Svc {
///     async fn check(&self, _ctx: &frpc::Context, request: Text) -> Result<Text, frpc::Status> {
///         match request.value.as_str() {
///             "" => Err(frpc::Status::new("empty value")),
///             "bye" => Err(frpc::Status::closing("closing the connection")),
///             _ => Ok(request),
///         }
///     }
/// }
///
/// #[tokio::main]
/// async fn main() -> Result<(), Box<dyn std::error::Error>> {
///     let server = frpc::Server::builder()
///         .add_service(StrictServer::new(Svc))
///         .bind("127.0.0.1:0")
///         .await?;
///     let addr = server.local_addr();
///     tokio::spawn(server.serve());
///
///     let client = StrictClient::connect(addr).await?;
///     let err = client.check(Text::default()).await.unwrap_err();
///     assert_eq!(err.status().map(frpc::Status::message), Some("empty value"));
///     // A plain status leaves the connection up; a closing one closes it after the reply.
///     assert_eq!(client.check(Text { value: "ok".into() }).await?.value, "ok");
///     let err = client.check(Text { value: "bye".into() }).await.unwrap_err();
///     assert_eq!(err.status().unwrap().message(), "closing the connection");
///     client.client().closed().await;
///     Ok(())
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    message: String,
    close: bool,
}

impl Status {
    /// A status carrying `message`.
    pub fn new(message: impl Into<String>) -> Status {
        Status {
            message: message.into(),
            close: false,
        }
    }

    /// A status that, returned by a unary handler, is sent to the caller and then closes the
    /// connection (Go fRPC's `NewCloseError`).
    pub fn closing(message: impl Into<String>) -> Status {
        Status {
            message: message.into(),
            close: true,
        }
    }

    /// The error text.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether the connection closes after this status is sent.
    pub fn closes_connection(&self) -> bool {
        self.close
    }

    /// Turns a caught handler panic into the status the caller receives.
    pub(crate) fn from_panic(panic: Box<dyn std::any::Any + Send>) -> Status {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_owned());
        Status::new(format!("handler panicked: {message}"))
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Status {}

impl From<Error> for Status {
    /// Lets a handler use `?` on client calls and inbound streams.
    fn from(err: Error) -> Status {
        match err {
            Error::Status(status) => status,
            other => Status::new(other.to_string()),
        }
    }
}

/// Why a call, a stream or a connection failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The remote handler returned an error.
    #[error("remote error: {0}")]
    Status(Status),
    /// The call did not complete within its timeout.
    #[error("call timed out after {0:?}")]
    Timeout(std::time::Duration),
    /// The connection closed (or was never usable) before the call completed.
    #[error("connection closed{}", reason.as_ref().map(|r| format!(": {r}")).unwrap_or_default())]
    ConnectionClosed {
        /// What closed it, when known.
        reason: Option<String>,
    },
    /// A message could not be decoded.
    #[error("decode error: {0}")]
    Decode(#[from] DecodeError),
    /// A message is larger than the configured maximum content length.
    #[error("message of {len} bytes exceeds the limit of {max} bytes")]
    TooLarge {
        /// Encoded size of the message.
        len: usize,
        /// The limit.
        max: u32,
    },
    /// The server has no method at this operation number (only raised by our own server).
    #[error("unknown operation {0}")]
    UnknownOperation(u16),
    /// A stream's inbound buffer overflowed because its consumer was too slow.
    #[error("stream {0} overflowed its inbound buffer (consumer too slow)")]
    StreamOverflow(u16),
    /// The server or client was configured inconsistently (two services on one operation…).
    #[error("invalid configuration: {0}")]
    Config(String),
    /// Connecting to `addr` failed (refused, unreachable, or not within
    /// `ClientConfig::connect_timeout`: then `source` is of kind `TimedOut`).
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        /// The address tried (the last one, when a name resolved to several).
        addr: std::net::SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// Binding a listener to `addr` failed (in use, not local, no permission).
    #[error("cannot bind {addr}: {source}")]
    Bind {
        /// The address tried (the last one, when a name resolved to several).
        addr: std::net::SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// Another socket operation failed (resolving a name, a TLS handshake…).
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The framing layer failed (bad magic, oversize packet).
    #[error(transparent)]
    Frame(FrameError),
}

impl Error {
    /// The remote status, if this is one.
    pub fn status(&self) -> Option<&Status> {
        match self {
            Error::Status(status) => Some(status),
            _ => None,
        }
    }

    /// A copy of a connection-level error, for each of the calls it fails.
    pub(crate) fn duplicate(&self) -> Error {
        match self {
            Error::ConnectionClosed { reason } => Error::ConnectionClosed {
                reason: reason.clone(),
            },
            other => Error::ConnectionClosed {
                reason: Some(other.to_string()),
            },
        }
    }

    pub(crate) fn closed(reason: impl Into<String>) -> Error {
        Error::ConnectionClosed {
            reason: Some(reason.into()),
        }
    }
}

impl From<FrameError> for Error {
    fn from(err: FrameError) -> Error {
        match err {
            FrameError::ContentTooLarge { len, max } => Error::TooLarge {
                len: len as usize,
                max,
            },
            FrameError::Io(io) => Error::Io(io),
            other => Error::Frame(other),
        }
    }
}
