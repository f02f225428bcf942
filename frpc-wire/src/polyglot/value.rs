//! Per-type codecs that generated code composes: one zero-sized type per proto field type,
//! and generic helpers for the three field shapes (singular or optional, repeated, map).
//!
//! A codec type (rather than a trait on the Rust type) lets `i32` mean an `int32` in one field
//! and an enum (carried as a declaration index) in another, as prost represents both as `i32`.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, Hash};
use std::marker::PhantomData;

use bytes::{BufMut, Bytes};

use super::decode::Decoder;
use super::encode::{self as enc};
use super::kind::Kind;
use super::message::Message;
use crate::error::DecodeError;
use crate::parts::Parts;

type Result<T> = std::result::Result<T, DecodeError>;

/// How one proto type travels as a polyglot value.
pub trait Codec {
    /// The Rust type holding the value.
    type Value;
    /// The kind written in slice and map headers for this type.
    const KIND: Kind;
    /// The fewest bytes a value takes on the wire (`00`, one byte, for messages), which bounds
    /// how many elements a peer's count can announce for the input left.
    const MIN_LEN: usize = 1;
    /// Whether [`Codec::encode_parts`] may leave a value in its own buffer (`bytes::Bytes`, or
    /// a message that may hold one).
    const PARTS: bool = false;
    /// Exact encoded size of `v`, kind byte included.
    fn len(v: &Self::Value) -> usize;
    /// Writes `v`.
    fn encode(v: &Self::Value, buf: &mut impl BufMut);
    /// Reads a value.
    fn decode(dec: &mut Decoder<'_>) -> Result<Self::Value>;
    /// Writes `v` into a chain of parts, where a large value held in shared memory may be
    /// referenced rather than copied (see [`Parts`]). The bytes are those of [`Codec::encode`].
    #[inline]
    fn encode_parts(v: &Self::Value, out: &mut Parts) {
        Self::encode(v, out.buf_mut())
    }
    /// Whether [`Codec::into_parts`] may leave a value in its own buffer: what
    /// [`Codec::PARTS`] says, and `String`s too, whose buffer is given up by value.
    const OWNED_PARTS: bool = Self::PARTS;
    /// [`Codec::encode_parts`] for a value given up: a large `String`'s own buffer becomes a
    /// part, where by reference it is copied. The bytes are those of [`Codec::encode`].
    #[inline]
    fn into_parts(v: Self::Value, out: &mut Parts) {
        Self::encode_parts(&v, out)
    }
}

macro_rules! scalar_codec {
    ($(#[$doc:meta] $name:ident: $ty:ty, $kind:ident, $min:literal, $len:expr, $put:path, $get:ident;)*) => {$(
        #[$doc]
        #[derive(Debug, Clone, Copy)]
        pub struct $name;

        impl Codec for $name {
            type Value = $ty;
            const KIND: Kind = Kind::$kind;
            const MIN_LEN: usize = $min;
            #[inline]
            fn len(v: &$ty) -> usize {
                let f: fn(&$ty) -> usize = $len;
                f(v)
            }
            #[inline]
            fn encode(v: &$ty, buf: &mut impl BufMut) {
                $put(buf, *v)
            }
            #[inline]
            fn decode(dec: &mut Decoder<'_>) -> Result<$ty> {
                dec.$get()
            }
        }
    )*};
}

scalar_codec! {
    /// `bool` as `07 00|01`.
    Bool: bool, Bool, 2, |_| 2, enc::put_bool, bool;
    /// `uint32`/`fixed32` as a `0A` varint.
    U32: u32, U32, 2, |v| enc::u32_len(*v), enc::put_u32, u32;
    /// `uint64`/`fixed64` as a `0B` varint.
    U64: u64, U64, 2, |v| enc::u64_len(*v), enc::put_u64, u64;
    /// `int32`/`sint32`/`sfixed32` as a `0C` zigzag varint.
    I32: i32, I32, 2, |v| enc::i32_len(*v), enc::put_i32, i32;
    /// `int64`/`sint64`/`sfixed64` as a `0D` zigzag varint.
    I64: i64, I64, 2, |v| enc::i64_len(*v), enc::put_i64, i64;
    /// `float` as `0E` + 4 bytes big-endian.
    F32: f32, F32, 5, |_| 5, enc::put_f32, f32;
    /// `double` as `0F` + 8 bytes big-endian.
    F64: f64, F64, 9, |_| 9, enc::put_f64, f64;
}

/// `string` as `05 0A len utf-8`.
#[derive(Debug, Clone, Copy)]
pub struct Str;

impl Codec for Str {
    type Value = String;
    const KIND: Kind = Kind::String;
    const MIN_LEN: usize = 3;
    #[inline]
    fn len(v: &String) -> usize {
        enc::bytes_len(v.len())
    }
    #[inline]
    fn encode(v: &String, buf: &mut impl BufMut) {
        enc::put_str(buf, v)
    }
    #[inline]
    fn decode(dec: &mut Decoder<'_>) -> Result<String> {
        dec.string()
    }
    const OWNED_PARTS: bool = true;
    /// A string of [`SPLICE_MIN`](crate::parts::SPLICE_MIN) bytes or more becomes a part of
    /// its own: its buffer, handed over without a copy.
    #[inline]
    fn into_parts(v: String, out: &mut Parts) {
        let buf = out.buf_mut();
        buf.put_u8(Kind::String.byte());
        enc::put_u32(buf, u32::try_from(v.len()).unwrap_or(u32::MAX));
        out.put_vec(v.into_bytes());
    }
}

/// `bytes` held as `Vec<u8>` (prost's default).
#[derive(Debug, Clone, Copy)]
pub struct ByteVec;

impl Codec for ByteVec {
    type Value = Vec<u8>;
    const KIND: Kind = Kind::Bytes;
    const MIN_LEN: usize = 3;
    #[inline]
    fn len(v: &Vec<u8>) -> usize {
        enc::bytes_len(v.len())
    }
    #[inline]
    fn encode(v: &Vec<u8>, buf: &mut impl BufMut) {
        enc::put_bytes(buf, v)
    }
    #[inline]
    fn decode(dec: &mut Decoder<'_>) -> Result<Vec<u8>> {
        dec.byte_slice().map(crate::copy::to_vec)
    }
}

/// `bytes` held as [`Bytes`] (zero-copy when decoding from `Bytes`).
#[derive(Debug, Clone, Copy)]
pub struct ByteBuf;

impl Codec for ByteBuf {
    type Value = Bytes;
    const KIND: Kind = Kind::Bytes;
    const MIN_LEN: usize = 3;
    const PARTS: bool = true;
    #[inline]
    fn len(v: &Bytes) -> usize {
        enc::bytes_len(v.len())
    }
    #[inline]
    fn encode(v: &Bytes, buf: &mut impl BufMut) {
        enc::put_bytes(buf, v)
    }
    #[inline]
    fn decode(dec: &mut Decoder<'_>) -> Result<Bytes> {
        dec.bytes()
    }
    /// A value of [`SPLICE_MIN`](crate::parts::SPLICE_MIN) bytes or more becomes a part of
    /// its own.
    #[inline]
    fn encode_parts(v: &Bytes, out: &mut Parts) {
        let buf = out.buf_mut();
        buf.put_u8(Kind::Bytes.byte());
        enc::put_u32(buf, u32::try_from(v.len()).unwrap_or(u32::MAX));
        out.put_shared(v);
    }
}

/// A proto enum, implemented by generated code: maps proto numbers (what prost stores in an
/// `i32`) to the **declaration index** Go puts on the wire, and back.
///
/// Generated impls keep indices the enum does not declare (a Go peer built from a newer .proto
/// sends them, and Go passes them through): they become numbers the enum does not declare, with
/// [`unknown_enum_number`] and [`unknown_enum_index`], so decoding and re-encoding gives the same
/// bytes.
pub trait EnumIndex {
    /// The enum's proto name, for error messages.
    const NAME: &'static str;
    /// The declaration index of a proto number.
    fn to_index(number: i32) -> u32;
    /// The proto number at a declaration index; `None` makes decoding fail with
    /// [`DecodeError::UnknownEnumIndex`] (generated impls always return `Some`).
    fn from_index(index: u32) -> Option<i32>;
}

/// The number an undeclared index `index` (≥ `count`, the number of declared values, aliases
/// included) stands for: the `(index - count)`-th number, counting up from 0 as `u32` (so
/// `0, 1, …, i32::MAX, i32::MIN, …, -1`), that the enum does not declare. `declared` holds the
/// declared numbers as `u32`, sorted and without duplicates.
///
/// For an enum numbered `0..count` in order this is the index itself, and in general it is the
/// inverse of [`unknown_enum_index`]: the two never produce a declared number or index.
pub fn unknown_enum_number(index: u32, count: u32, declared: &[u32]) -> i32 {
    let mut number = u64::from(index.saturating_sub(count));
    // Step over each declared number at or below the candidate (`declared` is ascending).
    for &d in declared {
        if u64::from(d) > number {
            break;
        }
        number += 1;
    }
    // At most `u32::MAX`: `index - count` leaves room for every declared number.
    number as u32 as i32
}

/// The index of a number the enum does not declare: `count` plus how many undeclared numbers
/// come before it (the inverse of [`unknown_enum_number`]). Only an enum with aliases has more
/// indices than numbers, so only there can the last few undeclared numbers (`-1`, `-2`, … as
/// `u32` are the largest) have no index left; they are written as index 0, the default.
pub fn unknown_enum_index(number: i32, count: u32, declared: &[u32]) -> u32 {
    let number = number as u32;
    let below = declared.partition_point(|&d| d < number) as u32;
    count.checked_add(number - below).unwrap_or(0)
}

/// An enum field (an `i32` in prost) as a `0A` declaration index. Undeclared indices become
/// undeclared numbers, and back (see [`EnumIndex`]).
#[derive(Debug)]
pub struct Enum<E>(PhantomData<E>);

impl<E: EnumIndex> Codec for Enum<E> {
    type Value = i32;
    const KIND: Kind = Kind::U32;
    const MIN_LEN: usize = 2;
    #[inline]
    fn len(v: &i32) -> usize {
        enc::u32_len(E::to_index(*v))
    }
    #[inline]
    fn encode(v: &i32, buf: &mut impl BufMut) {
        enc::put_u32(buf, E::to_index(*v))
    }
    fn decode(dec: &mut Decoder<'_>) -> Result<i32> {
        let mut probe = dec.clone();
        let index = probe.u32()?;
        let number = E::from_index(index).ok_or(DecodeError::UnknownEnumIndex { name: E::NAME, index })?;
        *dec = probe;
        Ok(number)
    }
}

/// An enum field held as the Rust enum itself (rather than prost's `i32`), as a `0A` declaration
/// index. The enum converts to and from its proto number with `Into<i32>` and `TryFrom<i32>`,
/// as prost's enums do; `#[derive(frpc::Message)]` on a unit-only enum provides both. A Rust enum
/// has no room for an undeclared value, so here an unknown index is
/// [`DecodeError::UnknownEnumIndex`]; hold the field as an `i32` to keep them.
#[derive(Debug)]
pub struct EnumType<E>(PhantomData<E>);

impl<E: EnumIndex + Copy + Into<i32> + TryFrom<i32>> Codec for EnumType<E> {
    type Value = E;
    const KIND: Kind = Kind::U32;
    const MIN_LEN: usize = 2;
    #[inline]
    fn len(v: &E) -> usize {
        enc::u32_len(E::to_index((*v).into()))
    }
    #[inline]
    fn encode(v: &E, buf: &mut impl BufMut) {
        enc::put_u32(buf, E::to_index((*v).into()))
    }
    fn decode(dec: &mut Decoder<'_>) -> Result<E> {
        let mut probe = dec.clone();
        let index = probe.u32()?;
        let value = E::from_index(index)
            .and_then(|number| E::try_from(number).ok())
            .ok_or(DecodeError::UnknownEnumIndex { name: E::NAME, index })?;
        *dec = probe;
        Ok(value)
    }
}

/// A message value: the fRPC envelope `08 flags` + fields. As an element of a repeated field or
/// a map value a `00` decodes to the default message, as Go does; as a singular field use
/// [`encode_optional`] and friends, where `00` is "absent".
#[derive(Debug)]
pub struct Msg<M>(PhantomData<M>);

impl<M: Message> Codec for Msg<M> {
    type Value = M;
    const KIND: Kind = Kind::Any;
    const PARTS: bool = M::POLYGLOT_PARTS;
    #[inline]
    fn len(v: &M) -> usize {
        v.polyglot_len()
    }
    #[inline]
    fn encode(v: &M, buf: &mut impl BufMut) {
        v.encode_polyglot(buf)
    }
    #[inline]
    fn encode_parts(v: &M, out: &mut Parts) {
        v.encode_polyglot_parts(out)
    }
    const OWNED_PARTS: bool = M::POLYGLOT_OWNED_PARTS;
    #[inline]
    fn into_parts(v: M, out: &mut Parts) {
        v.into_polyglot_parts(out)
    }
    fn decode(dec: &mut Decoder<'_>) -> Result<M> {
        super::message::decode_nested(dec)
    }
}

/// Size of an optional value: `00` when absent.
#[inline]
pub fn optional_len<C: Codec>(v: &Option<C::Value>) -> usize {
    v.as_ref().map_or(1, C::len)
}

/// Writes an optional value (a proto3 `optional` scalar or a singular message): `00` when absent.
#[inline]
pub fn encode_optional<C: Codec>(v: &Option<C::Value>, buf: &mut impl BufMut) {
    match v {
        Some(v) => C::encode(v, buf),
        None => enc::put_nil(buf),
    }
}

/// [`encode_optional`] into a chain of parts (see [`Codec::encode_parts`]).
#[inline]
pub fn encode_optional_parts<C: Codec>(v: &Option<C::Value>, out: &mut Parts) {
    match v {
        Some(v) => C::encode_parts(v, out),
        None => enc::put_nil(out.buf_mut()),
    }
}

/// [`encode_optional_parts`] for a value given up (see [`Codec::into_parts`]).
#[inline]
pub fn encode_optional_into_parts<C: Codec>(v: Option<C::Value>, out: &mut Parts) {
    match v {
        Some(v) => C::into_parts(v, out),
        None => enc::put_nil(out.buf_mut()),
    }
}

/// Reads an optional value: `00` is `None`.
#[inline]
pub fn decode_optional<C: Codec>(dec: &mut Decoder<'_>) -> Result<Option<C::Value>> {
    if dec.take_nil() {
        return Ok(None);
    }
    C::decode(dec).map(Some)
}

/// Size of a repeated field: header plus elements.
#[inline]
pub fn repeated_len<C: Codec>(v: &[C::Value]) -> usize {
    enc::slice_header_len(v.len()) + v.iter().map(C::len).sum::<usize>()
}

/// Writes a repeated field: `01 <kind> 0A count` then each element.
#[inline]
pub fn encode_repeated<C: Codec>(v: &[C::Value], buf: &mut impl BufMut) {
    enc::put_slice_header(buf, C::KIND, v.len());
    for item in v {
        C::encode(item, buf);
    }
}

/// Reads a repeated field. A `00` instead of the header (never written by Go) is an empty list.
pub fn decode_repeated<C: Codec>(dec: &mut Decoder<'_>) -> Result<Vec<C::Value>> {
    if dec.take_nil() {
        return Ok(Vec::new());
    }
    let offset = dec.position();
    let count = dec.slice_header(C::KIND)?;
    // Allocated up front, so bounded twice: by the input left (each element takes at least
    // `MIN_LEN` bytes) and by the memory budget (a 1-byte Nil element can be a large message).
    check_count(dec, count, C::MIN_LEN, offset)?;
    dec.reserve_memory(count.saturating_mul(size_of::<C::Value>()))?;
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        out.push(C::decode(dec)?);
    }
    Ok(out)
}

/// Fails if `count` items of at least `min_len` bytes each cannot fit in the input left.
fn check_count(dec: &Decoder<'_>, count: usize, min_len: usize, offset: usize) -> Result<()> {
    if count.saturating_mul(min_len) > dec.remaining() {
        return Err(DecodeError::LengthTooLarge {
            len: count as u64,
            remaining: dec.remaining(),
            offset,
        });
    }
    Ok(())
}

/// The map types prost generates (`HashMap` by default, `BTreeMap` when configured).
pub trait MapField<K, V>: Default {
    /// Number of entries.
    fn len(&self) -> usize;
    /// Whether the map has no entries.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Visits every entry.
    fn for_each(&self, f: impl FnMut(&K, &V));
    /// Adds an entry read from the wire (a repeated key keeps the last value, as Go does).
    fn insert_entry(&mut self, k: K, v: V);
    /// An empty map about to take `count` entries.
    fn for_entries(count: usize) -> Self {
        let _ = count;
        Self::default()
    }
    /// The most memory the map made by [`MapField::for_entries`] takes for `count` entries,
    /// as decoding charges it before reading them. By default 4 × the entries (with a byte
    /// each): a growing hash table's peak, old table included.
    fn memory_for(count: usize) -> usize {
        count.saturating_mul(size_of::<(K, V)>() + 1).saturating_mul(4)
    }
}

impl<K: Eq + Hash, V, S: BuildHasher + Default> MapField<K, V> for HashMap<K, V, S> {
    fn len(&self) -> usize {
        HashMap::len(self)
    }
    fn for_each(&self, mut f: impl FnMut(&K, &V)) {
        self.iter().for_each(|(k, v)| f(k, v))
    }
    fn insert_entry(&mut self, k: K, v: V) {
        self.insert(k, v);
    }
    /// Made with its capacity, so it never grows (nor holds an old table while it does).
    fn for_entries(count: usize) -> Self {
        HashMap::with_capacity_and_hasher(count, S::default())
    }
    /// One table of `count` entries: a slot and a control byte per bucket, buckets a power of
    /// two at most 7/8 full (std's `hashbrown`), plus a group of control bytes.
    fn memory_for(count: usize) -> usize {
        let buckets = match count {
            0 => return 0,
            1..4 => 4,
            4..8 => 8,
            _ => (count.saturating_mul(8) / 7)
                .checked_next_power_of_two()
                .unwrap_or(usize::MAX),
        };
        buckets.saturating_mul(size_of::<(K, V)>() + 1).saturating_add(16)
    }
}

impl<K: Ord, V> MapField<K, V> for BTreeMap<K, V> {
    fn len(&self) -> usize {
        BTreeMap::len(self)
    }
    fn for_each(&self, mut f: impl FnMut(&K, &V)) {
        self.iter().for_each(|(k, v)| f(k, v))
    }
    fn insert_entry(&mut self, k: K, v: V) {
        self.insert(k, v);
    }
    /// Nodes of up to 11 entries, each but the root at least 5 full, and the inner nodes
    /// above them: 3 × the entries covers them.
    fn memory_for(count: usize) -> usize {
        count.saturating_mul(size_of::<(K, V)>()).saturating_mul(3)
    }
}

/// Size of a map field: header plus pairs.
pub fn map_len<K: Codec, V: Codec>(m: &impl MapField<K::Value, V::Value>) -> usize {
    let mut total = enc::map_header_len(m.len());
    m.for_each(|k, v| total += K::len(k) + V::len(v));
    total
}

/// Writes a map field: `02 <key kind> <value kind> 0A count` then key, value pairs.
pub fn encode_map<K: Codec, V: Codec>(m: &impl MapField<K::Value, V::Value>, buf: &mut impl BufMut) {
    enc::put_map_header(buf, K::KIND, V::KIND, m.len());
    m.for_each(|k, v| {
        K::encode(k, buf);
        V::encode(v, buf);
    });
}

/// Reads a map field. A `00` instead of the header (Go never writes it) is an empty map.
pub fn decode_map<K: Codec, V: Codec, M: MapField<K::Value, V::Value>>(dec: &mut Decoder<'_>) -> Result<M> {
    if dec.take_nil() {
        return Ok(M::default());
    }
    let offset = dec.position();
    let count = dec.map_header(K::KIND, V::KIND)?;
    check_count(dec, count, K::MIN_LEN + V::MIN_LEN, offset)?;
    // Charged up front, for the map as it is made: a hash table with its whole capacity (it
    // was charged 4 × its entries for growing, so maps of a thousand short entries, Go's
    // everyday `map<string, int64>`, failed the default budget).
    dec.reserve_memory(M::memory_for(count))?;
    let mut out = M::for_entries(count);
    for _ in 0..count {
        let k = K::decode(dec)?;
        let v = V::decode(dec)?;
        out.insert_entry(k, v);
    }
    Ok(out)
}

/// A protobuf wrapper type (`google.protobuf.StringValue`, `Int32Value`, …), which prost maps
/// to the plain value `C::Value`: on the wire it is a one-field message, `08 00` + the value.
#[derive(Debug)]
pub struct Wrapped<C>(PhantomData<C>);

impl<C: Codec> Codec for Wrapped<C>
where
    C::Value: Default,
{
    type Value = C::Value;
    const KIND: Kind = Kind::Any;
    #[inline]
    fn len(v: &C::Value) -> usize {
        2 + C::len(v)
    }
    #[inline]
    fn encode(v: &C::Value, buf: &mut impl BufMut) {
        enc::put_u8(buf, 0);
        C::encode(v, buf);
    }
    fn decode(dec: &mut Decoder<'_>) -> Result<C::Value> {
        if dec.take_nil() || dec.take_error()?.is_some() {
            return Ok(C::Value::default());
        }
        dec.u8()?;
        C::decode(dec)
    }
}

/// A value prost boxes to break a recursive type (`Option<Box<M>>`, a oneof's `Box<M>`):
/// encoded exactly like `C`.
#[derive(Debug)]
pub struct Boxed<C>(PhantomData<C>);

impl<C: Codec> Codec for Boxed<C> {
    type Value = Box<C::Value>;
    const KIND: Kind = C::KIND;
    const MIN_LEN: usize = C::MIN_LEN;
    #[inline]
    fn len(v: &Box<C::Value>) -> usize {
        C::len(v)
    }
    #[inline]
    fn encode(v: &Box<C::Value>, buf: &mut impl BufMut) {
        C::encode(v, buf)
    }
    fn decode(dec: &mut Decoder<'_>) -> Result<Box<C::Value>> {
        dec.reserve_memory(size_of::<C::Value>())?;
        C::decode(dec).map(Box::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parts::SPLICE_MIN;

    fn by_reference<C: Codec>(v: &C::Value) -> Vec<u8> {
        let mut buf = Vec::new();
        C::encode(v, &mut buf);
        buf
    }

    #[test]
    fn a_large_string_given_up_is_its_own_part() {
        let text = "é".repeat(SPLICE_MIN);
        let (at, bytes) = (text.as_ptr(), by_reference::<Str>(&text));
        let mut parts = Parts::default();
        Str::into_parts(text, &mut parts);
        let chain = parts.into_vec();
        assert_eq!(chain.len(), 2, "a header, then the string's own buffer");
        assert_eq!(chain[1].as_ptr(), at, "handed over, not copied");
        assert_eq!(chain.concat(), bytes);
    }

    #[test]
    fn a_small_string_given_up_is_copied_with_its_neighbours() {
        let text = "x".repeat(SPLICE_MIN - 1);
        let bytes = by_reference::<Str>(&text);
        let mut parts = Parts::default();
        Str::into_parts(text.clone(), &mut parts);
        encode_optional_into_parts::<Str>(Some(text.clone()), &mut parts);
        encode_optional_into_parts::<Str>(None, &mut parts);
        assert_eq!(parts.count(), 1);
        let mut expected = bytes.clone();
        expected.extend_from_slice(&bytes);
        expected.push(Kind::Nil.byte());
        assert_eq!(parts.into_bytes(), expected);
    }
}
