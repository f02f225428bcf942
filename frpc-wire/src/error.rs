//! Errors of the framing layer and of polyglot decoding.

/// What a bad magic header suggests: the first two bytes of an HTTP request or response
/// (`GE`T, `PO`ST, `PU`T, `HE`AD, `DE`LETE, `OP`TIONS, `PA`TCH, `HT`TP/1.1, TLS's `16 03`)
/// are a peer that is no Frisbee peer at all; anything else is likely the legacy framing.
fn magic_hint(magic: u16) -> &'static str {
    looks_like(&magic.to_be_bytes()).unwrap_or("is the peer using the legacy framing?")
}

/// What a peer whose bytes start with `start` speaks, when it is plainly not Frisbee: HTTP, or
/// TLS (a handshake, or the alert a TLS server answers plain bytes with).
pub(crate) fn looks_like(start: &[u8]) -> Option<&'static str> {
    match start.get(..2)? {
        b"GE" | b"PO" | b"PU" | b"HE" | b"DE" | b"OP" | b"PA" | b"HT" | b"PR" => {
            Some("this looks like HTTP: the peer is not a Frisbee peer")
        }
        [0x15 | 0x16, 0x03] => Some("this looks like TLS: the peer expects a TLS connection"),
        _ => None,
    }
}

/// A packet could not be framed or unframed. Every variant but `Io` means the byte stream can
/// no longer be trusted, so a connection that sees one closes (as Go does).
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// A Frisbee v0.11 header did not start with the magic `00 0F` (Go: "invalid magic header").
    /// Often means the peer speaks the legacy 8-byte framing, or is not Frisbee at all.
    #[error("invalid magic header {0:#06x} (expected 0x000f; {hint})", hint = magic_hint(*.0))]
    BadMagic(u16),
    /// A header announced more content than the configured maximum. Raised as soon as the header
    /// is parsed, before any content is buffered (Go: `ContentLengthExceeded`).
    #[error("packet content of {len} bytes exceeds the limit of {max} bytes")]
    ContentTooLarge {
        /// The announced (or attempted) content length.
        len: u64,
        /// The configured maximum.
        max: u32,
    },
    /// The underlying reader or writer failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Polyglot bytes could not be decoded into the expected value.
///
/// Decoding never panics: truncated input, wrong kinds and hostile lengths all end up here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The input ended before the value was complete.
    #[error("truncated input: needed {needed} more bytes at offset {offset}")]
    Truncated {
        /// Where the value that did not fit starts.
        offset: usize,
        /// How many bytes were missing (at least).
        needed: usize,
    },
    /// The next value has another kind than the one asked for.
    #[error("expected {expected} at offset {offset}, found kind byte {found:#04x}")]
    WrongKind {
        /// What the decoder asked for.
        expected: &'static str,
        /// The kind byte found.
        found: u8,
        /// Where.
        offset: usize,
    },
    /// A varint ran past the longest encoding its type allows.
    #[error("varint at offset {offset} is longer than {max} bytes")]
    VarintTooLong {
        /// Where the varint starts.
        offset: usize,
        /// The longest encoding the type allows (3, 5 or 10 bytes).
        max: usize,
    },
    /// A bool value byte other than 0 or 1 (Go rejects these too).
    #[error("invalid bool byte {0:#04x}")]
    InvalidBool(u8),
    /// A string was not valid UTF-8.
    #[error("string at offset {0} is not valid UTF-8")]
    InvalidUtf8(usize),
    /// A length or count announced more than the input could hold.
    #[error("length {len} at offset {offset} exceeds the {remaining} bytes left")]
    LengthTooLarge {
        /// The announced length or element count.
        len: u64,
        /// Bytes left in the input.
        remaining: usize,
        /// Where the value starts.
        offset: usize,
    },
    /// A slice or map header named other element kinds than the schema expects.
    #[error("collection at offset {offset} holds kind {found:#04x}, expected {expected:#04x}")]
    WrongElementKind {
        /// The element (or key/value) kind the schema expects.
        expected: u8,
        /// The kind found in the header.
        found: u8,
        /// Where the header starts.
        offset: usize,
    },
    /// An enum declaration index that the enum does not have.
    #[error("unknown index {index} for enum {name}")]
    UnknownEnumIndex {
        /// The enum's name.
        name: &'static str,
        /// The index found on the wire.
        index: u32,
    },
    /// Messages were nested deeper than the decoder allows (see
    /// [`Decoder::with_max_depth`](crate::polyglot::Decoder::with_max_depth)).
    #[error("messages nested deeper than {max} levels")]
    TooDeep {
        /// The maximum depth.
        max: u32,
    },
    /// Decoding would allocate more than the decoder's memory budget (see
    /// [`Decoder::with_memory_limit`](crate::polyglot::Decoder::with_memory_limit)).
    #[error(
        "decoding needs {needed} bytes of memory, more than the {left} bytes left of its budget \
         (the receiver's `decode.memory_factor` × the message's size + 64 KiB)"
    )]
    MemoryLimit {
        /// The bytes the next allocation needed.
        needed: usize,
        /// What was left of the budget.
        left: usize,
    },
    /// Any other schema-level violation.
    #[error("{0}")]
    Invalid(&'static str),
    /// A protobuf-encoded message (frpc's negotiated protobuf encoding) could not be decoded,
    /// or its type has no protobuf encoding.
    #[error("protobuf: {0}")]
    Protobuf(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_magic_says_what_the_peer_looks_like() {
        let text = |bytes: [u8; 2]| FrameError::BadMagic(u16::from_be_bytes(bytes)).to_string();
        assert!(text(*b"GE").contains("this looks like HTTP"), "{}", text(*b"GE"));
        assert!(text(*b"HT").contains("this looks like HTTP"));
        assert!(text([0x16, 0x03]).contains("this looks like TLS"));
        assert!(text([0x15, 0x03]).contains("this looks like TLS"));
        assert!(text([0, 0]).contains("legacy framing"), "{}", text([0, 0]));
    }
}
