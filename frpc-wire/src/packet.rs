//! A Frisbee packet: a header's id and operation plus the content bytes.

use bytes::Bytes;

/// Operation codes that Frisbee reserves (0–9). Applications (fRPC methods) start at
/// [`op::FIRST_APPLICATION`]. Nothing here gives 10, 11 or 12 a special meaning: Go's
/// `metadata.PacketPing/Pong/Probe` are test-only constants, not protocol.
pub mod op {
    /// Heartbeat request; always id 0 and empty. Answered at once with [`PONG`].
    pub const PING: u16 = 0;
    /// Heartbeat answer; always id 0 and empty.
    pub const PONG: u16 = 1;
    /// Stream data (content > 0) or stream close (empty); the id is the stream id.
    pub const STREAM: u16 = 2;
    /// The first operation an application may use; fRPC numbers methods from here.
    pub const FIRST_APPLICATION: u16 = 10;

    /// Whether `op` is one of the operations 0–9 that Frisbee reserves.
    pub const fn is_reserved(op: u16) -> bool {
        op < FIRST_APPLICATION
    }
}

/// One packet as it travels on the wire.
///
/// `content` is a zero-copy slice of the connection's read buffer when the packet was decoded.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Packet {
    /// Packet id (request id for unary calls, stream id for `STREAM`).
    pub id: u16,
    /// Operation code.
    pub op: u16,
    /// The content; its length is the header's `len`.
    pub content: Bytes,
}

impl Packet {
    /// A packet with the given id, operation and content.
    pub fn new(id: u16, op: u16, content: impl Into<Bytes>) -> Packet {
        Packet {
            id,
            op,
            content: content.into(),
        }
    }

    /// A PING (id 0, op 0, no content).
    pub const fn ping() -> Packet {
        Packet {
            id: 0,
            op: op::PING,
            content: Bytes::new(),
        }
    }

    /// A PONG (id 0, op 1, no content).
    pub const fn pong() -> Packet {
        Packet {
            id: 0,
            op: op::PONG,
            content: Bytes::new(),
        }
    }
}
