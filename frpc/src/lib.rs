//! frpc: a fast async RPC framework that speaks Go fRPC's wire protocol (Frisbee framing and
//! polyglot messages), so Rust and Go services call each other byte for byte.
//!
//! Services come from proto3 files through `frpc-codegen` in `build.rs`; this crate is the
//! runtime they run on:
//!
//! - [`Server`]: routes each request by operation number to its service and runs handlers a task
//!   per RPC ([`Concurrency::PerRpc`]), in order per connection ([`Concurrency::Inline`]) or with
//!   a global limit; graceful shutdown.
//! - [`Client`]: one multiplexed connection shared by every generated service client, with
//!   timeouts covering whole calls; cheap to clone. The connection lives while any clone or
//!   stream handle does.
//! - [`Channel`] from [`Endpoint`]s: a connection that reconnects with backoff, or many servers
//!   balanced by tower's power of two choices ([`Channel::balance_list`],
//!   [`Channel::balance_channel`], [`discover`] by DNS), with client layers and
//!   [`retry::Idempotent`]; generated clients take either (`FooClient::new(channel)`).
//! - Streams: [`Streaming`] in, [`StreamSender`] out, [`ClientStreamingCall`] and [`BidiCall`]
//!   on the client, each splitting into a [`RequestSender`] and its receiving half.
//! - Heartbeats like Go's (PING every 500 ms, a silent peer dropped after 5 s).
//! - Extensions beyond fRPC between frpc peers, negotiated per connection and invisible to Go
//!   peers (`docs/extensions.md`): cancellation ([`Context::cancelled`] fires and the handler is
//!   dropped when the client gives up), deadlines ([`Context::deadline`]), status codes
//!   ([`Code`], [`Status::code`]) and [`Metadata`] ([`Client::with_metadata`],
//!   [`Context::metadata`]), and generated messages in protobuf instead of polyglot, so schemas
//!   evolve by field number ([`Client::protobuf_accepted`]; docs/guide/schema-evolution.md).
//!   Streams between frpc peers are flow controlled (a slow consumer slows its producer:
//!   `stream_window` in [`ConnectionConfig`]) and a streaming call resolves once the server
//!   has started its handler, or fails with the server's status.
//! - Middleware: [`Builder::layer`] puts any `tower::Layer` (concurrency and rate limits, load
//!   shedding, timeouts, your own auth) around every call, seeing a [`CallRequest`];
//!   [`Builder::interceptor`] is the shorthand for "look at the call, maybe reject it"
//!   ([`middleware`]); health checks pass server-wide interceptors unless
//!   [`Builder::intercept_health`]. One service's own layers and interceptors:
//!   `FooServer::new(svc).with_interceptor(..)` / `.layer(..)` ([`LayeredService`]).
//! - [`health`]: a health service like gRPC's `grpc.health.v1` (`Check`, `Watch`) that a
//!   server adds in one line, and its client for balancers and probes.
//!
//! A service, a server on a free port and a client calling it. With a .proto, `build.rs` runs
//! `frpc_codegen::compile` and `frpc::include_proto!("package")` brings in the same trait,
//! `…Server` and `…Client` (see the README); without one, `#[frpc::service]` on a trait and
//! `#[derive(frpc::Message)]` on its messages generate them (feature `macros`, on by default):
//!
#![cfg_attr(feature = "macros", doc = "```")]
#![cfg_attr(not(feature = "macros"), doc = "```ignore")]
//! #[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
//! pub struct Text {
//!     pub value: String,
//! }
//!
//! #[frpc::service(package = "demo")]
//! pub trait Greeter {
//!     async fn greet(&self, ctx: &frpc::Context, request: Text) -> Result<Text, frpc::Status>;
//! }
//!
//! struct Hello;
//!
//! impl Greeter for Hello {
//!     async fn greet(&self, _ctx: &frpc::Context, request: Text) -> Result<Text, frpc::Status> {
//!         Ok(Text { value: format!("hello, {}", request.value) })
//!     }
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let server = frpc::Server::builder()
//!         .add_service(GreeterServer::new(Hello))
//!         .bind("127.0.0.1:0")
//!         .await?;
//!     let addr = server.local_addr();
//!     tokio::spawn(server.serve());
//!
//!     let client = GreeterClient::connect(addr).await?;
//!     let reply = client.greet(Text { value: "frpc".into() }).await?;
//!     assert_eq!(reply.value, "hello, frpc");
//!     Ok(())
//! }
//! ```
#![deny(missing_docs)]
// The docs link to items that exist only with a feature (`health` with `macros`, `Builder::tls`
// with `tls`…): built without one, such a link has no target. Every link is checked where all
// exist, by CI's `cargo doc --all-features` (what docs.rs builds); a build with fewer features
// would only report those. The examples that use the macros are likewise `ignore`d without
// `macros` (`cfg_attr(.., doc = "```ignore")` fences), so the doc tests pass with any features.
#![cfg_attr(
    not(all(feature = "macros", feature = "tls", feature = "metrics", feature = "grpc")),
    allow(rustdoc::broken_intra_doc_links)
)]

// `#[derive(frpc::Message)]` expands to `::frpc::` paths; this makes them resolve inside frpc
// itself (the health service's messages).
#[cfg(feature = "macros")]
extern crate self as frpc;

// The floors, bottom up; each module imports only from the floors below it.
// Leaves: no imports from the crate.
mod config;
mod hash;
mod notify;
mod status;
mod types;
// Metadata: imports only the leaf `status`.
mod metadata;
// Transport: one Frisbee connection (reader, batching writer, heartbeat, socket handback).
mod transport;
// Calls: client in-flight table, server dispatch and concurrency, streams, raw packets.
mod calls;
// Services: what users and generated code touch.
mod caller;
pub mod channel;
mod client;
#[doc(hidden)]
pub mod codegen;
mod context;
pub mod discover;
#[cfg(feature = "grpc")]
pub mod grpc;
#[cfg(feature = "macros")]
pub mod health;
mod layered;
#[cfg(feature = "metrics")]
pub mod metrics;
pub mod middleware;
pub mod retry;
mod server;
mod service;
#[cfg(feature = "tls")]
pub mod tls;

pub use caller::Caller;
pub use calls::raw::{PacketSender, RawPackets};
pub use calls::stream::{
    BidiCall, ClientStreamingCall, ClientStreamingResponse, RequestSender, StreamSender, Streaming,
};
pub use channel::{Channel, Endpoint};
pub use client::{Client, Negotiated};
pub use config::{ClientConfig, Concurrency, ConnectionConfig, DecodeLimits, ServerConfig};
pub use context::Context;
pub use frpc_wire as wire;
pub use frpc_wire::Framing;
pub use layered::LayeredService;
pub use metadata::{Metadata, MetadataSlot};
pub use middleware::{CallRequest, CallResponse};
pub use server::{Bound, Builder, Server};
pub use service::NamedService;
pub use status::{CloseReason, Code, Error, Status};
pub use transport::handback::TakeConnection;
pub use types::MethodKind;

#[cfg(feature = "macros")]
pub use frpc_macros::{Message, service};

/// Includes the code `frpc-codegen` generated for a proto package (from `OUT_DIR`).
///
/// ```ignore
/// pub mod echo {
///     frpc::include_proto!("echo");
/// }
/// ```
///
/// A package whose name holds a Rust keyword is written with raw identifiers, as prost and
/// tonic write it: `package type.async;` is `frpc::include_proto!("r#type.r#async")`.
#[macro_export]
macro_rules! include_proto {
    ($package:tt) => {
        include!(concat!(env!("OUT_DIR"), concat!("/", $package, ".rs")));
    };
}
