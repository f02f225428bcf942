//! A health service like gRPC's `grpc.health.v1`: `Check` and `Watch` the serving status of
//! each service by name, what load balancers and probes ask. Services floor.
//!
//! A server adds it in one line and reports through a [`HealthReporter`]; [`HealthClient`]
//! asks. The messages are those of `proto/frpc/health/v1/health.proto` (package
//! `frpc.health.v1`, the same fields and enum as `grpc.health.v1`), encoded like any fRPC
//! message: polyglot, or protobuf where the connection negotiated it (`docs/extensions.md`
//! §10). The messages implement `prost::Message` by hand with the .proto's bytes, so adding
//! health to a server keeps protobuf on for its other services
//! ([`Client::protobuf_accepted`]).
//!
//! **Operation numbers.** fRPC numbers a service's methods from 10 in file order, so a fixed
//! service beside the user's needs numbers nobody else takes: `Check` is [`CHECK_OP`]
//! (`0xFF00`) and `Watch` is [`WATCH_OP`] (`0xFF01`), below `0xFFFF` (frpc's extension
//! negotiation). A service or raw route claiming either is refused by
//! [`Builder::build`](crate::Builder::build) like any double claim. A client generated from
//! the .proto by Go's fRPC generator would number them 10 and 11: other languages call the
//! two operations by these numbers (see `docs/health.md`).
//!
//! **Semantics**, as gRPC's, with one difference:
//! - The empty name `""` is the whole server: [`SERVING`](ServingStatus::Serving) from the
//!   start.
//! - `Check` of a name nobody reported answers
//!   [`SERVICE_UNKNOWN`](ServingStatus::ServiceUnknown) as a normal reply, where gRPC fails
//!   the call with `NOT_FOUND`: a plain fRPC client (Go) sees no status codes, and a reply
//!   reads the same from every client.
//! - `Watch` sends the current status at once, then each change, until the client stops or
//!   the server shuts down (the stream then ends). Changes made faster than the client reads
//!   are coalesced to the latest, in order (as grpc-go does); a name nobody reported starts at
//!   `SERVICE_UNKNOWN` and the stream goes on, so the watcher sees the service once it is
//!   reported.
//!
//! ```
//! use frpc::health::{HealthClient, ServingStatus};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let (reporter, health) = frpc::health::service();
//!     let server = frpc::Server::builder()
//!         .add_service(health) // beside the server's own services
//!         .bind("127.0.0.1:0")
//!         .await?;
//!     let addr = server.local_addr();
//!     tokio::spawn(server.serve());
//!
//!     let client = HealthClient::connect(addr).await?;
//!     assert_eq!(client.check("").await?, ServingStatus::Serving);
//!     assert_eq!(client.check("demo.Greeter").await?, ServingStatus::ServiceUnknown);
//!     let mut watch = client.watch("demo.Greeter").await?;
//!     assert_eq!(watch.message().await?.unwrap(), ServingStatus::ServiceUnknown);
//!
//!     reporter.set_serving("demo.Greeter");
//!     assert_eq!(client.check("demo.Greeter").await?, ServingStatus::Serving);
//!     assert_eq!(watch.message().await?.unwrap(), ServingStatus::Serving);
//!     reporter.set_not_serving("demo.Greeter");
//!     assert_eq!(watch.message().await?.unwrap(), ServingStatus::NotServing);
//!     Ok(())
//! }
//! ```

pub(crate) mod descriptor;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::net::ToSocketAddrs;
use tokio::sync::watch;

use crate::caller::Caller;
use crate::calls::stream::{ServerStream, StreamSender, Streaming};
use crate::client::Client;
use crate::codegen;
use crate::context::Context;
use crate::service::{MethodDesc, NamedService, Service};
use crate::status::{Error, Status};
use crate::types::{BoxFuture, MethodKind};

/// The health service's full proto name.
pub const SERVICE_NAME: &str = "frpc.health.v1.Health";
/// The operation number of `Check`.
pub const CHECK_OP: u16 = 0xFF00;
/// The operation number of `Watch`.
pub const WATCH_OP: u16 = 0xFF01;
/// `Check`'s gRPC path: through a `frpc::grpc::GrpcChannel` the client calls gRPC's standard
/// health service (frpc's gRPC face serves this service under that name).
const GRPC_CHECK: &str = "/grpc.health.v1.Health/Check";
/// `Watch`'s gRPC path.
const GRPC_WATCH: &str = "/grpc.health.v1.Health/Watch";

/// Names nobody reported that watchers may keep at once (each costs an entry); a `Watch` of
/// one more gets `SERVICE_UNKNOWN` and no later changes.
const MAX_WATCHED_UNKNOWN: usize = 1024;

/// The serving status of a service (`HealthCheckResponse.ServingStatus`).
#[derive(frpc_macros::Message, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ServingStatus {
    /// `UNKNOWN` (0): not known yet.
    #[default]
    Unknown,
    /// `SERVING` (1): takes calls.
    Serving,
    /// `NOT_SERVING` (2): does not take calls now.
    NotServing,
    /// `SERVICE_UNKNOWN` (3): no status was ever reported under this name.
    ServiceUnknown,
}

/// The request of `Check` and `Watch`: which service (`""`: the whole server).
///
/// Also a `prost::Message` with the bytes of the .proto's `string service = 1`.
#[derive(frpc_macros::Message, Clone, Debug, Default, PartialEq, Eq)]
#[frpc(protobuf)]
pub struct HealthCheckRequest {
    /// The service's full proto name (`package.Service`), or `""` for the whole server.
    pub service: String,
}

/// The answer of `Check`, and each message of `Watch`.
///
/// Also a `prost::Message` with the bytes of the .proto's `ServingStatus status = 1`. A
/// status number this version does not declare (from a peer with a newer .proto) decodes from
/// protobuf as [`ServingStatus::Unknown`], what prost's generated `status()` getter answers
/// for it; in polyglot, whose enums travel as declaration indices, an undeclared index fails
/// the decode (`DecodeError::UnknownEnumIndex`), as for every enum held as its Rust type.
#[derive(frpc_macros::Message, Clone, Debug, Default, PartialEq, Eq)]
#[frpc(protobuf)]
pub struct HealthCheckResponse {
    /// The service's serving status.
    #[frpc(enumeration)]
    pub status: ServingStatus,
}

// The protobuf encoding of the two messages, by hand as prost would derive it from
// `proto/frpc/health/v1/health.proto` (proto3: a field at its default is not written; unknown
// fields are skipped). `codegen-tests/tests/health.rs` checks the bytes against the code
// frpc-codegen generates from the .proto.

impl prost::Message for HealthCheckRequest {
    fn encode_raw(&self, buf: &mut impl bytes::BufMut) {
        if !self.service.is_empty() {
            prost::encoding::string::encode(1, &self.service, buf);
        }
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: prost::encoding::WireType,
        buf: &mut impl bytes::Buf,
        ctx: prost::encoding::DecodeContext,
    ) -> Result<(), prost::DecodeError> {
        match tag {
            1 => prost::encoding::string::merge(wire_type, &mut self.service, buf, ctx),
            _ => prost::encoding::skip_field(wire_type, tag, buf, ctx),
        }
    }

    fn encoded_len(&self) -> usize {
        match self.service.is_empty() {
            true => 0,
            false => prost::encoding::string::encoded_len(1, &self.service),
        }
    }

    fn clear(&mut self) {
        self.service.clear();
    }
}

impl prost::Message for HealthCheckResponse {
    fn encode_raw(&self, buf: &mut impl bytes::BufMut) {
        let number = i32::from(self.status);
        if number != 0 {
            prost::encoding::int32::encode(1, &number, buf);
        }
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: prost::encoding::WireType,
        buf: &mut impl bytes::Buf,
        ctx: prost::encoding::DecodeContext,
    ) -> Result<(), prost::DecodeError> {
        match tag {
            1 => {
                let mut number = 0;
                prost::encoding::int32::merge(wire_type, &mut number, buf, ctx)?;
                // An undeclared number: `Unknown`, as prost's `status()` getter reads it.
                self.status = ServingStatus::try_from(number).unwrap_or_default();
                Ok(())
            }
            _ => prost::encoding::skip_field(wire_type, tag, buf, ctx),
        }
    }

    fn encoded_len(&self) -> usize {
        match i32::from(self.status) {
            0 => 0,
            number => prost::encoding::int32::encoded_len(1, &number),
        }
    }

    fn clear(&mut self) {
        self.status = ServingStatus::default();
    }
}

/// A new health service: the reporter to set statuses with, and the service to add to a
/// server ([`crate::Builder::add_service`]). The whole server (`""`) starts as `SERVING`.
pub fn service() -> (HealthReporter, HealthServer) {
    let statuses = Arc::new(Statuses::default());
    statuses.set("", ServingStatus::Serving);
    (
        HealthReporter {
            statuses: statuses.clone(),
        },
        HealthServer { statuses },
    )
}

/// The statuses by service name, each in a watch channel its watchers subscribe to.
#[derive(Default)]
struct Statuses {
    by_name: Mutex<HashMap<String, watch::Sender<ServingStatus>>>,
}

impl Statuses {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, watch::Sender<ServingStatus>>> {
        self.by_name.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn get(&self, service: &str) -> ServingStatus {
        self.lock()
            .get(service)
            .map_or(ServingStatus::ServiceUnknown, |sender| *sender.borrow())
    }

    /// Sets a status; watchers are woken only when it changes.
    fn set(&self, service: &str, status: ServingStatus) {
        let mut by_name = self.lock();
        match by_name.get(service) {
            Some(sender) => {
                sender.send_if_modified(|current| {
                    let changed = *current != status;
                    *current = status;
                    changed
                });
            }
            None => {
                by_name.insert(service.to_owned(), watch::Sender::new(status));
            }
        }
    }

    /// A receiver of `service`'s status, made `SERVICE_UNKNOWN` if nobody reported it (`None`
    /// when too many unknown names are watched already).
    fn subscribe(&self, service: &str) -> Option<watch::Receiver<ServingStatus>> {
        let mut by_name = self.lock();
        if let Some(sender) = by_name.get(service) {
            return Some(sender.subscribe());
        }
        let unknown =
            |sender: &watch::Sender<ServingStatus>| *sender.borrow() == ServingStatus::ServiceUnknown;
        if by_name.values().filter(|sender| unknown(sender)).count() >= MAX_WATCHED_UNKNOWN {
            // Names whose watchers were dropped without unsubscribing (a cancelled stream).
            by_name.retain(|_, sender| !unknown(sender) || sender.receiver_count() > 0);
            if by_name.values().filter(|sender| unknown(sender)).count() >= MAX_WATCHED_UNKNOWN {
                return None;
            }
        }
        let sender = watch::Sender::new(ServingStatus::ServiceUnknown);
        let receiver = sender.subscribe();
        by_name.insert(service.to_owned(), sender);
        Some(receiver)
    }

    /// Forgets a name a watcher made, once nobody reported it and nobody watches it.
    fn unsubscribe(&self, service: &str, receiver: watch::Receiver<ServingStatus>) {
        drop(receiver);
        let mut by_name = self.lock();
        if let Some(sender) = by_name.get(service)
            && *sender.borrow() == ServingStatus::ServiceUnknown
            && sender.receiver_count() == 0
        {
            by_name.remove(service);
        }
    }
}

/// Sets the serving statuses a [`HealthServer`] reports. Cheap to clone.
#[derive(Clone)]
pub struct HealthReporter {
    statuses: Arc<Statuses>,
}

impl fmt::Debug for HealthReporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HealthReporter")
            .field("services", &self.statuses.lock().len())
            .finish()
    }
}

impl HealthReporter {
    /// Reports `service` (its full proto name, `""` for the whole server) as `SERVING`.
    pub fn set_serving(&self, service: &str) {
        self.set_status(service, ServingStatus::Serving);
    }

    /// Reports `service` as `NOT_SERVING`.
    pub fn set_not_serving(&self, service: &str) {
        self.set_status(service, ServingStatus::NotServing);
    }

    /// Reports `service`'s status; watchers see it if it changed.
    pub fn set_status(&self, service: &str, status: ServingStatus) {
        self.statuses.set(service, status);
    }

    /// The status `Check` answers for `service`.
    pub fn status(&self, service: &str) -> ServingStatus {
        self.statuses.get(service)
    }

    /// Reports the service `S` (a generated `FooServer<T>`, named by its type) as `SERVING`:
    /// `reporter.set_serving_of::<EchoServer<MyEcho>>()`. The name comes from the .proto (or
    /// the `#[frpc::service]` trait), so a misspelt service does not compile.
    pub fn set_serving_of<S: NamedService>(&self) {
        self.set_status(S::NAME, ServingStatus::Serving);
    }

    /// Reports the service `S` as `NOT_SERVING`.
    pub fn set_not_serving_of<S: NamedService>(&self) {
        self.set_status(S::NAME, ServingStatus::NotServing);
    }

    /// Reports the service `S`'s status.
    pub fn set_status_of<S: NamedService>(&self, status: ServingStatus) {
        self.set_status(S::NAME, status);
    }

    /// Reports every service, the whole server included, as `NOT_SERVING` (before a graceful
    /// shutdown, so balancers move away first), as grpc-go's `Shutdown`. Statuses set later
    /// still apply. Names only watched, never reported, stay unknown.
    pub fn set_all_not_serving(&self) {
        let by_name = self.statuses.lock();
        for sender in by_name.values() {
            sender.send_if_modified(|current| {
                // A watcher's placeholder: reporting it would keep it (and its name) for ever.
                if *current == ServingStatus::ServiceUnknown {
                    return false;
                }
                let changed = *current != ServingStatus::NotServing;
                *current = ServingStatus::NotServing;
                changed
            });
        }
    }
}

/// The health service, to add to a server ([`crate::Builder::add_service`]); made by
/// [`service`].
pub struct HealthServer {
    statuses: Arc<Statuses>,
}

impl fmt::Debug for HealthServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HealthServer").finish_non_exhaustive()
    }
}

static METHODS: [MethodDesc; 2] = [
    MethodDesc {
        name: "Check",
        op: CHECK_OP,
        kind: MethodKind::Unary,
    },
    MethodDesc {
        name: "Watch",
        op: WATCH_OP,
        kind: MethodKind::ServerStreaming,
    },
];

impl Service for HealthServer {
    fn name(&self) -> &'static str {
        SERVICE_NAME
    }

    fn methods(&self) -> &'static [MethodDesc] {
        &METHODS
    }

    fn call_unary(&self, op: u16, ctx: Context, request: Bytes) -> BoxFuture<Result<Bytes, Status>> {
        if op != CHECK_OP {
            return codegen::unimplemented_unary(op);
        }
        let statuses = self.statuses.clone();
        codegen::unary(ctx, request, move |_, request: HealthCheckRequest| async move {
            Ok(HealthCheckResponse {
                status: statuses.get(&request.service),
            })
        })
    }

    fn call_streaming(&self, op: u16, ctx: Context, stream: ServerStream) -> BoxFuture<Result<(), Status>> {
        if op != WATCH_OP {
            return codegen::unimplemented_streaming(op);
        }
        let statuses = self.statuses.clone();
        codegen::server_streaming(ctx, stream, move |ctx, request: HealthCheckRequest, out| {
            watch_status(statuses, ctx, request.service, out)
        })
    }

    /// The health .proto, so a server that reflects its services lists health too (one whose
    /// other services have no descriptors offers no reflection: see `server.rs`).
    fn file_descriptor_set(&self) -> &'static [u8] {
        descriptor::frpc_set()
    }

    /// Both messages have a protobuf encoding (`#[frpc(protobuf)]`), so health keeps a
    /// server's protobuf extension on; the same rule as generated services.
    fn protobuf(&self) -> bool {
        <HealthCheckRequest as codegen::Message>::PROTOBUF
            && <HealthCheckResponse as codegen::Message>::PROTOBUF
    }
}

/// A watch ends when the client goes (or its call is cancelled) or as soon as the server
/// begins shutting down, without waiting out the shutdown grace.
async fn watch_over(ctx: &Context) {
    tokio::select! {
        _ = ctx.cancelled() => {}
        _ = ctx.shutting_down() => {}
    }
}

/// `Watch`: the status now, then each change, until the client goes or the server stops.
async fn watch_status(
    statuses: Arc<Statuses>,
    ctx: Context,
    service: String,
    out: StreamSender<HealthCheckResponse>,
) -> Result<(), Status> {
    let Some(mut receiver) = statuses.subscribe(&service) else {
        let status = ServingStatus::ServiceUnknown;
        out.send(HealthCheckResponse { status }).await?;
        watch_over(&ctx).await;
        return Ok(());
    };
    let result = async {
        loop {
            let status = *receiver.borrow_and_update();
            match out.send(HealthCheckResponse { status }).await {
                // A change made as the shutdown began (`set_all_not_serving()` just before it)
                // still reaches the watchers, as the stream's last message.
                Err(Error::ShuttingDown) => {
                    return out
                        .send_last(HealthCheckResponse { status })
                        .await
                        .map_err(Status::from);
                }
                sent => sent?,
            }
            tokio::select! {
                changed = receiver.changed() => if changed.is_err() { return Ok(()) },
                _ = watch_over(&ctx) => {
                    if receiver.has_changed().unwrap_or(false) {
                        let status = *receiver.borrow_and_update();
                        out.send_last(HealthCheckResponse { status }).await?;
                    }
                    return Ok(());
                }
            }
        }
    }
    .await;
    statuses.unsubscribe(&service, receiver);
    result
}

/// A client of the health service, through a [`Client`] (the default) or a [`crate::Channel`].
/// Cheap to clone.
#[derive(Debug, Clone)]
pub struct HealthClient<T = Client> {
    client: T,
}

impl HealthClient {
    /// Connects to `addr` with the default configuration.
    pub async fn connect(addr: impl ToSocketAddrs) -> Result<HealthClient, Error> {
        Ok(HealthClient::new(Client::connect(addr).await?))
    }
}

impl<T: Caller> HealthClient<T> {
    /// A health client calling through `client`: a [`Client`]'s connection, a
    /// [`crate::Channel`] (one reconnecting endpoint, or balanced), or with the `grpc`
    /// feature a `frpc::grpc::GrpcChannel` (any gRPC server's `grpc.health.v1.Health`).
    pub fn new(client: T) -> HealthClient<T> {
        HealthClient { client }
    }

    /// What it calls through.
    pub fn client(&self) -> &T {
        &self.client
    }

    /// The serving status of `service` (`""`: the whole server); `SERVICE_UNKNOWN` for a name
    /// nobody reported (through a `frpc::grpc::GrpcChannel`, gRPC's answer: a `NOT_FOUND`
    /// error).
    pub async fn check(&self, service: &str) -> Result<ServingStatus, Error> {
        let request = HealthCheckRequest {
            service: service.to_owned(),
        };
        let response: HealthCheckResponse =
            codegen::call_unary_at(&self.client, CHECK_OP, GRPC_CHECK, request).await?;
        Ok(response.status)
    }

    /// Watches `service`: its status now, then each change, until the stream is dropped or
    /// the server shuts down (the stream ends). Each item is a [`ServingStatus`], as
    /// [`check`](Self::check) returns.
    pub async fn watch(&self, service: &str) -> Result<HealthWatch, Error> {
        let request = HealthCheckRequest {
            service: service.to_owned(),
        };
        let stream = codegen::call_server_streaming_at(&self.client, WATCH_OP, GRPC_WATCH, &request).await?;
        Ok(HealthWatch { stream })
    }

    /// [`check`](Self::check) of the service `S`, named by its type.
    pub async fn check_of<S: NamedService>(&self) -> Result<ServingStatus, Error> {
        self.check(S::NAME).await
    }

    /// [`watch`](Self::watch) of the service `S`, named by its type.
    pub async fn watch_of<S: NamedService>(&self) -> Result<HealthWatch, Error> {
        self.watch(S::NAME).await
    }
}

/// A health `Watch` stream ([`HealthClient::watch`]): the service's status now, then each
/// change. Read with [`message`](Self::message) or as a `futures::Stream`.
#[derive(Debug)]
pub struct HealthWatch {
    stream: Streaming<HealthCheckResponse>,
}

impl HealthWatch {
    /// The next status; `Ok(None)` once the server has ended the watch (it shuts down).
    /// Cancel-safe, as [`Streaming::message`].
    pub async fn message(&mut self) -> Result<Option<ServingStatus>, Error> {
        Ok(self.stream.message().await?.map(|response| response.status))
    }
}

impl futures_core::Stream for HealthWatch {
    type Item = Result<ServingStatus, Error>;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let stream = std::pin::Pin::new(&mut self.get_mut().stream);
        stream
            .poll_next(cx)
            .map(|item| item.map(|result| result.map(|response| response.status)))
    }
}
