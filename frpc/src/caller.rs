//! What generated clients call through: the [`Caller`] trait, implemented by [`Client`] (one
//! connection) and [`crate::Channel`] (reconnecting, balanced, layered), and a unary call's
//! [`Request`] and [`Reply`] as tower services see them (a [`crate::Channel`] is a
//! `tower::Service<Request>`). Services floor: it names the client.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use crate::calls::stream::BridgedCall;
use crate::client::Client;
use crate::metadata::{Metadata, MetadataSlot};
use crate::status::Error;
use crate::types::Encoded;

/// One unary call as a tower service sees it: what client layers (timeout, concurrency limit,
/// [`crate::retry::Idempotent`]) get to look at. Cheap to clone (retries clone it).
#[derive(Debug, Clone)]
pub struct Request {
    /// The method's operation number (the generated `foo::METHOD` constants).
    pub op: u16,
    /// The method's gRPC path (`/package.Service/Method`), as generated clients give it; empty
    /// for a call made by operation number alone. Layers can name the call with it (tower
    /// layers of tonic read the same from the request's URI).
    pub path: &'static str,
    /// The encoded request message.
    pub body: Bytes,
    /// The call's timeout, when the handle has one (sent to the server as a deadline when it
    /// takes them).
    pub timeout: Option<Duration>,
    /// Request metadata.
    pub metadata: Option<Arc<Metadata>>,
}

// Defined beside the client's calls, which make it (no conversion, no extra async layer).
pub use crate::calls::client::Reply;

/// Keeps [`Caller`] frpc's: implemented here for the client and channel, and by the gRPC
/// face's `GrpcChannel` (which names this, not the other way round).
pub(crate) mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::Client {}
    impl Sealed for crate::Channel {}
}

/// What a generated client (`FooClient<T>`) calls through: a [`Client`] (one connection, the
/// default: `FooClient` is `FooClient<frpc::Client>`) or a [`crate::Channel`] (reconnecting,
/// balanced over several servers, with client layers), or, with the `grpc` feature, a
/// `frpc::grpc::GrpcChannel` (unary and streaming calls to any gRPC server). Sealed: frpc implements it for
/// those.
pub trait Caller: sealed::Sealed + Clone + Send + Sync + 'static {
    /// A handle whose calls time out after `timeout`. A timeout over a year counts as a year
    /// (so `Duration::MAX` is a safe "no limit"); a zero one fails the calls with
    /// [`crate::Error::Config`].
    fn with_timeout(&self, timeout: Duration) -> Self;

    /// A handle whose calls carry `metadata` (added to what it already carries).
    fn with_metadata(&self, metadata: Metadata) -> Self;

    /// A handle whose calls leave their response metadata in `slot`: a unary call's when its
    /// reply comes; a streaming call's when the server's end comes over fRPC, the headers when
    /// they come and then headers and trailers on a `GrpcChannel`.
    fn with_response_metadata(&self, slot: &MetadataSlot) -> Self;

    /// Makes one unary call by operation number: `encode` writes the request in protobuf
    /// (`true`) or polyglot, as the connection the call goes to negotiated.
    #[doc(hidden)]
    fn call(
        &self,
        op: u16,
        encode: impl FnOnce(bool) -> Bytes + Send,
    ) -> impl Future<Output = Result<Reply, Error>> + Send;

    /// Makes one unary call to the method with operation number `op` and gRPC path `path`
    /// (`/package.Service/Method`; generated clients call this): fRPC goes by `op`, gRPC by
    /// `path`.
    #[doc(hidden)]
    fn call_at(
        &self,
        op: u16,
        path: &'static str,
        encode: impl FnOnce(bool) -> Bytes + Send,
    ) -> impl Future<Output = Result<Reply, Error>> + Send {
        let _ = path;
        self.call(op, encode)
    }

    /// [`Caller::call_at`] with the request possibly in parts ([`Encoded`]: large
    /// `bytes::Bytes` fields left in their own buffers): a [`Client`] writes them from there;
    /// the default copies them into one buffer.
    #[doc(hidden)]
    fn call_at_parts(
        &self,
        op: u16,
        path: &'static str,
        encode: impl FnOnce(bool) -> Encoded + Send,
    ) -> impl Future<Output = Result<Reply, Error>> + Send {
        self.call_at(op, path, |protobuf| encode(protobuf).into_bytes())
    }

    /// The connection a stream opens on, as a handle carrying this one's timeout and metadata.
    #[doc(hidden)]
    fn stream_client(&self) -> impl Future<Output = Result<Client, Error>> + Send;

    /// Whether streaming calls go over another protocol ([`Caller::open_bridged`]: a
    /// `GrpcChannel`'s) rather than on an fRPC connection ([`Caller::stream_client`]). A
    /// constant for each implementation, so the fRPC path pays nothing for the branch.
    #[doc(hidden)]
    fn bridged_streams(&self) -> bool {
        false
    }

    /// Opens a streaming call over another protocol to the method at gRPC path `path`:
    /// `request` is a server-streaming call's one request (frpc's protobuf content, sent and
    /// its request stream closed before this returns), `None` for client-streaming and bidi
    /// calls (their requests go through the call). Only where
    /// [`bridged_streams`](Caller::bridged_streams) is true.
    #[doc(hidden)]
    fn open_bridged(
        &self,
        path: &'static str,
        request: Option<Bytes>,
    ) -> impl Future<Output = Result<BridgedCall, Error>> + Send {
        let _ = (path, request);
        std::future::ready(Err(Error::Config(
            "this caller opens streams on fRPC connections, not bridged".into(),
        )))
    }
}

impl Caller for Client {
    fn with_timeout(&self, timeout: Duration) -> Client {
        Client::with_timeout(self, timeout)
    }

    fn with_metadata(&self, metadata: Metadata) -> Client {
        Client::with_metadata(self, metadata)
    }

    fn with_response_metadata(&self, slot: &MetadataSlot) -> Client {
        Client::with_response_metadata(self, slot)
    }

    fn call(
        &self,
        op: u16,
        encode: impl FnOnce(bool) -> Bytes + Send,
    ) -> impl Future<Output = Result<Reply, Error>> + Send {
        self.call_at_parts(op, "", move |protobuf| encode(protobuf).into())
    }

    fn call_at_parts(
        &self,
        op: u16,
        path: &'static str,
        encode: impl FnOnce(bool) -> Encoded + Send,
    ) -> impl Future<Output = Result<Reply, Error>> + Send {
        let _ = path;
        // The request's encoding is the connection's: until the server answered the offer it
        // is not known, and a call made then waits for the answer (see `Client::negotiated`).
        match self.is_negotiated() {
            true => futures_util::future::Either::Left(self.unary(op, encode(self.protobuf_accepted()))),
            false => futures_util::future::Either::Right(Box::pin(self.unary_once_negotiated(op, encode))),
        }
    }

    async fn stream_client(&self) -> Result<Client, Error> {
        Ok(self.clone())
    }
}
