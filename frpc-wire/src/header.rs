//! The fixed-size Frisbee packet header, in both framings Go has used.
//!
//! Every integer is big-endian. See `shared/spec/wire.md` §1.1.

use bytes::{Buf, BufMut};

use crate::error::FrameError;

/// The 2-byte magic that starts every packet in the Frisbee v0.11 framing.
pub const MAGIC: u16 = 0x000F;

/// Go's `DefaultMaxContentLength`: 5 MiB of content (the header is not counted).
pub const DEFAULT_MAX_CONTENT_LENGTH: u32 = 5 * 1024 * 1024;

/// Which header layout a connection speaks.
///
/// The two are incompatible: a v0.11 peer closes on a legacy header ("invalid magic") and a
/// v0.10 peer loses framing on a v0.11 one. Pick the one your Go peers' `go.sum` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Framing {
    /// frisbee-go ≥ v0.11: 10 bytes, `magic u16 | id u16 | op u16 | len u32`. The default.
    #[default]
    Frisbee,
    /// frisbee-go ≤ v0.10.2 (what frpc-go HEAD pulls in by default): 8 bytes,
    /// `id u16 | op u16 | len u32`, no magic.
    Legacy,
}

impl Framing {
    /// Size of the header in bytes: 10 for [`Framing::Frisbee`], 8 for [`Framing::Legacy`].
    pub const fn header_len(self) -> usize {
        match self {
            Framing::Frisbee => 10,
            Framing::Legacy => 8,
        }
    }
}

impl std::str::FromStr for Framing {
    type Err = String;

    /// Parses `frisbee` (or `v0.11`) and `legacy` (or `v0.10`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "frisbee" | "v0.11" => Ok(Framing::Frisbee),
            "legacy" | "v0.10" => Ok(Framing::Legacy),
            other => Err(format!("unknown framing {other:?} (expected frisbee or legacy)")),
        }
    }
}

/// A parsed packet header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Header {
    /// Packet id: a per-method request counter for unary calls, the stream id for `STREAM`.
    pub id: u16,
    /// Operation code; 0–9 are reserved by Frisbee (see [`crate::op`]).
    pub op: u16,
    /// Number of content bytes that follow the header.
    pub len: u32,
}

impl Header {
    /// Writes the header in the given framing (`framing.header_len()` bytes).
    pub fn encode(&self, framing: Framing, dst: &mut impl BufMut) {
        if framing == Framing::Frisbee {
            dst.put_u16(MAGIC);
        }
        dst.put_u16(self.id);
        dst.put_u16(self.op);
        dst.put_u32(self.len);
    }

    /// Parses a header from the start of `src`.
    ///
    /// Returns `Ok(None)` when fewer than `framing.header_len()` bytes are there yet, and
    /// [`FrameError::BadMagic`] when a Frisbee header does not start with `00 0F`.
    pub fn parse(framing: Framing, mut src: &[u8]) -> Result<Option<Header>, FrameError> {
        if src.len() < framing.header_len() {
            return Ok(None);
        }
        if framing == Framing::Frisbee {
            let magic = src.get_u16();
            if magic != MAGIC {
                return Err(FrameError::BadMagic(magic));
            }
        }
        Ok(Some(Header {
            id: src.get_u16(),
            op: src.get_u16(),
            len: src.get_u32(),
        }))
    }
}
