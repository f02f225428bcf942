//! What every part of a stream uses: why a stream ended, which contents are control messages,
//! how a stream is set up, and the error and open messages.

use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use frpc_wire::polyglot::{self, EOF_MESSAGE, encode};
use frpc_wire::{Packet, op};
use tokio::sync::{Notify, Semaphore};

use crate::calls::budget::Share;
use crate::calls::codec;
use crate::calls::ext::{self, CallState};
use crate::calls::held::Hold;
use crate::metadata::Metadata;
use crate::status::{Code, Error, Status};
use crate::transport::connection::Connection;

/// The live senders of a server's stream (fRPC or bridged), and a signal when one goes: a
/// handler that returned `Ok` while a task it spawned holds one leaves its stream open until
/// the last goes.
#[derive(Debug, Default)]
pub(super) struct SenderCount {
    count: AtomicUsize,
    gone: Notify,
}

impl SenderCount {
    pub(super) fn add(&self) {
        self.count.fetch_add(1, Ordering::AcqRel);
    }

    pub(super) fn remove(&self) {
        self.count.fetch_sub(1, Ordering::AcqRel);
        self.gone.notify_one();
    }

    /// Waits until one sender is left, or `stop` resolves first (its error then).
    pub(super) async fn alone<E>(&self, stop: impl std::future::Future<Output = E>) -> Result<(), E> {
        tokio::pin!(stop);
        // `notify_one` keeps a wake-up for a sender that goes between the look and the wait.
        while self.count.load(Ordering::Acquire) > 1 {
            tokio::select! {
                () = self.gone.notified() => {}
                err = &mut stop => return Err(err),
            }
        }
        Ok(())
    }
}

/// Why an inbound stream ended without an `EOF`.
#[derive(Debug, Clone)]
pub(super) enum EndReason {
    PeerClosed,
    TooLarge {
        len: u32,
        max: u32,
    },
    ConnectionClosed(Option<String>),
    /// The peer sent more data messages than the credit this side granted (flow control).
    CreditExceeded,
}

impl EndReason {
    /// This side sends nothing more on the stream: it failed it (and sent the peer its error
    /// and `EOF`), or the peer closed it (a Frisbee close, to which nothing goes back; a
    /// handler that sent on after its client closed its stream ran for ever).
    pub(super) fn failed_here(&self) -> bool {
        matches!(
            self,
            EndReason::TooLarge { .. } | EndReason::CreditExceeded | EndReason::PeerClosed
        )
    }

    /// What the stream's handles report for this end of stream `id`.
    pub(super) fn error(&self, id: u16) -> Error {
        match self {
            EndReason::TooLarge { len, max } => Error::TooLarge {
                len: *len as usize,
                max: *max,
            },
            EndReason::ConnectionClosed(reason) => Error::ConnectionClosed {
                reason: reason.clone(),
            },
            EndReason::CreditExceeded => Error::Status(Status::resource_exhausted(format!(
                "stream {id}: the peer sent more messages than its flow-control credit"
            ))),
            EndReason::PeerClosed => Error::closed("the peer closed the stream without EOF"),
        }
    }
}

/// The most credit a stream's sender may hold: a peer granting more is capped (the semaphore
/// would panic past its own limit, which is lower on 32-bit targets).
pub(super) const MAX_CREDIT: usize = if (u32::MAX as usize) < Semaphore::MAX_PERMITS {
    u32::MAX as usize
} else {
    Semaphore::MAX_PERMITS
};

/// Room in a flow-controlled stream's inbound buffer beyond its window: the OPENED mark, an
/// error, `EOF` and a second `EOF` (Go's habit), none of which take credit.
pub(super) const CONTROL_ROOM: usize = 4;

/// Whether a stream content is a control message (an error, `EOF`, or either behind an
/// extension header) rather than a data message: only data messages take flow-control credit.
/// A polyglot error envelope starts with `06`, an extension header with `FE`; a data message
/// never starts with either (`00`, `08`, or another encoding's marker). What follows a header
/// must be an error too: a peer that put a header in front of data took no credit for it, so
/// windows held nothing back (a server so sent 300 messages of 4 MB past a byte window).
pub(super) fn is_control(content: &[u8]) -> bool {
    const ERROR: u8 = 0x06;
    match content.first() {
        Some(&ERROR) => true,
        Some(&ext::PREFIX) => ext::header_len(content).and_then(|end| content.get(end)) == Some(&ERROR),
        _ => false,
    }
}

/// How a stream is set up: flow control and open acknowledgement (all off for plain fRPC).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct StreamSetup {
    /// This side's receive window in messages (0: no flow control).
    pub(crate) recv_window: u32,
    /// The credit this side starts with for sending (`None`: no flow control).
    pub(crate) send_credit: Option<u32>,
    /// This side's receive window in bytes (flow control in bytes negotiated, bit 7).
    pub(crate) recv_bytes: Option<u32>,
    /// The byte credit this side starts with for sending (flow control in bytes).
    pub(crate) send_bytes: Option<i64>,
    /// The opener waits for the peer's OPENED.
    pub(crate) awaiting_ack: bool,
    /// Errors this side sends on its own (overflow, credit exceeded) carry a status code.
    pub(crate) codes: bool,
    /// What frees the id of a stream this side opened and gave up before the peer ended it;
    /// whether the peer takes cancellation (`Hold::cancels`): a stream this side opened and
    /// fails on its own (overflow, credit exceeded, a message over the limit) is then
    /// cancelled toward it.
    pub(crate) hold: Hold,
}

/// The content of a stream error: the polyglot error, behind a header with its STATUS when
/// the stream has status codes (and the code says more than UNKNOWN, or the text is `EOF`,
/// which without a code reads as the stream's end) and with `metadata`, the response metadata
/// of a server's stream that ends with it (see `StreamGuard::end_metadata`). An error that
/// says OK goes out as UNKNOWN, as a unary call's does.
pub(super) fn error_content(status: &Status, codes: bool, metadata: Option<Metadata>) -> Bytes {
    let content = polyglot::error_to_bytes(status.message());
    let code = status.error_code();
    let header = ext::Header {
        code: Some(code).filter(|&code| codes && (code != Code::Unknown || status.message() == "EOF")),
        metadata,
        ..ext::Header::default()
    };
    match header.is_empty() {
        true => content,
        false => header.encode(&content),
    }
}

/// The content that ends a stream's half: `EOF`, behind a header with `metadata` (the
/// response metadata of a server's stream, see `StreamGuard::end_metadata`).
pub(super) fn eof_content(metadata: Option<Metadata>) -> Bytes {
    match metadata {
        None => Bytes::from_static(EOF_MESSAGE),
        Some(metadata) => ext::Header {
            metadata: Some(metadata),
            ..ext::Header::default()
        }
        .encode(EOF_MESSAGE),
    }
}

/// Sends an error and `EOF` on a stream without waiting (from places that cannot await).
pub(super) fn send_detached(conn: &Connection, id: u16, status: Status, codes: bool) {
    let packets = [
        Packet::new(id, op::STREAM, error_content(&status, codes, None)),
        Packet::new(id, op::STREAM, Bytes::from_static(EOF_MESSAGE)),
    ];
    for packet in packets {
        // Best effort: if the writer's queue is full the peer is not reading anyway.
        let _ = conn.try_send(packet);
    }
}

/// The content of a stream-open packet: polyglot u16 of the method number (`09 <varint>`),
/// followed by the protobuf marker when the client asks for the stream's messages in protobuf
/// (the protobuf extension; a Go server, or an frpc server without it, never sees the marker).
/// The marker goes behind the method so that the content still starts with `09`: a late
/// protobuf message of a finished stream (`FD …`) is never taken for an open.
pub(crate) fn open_message(method: u16, protobuf: bool) -> Bytes {
    let mut buf = BytesMut::with_capacity(encode::u16_len(method) + usize::from(protobuf));
    encode::put_u16(&mut buf, method);
    if protobuf {
        buf.extend_from_slice(&[codec::MARKER]);
    }
    buf.freeze()
}

/// What a client's stream handles carry: the keep-alive of the client's connection (whose last
/// drop closes it), the per-message idle timeout and the call's deadline (with the timeout it
/// came from). Servers' streams have none of them.
#[derive(Debug, Clone, Default)]
pub(crate) struct ClientSide {
    #[allow(dead_code, reason = "held for its drop, never read")]
    pub(crate) keep_alive: Option<Arc<dyn Any + Send + Sync>>,
    pub(crate) idle: Option<Duration>,
    pub(crate) deadline: Option<(tokio::time::Instant, Duration)>,
    /// Where the response metadata the server's end carries goes (`with_response_metadata`).
    pub(crate) response: Option<crate::metadata::MetadataSlot>,
    /// Told when the stream is over (a [`crate::Channel`] with metrics).
    #[cfg(feature = "metrics")]
    pub(crate) observed: Option<super::counts::Observed>,
}

impl ClientSide {
    /// The deadline's error once it has passed.
    #[inline]
    pub(super) fn expired(&self) -> Option<Error> {
        let (at, limit) = self.deadline?;
        (tokio::time::Instant::now() >= at).then_some(Error::Timeout(limit))
    }

    /// Whether sends and receives are bounded by a timer.
    pub(super) fn has_timers(&self) -> bool {
        self.idle.is_some() || self.deadline.is_some()
    }
}

/// The extensions a stream uses: the bits negotiated when it opened and, on the server, the
/// call's state, which the client's CANCEL cancels.
#[derive(Debug, Clone, Default)]
pub(crate) struct StreamExt {
    pub(crate) bits: u32,
    pub(crate) cancel: Option<Arc<CallState>>,
    /// On the server, when the client asked for OPENED: the window it announces (0 without
    /// flow control).
    pub(crate) ack_window: Option<ext::Window>,
}

/// A message in a stream's inbound buffer, holding its share of the buffered-bytes budgets
/// until the consumer takes it (or it is dropped).
#[derive(Debug)]
pub(crate) struct Buffered {
    pub(super) content: Bytes,
    pub(super) _budget: Budget,
}

/// A buffered message's shares of `ConnectionConfig::max_buffered_bytes` (its connection's) and,
/// on a server, `ServerConfig::max_buffered_stream_bytes` (the whole server's).
#[derive(Debug, Default)]
#[allow(dead_code, reason = "held for their drop, never read")]
pub(crate) struct Budget {
    pub(crate) connection: Option<Share>,
    pub(crate) server: Option<Share>,
}
