//! Streams (spec §2.8, §3.5): the per-connection stream table, the inbound [`Streaming`] and the
//! outbound [`StreamSender`], and the client's call handles. Calls floor: the table is owned by
//! the client's and the server's dispatchers, and handles send through the transport.
//!
//! Every message is one `STREAM` packet (op 2, id = stream id), in polyglot or, on a stream
//! opened for it between frpc peers, in protobuf (`calls::codec`). A side ends its half with the
//! Error `EOF`; a failing side sends its error and then `EOF`. Go never sends a Frisbee stream
//! close, and neither do we in normal operation.
//!
//! **Flow control** (frpc peers that negotiated it, `docs/extensions.md` §9). Credit in
//! messages, per stream and direction: a sender holds a [`Semaphore`] of credit (one permit per
//! data message; errors and `EOF` take none) that the peer's CREDIT packets refill, so a slow
//! consumer makes its producer's `send` wait, never the connection. Where negotiated (§9.1),
//! credit counts bytes too (`bytes`: the sender sends while its byte credit is above zero, the
//! receiver counts the same and grants every half window of messages or of bytes). The receiver's reader takes
//! one message of the peer's credit per data message (an atomic, under the table lock it holds
//! anyway); the consumer gives credit back every half window it reads. The inbound buffer holds
//! the whole window, so it never overflows; a peer sending past its credit gets the stream failed
//! (RESOURCE_EXHAUSTED). The opener starts with one message of credit and learns the server's
//! window from OPENED. Once the stream ends (the server's error or `EOF` on the client, the
//! stream forgotten, the connection closed) the credit closes and waiting sends go on as
//! without flow control.
//!
//! **Byte budgets.** Each buffered inbound message holds its share of its connection's
//! `ConnectionConfig::max_buffered_bytes` and, on a server, of
//! `ServerConfig::max_buffered_stream_bytes` (`common::Budget`) until its consumer takes it;
//! the connection's reader waits for the shares before routing, so a full budget stops reading
//! that connection rather than growing memory.
//!
//! **Without flow control** (Go peers, extensions off). Each inbound stream buffers up to
//! `stream_buffer` messages. While a consumer is that far behind, the reader waits for room
//! (`StreamTable::deliver`): the connection is not read, as Go's reader blocks on a full stream
//! queue. Failing the stream instead (as frpc did) failed a Go client's burst of 1,024 small
//! messages however fast its handler read: the reader routes a whole read buffer's packets
//! before the handler runs.
//!
//! **Open acknowledgement** (`docs/extensions.md` §8). The client's open header asks for OPENED;
//! the server sends it once the handler's first poll is over ([`StreamSender::started`]), and the
//! client's call waits for it ([`Streaming::opened`]: an empty mark in the inbound channel, or
//! the stream's first content), or fails with the refusal's status.
//!
//! **Late packets.** A stream is forgotten as soon as this side is done with it (its handles
//! dropped, its consumer gone): a handler may reply before reading its requests to the end, and
//! the peer keeps sending until it learns. What arrives afterwards for an id nobody here knows
//! and is not a stream-open message (`09 <method>`: no message, error or `EOF` starts with that
//! byte) is dropped, on both sides and for every streaming kind, as Go does; an empty close is
//! ignored. Nothing is remembered about finished streams, so memory stays bounded by the open
//! ones. A table entry is only removed by the handles of the stream that made it, so an id
//! reused by a newer stream is never forgotten by an older stream's handles.
//!
//! **Bridged streams** (`bridge`, the gRPC face and `GrpcChannel`). A [`Streaming`] and a
//! [`StreamSender`] have a second backend: a source of inbound contents and a channel of
//! outbound ones another protocol carries (a handler's requests and replies on the gRPC face,
//! a client call's replies and requests on `GrpcChannel`). None of the above applies to them (no table, credit or
//! packets); an fRPC stream pays one enum match per message for it.
//!
//! **Lifetime.** A client stream's handles hold the client's keep-alive: the connection stays
//! open while any of them lives, even once every `Client` clone is gone. With the client's
//! `stream_idle_timeout`, each message a client stream waits for (received, or room to send)
//! fails with [`Error::Timeout`] after that long, which ends the stream.

mod bridge;
mod bridged_call;
mod bytes;
mod client;
mod common;
#[cfg(feature = "metrics")]
mod counts;
mod guard;
mod inbound;
mod outbound;
mod server;
mod table;

#[cfg(feature = "grpc")]
pub(crate) use self::bridge::{Bridge, Headers, Keep, Outbox, Outgoing, Source as BridgeSource};
pub use self::bridged_call::BridgedCall;
pub(crate) use self::client::open;
pub use self::client::{BidiCall, ClientStreamingCall, ClientStreamingResponse, RequestSender};
pub(crate) use self::common::{Budget, ClientSide, StreamExt, StreamSetup};
#[cfg(feature = "metrics")]
pub(crate) use self::counts::{MessageCounts, Observed, StreamObserver};
pub use self::inbound::Streaming;
pub use self::outbound::StreamSender;
pub use self::server::ServerStream;
pub(crate) use self::table::{Routed, StreamTable};
#[cfg(feature = "grpc")]
pub(crate) use self::table::{reserve_open_stream, too_many_open_streams};
