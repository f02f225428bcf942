//! Writing polyglot values onto any [`BufMut`], and their exact encoded sizes.
//!
//! Every `put_*` has a `*_len` twin so that a message's size is known before one buffer is
//! allocated for it. Varints are always the shortest form, as Go writes them.

use bytes::BufMut;

use super::kind::Kind;

/// Bytes a varint of `v` takes (1–10).
#[inline]
pub const fn varint_len(v: u64) -> usize {
    // ((bits needed, at least 1) + 6) / 7
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Writes `v` as an unsigned LEB128 varint (no kind byte).
#[inline]
pub fn put_varint(buf: &mut impl BufMut, mut v: u64) {
    while v >= 0x80 {
        buf.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    buf.put_u8(v as u8);
}

/// Zigzag-maps an i32 so small magnitudes get short varints.
#[inline]
pub const fn zigzag32(v: i32) -> u32 {
    ((v << 1) ^ (v >> 31)) as u32
}

/// Zigzag-maps an i64.
#[inline]
pub const fn zigzag64(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Writes Nil (`00`).
#[inline]
pub fn put_nil(buf: &mut impl BufMut) {
    buf.put_u8(Kind::Nil.byte());
}

/// Writes a bool (`07 00|01`).
#[inline]
pub fn put_bool(buf: &mut impl BufMut, v: bool) {
    buf.put_u8(Kind::Bool.byte());
    buf.put_u8(v as u8);
}

/// Writes a u8 (`08 byte`).
#[inline]
pub fn put_u8(buf: &mut impl BufMut, v: u8) {
    buf.put_u8(Kind::U8.byte());
    buf.put_u8(v);
}

/// Writes a u16 (`09 varint`).
#[inline]
pub fn put_u16(buf: &mut impl BufMut, v: u16) {
    buf.put_u8(Kind::U16.byte());
    put_varint(buf, v.into());
}

/// Writes a u32 (`0A varint`).
#[inline]
pub fn put_u32(buf: &mut impl BufMut, v: u32) {
    buf.put_u8(Kind::U32.byte());
    put_varint(buf, v.into());
}

/// Writes a u64 (`0B varint`).
#[inline]
pub fn put_u64(buf: &mut impl BufMut, v: u64) {
    buf.put_u8(Kind::U64.byte());
    put_varint(buf, v);
}

/// Writes an i32 (`0C zigzag varint`).
#[inline]
pub fn put_i32(buf: &mut impl BufMut, v: i32) {
    buf.put_u8(Kind::I32.byte());
    put_varint(buf, zigzag32(v).into());
}

/// Writes an i64 (`0D zigzag varint`).
#[inline]
pub fn put_i64(buf: &mut impl BufMut, v: i64) {
    buf.put_u8(Kind::I64.byte());
    put_varint(buf, zigzag64(v));
}

/// Writes an f32 (`0E` + 4 bytes big-endian).
#[inline]
pub fn put_f32(buf: &mut impl BufMut, v: f32) {
    buf.put_u8(Kind::F32.byte());
    buf.put_f32(v);
}

/// Writes an f64 (`0F` + 8 bytes big-endian).
#[inline]
pub fn put_f64(buf: &mut impl BufMut, v: f64) {
    buf.put_u8(Kind::F64.byte());
    buf.put_f64(v);
}

/// Writes bytes (`04 0A varint(len) raw`).
#[inline]
pub fn put_bytes(buf: &mut impl BufMut, v: &[u8]) {
    buf.put_u8(Kind::Bytes.byte());
    put_u32(buf, len_u32(v.len()));
    crate::copy::put_slice(buf, v);
}

/// Writes a string (`05 0A varint(len) utf-8`).
#[inline]
pub fn put_str(buf: &mut impl BufMut, v: &str) {
    buf.put_u8(Kind::String.byte());
    put_u32(buf, len_u32(v.len()));
    crate::copy::put_slice(buf, v.as_bytes());
}

/// Writes an error (`06` + a string).
#[inline]
pub fn put_error(buf: &mut impl BufMut, message: &str) {
    buf.put_u8(Kind::Error.byte());
    put_str(buf, message);
}

/// Writes a slice header (`01 <element kind> 0A varint(count)`); the elements follow.
#[inline]
pub fn put_slice_header(buf: &mut impl BufMut, element: Kind, count: usize) {
    buf.put_u8(Kind::Slice.byte());
    buf.put_u8(element.byte());
    put_u32(buf, len_u32(count));
}

/// Writes a map header (`02 <key kind> <value kind> 0A varint(count)`); the pairs follow.
#[inline]
pub fn put_map_header(buf: &mut impl BufMut, key: Kind, value: Kind, count: usize) {
    buf.put_u8(Kind::Map.byte());
    buf.put_u8(key.byte());
    buf.put_u8(value.byte());
    put_u32(buf, len_u32(count));
}

/// Lengths travel as u32. Anything longer cannot be framed anyway (Frisbee's content length is
/// a u32 and the default cap is 5 MiB), so saturate rather than wrap.
#[inline]
fn len_u32(len: usize) -> u32 {
    u32::try_from(len).unwrap_or(u32::MAX)
}

/// Encoded size of a u16 value, kind byte included.
pub const fn u16_len(v: u16) -> usize {
    1 + varint_len(v as u64)
}
/// Encoded size of a u32 value, kind byte included.
pub const fn u32_len(v: u32) -> usize {
    1 + varint_len(v as u64)
}
/// Encoded size of a u64 value, kind byte included.
pub const fn u64_len(v: u64) -> usize {
    1 + varint_len(v)
}
/// Encoded size of an i32 value, kind byte included.
pub const fn i32_len(v: i32) -> usize {
    1 + varint_len(zigzag32(v) as u64)
}
/// Encoded size of an i64 value, kind byte included.
pub const fn i64_len(v: i64) -> usize {
    1 + varint_len(zigzag64(v))
}
/// Encoded size of a string or bytes value of `len` bytes, kind byte included.
pub const fn bytes_len(len: usize) -> usize {
    2 + varint_len(len as u64) + len
}
/// Encoded size of an error with a message of `len` bytes.
pub const fn error_len(len: usize) -> usize {
    1 + bytes_len(len)
}
/// Encoded size of a slice header for `count` elements.
pub const fn slice_header_len(count: usize) -> usize {
    3 + varint_len(count as u64)
}
/// Encoded size of a map header for `count` pairs.
pub const fn map_header_len(count: usize) -> usize {
    4 + varint_len(count as u64)
}
