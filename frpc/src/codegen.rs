//! The few runtime entry points generated code calls. Not a public API: generated code and
//! frpc change together. Services floor, the top: it names the client, the context and streams.
#![allow(missing_docs)]

use std::future::Future;
use std::panic::AssertUnwindSafe;

pub use bytes::{BufMut, Bytes};
pub use frpc_wire::polyglot::value::*;
pub use frpc_wire::polyglot::{Decoder, Envelope, Kind, Message, decode_envelope, decode_nested, encode};
pub use frpc_wire::protobuf_cost::{
    Budget as ProtobufBudget, Repeated, Value as ProtobufValue, fields as protobuf_fields, packed_varints,
    vec_cost,
};
pub use frpc_wire::{DecodeError, Parts};
pub use prost_types;
pub use tokio::net::ToSocketAddrs;

use futures_util::FutureExt;

pub mod prost;

pub use crate::caller::Caller;
use crate::calls::codec;
pub use crate::calls::slot::UnarySlot;
use crate::calls::stream::{BidiCall, ClientStreamingCall, StreamSender, Streaming};
pub use crate::calls::stream::{BridgedCall, ServerStream};
use crate::client::Client;
use crate::config::DecodeLimits;
use crate::context::Context;
pub use crate::service::{MethodDesc, Service};
use crate::status::{Code, Error, Status};
pub use crate::types::{BoxFuture, Encoded, MethodKind};

/// The frpc release series generated code was written for. Every file frpc-codegen 0.1
/// generates, and every `#[frpc::service]` of frpc-macros 0.1, contains
/// `const _: () = ::frpc::codegen::REQUIRES_FRPC_0_1;`, which resolves only against frpc 0.1.x:
/// with mismatched frpc and frpc-codegen the build fails on that line with "cannot find value
/// `REQUIRES_FRPC_0_1` in module `::frpc::codegen`". Renamed with every semver-incompatible
/// release (`REQUIRES_FRPC_0_2`, …); frpc-codegen derives the same name from its own version.
pub const REQUIRES_FRPC_0_1: () = ();

/// What frpc-codegen's protobuf encoder (its messages' `encode_protobuf`) calls besides
/// `prost::encoding`'s per-type functions: nested messages and length-delimited records.
pub mod pb {
    use ::prost::encoding::{WireType, encode_key, encode_varint, encoded_len_varint, key_len};
    use bytes::{BufMut, Bytes};

    use super::{Message, Parts};

    /// A nested message's body: frpc-codegen's encoder where the type has one (so -0.0 inside
    /// survives), prost's otherwise (well-known types, `Empty`).
    #[inline]
    fn body_len<M: Message + prost::Message>(message: &M) -> usize {
        match M::PROTOBUF {
            true => message.protobuf_len(),
            false => prost::Message::encoded_len(message),
        }
    }

    /// The length of a length-delimited record of `body` bytes under `tag`.
    #[inline]
    pub fn len_delimited_len(tag: u32, body: usize) -> usize {
        key_len(tag) + encoded_len_varint(body as u64) + body
    }

    /// Writes the key and the length of a length-delimited record of `body` bytes.
    #[inline]
    pub fn encode_len_delimited_key(tag: u32, body: usize, buf: &mut impl BufMut) {
        encode_key(tag, WireType::LengthDelimited, buf);
        encode_varint(body as u64, buf);
    }

    /// The length of `message` as field `tag`.
    #[inline]
    pub fn message_len<M: Message + prost::Message>(tag: u32, message: &M) -> usize {
        len_delimited_len(tag, body_len(message))
    }

    /// Writes `message` as field `tag`.
    #[inline]
    pub fn encode_message<M: Message + prost::Message>(tag: u32, message: &M, buf: &mut impl BufMut) {
        encode_len_delimited_key(tag, body_len(message), buf);
        match M::PROTOBUF {
            true => message.encode_protobuf(buf),
            false => prost::Message::encode_raw(message, buf),
        }
    }

    /// Writes a `string` given up as field `tag`: a large one's own buffer becomes a part
    /// (see [`Message::into_protobuf_parts`]).
    #[inline]
    pub fn string_into_parts(tag: u32, value: String, out: &mut Parts) {
        encode_len_delimited_key(tag, value.len(), out.buf_mut());
        out.put_vec(value.into_bytes());
    }

    /// Writes a `bytes` value given up as field `tag`: a large one is a part of its own.
    #[inline]
    pub fn bytes_into_parts(tag: u32, value: Bytes, out: &mut Parts) {
        encode_len_delimited_key(tag, value.len(), out.buf_mut());
        out.put_owned(value);
    }

    /// Writes a message given up as field `tag`, its large fields as parts of their own.
    #[inline]
    pub fn message_into_parts<M: Message + prost::Message>(tag: u32, message: M, out: &mut Parts) {
        match M::PROTOBUF && M::PROTOBUF_OWNED_PARTS {
            true => {
                encode_len_delimited_key(tag, message.protobuf_len(), out.buf_mut());
                message.into_protobuf_parts(out)
            }
            false => encode_message(tag, &message, out.buf_mut()),
        }
    }
}

/// Decodes a generated message's protobuf encoding (its `Message::decode_protobuf`): prost
/// reads `bytes::Bytes` fields as zero-copy slices of `buf`, strings go through
/// [`prost::encoding::string::merge`] (validated where they lie, copied once), and a
/// `Vec<u8>` field is copied out of a large one in pieces ([`frpc_wire::copy::Pieces`]: one
/// copy can be 12 to 60 times slower).
pub fn decode_protobuf<M: prost::Message + Default>(buf: Bytes) -> Result<M, DecodeError> {
    let decoded = match buf.len() > frpc_wire::copy::PIECE {
        true => M::decode(frpc_wire::copy::Pieces(buf)),
        false => M::decode(buf),
    };
    decoded.map_err(|err| DecodeError::Protobuf(err.to_string()))
}

fn decode_request<Req: Message>(
    content: &Bytes,
    encoding: codec::Encoding,
    limits: DecodeLimits,
) -> Result<Req, Status> {
    match codec::decode_as::<Req>(content, encoding, limits) {
        Ok(Envelope::Message(request)) => Ok(request),
        Ok(Envelope::Error(text)) => Err(Status::new(format!("the request was an error: {text}"))),
        // gRPC servers (tonic's included) answer a request they cannot parse INTERNAL; frpc
        // peers get INVALID_ARGUMENT, the client's bad argument.
        Err(err) if encoding == codec::Encoding::Grpc => {
            Err(Status::internal(format!("cannot decode the request: {err}")))
        }
        Err(err) => Err(Status::invalid_argument(format!(
            "cannot decode the request: {err}"
        ))),
    }
}

async fn catch_panic<T>(fut: impl Future<Output = Result<T, Status>>) -> Result<T, Status> {
    AssertUnwindSafe(fut)
        .catch_unwind()
        .await
        .unwrap_or_else(|panic| Err(Status::from_panic(panic)))
}

pub fn unary<Req, Resp, F, Fut>(ctx: Context, request: Bytes, f: F) -> BoxFuture<Result<Bytes, Status>>
where
    Req: Message + Send + 'static,
    Resp: Message + Send + 'static,
    F: FnOnce(Context, Req) -> Fut + Send + 'static,
    Fut: Future<Output = Result<Resp, Status>> + Send + 'static,
{
    Box::pin(async move {
        // The reply goes in the encoding the request came in (protobuf only from a client
        // that negotiated it; gRPC's own framing to the gRPC face, which sends it as it is).
        let (encoding, limits) = ctx.request_encoding(&request);
        let request = decode_request::<Req>(&request, encoding, limits)?;
        let response = f(ctx, request).await?;
        Ok(codec::encode_as(&response, encoding))
    })
}

/// [`unary`] as [`Service::call_unary_in`] runs it: the call's future in the connection's
/// `slot` (no allocation where the last call's future had its layout), and the reply in parts,
/// its large `bytes::Bytes` fields left in their own buffers (polyglot replies of types that
/// have such fields; one buffer otherwise, as [`unary`]).
pub fn unary_in<Req, Resp, F, Fut>(ctx: Context, request: Bytes, slot: &mut UnarySlot, f: F)
where
    Req: Message + Send + 'static,
    Resp: Message + Send + 'static,
    F: FnOnce(Context, Req) -> Fut + Send + 'static,
    Fut: Future<Output = Result<Resp, Status>> + Send + 'static,
{
    slot.set(async move {
        let (encoding, limits) = ctx.request_encoding(&request);
        let request = decode_request::<Req>(&request, encoding, limits)?;
        let response = f(ctx, request).await?;
        Ok(codec::encode_reply(response, encoding))
    })
}

pub fn server_streaming<Req, Resp, F, Fut>(
    ctx: Context,
    stream: ServerStream,
    f: F,
) -> BoxFuture<Result<(), Status>>
where
    Req: Message + Send + 'static,
    Resp: Message + Send + 'static,
    F: FnOnce(Context, Req, StreamSender<Resp>) -> Fut + Send + 'static,
    Fut: Future<Output = Result<(), Status>> + Send + 'static,
{
    Box::pin(async move {
        let (mut inbound, sender) = stream.split::<Req, Resp>();
        let result = async {
            let request = inbound
                .message()
                .await?
                .ok_or_else(|| Status::new("the stream ended before its request"))?;
            // With open acknowledgement, the client's call resolves once the handler started.
            sender
                .started(catch_panic(f(ctx.clone(), request, sender.clone())))
                .await?;
            sender.others_gone(&ctx).await
        }
        .await;
        ServerStream::finish(&sender, result.clone()).await;
        result
    })
}

pub fn client_streaming<Req, Resp, F, Fut>(
    ctx: Context,
    stream: ServerStream,
    f: F,
) -> BoxFuture<Result<(), Status>>
where
    Req: Message + Send + 'static,
    Resp: Message + Send + 'static,
    F: FnOnce(Context, Streaming<Req>) -> Fut + Send + 'static,
    Fut: Future<Output = Result<Resp, Status>> + Send + 'static,
{
    Box::pin(async move {
        let (inbound, sender) = stream.split::<Req, Resp>();
        let result = match sender.started(catch_panic(f(ctx, inbound))).await {
            Ok(response) => sender.send_reply(response).await.map_err(Status::from),
            Err(status) => Err(status),
        };
        ServerStream::finish(&sender, result.clone()).await;
        result
    })
}

pub fn bidi<Req, Resp, F, Fut>(ctx: Context, stream: ServerStream, f: F) -> BoxFuture<Result<(), Status>>
where
    Req: Message + Send + 'static,
    Resp: Message + Send + 'static,
    F: FnOnce(Context, Streaming<Req>, StreamSender<Resp>) -> Fut + Send + 'static,
    Fut: Future<Output = Result<(), Status>> + Send + 'static,
{
    Box::pin(async move {
        let (inbound, sender) = stream.split::<Req, Resp>();
        let result = match sender
            .started(catch_panic(f(ctx.clone(), inbound, sender.clone())))
            .await
        {
            // A task the handler spawned may still send: the stream ends when it is done.
            Ok(()) => sender.others_gone(&ctx).await,
            Err(status) => Err(status),
        };
        ServerStream::finish(&sender, result.clone()).await;
        result
    })
}

pub fn unimplemented_unary(op: u16) -> BoxFuture<Result<Bytes, Status>> {
    Box::pin(std::future::ready(Err(Status::unimplemented(format!(
        "unimplemented operation {op}"
    )))))
}

pub fn unimplemented_unary_in(op: u16, slot: &mut UnarySlot) {
    let status = Status::unimplemented(format!("unimplemented operation {op}"));
    slot.set(std::future::ready(Err(status)))
}

pub fn unimplemented_streaming(op: u16) -> BoxFuture<Result<(), Status>> {
    Box::pin(std::future::ready(Err(Status::unimplemented(format!(
        "unimplemented streaming method {op}"
    )))))
}

/// Decodes a unary reply: a message, or the remote error (with its code, when it came with
/// one).
fn decode_reply<Resp: Message>(reply: &crate::caller::Reply) -> Result<Resp, Error> {
    match codec::decode::<Resp>(&reply.body, reply.limits)? {
        Envelope::Message(response) => Ok(response),
        Envelope::Error(text) => Err(Error::Status(Status::with_code(
            reply.code.unwrap_or(Code::Unknown),
            text,
        ))),
    }
}

/// Runs a generated client's call inside a `call` span (level debug, target `frpc::codegen`)
/// with the service's full proto name, the method's proto name and its operation number. For a
/// streaming method the span covers opening the stream (and sending the request of a
/// server-streaming call). Without a subscriber the span costs a couple of nanoseconds.
pub fn traced<F: Future>(
    service: &'static str,
    method: &'static str,
    op: u16,
    call: F,
) -> tracing::instrument::Instrumented<F> {
    use tracing::Instrument;
    call.instrument(tracing::debug_span!("call", service, method, op))
}

/// A generated client's unary call: [`call_unary_at`] and [`traced`]'s span in one future,
/// whose call (the caller's own future, the largest part) is made once, where it stays:
/// each wrapper around a future by value, `traced`'s `Instrumented` and every `async fn`
/// layer, moved the whole call once more (about 900 bytes), twice for some. Inlined for the
/// same reason: returned from a call, the future (about 370 bytes) was copied into its caller's
/// frame once more (callgrind: about 100 instructions per call with `Client::unary`).
#[inline]
pub fn traced_unary<'a, C: Caller, Req: Message + Send + 'a, Resp: Message>(
    client: &'a C,
    (service, method): (&'static str, &'static str),
    op: u16,
    path: &'static str,
    request: Req,
) -> TracedUnary<impl Future<Output = Result<crate::caller::Reply, Error>> + Send + 'a, Resp> {
    // The call is made in the struct's field, not in a variable moved there (a copy of the
    // whole call). It is encoded now, outside the span: encoding logs nothing.
    TracedUnary {
        span: tracing::debug_span!("call", service, method, op),
        call: client.call_at_parts(op, path, move |protobuf| {
            codec::encode_request(request, Resp::PROTOBUF && protobuf)
        }),
        reply: std::marker::PhantomData,
    }
}

pin_project_lite::pin_project! {
    /// The future of [`traced_unary`]: polls the call inside its span, then decodes the reply.
    #[must_use = "futures do nothing unless polled"]
    pub struct TracedUnary<F, Resp> {
        span: tracing::Span,
        #[pin]
        call: F,
        reply: std::marker::PhantomData<fn() -> Resp>,
    }
}

impl<F, Resp> Future for TracedUnary<F, Resp>
where
    F: Future<Output = Result<crate::caller::Reply, Error>>,
    Resp: Message,
{
    type Output = Result<Resp, Error>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let this = self.project();
        let _entered = this.span.enter();
        let reply = std::task::ready!(this.call.poll(cx))?;
        std::task::Poll::Ready(decode_reply(&reply))
    }
}

/// A unary call by operation number alone (no gRPC path: a `GrpcChannel` refuses it).
pub async fn call_unary<Req: Message + Send, Resp: Message>(
    client: &impl Caller,
    op: u16,
    request: Req,
) -> Result<Resp, Error> {
    call_unary_at(client, op, "", request).await
}

/// A unary call to operation `op`, gRPC path `path` (`/package.Service/Method`): what
/// generated clients call. The request is given up, so its large `String` and `bytes::Bytes`
/// fields go to the socket from their own buffers (see [`Message::into_fields_parts`]).
pub async fn call_unary_at<Req: Message + Send, Resp: Message>(
    client: &impl Caller,
    op: u16,
    path: &'static str,
    request: Req,
) -> Result<Resp, Error> {
    // The encoding is picked where the connection is known (protobuf once it was negotiated),
    // and protobuf only if the reply's type reads it too: the server answers in the request's
    // encoding.
    let reply = client
        .call_at_parts(op, path, move |protobuf| {
            codec::encode_request(request, Resp::PROTOBUF && protobuf)
        })
        .await?;
    decode_reply(&reply)
}

/// A server-streaming call by operation number alone (no gRPC path: a `GrpcChannel` refuses
/// it).
pub async fn call_server_streaming<Req: Message, Resp: Message>(
    client: &impl Caller,
    op: u16,
    request: &Req,
) -> Result<Streaming<Resp>, Error> {
    call_server_streaming_at(client, op, "", request).await
}

/// A server-streaming call to operation `op`, gRPC path `path`: what generated clients call.
pub async fn call_server_streaming_at<Req: Message, Resp: Message>(
    client: &impl Caller,
    op: u16,
    path: &'static str,
    request: &Req,
) -> Result<Streaming<Resp>, Error> {
    if client.bridged_streams() {
        protobuf_only::<Req, Resp>(path)?;
        let call = client
            .open_bridged(path, Some(codec::encode(request, true)))
            .await?;
        return Ok(call.split::<Req, Resp>().1);
    }
    // Opening includes finding the connection, sending the request and, with frpc servers,
    // their acknowledgement (sent once the handler started with the request): all within the
    // call timeout.
    let client = &client.stream_client().await?;
    client
        .within_timeout(async {
            let (sender, mut inbound) = client.open_stream::<Req, Resp>(op, path).await?;
            sender.send_ref(request).await?;
            inbound.opened().await?;
            Ok(inbound)
        })
        .await
}

/// A client-streaming call by operation number alone (no gRPC path: a `GrpcChannel` refuses
/// it).
pub async fn call_client_streaming<Req: Message, Resp: Message>(
    client: &impl Caller,
    op: u16,
) -> Result<ClientStreamingCall<Req, Resp>, Error> {
    call_client_streaming_at(client, op, "").await
}

/// A client-streaming call to operation `op`, gRPC path `path`: what generated clients call.
pub async fn call_client_streaming_at<Req: Message, Resp: Message>(
    client: &impl Caller,
    op: u16,
    path: &'static str,
) -> Result<ClientStreamingCall<Req, Resp>, Error> {
    let (sender, inbound) = open_at(client, op, path).await?;
    Ok(ClientStreamingCall::new(sender, inbound))
}

/// A bidi call by operation number alone (no gRPC path: a `GrpcChannel` refuses it).
pub async fn call_bidi<Req: Message, Resp: Message>(
    client: &impl Caller,
    op: u16,
) -> Result<BidiCall<Req, Resp>, Error> {
    call_bidi_at(client, op, "").await
}

/// A bidi call to operation `op`, gRPC path `path`: what generated clients call.
pub async fn call_bidi_at<Req: Message, Resp: Message>(
    client: &impl Caller,
    op: u16,
    path: &'static str,
) -> Result<BidiCall<Req, Resp>, Error> {
    let (sender, inbound) = open_at(client, op, path).await?;
    Ok(BidiCall::new(sender, inbound))
}

/// Opens a client-streaming or bidi call: over fRPC within the call timeout (with frpc
/// servers, their acknowledgement too); bridged, at once (gRPC servers may hold their
/// response's headers until the requests came).
async fn open_at<Req: Message, Resp: Message>(
    client: &impl Caller,
    op: u16,
    path: &'static str,
) -> Result<(StreamSender<Req>, Streaming<Resp>), Error> {
    if client.bridged_streams() {
        protobuf_only::<Req, Resp>(path)?;
        return Ok(client.open_bridged(path, None).await?.split());
    }
    let client = &client.stream_client().await?;
    client.within_timeout(open_acknowledged(client, op, path)).await
}

/// A bridged stream (gRPC) carries protobuf only: [`Error::Config`] for a Rust-first type.
fn protobuf_only<Req: Message, Resp: Message>(path: &str) -> Result<(), Error> {
    match Req::PROTOBUF && Resp::PROTOBUF {
        true => Ok(()),
        false => Err(Error::Config(format!(
            "{path}: a message type has no protobuf encoding (a Rust-first message): it cannot go over gRPC"
        ))),
    }
}

/// Opens a stream and, with frpc servers, waits for their acknowledgement.
async fn open_acknowledged<Req: Message, Resp: Message>(
    client: &Client,
    op: u16,
    path: &'static str,
) -> Result<(StreamSender<Req>, Streaming<Resp>), Error> {
    let (sender, mut inbound) = client.open_stream::<Req, Resp>(op, path).await?;
    inbound.opened().await?;
    Ok((sender, inbound))
}
