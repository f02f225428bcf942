//! The fRPC message envelope (spec §3.3) and the [`Message`] trait generated code implements.
//!
//! A message value is one of: `00` (absent), an Error (`06` + string, and nothing more), or
//! `08 <flags>` followed by its fields. We always write flags `00` and ignore them on read.

use bytes::{BufMut, Bytes, BytesMut};

use super::decode::Decoder;
use super::encode as enc;
use crate::error::DecodeError;
use crate::parts::Parts;

/// A message with a polyglot encoding. Generated code implements the three `*_fields` methods;
/// everything else is provided.
///
/// Method names carry `polyglot` (or `protobuf`) so they never clash with `prost::Message` on
/// the same type.
///
/// **Protobuf.** Between frpc peers that negotiated it (extension bit 16, `docs/extensions.md`),
/// messages travel in their standard protobuf encoding, so schemas can evolve by field number.
/// A type opts in by setting [`Message::PROTOBUF`] and overriding the three `*_protobuf`
/// methods: frpc-codegen's messages do (they are prost messages and call prost), and so do
/// `#[derive(frpc::Message)]` types marked `#[frpc(protobuf)]` (prost messages too), and
/// prost-types' `Timestamp` and `Duration` (feature `prost-types`). A type without one (any other Rust-first message) is sent in polyglot
/// even on such connections, which receivers tell apart by the first byte.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an frpc message",
    label = "not an frpc message",
    note = "a message is a struct with `#[derive(frpc::Message)]`, or a type frpc-codegen generated from a .proto",
    note = "a field whose type is a derived enum needs `#[frpc(enumeration)]`"
)]
pub trait Message: Default {
    /// Exact encoded size of the fields (without the `08 00` flags prefix).
    fn fields_len(&self) -> usize;
    /// Writes the fields, in the three groups of spec §4.7.
    fn encode_fields(&self, buf: &mut impl BufMut);
    /// Reads the fields into `self` (which starts as `Default`).
    fn decode_fields(&mut self, dec: &mut Decoder<'_>) -> Result<(), DecodeError>;

    /// Exact encoded size of the whole message value (flags included).
    #[inline]
    fn polyglot_len(&self) -> usize {
        FLAGS_LEN + self.fields_len()
    }

    /// Writes the whole message value: `08 00` then the fields.
    #[inline]
    fn encode_polyglot(&self, buf: &mut impl BufMut) {
        enc::put_u8(buf, 0);
        self.encode_fields(buf);
    }

    /// Whether [`Message::encode_fields_parts`] may leave a value in its own buffer (the type
    /// or a message field of it has a `bytes::Bytes` field): a constant, so types without one
    /// are encoded into one buffer as ever, at no cost. Generated code sets it.
    const POLYGLOT_PARTS: bool = false;

    /// Writes the fields into a chain of parts, large shared values (`bytes::Bytes` fields)
    /// as parts of their own (see [`Parts`]); the bytes are those of
    /// [`Message::encode_fields`]. Generated code overrides it for messages with such fields;
    /// the default copies everything.
    #[inline]
    fn encode_fields_parts(&self, out: &mut Parts) {
        self.encode_fields(out.buf_mut())
    }

    /// Writes the whole message value into a chain of parts: `08 00` then
    /// [`Message::encode_fields_parts`].
    #[inline]
    fn encode_polyglot_parts(&self, out: &mut Parts) {
        enc::put_u8(out.buf_mut(), 0);
        self.encode_fields_parts(out);
    }

    /// Whether [`Message::into_fields_parts`] may leave a value in its own buffer: the type or
    /// a message field of it has a `bytes::Bytes` field, or a `String` field (whose buffer,
    /// given up by value, becomes a part). Generated code sets it.
    const POLYGLOT_OWNED_PARTS: bool = Self::POLYGLOT_PARTS;

    /// [`Message::encode_fields_parts`] for a message given up: large `String` fields become
    /// parts of their own as well, their buffers handed over without a copy. The bytes are
    /// those of [`Message::encode_fields`]. Generated code overrides it for messages with such
    /// fields; the default encodes by reference.
    #[inline]
    fn into_fields_parts(self, out: &mut Parts) {
        self.encode_fields_parts(out)
    }

    /// Writes the whole message value, given up, into a chain of parts: `08 00` then
    /// [`Message::into_fields_parts`].
    #[inline]
    fn into_polyglot_parts(self, out: &mut Parts) {
        enc::put_u8(out.buf_mut(), 0);
        self.into_fields_parts(out);
    }

    /// Encodes into a buffer allocated once at the exact size.
    fn to_polyglot(&self) -> Bytes {
        let mut buf = BytesMut::with_capacity(self.polyglot_len());
        self.encode_polyglot(&mut buf);
        buf.freeze()
    }

    /// Whether this type has a protobuf encoding (the `*_protobuf` methods below). A constant,
    /// so choosing the encoding of a type without one costs nothing.
    const PROTOBUF: bool = false;

    /// Exact size of the protobuf encoding (0 for a type without one).
    #[inline]
    fn protobuf_len(&self) -> usize {
        0
    }

    /// Writes the protobuf encoding (nothing for a type without one: check
    /// [`Message::PROTOBUF`] first).
    #[inline]
    fn encode_protobuf(&self, buf: &mut impl BufMut) {
        let _ = buf;
    }

    /// Whether [`Message::into_protobuf_parts`] may leave a value in its own buffer (a `string`
    /// or `bytes` field, or a message field that may hold one). Generated code sets it.
    const PROTOBUF_OWNED_PARTS: bool = false;

    /// Writes the protobuf encoding of a message given up into a chain of parts: large `string`
    /// and `bytes` fields as parts of their own, their buffers handed over without a copy. The
    /// bytes are those of [`Message::encode_protobuf`]. Generated code overrides it for
    /// messages with such fields; the default writes into the buffer.
    #[inline]
    fn into_protobuf_parts(self, out: &mut Parts) {
        self.encode_protobuf(out.buf_mut())
    }

    /// Whether decoding this type's protobuf encoding can allocate more than its input
    /// (repeated messages, maps, boxed messages): then the runtime runs
    /// [`Message::protobuf_cost`] against the decode budget before prost decodes. A constant, so
    /// the types that cannot amplify (most requests) pay nothing.
    const PROTOBUF_AMPLIFIES: bool = false;

    /// Charges to `budget` what decoding `buf`, this type's protobuf encoding, would allocate,
    /// without decoding it (see [`crate::protobuf_cost`]). Default: nothing to charge.
    fn protobuf_cost(buf: &[u8], budget: &mut crate::protobuf_cost::Budget) -> Result<(), DecodeError> {
        let _ = (buf, budget);
        Ok(())
    }

    /// Decodes the protobuf encoding from shared bytes (`bytes::Bytes` fields become zero-copy
    /// slices of `buf`). A type without one answers [`DecodeError::Protobuf`].
    fn decode_protobuf(buf: Bytes) -> Result<Self, DecodeError> {
        let _ = buf;
        Err(DecodeError::Protobuf(format!(
            "{} has no protobuf encoding (a Rust-first message: only polyglot)",
            std::any::type_name::<Self>()
        )))
    }

    /// Decodes a top-level message from shared bytes (`bytes` fields become zero-copy slices).
    ///
    /// `00` gives the default message. An Error envelope is [`DecodeError::Invalid`] here; use
    /// [`decode_envelope`] where an Error is a legitimate answer. Trailing bytes are ignored, as
    /// Go ignores them.
    fn from_polyglot(input: &Bytes) -> Result<Self, DecodeError> {
        match decode_envelope(&mut Decoder::from_bytes(input))? {
            Envelope::Message(m) => Ok(m),
            Envelope::Error(_) => Err(DecodeError::Invalid("expected a message, found an error")),
        }
    }
}

/// Size of the `08 00` flags prefix.
const FLAGS_LEN: usize = 2;

/// What a top-level message value held.
#[derive(Debug, Clone, PartialEq)]
pub enum Envelope<M> {
    /// A message (`00` gives the default one).
    Message(M),
    /// An Error: an RPC's error text, or `EOF` at the end of a stream.
    Error(String),
}

/// Decodes a top-level value: `00` → default message, Error → its text, else flags + fields.
#[inline]
pub fn decode_envelope<M: Message>(dec: &mut Decoder<'_>) -> Result<Envelope<M>, DecodeError> {
    if dec.take_nil() {
        return Ok(Envelope::Message(M::default()));
    }
    if let Some(text) = dec.take_error()? {
        return Ok(Envelope::Error(text));
    }
    decode_body(dec).map(Envelope::Message)
}

/// Decodes a message nested inside another (a collection element or a present field).
///
/// `00` and an Error both give the default message: Go puts a nested error only in a hidden
/// field and carries on, and no Rust type has room for it.
pub fn decode_nested<M: Message>(dec: &mut Decoder<'_>) -> Result<M, DecodeError> {
    if dec.take_nil() || dec.take_error()?.is_some() {
        return Ok(M::default());
    }
    decode_body(dec)
}

/// Flags, then the fields. Every message, top-level or nested, comes through here, so this is
/// where the nesting depth is counted: the recursion through `decode_fields` is bounded by it.
#[inline]
fn decode_body<M: Message>(dec: &mut Decoder<'_>) -> Result<M, DecodeError> {
    dec.u8()?; // flags: only bit 0x02 ("error") is defined and it never travels; ignore.
    dec.enter()?;
    let mut m = M::default();
    let fields = m.decode_fields(dec);
    dec.leave();
    fields.map(|()| m)
}

/// The 7-byte end-of-stream marker, an Error with text `EOF`.
pub const EOF_MESSAGE: &[u8] = &[0x06, 0x05, 0x0a, 0x03, b'E', b'O', b'F'];

/// Encodes an error envelope (`06 05 0A len text`) into its own buffer.
pub fn error_to_bytes(text: &str) -> Bytes {
    let mut buf = BytesMut::with_capacity(enc::error_len(text.len()));
    enc::put_error(&mut buf, text);
    buf.freeze()
}
