//! [`BridgedCall`]: a client's streaming call another protocol carries (`GrpcChannel`'s),
//! as that protocol's client opened it, until it is split into the user's typed handles.

use std::fmt;
use std::time::Duration;

use frpc_wire::polyglot::Message;
use tokio::time::Instant;

use crate::config::DecodeLimits;

use super::bridge::{BridgedSender, BridgedStreaming, Keep, Outbox, Source};
use super::inbound::{Receiving, Streaming};
use super::outbound::{Sending, StreamSender};

/// A client's streaming call another protocol carries, before it is typed: the channel its
/// requests go into, the source of its replies. Made by the protocol's client, split into the
/// user's handles by [`BridgedCall::split`].
#[doc(hidden)]
pub struct BridgedCall {
    /// Where requests go: `None` when the request already went (server streaming).
    pub(crate) requests: Option<Outbox>,
    /// The replies, then the call's outcome.
    pub(crate) replies: Source,
    /// What decoding a reply may cost.
    pub(crate) limits: DecodeLimits,
    /// The largest request message (protobuf bytes).
    pub(crate) max_encoding: usize,
    /// The call's deadline and timeout, for sends.
    pub(crate) deadline: Option<(Instant, Duration)>,
    /// Keeps the call alive while the request sender lives.
    pub(crate) keep: Keep,
}

impl fmt::Debug for BridgedCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BridgedCall").finish_non_exhaustive()
    }
}

impl BridgedCall {
    /// The call's typed handles: requests in protobuf into the channel, replies from the
    /// source.
    pub(crate) fn split<Req: Message, Resp: Message>(self) -> (StreamSender<Req>, Streaming<Resp>) {
        let sender = BridgedSender::client(self.requests, self.max_encoding, self.deadline, self.keep);
        let inbound = BridgedStreaming::new(self.replies, self.limits, false);
        (
            StreamSender(Sending::Bridged(sender)),
            Streaming(Receiving::Bridged(inbound)),
        )
    }
}
