//! The gRPC client direction (feature `grpc`): [`GrpcChannel`], a [`crate::Caller`] over
//! tonic's `transport::Channel`, so one generated `FooClient` type calls frpc servers and any
//! gRPC server alike. Services floor, beside the gRPC face: it shares the face's protobuf-bytes
//! codec and metadata conversions.
//!
//! A call goes to the method's gRPC path (`/package.Service/Method`, which generated clients
//! pass along) with the request's protobuf encoding as its message; request metadata (text and
//! `-bin`) goes as headers, the call timeout as `grpc-timeout`, and the reply's headers and
//! trailers come back as response metadata. A gRPC status comes back as [`Error::Status`],
//! code for code and message for message. Streaming methods (`client_stream.rs`) go the same
//! way as bridged streams: the user's `Streaming`, `ClientStreamingCall` and `BidiCall` are
//! fRPC's types, fed by the HTTP/2 stream.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::uri::PathAndQuery;
use tonic::transport::{Channel, Endpoint};

use super::{BytesCodec, request_metadata, response_metadata};
use crate::caller::{Caller, Reply};
use crate::calls::codec::MARKER;
use crate::calls::stream::BridgedCall;
use crate::client::Client;
use crate::config::DecodeLimits;
use crate::metadata::{Metadata, MetadataSlot};
use crate::status::{Code, Error, Status};

/// Calls gRPC servers (tonic, grpc-go, grpcio, frpc's own gRPC face) with generated frpc
/// clients: `FooClient::new(GrpcChannel::connect("http://127.0.0.1:50051").await?)`.
///
/// Every kind of method: unary calls return the reply, streaming calls the types they return
/// over fRPC ([`crate::Streaming`], [`crate::ClientStreamingCall`], [`crate::BidiCall`]), so
/// code using a generated client is the same whatever it calls through. A stream's replies end
/// with the status of its trailers (`Ok(None)` for `OK`, else [`Error::Status`]); closing its
/// request side is HTTP/2's half-close; dropping the whole call (sender and replies) resets the
/// HTTP/2 stream, and the handle's timeout bounds the whole stream ([`Error::Timeout`]).
/// Response metadata of a stream reaches the handle's slot as its headers come, then with its
/// trailers at its end.
///
/// Cheap to clone; clones share the HTTP/2 connection. Messages up to 4 MiB each way by default
/// (gRPC's defaults).
///
/// ```no_run
/// # async fn demo() -> Result<(), frpc::Error> {
/// let channel = frpc::grpc::GrpcChannel::connect("http://127.0.0.1:50051").await?;
/// let slow = frpc::Caller::with_timeout(&channel, std::time::Duration::from_secs(1));
/// # let _ = slow; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct GrpcChannel {
    channel: Channel,
    pub(super) timeout: Option<Duration>,
    metadata: Option<Arc<Metadata>>,
    pub(super) response: Option<MetadataSlot>,
    max_decoding: usize,
    pub(super) max_encoding: usize,
    pub(super) limits: DecodeLimits,
}

/// gRPC's default limit on a message, each way.
const DEFAULT_MAX_MESSAGE: usize = 4 * 1024 * 1024;

impl GrpcChannel {
    /// Calls through `channel` (a tonic channel: one endpoint, balanced, lazy, over TLS…).
    pub fn new(channel: Channel) -> GrpcChannel {
        GrpcChannel {
            channel,
            timeout: None,
            metadata: None,
            response: None,
            max_decoding: DEFAULT_MAX_MESSAGE,
            max_encoding: DEFAULT_MAX_MESSAGE,
            limits: crate::config::ConnectionConfig::default().decode,
        }
    }

    /// Connects to `uri` (`http://host:port`: HTTP/2 with prior knowledge, what gRPC servers
    /// speak in cleartext). An invalid URI is [`Error::Config`]; a failed connect
    /// [`Error::Unavailable`] saying why.
    pub async fn connect(uri: &str) -> Result<GrpcChannel, Error> {
        let endpoint = endpoint(uri)?;
        let channel = endpoint.connect().await.map_err(|err| unavailable(uri, &err))?;
        Ok(GrpcChannel::new(channel))
    }

    /// The largest reply message accepted (tonic's `OUT_OF_RANGE` beyond it). Default 4 MiB.
    pub fn max_decoding_message_size(mut self, limit: usize) -> GrpcChannel {
        self.max_decoding = limit;
        self
    }

    /// The largest request message sent (`RESOURCE_EXHAUSTED` beyond it). Default 4 MiB.
    pub fn max_encoding_message_size(mut self, limit: usize) -> GrpcChannel {
        self.max_encoding = limit;
        self
    }

    /// What decoding a reply may cost (nesting depth, memory budget). Default: the
    /// connection defaults of frpc clients.
    pub fn decode_limits(mut self, limits: DecodeLimits) -> GrpcChannel {
        self.limits = limits;
        self
    }

    /// The tonic channel calls go through.
    pub fn channel(&self) -> &Channel {
        &self.channel
    }

    /// One unary call to `path` with `body` (frpc's protobuf content: the marker, then the
    /// message), within the handle's timeout.
    async fn unary(&self, path: &'static str, body: Bytes) -> Result<Reply, Error> {
        let path = grpc_path(path)?;
        self.check_request(&path, &body)?;
        let request = self.request(body)?;
        let call = self.send(path, request);
        let result = match self.timeout {
            Some(limit) if limit.is_zero() => return Err(zero_timeout()),
            Some(limit) => tokio::time::timeout(limit, call)
                .await
                .unwrap_or(Err((Error::Timeout(limit), None))),
            None => call.await,
        };
        if let (Ok((_, metadata)) | Err((_, metadata)), Some(slot)) = (&result, &self.response) {
            slot.set(metadata.clone());
        }
        match result {
            Ok((body, metadata)) => Ok(Reply {
                body,
                code: None,
                metadata,
                limits: self.limits,
            }),
            Err((err, _)) => Err(err),
        }
    }

    /// Refuses a request message that cannot go: not protobuf, or over the sending limit
    /// (refused here with the sizes, rather than by tonic as a reset stream).
    pub(super) fn check_request(&self, path: &PathAndQuery, body: &Bytes) -> Result<(), Error> {
        if body.first() != Some(&MARKER) {
            return Err(Error::Config(format!(
                "{path}: the request type has no protobuf encoding (a Rust-first message): it cannot go over gRPC"
            )));
        }
        let len = body.len() - 1;
        if len > self.max_encoding {
            let max = u32::try_from(self.max_encoding).unwrap_or(u32::MAX);
            return Err(Error::TooLarge { len, max });
        }
        Ok(())
    }

    /// tonic's client over the channel, with the handle's size limits.
    pub(super) fn grpc(&self) -> tonic::client::Grpc<Channel> {
        tonic::client::Grpc::new(self.channel.clone())
            .max_decoding_message_size(self.max_decoding)
            .max_encoding_message_size(self.max_encoding)
    }

    /// The tonic request: the message (or messages), the handle's metadata, its timeout as
    /// `grpc-timeout`.
    pub(super) fn request<T>(&self, body: T) -> Result<tonic::Request<T>, Error> {
        let mut request = tonic::Request::new(body);
        if let Some(metadata) = &self.metadata {
            let map = response_metadata(metadata);
            if map.len() != metadata.len() {
                return Err(Error::Metadata(unsendable(metadata, &map)));
            }
            *request.metadata_mut() = map;
        }
        if let Some(timeout) = self.timeout {
            request.set_timeout(timeout);
        }
        Ok(request)
    }

    /// Sends `request` and waits for the reply: its message and metadata, or the error and
    /// the metadata that came with it.
    async fn send(
        &self,
        path: PathAndQuery,
        request: tonic::Request<Bytes>,
    ) -> Result<(Bytes, Option<Metadata>), (Error, Option<Metadata>)> {
        let mut grpc = self.grpc();
        grpc.ready()
            .await
            .map_err(|err| (unavailable(&path.to_string(), &err), None))?;
        match grpc.unary(request, path, BytesCodec).await {
            Ok(response) => {
                let metadata = some(request_metadata(response.metadata()));
                Ok((response.into_inner(), metadata))
            }
            Err(status) => {
                let metadata = some(request_metadata(status.metadata()));
                let err = match (self.timeout, timed_out(&status)) {
                    (Some(limit), true) => Error::Timeout(limit),
                    _ => Error::Status(from_grpc(&status)),
                };
                Err((err, metadata))
            }
        }
    }
}

impl crate::caller::sealed::Sealed for GrpcChannel {}

impl Caller for GrpcChannel {
    fn with_timeout(&self, timeout: Duration) -> GrpcChannel {
        GrpcChannel {
            // Over a year counts as a year, as on an frpc `Client`: tonic panics on a
            // `grpc-timeout` over about 11,000 years, and a stream's deadline
            // (`Instant::now() + limit`) overflowed near `Duration::MAX`.
            timeout: Some(timeout.min(crate::config::MAX_CALL_TIMEOUT)),
            ..self.clone()
        }
    }

    fn with_metadata(&self, metadata: Metadata) -> GrpcChannel {
        GrpcChannel {
            metadata: Some(Metadata::layered(self.metadata.as_ref(), metadata)),
            ..self.clone()
        }
    }

    fn with_response_metadata(&self, slot: &MetadataSlot) -> GrpcChannel {
        GrpcChannel {
            response: Some(slot.clone()),
            ..self.clone()
        }
    }

    /// Without a gRPC path there is no method to call: [`Error::Config`].
    fn call(
        &self,
        _op: u16,
        encode: impl FnOnce(bool) -> Bytes + Send,
    ) -> impl Future<Output = Result<Reply, Error>> + Send {
        self.unary("", encode(true))
    }

    fn call_at(
        &self,
        _op: u16,
        path: &'static str,
        encode: impl FnOnce(bool) -> Bytes + Send,
    ) -> impl Future<Output = Result<Reply, Error>> + Send {
        // gRPC messages are protobuf: the request goes in protobuf when its type has it.
        self.unary(path, encode(true))
    }

    /// Streams go over gRPC ([`Caller::open_bridged`]), never on an fRPC connection.
    async fn stream_client(&self) -> Result<Client, Error> {
        Err(Error::Status(Status::with_code(
            Code::Unimplemented,
            "a GrpcChannel has no fRPC connection: its streaming calls go by gRPC path",
        )))
    }

    fn bridged_streams(&self) -> bool {
        true
    }

    fn open_bridged(
        &self,
        path: &'static str,
        request: Option<Bytes>,
    ) -> impl Future<Output = Result<BridgedCall, Error>> + Send {
        self.open_stream(path, request)
    }
}

/// The tonic endpoint of `uri`, or [`Error::Config`] naming it.
pub(super) fn endpoint(uri: &str) -> Result<Endpoint, Error> {
    Endpoint::from_shared(uri.to_owned())
        .map(|endpoint| endpoint.tcp_nodelay(true))
        .map_err(|err| Error::Config(format!("invalid gRPC endpoint {uri:?}: {}", chain(&err))))
}

/// A method's gRPC path, or [`Error::Config`] when the call has none.
pub(super) fn grpc_path(path: &'static str) -> Result<PathAndQuery, Error> {
    if path.is_empty() {
        return Err(Error::Config(
            "the call has no gRPC method path: call through a generated client".into(),
        ));
    }
    PathAndQuery::from_maybe_shared(Bytes::from_static(path.as_bytes()))
        .map_err(|err| Error::Config(format!("invalid gRPC method path {path:?}: {err}")))
}

/// A gRPC status as frpc's: the same code (an unknown number is `UNKNOWN`), the same message.
pub(super) fn from_grpc(status: &tonic::Status) -> Status {
    let code = u8::try_from(status.code() as i32)
        .ok()
        .and_then(Code::from_u8)
        .unwrap_or(Code::Unknown);
    Status::with_code(code, status.message())
}

/// Whether tonic's channel failed the call at its `grpc-timeout` (its own timer, which
/// races ours; it says `CANCELLED`, where the call's timeout is what happened).
pub(super) fn timed_out(status: &tonic::Status) -> bool {
    let mut source = std::error::Error::source(status);
    while let Some(err) = source {
        if err.is::<tonic::TimeoutExpired>() {
            return true;
        }
        source = err.source();
    }
    false
}

/// `None` for empty metadata.
pub(super) fn some(metadata: Metadata) -> Option<Metadata> {
    (!metadata.is_empty()).then_some(metadata)
}

/// The error of a connection that could not be made (or used) to `target`.
pub(super) fn unavailable(target: &str, err: &(dyn std::error::Error + 'static)) -> Error {
    Error::Unavailable(format!("{target}: {}", chain(err)))
}

/// An error and its sources, `: `-separated (tonic's transport error says little alone),
/// each said once: a source whose text the chain already ends with (hyper's connect error
/// repeats its cause's) is left out.
fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(err) = source {
        let next = err.to_string();
        if !text.ends_with(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = err.source();
    }
    text
}

/// The error for a call made with a zero timeout, as frpc clients refuse it.
pub(super) fn zero_timeout() -> Error {
    Error::Config("the call timeout is zero; it must be above zero".into())
}

/// Why an entry of `metadata` is not in `map`, its gRPC form: its key is one gRPC or HTTP/2
/// reserves (`grpc-*`, `content-type`, `te`…: a timeout goes with `with_timeout`), or its value
/// is text HTTP/2 refuses.
fn unsendable(metadata: &Metadata, map: &tonic::metadata::MetadataMap) -> String {
    let Some((key, _)) = metadata.iter().find(|(key, _)| !map.contains_key(*key)) else {
        return "an entry cannot be sent as gRPC metadata".into();
    };
    match key.starts_with("grpc-") || super::is_http_header(key) {
        true => format!(
            "metadata key `{key}` is reserved by gRPC or HTTP/2 and cannot be sent (a timeout goes \
             with `with_timeout`)"
        ),
        false => format!("the value of metadata key `{key}` is text HTTP/2 refuses"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Metadata a gRPC request cannot carry is refused naming the key and why: it blamed "a
    /// text value" for a reserved key (`grpc-timeout`, which tonic users set by hand).
    #[test]
    fn unsendable_metadata_names_its_key() {
        let mut metadata = Metadata::new();
        metadata.insert("tenant", "a").unwrap();
        metadata.insert("grpc-timeout", "1m").unwrap();
        let why = unsendable(&metadata, &response_metadata(&metadata));
        assert!(
            why.contains("`grpc-timeout` is reserved") && why.contains("with_timeout"),
            "{why}"
        );
        let mut metadata = Metadata::new();
        metadata.insert("te", "trailers").unwrap();
        let why = unsendable(&metadata, &response_metadata(&metadata));
        assert!(why.contains("`te` is reserved"), "{why}");
    }

    #[test]
    fn statuses_map_code_for_code() {
        for n in 0..=16u8 {
            let status = tonic::Status::new(tonic::Code::from_i32(n.into()), "why");
            let status = from_grpc(&status);
            assert_eq!(status.code() as u8, n);
            assert_eq!(status.message(), "why");
        }
    }

    #[test]
    fn bad_endpoints_and_missing_paths_are_config_errors() {
        assert!(matches!(endpoint("not a uri"), Err(Error::Config(text)) if text.contains("not a uri")));
        assert!(matches!(grpc_path(""), Err(Error::Config(text)) if text.contains("generated client")));
        assert_eq!(grpc_path("/a.B/C").unwrap().path(), "/a.B/C");
        assert!(
            matches!(grpc_path("/a B/\n"), Err(Error::Config(text)) if text.contains("invalid gRPC method path"))
        );
    }

    /// An error whose text repeats its source's, as hyper's connect error does.
    #[derive(Debug)]
    struct Repeats(std::io::Error);

    impl std::fmt::Display for Repeats {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "tcp connect error: {}", self.0)
        }
    }

    impl std::error::Error for Repeats {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn an_error_chain_says_each_cause_once() {
        let err = Repeats(std::io::Error::other("Connection refused"));
        assert_eq!(chain(&err), "tcp connect error: Connection refused");
        let err = Error::Unavailable("x".into());
        let io = std::io::Error::other(err);
        assert_eq!(chain(&io), "unavailable: x");
    }
}
