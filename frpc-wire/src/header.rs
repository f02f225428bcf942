//! The fixed-size Frisbee packet header, in both framings Go has used.
//!
//! Every integer is big-endian. See `shared/spec/wire.md` §1.1.

use bytes::BufMut;

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
        // Assembled whole and put with one write: four `put_u*` calls each check the room
        // left and move the cursor (about twice the instructions; the header of every packet
        // pays them).
        let mut bytes = [0u8; 10];
        bytes[..2].copy_from_slice(&MAGIC.to_be_bytes());
        bytes[2..4].copy_from_slice(&self.id.to_be_bytes());
        bytes[4..6].copy_from_slice(&self.op.to_be_bytes());
        bytes[6..].copy_from_slice(&self.len.to_be_bytes());
        // The legacy header is the same without the magic.
        dst.put_slice(&bytes[10 - framing.header_len()..]);
    }

    /// Parses a header from the start of `src`.
    ///
    /// Returns `Ok(None)` when fewer than `framing.header_len()` bytes are there yet, and
    /// [`FrameError::BadMagic`] when a Frisbee header does not start with `00 0F`.
    #[inline]
    pub fn parse(framing: Framing, src: &[u8]) -> Result<Option<Header>, FrameError> {
        let Some(header) = src.get(..framing.header_len()) else {
            return Ok(None);
        };
        if framing == Framing::Frisbee {
            let magic = u16::from_be_bytes([header[0], header[1]]);
            if magic != MAGIC {
                return Err(FrameError::BadMagic(magic));
            }
        }
        // The fields after the magic (if any): the last eight bytes, which every framing has.
        let &[.., id0, id1, op0, op1, l0, l1, l2, l3] = header else {
            return Ok(None);
        };
        Ok(Some(Header {
            id: u16::from_be_bytes([id0, id1]),
            op: u16::from_be_bytes([op0, op1]),
            len: u32::from_be_bytes([l0, l1, l2, l3]),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: Header = Header {
        id: 0x0102,
        op: 0x0304,
        len: 0x0506_0708,
    };

    #[test]
    fn both_framings_write_their_exact_bytes_and_read_them_back() {
        let frisbee: &[u8] = &[0x00, 0x0F, 1, 2, 3, 4, 5, 6, 7, 8];
        for (framing, bytes) in [(Framing::Frisbee, frisbee), (Framing::Legacy, &frisbee[2..])] {
            let mut written = Vec::new();
            HEADER.encode(framing, &mut written);
            assert_eq!(written, bytes, "{framing:?}");
            assert_eq!(
                Header::parse(framing, bytes).unwrap(),
                Some(HEADER),
                "{framing:?}"
            );
            // Bytes after the header are not the header's.
            let longer = [bytes, &[0xFF; 3][..]].concat();
            assert_eq!(
                Header::parse(framing, &longer).unwrap(),
                Some(HEADER),
                "{framing:?}"
            );
            let short = &bytes[..bytes.len() - 1];
            assert_eq!(
                Header::parse(framing, short).unwrap(),
                None,
                "{framing:?}: incomplete"
            );
        }
    }

    #[test]
    fn a_frisbee_header_without_the_magic_is_refused() {
        let legacy = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
        let err = Header::parse(Framing::Frisbee, &legacy).unwrap_err();
        assert!(matches!(err, FrameError::BadMagic(0x0102)), "{err}");
    }
}
