//! Errors: [`Status`] is what a handler returns and what travels on the wire (its text, as in
//! Go fRPC, plus a [`Code`] between frpc peers that negotiated extensions); [`Error`] is what a
//! caller gets back, telling apart where a failure came from. A leaf: it imports nothing from
//! the crate.

use std::fmt;

use frpc_wire::{DecodeError, FrameError};

/// An RPC failure as the remote side reported it, or as a handler returns it.
///
/// On the wire a status is its message (polyglot Error), exactly as Go fRPC sends it. Between
/// frpc peers that negotiated extensions (see `docs/extensions.md`) its [`Code`] travels too;
/// from a Go peer, or without extensions, a status arrives as [`Code::Unknown`] with its text.
/// [`Status::new`] makes an `Unknown` status; [`Status::not_found`] and its siblings (one per
/// code) make the others. A *closing* status (Go's `CloseError`) is sent and then the
/// connection is closed.
///
#[cfg_attr(feature = "macros", doc = "```")]
#[cfg_attr(not(feature = "macros"), doc = "```ignore")]
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
    code: Code,
    message: String,
    close: bool,
}

macro_rules! constructors {
    ($($(#[$doc:meta])* $name:ident => $code:ident,)*) => {
        $(
            $(#[$doc])*
            pub fn $name(message: impl Into<String>) -> Status {
                Status::with_code(Code::$code, message)
            }
        )*
    };
}

impl Status {
    /// A status carrying `message`, with [`Code::Unknown`] (the code every Go fRPC error has).
    pub fn new(message: impl Into<String>) -> Status {
        Status::with_code(Code::Unknown, message)
    }

    /// A status with `code` and `message`.
    pub fn with_code(code: Code, message: impl Into<String>) -> Status {
        Status {
            code,
            message: message.into(),
            close: false,
        }
    }

    constructors! {
        /// A [`Code::Cancelled`] status.
        cancelled => Cancelled,
        /// A [`Code::Unknown`] status (the same as [`Status::new`]).
        unknown => Unknown,
        /// A [`Code::InvalidArgument`] status.
        invalid_argument => InvalidArgument,
        /// A [`Code::DeadlineExceeded`] status.
        deadline_exceeded => DeadlineExceeded,
        /// A [`Code::NotFound`] status.
        not_found => NotFound,
        /// A [`Code::AlreadyExists`] status.
        already_exists => AlreadyExists,
        /// A [`Code::PermissionDenied`] status.
        permission_denied => PermissionDenied,
        /// A [`Code::ResourceExhausted`] status.
        resource_exhausted => ResourceExhausted,
        /// A [`Code::FailedPrecondition`] status.
        failed_precondition => FailedPrecondition,
        /// A [`Code::Aborted`] status.
        aborted => Aborted,
        /// A [`Code::OutOfRange`] status.
        out_of_range => OutOfRange,
        /// A [`Code::Unimplemented`] status.
        unimplemented => Unimplemented,
        /// A [`Code::Internal`] status.
        internal => Internal,
        /// A [`Code::Unavailable`] status.
        unavailable => Unavailable,
        /// A [`Code::DataLoss`] status.
        data_loss => DataLoss,
        /// A [`Code::Unauthenticated`] status.
        unauthenticated => Unauthenticated,
    }

    /// A status that, returned by a unary handler, is sent to the caller and then closes the
    /// connection (Go fRPC's `NewCloseError`). Its code is [`Code::Unknown`].
    pub fn closing(message: impl Into<String>) -> Status {
        Status {
            code: Code::Unknown,
            message: message.into(),
            close: true,
        }
    }

    /// The error text.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The status code ([`Code::Unknown`] for statuses from Go peers).
    pub fn code(&self) -> Code {
        self.code
    }

    /// The code this status goes out with as an error, on every path (fRPC, streams, the gRPC
    /// face, the metrics): an error cannot say OK, so `Code::Ok` goes as `Code::Unknown`.
    pub(crate) fn error_code(&self) -> Code {
        match self.code {
            Code::Ok => Code::Unknown,
            code => code,
        }
    }

    /// Whether the connection closes after this status is sent.
    pub fn closes_connection(&self) -> bool {
        self.close
    }

    /// Turns a caught handler panic into the status the caller receives: INTERNAL, without
    /// the panic's message, which may say what a remote caller should not see (a path, a
    /// value); the message is logged here (ERROR, in the call's span) instead.
    #[cold]
    pub(crate) fn from_panic(panic: Box<dyn std::any::Any + Send>) -> Status {
        let message = panic
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("a panic without a message");
        tracing::error!(panic = message, "handler panicked");
        Status::internal("handler panicked")
    }
}

/// A status code: gRPC's 17 codes, with gRPC's names and numbers.
///
/// ```
/// use frpc::{Code, Status};
///
/// let status = Status::not_found("no such user");
/// assert_eq!(status.code(), Code::NotFound);
/// assert_eq!(status.code() as u8, 5);
/// assert_eq!(Code::from_u8(5), Some(Code::NotFound));
/// assert_eq!(status.code().to_string(), "NOT_FOUND");
/// assert_eq!(Status::new("boom").code(), Code::Unknown);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Code {
    /// Not an error: a handler's [`Status`] with it goes to its client as `UNKNOWN` (an error
    /// cannot say OK), on every path.
    Ok = 0,
    /// The operation was cancelled, typically by the caller.
    Cancelled = 1,
    /// Unknown error; every error from a Go fRPC peer has this code.
    Unknown = 2,
    /// The client specified an invalid argument.
    InvalidArgument = 3,
    /// The deadline expired before the operation could complete.
    DeadlineExceeded = 4,
    /// Some requested entity was not found.
    NotFound = 5,
    /// The entity a client attempted to create already exists.
    AlreadyExists = 6,
    /// The caller may not execute the operation.
    PermissionDenied = 7,
    /// Some resource has been exhausted (a quota, a size limit).
    ResourceExhausted = 8,
    /// The system is not in a state required for the operation.
    FailedPrecondition = 9,
    /// The operation was aborted (a concurrency conflict, say).
    Aborted = 10,
    /// The operation was attempted past the valid range.
    OutOfRange = 11,
    /// The operation is not implemented or supported.
    Unimplemented = 12,
    /// An internal invariant was broken.
    Internal = 13,
    /// The service is currently unavailable (the connection closed, say).
    Unavailable = 14,
    /// Unrecoverable data loss or corruption.
    DataLoss = 15,
    /// The request has no valid authentication credentials.
    Unauthenticated = 16,
}

impl Code {
    const ALL: [Code; 17] = [
        Code::Ok,
        Code::Cancelled,
        Code::Unknown,
        Code::InvalidArgument,
        Code::DeadlineExceeded,
        Code::NotFound,
        Code::AlreadyExists,
        Code::PermissionDenied,
        Code::ResourceExhausted,
        Code::FailedPrecondition,
        Code::Aborted,
        Code::OutOfRange,
        Code::Unimplemented,
        Code::Internal,
        Code::Unavailable,
        Code::DataLoss,
        Code::Unauthenticated,
    ];

    /// The code with number `value` (0–16), if any.
    pub fn from_u8(value: u8) -> Option<Code> {
        Code::ALL.get(usize::from(value)).copied()
    }

    /// gRPC's name for the code (`NOT_FOUND`).
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Ok => "OK",
            Code::Cancelled => "CANCELLED",
            Code::Unknown => "UNKNOWN",
            Code::InvalidArgument => "INVALID_ARGUMENT",
            Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
            Code::NotFound => "NOT_FOUND",
            Code::AlreadyExists => "ALREADY_EXISTS",
            Code::PermissionDenied => "PERMISSION_DENIED",
            Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
            Code::FailedPrecondition => "FAILED_PRECONDITION",
            Code::Aborted => "ABORTED",
            Code::OutOfRange => "OUT_OF_RANGE",
            Code::Unimplemented => "UNIMPLEMENTED",
            Code::Internal => "INTERNAL",
            Code::Unavailable => "UNAVAILABLE",
            Code::DataLoss => "DATA_LOSS",
            Code::Unauthenticated => "UNAUTHENTICATED",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Status {}

impl From<Error> for Status {
    /// Lets a handler use `?` on client calls and inbound streams. A remote status is kept as
    /// it is; any other error becomes a status with [`Error::code`] and the error's text.
    fn from(err: Error) -> Status {
        match err {
            Error::Status(status) => status,
            other => Status::with_code(other.code(), other.to_string()),
        }
    }
}

/// Why a call, a stream or a connection failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The remote handler returned an error: shown as its code and message
    /// (`NOT_FOUND: no such key`; `UNKNOWN: …` for a Go peer's error, which has no code).
    #[error("{}: {}", .0.code(), .0.message())]
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
    /// A server's inbound stream received a message that cannot be decoded: the client sent a
    /// bad argument ([`Code::InvalidArgument`], as a unary call's undecodable request is). A
    /// client that cannot decode a server's message gets [`Error::Decode`] instead.
    #[error("cannot decode the stream message: {0}")]
    InvalidMessage(String),
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
    /// The call or stream was cancelled: the peer cancelled it (a server stream's `send` after
    /// the client dropped the stream), or it was cancelled locally.
    #[error("cancelled")]
    Cancelled,
    /// Metadata was refused: an invalid key or value, or (with
    /// `ClientConfig::strict_metadata`) a peer that does not take metadata.
    #[error("metadata: {0}")]
    Metadata(String),
    /// No connection was up to take the call: a [`crate::Channel`] between reconnect attempts
    /// (it fails calls at once rather than holding them), or a balanced channel none of whose
    /// endpoints is connected or connecting. The text says why the last attempt failed.
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// A server's stream cannot send: the server is shutting down (code `Unavailable`, which
    /// tells the client to retry elsewhere). Its handler should return; after the shutdown
    /// grace ([`crate::ServerConfig::shutdown_grace`]) its context is cancelled and its
    /// connection closed.
    #[error("the server is shutting down")]
    ShuttingDown,
    /// A client-streaming or bidi call sent a request after ending its request stream
    /// (`close`, `close_send`): nothing was sent (code `FailedPrecondition`).
    #[error("the request stream is closed: no request can follow `close`/`close_send`")]
    RequestStreamClosed,
    /// A server's stream sent a message after it ended: its handler returned an error (a
    /// clone of its `StreamSender` outlived it), or its end went out at its deadline. Nothing
    /// was sent (code `FailedPrecondition`).
    #[error("the stream has ended: no message can follow its end")]
    StreamEnded,
    /// A client layer (see [`crate::Channel::with_layer`]) failed the call: tower's
    /// `timeout::error::Elapsed` (code `DeadlineExceeded`), `load_shed::error::Overloaded`
    /// (code `Unavailable`) or a layer's own error (code `Unknown`). A layer that fails with a
    /// [`Status`] gives [`Error::Status`] instead, with its code, as a tonic interceptor's
    /// `Status` is the call's.
    #[error("client layer: {0}")]
    Layer(Box<dyn std::error::Error + Send + Sync>),
}

impl Error {
    /// The remote status, if this is one.
    pub fn status(&self) -> Option<&Status> {
        match self {
            Error::Status(status) => Some(status),
            _ => None,
        }
    }

    /// The status code this error maps to: a remote status's own code; `Unavailable` for a
    /// closed connection, a failed connect or socket error; `DeadlineExceeded` for a timeout;
    /// `ResourceExhausted` for a message over the limit or an overflowing stream; `Internal`
    /// for a message that cannot be decoded or a framing failure (`InvalidArgument` for a message a
    /// server's stream cannot decode); `Unimplemented` for an unknown
    /// operation; `InvalidArgument` for a bad configuration or bad metadata; `Cancelled` for a
    /// cancelled call; `Unavailable` when no connection was up; `FailedPrecondition` for a
    /// request sent after its stream was closed, or a message after its stream ended; for a
    /// client layer's error, `DeadlineExceeded` for tower's timeout, `Unavailable` for its
    /// load shedding (`Overloaded`) and `Unknown` otherwise.
    pub fn code(&self) -> Code {
        match self {
            Error::Status(status) => status.code(),
            Error::Timeout(_) => Code::DeadlineExceeded,
            Error::ConnectionClosed { .. } | Error::Connect { .. } | Error::Io(_) => Code::Unavailable,
            Error::Bind { .. } => Code::Unavailable,
            Error::Decode(_) | Error::Frame(_) => Code::Internal,
            Error::TooLarge { .. } => Code::ResourceExhausted,
            Error::UnknownOperation(_) => Code::Unimplemented,
            Error::Config(_) | Error::Metadata(_) | Error::InvalidMessage(_) => Code::InvalidArgument,
            Error::Cancelled => Code::Cancelled,
            Error::Unavailable(_) | Error::ShuttingDown => Code::Unavailable,
            Error::RequestStreamClosed | Error::StreamEnded => Code::FailedPrecondition,
            Error::Layer(err) if err.is::<tower::timeout::error::Elapsed>() => Code::DeadlineExceeded,
            Error::Layer(err) if err.is::<tower::load_shed::error::Overloaded>() => Code::Unavailable,
            Error::Layer(_) => Code::Unknown,
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

    /// Turns what a tower stack returned into an `Error`: frpc's own errors come back as they
    /// were, a layer's [`Status`] as [`Error::Status`], anything else (tower's timeout, a
    /// custom layer's error) is [`Error::Layer`].
    pub(crate) fn from_layer(err: Box<dyn std::error::Error + Send + Sync>) -> Error {
        let err = match err.downcast::<Error>() {
            Ok(err) => return *err,
            Err(other) => other,
        };
        match err.downcast::<Status>() {
            Ok(status) => Error::Status(*status),
            Err(other) => Error::Layer(other),
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

/// Why a connection closed ([`crate::Client::close_reason`], [`crate::Channel::last_close_reason`]).
/// Its text is what calls failing on the closed connection report
/// ([`Error::ConnectionClosed`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CloseReason {
    /// This side closed it: `Client::close`, its last handle dropped, a takeover, the server
    /// shutting down, a handler's closing status (the text says which).
    Local(String),
    /// The peer closed the connection (the text adds a hint at the other framing when the
    /// peer never sent a valid packet).
    PeerClosed(String),
    /// The peer sent nothing, not a byte, for the idle timeout.
    Idle(std::time::Duration),
    /// Reading failed: a framing error or a socket error.
    ReadFailed(String),
    /// Writing failed.
    WriteFailed(String),
}

impl fmt::Display for CloseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CloseReason::Local(text) | CloseReason::PeerClosed(text) | CloseReason::ReadFailed(text) => {
                f.write_str(text)
            }
            CloseReason::Idle(timeout) => write!(f, "peer sent nothing for {timeout:?}"),
            CloseReason::WriteFailed(text) => write!(f, "write failed: {text}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_status_shows_its_code_and_message() {
        let err = Error::Status(Status::not_found("no such key"));
        assert_eq!(err.to_string(), "NOT_FOUND: no such key");
        let go = Error::Status(Status::new("boom"));
        assert_eq!(go.to_string(), "UNKNOWN: boom");
        assert_eq!(
            Status::from(err).message(),
            "no such key",
            "the status stays as it came"
        );
    }
}
