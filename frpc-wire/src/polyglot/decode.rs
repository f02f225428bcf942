//! Reading polyglot values with a cursor that never panics.
//!
//! Every read checks the kind byte first and, on a mismatch, fails **without consuming input**:
//! fRPC relies on that to probe for Nil and Error (spec §4.5). Every length is checked against
//! the bytes left before anything is allocated.
//!
//! Two limits keep hostile input from costing more than its size (checked by the message codecs
//! in [`super::value`] and [`super::message`]):
//!
//! - **Nesting**: at most [`DEFAULT_MAX_DEPTH`] messages inside one another
//!   ([`Decoder::with_max_depth`]), so no input can overflow the stack by recursion.
//! - **Memory**: the collections and boxes a decode allocates (`count × element size` for a
//!   repeated field, four times the entries' size for a map, the value for a box) come out
//!   of a budget of [`MEMORY_FACTOR`] × the input length + [`MEMORY_SLACK`] bytes
//!   ([`Decoder::with_memory_limit`]). Strings and copied bytes take at most the input's own
//!   length on top (zero-copy `Bytes` nothing), so **a decoded message costs at most
//!   (`MEMORY_FACTOR` + 1) × its encoded size + `MEMORY_SLACK` bytes of heap**. Without it a
//!   1-byte Nil element of a repeated message would become a whole default message.

use bytes::Bytes;

use super::kind::Kind;
use crate::error::DecodeError;

type Result<T> = std::result::Result<T, DecodeError>;

/// How deep messages may nest by default (a top-level message is depth 1), like protobuf's 100.
pub const DEFAULT_MAX_DEPTH: u32 = 100;

/// The default memory budget is this many bytes per input byte, plus [`MEMORY_SLACK`]: with the
/// strings' own bytes on top, a 5 MiB input of any shape costs at most about 55 MiB.
///
/// Go-encoded messages stay well below it (a default `SearchResponse.Result`, 72 bytes in Rust,
/// is 12 bytes on the wire). A schema whose messages are mostly unset singular messages or
/// proto3 `optional` fields can come close, since each is one `00` byte on the wire but the whole
/// struct in memory; raise the limit with [`Decoder::with_memory_limit`] for those.
pub const MEMORY_FACTOR: usize = 10;

/// Memory any input may use regardless of its length (see [`MEMORY_FACTOR`]).
pub const MEMORY_SLACK: usize = 64 * 1024;

/// The default memory budget for `len` input bytes.
const fn default_memory_limit(len: usize) -> usize {
    len.saturating_mul(MEMORY_FACTOR).saturating_add(MEMORY_SLACK)
}

/// A cursor over polyglot-encoded input.
///
/// Built over a [`Bytes`] with [`Decoder::from_bytes`], `bytes` values come out as zero-copy
/// slices of it; built over a plain slice with [`Decoder::new`], they are copied.
///
/// It also carries the nesting and memory limits of the [module docs](self).
//
// The reads generated code calls once per value (the kind checks and scalars, `string`,
// `take_nil`, `take_error`) are `#[inline]`: they are called from the user's crate, where a
// function without it stays a call across the crate boundary (release builds have no LTO by
// default). The larger helpers behind them (`length_prefixed`, `varint`, the UTF-8 copy) stay
// out of line: inlined too, they cost more instructions per call, not fewer (callgrind, the
// `calls` example; docs/performance-log.md, "The decoder's small reads inlined").
#[derive(Debug, Clone)]
pub struct Decoder<'a> {
    input: &'a [u8],
    pos: usize,
    shared: Option<&'a Bytes>,
    depth: u32,
    max_depth: u32,
    memory_left: usize,
}

impl<'a> Decoder<'a> {
    /// A decoder over a byte slice.
    pub fn new(input: &'a [u8]) -> Decoder<'a> {
        Decoder {
            input,
            pos: 0,
            shared: None,
            depth: 0,
            max_depth: DEFAULT_MAX_DEPTH,
            memory_left: default_memory_limit(input.len()),
        }
    }

    /// A decoder over shared bytes: decoded `bytes` values are slices of `input`, not copies.
    pub fn from_bytes(input: &'a Bytes) -> Decoder<'a> {
        Decoder {
            shared: Some(input),
            ..Decoder::new(input)
        }
    }

    /// Sets how deep messages may nest (a top-level message is depth 1; default
    /// [`DEFAULT_MAX_DEPTH`]). Deeper input fails with [`DecodeError::TooDeep`].
    pub fn with_max_depth(mut self, max: u32) -> Decoder<'a> {
        self.max_depth = max;
        self
    }

    /// How deep messages may nest.
    pub fn max_depth(&self) -> u32 {
        self.max_depth
    }

    /// Sets the memory budget in bytes for collections and boxes (default [`MEMORY_FACTOR`] ×
    /// the input length + [`MEMORY_SLACK`]). Going over fails with [`DecodeError::MemoryLimit`].
    pub fn with_memory_limit(mut self, bytes: usize) -> Decoder<'a> {
        self.memory_left = bytes;
        self
    }

    /// How much of the memory budget is left.
    pub fn memory_left(&self) -> usize {
        self.memory_left
    }

    /// Takes `bytes` from the memory budget before allocating them, or fails with
    /// [`DecodeError::MemoryLimit`] (taking nothing).
    #[inline]
    pub fn reserve_memory(&mut self, bytes: usize) -> Result<()> {
        match self.memory_left.checked_sub(bytes) {
            Some(left) => {
                self.memory_left = left;
                Ok(())
            }
            None => Err(DecodeError::MemoryLimit {
                needed: bytes,
                left: self.memory_left,
            }),
        }
    }

    /// Enters a nested message: fails with [`DecodeError::TooDeep`] past the maximum depth.
    /// Every successful `enter` must be paired with a [`Decoder::leave`].
    #[inline]
    pub fn enter(&mut self) -> Result<()> {
        if self.depth >= self.max_depth {
            return Err(DecodeError::TooDeep { max: self.max_depth });
        }
        self.depth += 1;
        Ok(())
    }

    /// Leaves a message entered with [`Decoder::enter`].
    #[inline]
    pub fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// How many bytes have been consumed.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// How many bytes are left.
    pub fn remaining(&self) -> usize {
        self.input.len() - self.pos
    }

    /// Consumes every byte left, undecoded: a zero-copy slice when built with
    /// [`Decoder::from_bytes`]. For messages whose fields are handled elsewhere (a proxy, or a
    /// client working from descriptors at run time, like the `frpc` command line).
    pub fn take_rest(&mut self) -> Bytes {
        let rest = &self.input[self.pos..];
        self.pos = self.input.len();
        match self.shared {
            Some(shared) => shared.slice_ref(rest),
            None => Bytes::from(crate::copy::to_vec(rest)),
        }
    }

    /// The kind byte of the next value, without consuming it.
    #[inline]
    pub fn peek(&self) -> Option<u8> {
        self.input.get(self.pos).copied()
    }

    /// Whether the next value is Nil (`00`); consumes nothing.
    #[inline]
    pub fn next_is_nil(&self) -> bool {
        self.peek() == Some(Kind::Nil.byte())
    }

    /// Consumes a Nil if it is next; says whether it did.
    #[inline]
    pub fn take_nil(&mut self) -> bool {
        let nil = self.next_is_nil();
        if nil {
            self.pos += 1;
        }
        nil
    }

    /// Decodes an Error if one is next and returns its text; otherwise consumes nothing and
    /// returns `Ok(None)`. A malformed error is an `Err`, and consumes nothing either.
    #[inline]
    pub fn take_error(&mut self) -> Result<Option<String>> {
        if self.peek() != Some(Kind::Error.byte()) {
            return Ok(None);
        }
        let mut probe = self.clone();
        probe.pos += 1;
        let text = probe.error_text()?;
        self.pos = probe.pos;
        Ok(Some(text))
    }

    /// An Error's text. Go writes `err.Error()`'s bytes as they are, UTF-8 or not (a Go string
    /// may hold any bytes): invalid sequences become U+FFFD, so the peer's error still reads
    /// as an error rather than failing the decode.
    fn error_text(&mut self) -> Result<String> {
        self.atomic(|d| {
            let (_, raw) = d.string_bytes()?;
            Ok(String::from_utf8_lossy(raw).into_owned())
        })
    }

    /// Decodes a Nil.
    #[inline]
    pub fn nil(&mut self) -> Result<()> {
        self.expect_kind(Kind::Nil).map(|_| ())
    }

    /// Decodes a bool; like Go, only `00` and `01` are accepted as its value.
    #[inline]
    pub fn bool(&mut self) -> Result<bool> {
        self.atomic(|d| {
            d.expect_kind(Kind::Bool)?;
            match d.byte()? {
                0 => Ok(false),
                1 => Ok(true),
                other => Err(DecodeError::InvalidBool(other)),
            }
        })
    }

    /// Decodes a u8.
    #[inline]
    pub fn u8(&mut self) -> Result<u8> {
        self.atomic(|d| {
            d.expect_kind(Kind::U8)?;
            d.byte()
        })
    }

    /// Decodes a u16 (varint of at most 3 bytes; extra high bits are dropped, as Go does).
    #[inline]
    pub fn u16(&mut self) -> Result<u16> {
        self.atomic(|d| {
            d.expect_kind(Kind::U16)?;
            d.varint(3).map(|v| v as u16)
        })
    }

    /// Decodes a u32 (varint of at most 5 bytes).
    #[inline]
    pub fn u32(&mut self) -> Result<u32> {
        self.atomic(|d| {
            d.expect_kind(Kind::U32)?;
            d.varint(5).map(|v| v as u32)
        })
    }

    /// Decodes a u64 (varint of at most 10 bytes).
    #[inline]
    pub fn u64(&mut self) -> Result<u64> {
        self.atomic(|d| {
            d.expect_kind(Kind::U64)?;
            d.varint(10)
        })
    }

    /// Decodes a zigzag i32.
    #[inline]
    pub fn i32(&mut self) -> Result<i32> {
        self.atomic(|d| {
            d.expect_kind(Kind::I32)?;
            let z = d.varint(5)? as u32;
            Ok(((z >> 1) as i32) ^ -((z & 1) as i32))
        })
    }

    /// Decodes a zigzag i64.
    #[inline]
    pub fn i64(&mut self) -> Result<i64> {
        self.atomic(|d| {
            d.expect_kind(Kind::I64)?;
            let z = d.varint(10)?;
            Ok(((z >> 1) as i64) ^ -((z & 1) as i64))
        })
    }

    /// Decodes a big-endian f32.
    #[inline]
    pub fn f32(&mut self) -> Result<f32> {
        self.atomic(|d| {
            d.expect_kind(Kind::F32)?;
            let raw = d.take(4)?;
            Ok(f32::from_be_bytes([raw[0], raw[1], raw[2], raw[3]]))
        })
    }

    /// Decodes a big-endian f64.
    #[inline]
    pub fn f64(&mut self) -> Result<f64> {
        self.atomic(|d| {
            d.expect_kind(Kind::F64)?;
            let raw = d.take(8)?;
            let mut be = [0u8; 8];
            be.copy_from_slice(raw);
            Ok(f64::from_be_bytes(be))
        })
    }

    /// Decodes a string, borrowing it from the input. Invalid UTF-8 is an error.
    #[inline]
    pub fn str(&mut self) -> Result<&'a str> {
        self.atomic(|d| {
            let (start, raw) = d.string_bytes()?;
            // simdutf8's validator reads large strings several times faster than std's; its
            // `basic` flavour reports only that the text is invalid, which is all we report.
            simdutf8::basic::from_utf8(raw).map_err(|_| DecodeError::InvalidUtf8(start))
        })
    }

    /// Decodes a string into an owned `String` (validated and copied by
    /// [`crate::copy::utf8_to_string`]). Invalid UTF-8 is an error.
    #[inline]
    pub fn string(&mut self) -> Result<String> {
        self.atomic(|d| {
            let (start, raw) = d.string_bytes()?;
            crate::copy::utf8_to_string(raw).ok_or(DecodeError::InvalidUtf8(start))
        })
    }

    /// A string's bytes, not yet validated, and where they start (for the error).
    fn string_bytes(&mut self) -> Result<(usize, &'a [u8])> {
        self.expect_kind(Kind::String)?;
        let start = self.pos;
        Ok((start, self.length_prefixed()?))
    }

    /// Decodes bytes, borrowing them from the input.
    #[inline]
    pub fn byte_slice(&mut self) -> Result<&'a [u8]> {
        self.atomic(|d| {
            d.expect_kind(Kind::Bytes)?;
            d.length_prefixed()
        })
    }

    /// Decodes bytes as [`Bytes`]: a zero-copy slice when built with [`Decoder::from_bytes`].
    #[inline]
    pub fn bytes(&mut self) -> Result<Bytes> {
        let raw = self.byte_slice()?;
        Ok(match self.shared {
            Some(shared) => shared.slice_ref(raw),
            None => Bytes::from(crate::copy::to_vec(raw)),
        })
    }

    /// Decodes an Error and returns its text (invalid UTF-8 replaced, see `take_error`).
    pub fn error(&mut self) -> Result<String> {
        self.atomic(|d| {
            d.expect_kind(Kind::Error)?;
            d.error_text()
        })
    }

    /// Decodes a slice header whose elements must be of kind `element`; returns the count.
    ///
    /// The count is checked against the bytes left (every element takes at least one), so it is
    /// safe to pre-allocate that many elements.
    pub fn slice_header(&mut self, element: Kind) -> Result<usize> {
        self.atomic(|d| {
            d.expect_kind(Kind::Slice)?;
            d.element_kind(element)?;
            d.count(1)
        })
    }

    /// Decodes a map header with keys of kind `key` and values of kind `value`; returns the
    /// number of pairs, checked against the bytes left (each pair takes at least two).
    pub fn map_header(&mut self, key: Kind, value: Kind) -> Result<usize> {
        self.atomic(|d| {
            d.expect_kind(Kind::Map)?;
            d.element_kind(key)?;
            d.element_kind(value)?;
            d.count(2)
        })
    }

    /// Runs `read` and rewinds if it fails, so a failed read consumes nothing.
    #[inline]
    fn atomic<T>(&mut self, read: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let start = self.pos;
        let result = read(self);
        if result.is_err() {
            self.pos = start;
        }
        result
    }

    #[inline]
    fn byte(&mut self) -> Result<u8> {
        let b = self.peek().ok_or(DecodeError::Truncated {
            offset: self.pos,
            needed: 1,
        })?;
        self.pos += 1;
        Ok(b)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.remaining() < n {
            return Err(DecodeError::Truncated {
                offset: self.pos,
                needed: n - self.remaining(),
            });
        }
        let input: &'a [u8] = self.input;
        let out = &input[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    #[inline]
    fn expect_kind(&mut self, kind: Kind) -> Result<()> {
        match self.peek() {
            Some(found) if found == kind.byte() => {
                self.pos += 1;
                Ok(())
            }
            Some(found) => Err(DecodeError::WrongKind {
                expected: kind.name(),
                found,
                offset: self.pos,
            }),
            None => Err(DecodeError::Truncated {
                offset: self.pos,
                needed: 1,
            }),
        }
    }

    fn element_kind(&mut self, expected: Kind) -> Result<()> {
        let offset = self.pos;
        let found = self.byte()?;
        if found != expected.byte() {
            return Err(DecodeError::WrongElementKind {
                expected: expected.byte(),
                found,
                offset,
            });
        }
        Ok(())
    }

    /// A u32 count of items that each take at least `min_item_len` bytes.
    fn count(&mut self, min_item_len: usize) -> Result<usize> {
        let offset = self.pos;
        let count = self.u32()? as usize;
        if count.saturating_mul(min_item_len) > self.remaining() {
            return Err(DecodeError::LengthTooLarge {
                len: count as u64,
                remaining: self.remaining(),
                offset,
            });
        }
        Ok(count)
    }

    /// A u32 length followed by that many raw bytes.
    fn length_prefixed(&mut self) -> Result<&'a [u8]> {
        let offset = self.pos;
        let len = self.u32()? as usize;
        if len > self.remaining() {
            return Err(DecodeError::LengthTooLarge {
                len: len as u64,
                remaining: self.remaining(),
                offset,
            });
        }
        self.take(len)
    }

    /// An unsigned varint of at most `max_len` bytes. Bits past the type's width are dropped
    /// by the caller's cast, exactly as Go's decoder drops them.
    fn varint(&mut self, max_len: usize) -> Result<u64> {
        let start = self.pos;
        let mut value = 0u64;
        for i in 0..max_len {
            let b = self.byte()?;
            if i < 10 {
                value |= u64::from(b & 0x7f).checked_shl(7 * i as u32).unwrap_or(0);
            }
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        self.pos = start;
        Err(DecodeError::VarintTooLong {
            offset: start,
            max: max_len,
        })
    }
}
