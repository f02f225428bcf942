//! The [`Service`] trait generated servers implement, and the method table they publish.
//! Services floor.

use bytes::Bytes;

use crate::calls::slot::UnarySlot;
use crate::calls::stream::ServerStream;
use crate::context::Context;
use crate::status::Status;
use crate::types::{BoxFuture, Encoded, MethodKind};

/// A method as the server routes it.
#[derive(Debug, Clone, Copy)]
pub struct MethodDesc {
    /// The method's proto name (`Echo`).
    pub name: &'static str,
    /// Its operation number (from 10, in file order).
    pub op: u16,
    /// Unary or which kind of stream.
    pub kind: MethodKind,
}

/// A service's full proto name (`package.Service`), known from its type: implemented by every
/// generated `FooServer<T>`, so health reporting names a service by type
/// ([`HealthReporter::set_serving_of`](crate::health::HealthReporter::set_serving_of)) and a
/// typo cannot go unnoticed. Like tonic's `NamedService`.
pub trait NamedService {
    /// The full name, as a client's health check asks for it.
    const NAME: &'static str;
}

/// Implemented by generated `FooServer<T>` types.
pub trait Service: Send + Sync + 'static {
    /// The full proto name (`package.Service`).
    fn name(&self) -> &'static str;
    /// Every method with its operation number.
    fn methods(&self) -> &'static [MethodDesc];
    /// Runs a unary method: the request content in, the encoded response out. A call over
    /// the gRPC face (its context says so) brings the bare protobuf message and its reply goes
    /// out as gRPC's message frame, so neither is copied; generated code does both, and the
    /// face also takes a reply of frpc's protobuf marker and the message (copying it).
    fn call_unary(&self, op: u16, ctx: Context, request: Bytes) -> BoxFuture<Result<Bytes, Status>>;
    /// [`Service::call_unary`] as the server runs it: the call's future placed in `slot`, which
    /// the connection keeps from one call to the next, so a future of the same layout as the
    /// last one (the same method, usually) costs no allocation; and the reply possibly in
    /// several parts ([`Encoded`]: large `bytes::Bytes` fields stay in their own buffers and go
    /// to the socket from there). Generated services implement it; the default runs
    /// `call_unary` in the slot (its boxed future inside).
    #[doc(hidden)]
    fn call_unary_in(&self, op: u16, ctx: Context, request: Bytes, slot: &mut UnarySlot) {
        let call = self.call_unary(op, ctx, request);
        slot.set(async move { call.await.map(Encoded::from) });
    }
    /// Runs a streaming method on a stream the client opened.
    fn call_streaming(&self, op: u16, ctx: Context, stream: ServerStream) -> BoxFuture<Result<(), Status>>;
    /// Whether every request and response type of every method has a protobuf encoding
    /// (frpc-codegen's services answer from their types). A server accepts the protobuf
    /// extension only when all its services do, so a client never sends protobuf to a type
    /// that reads only polyglot (a Rust-first service's).
    fn protobuf(&self) -> bool {
        false
    }
    /// The encoded `google.protobuf.FileDescriptorSet` describing this service (its .proto
    /// file and every file it imports), which frpc-codegen embeds as the package's
    /// `FILE_DESCRIPTOR_SET`; the server hands it to reflection clients (`frpc list`). Empty by
    /// default: Rust-first services and raw routes have no descriptors.
    fn file_descriptor_set(&self) -> &'static [u8] {
        &[]
    }
}
