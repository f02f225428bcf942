//! A message's encoding on the wire: polyglot (fRPC's, always with Go peers) or, between frpc
//! peers that negotiated the protobuf extension, the marker byte [`MARKER`] followed by the
//! message's standard protobuf encoding. Calls floor: unary calls and streams encode and decode
//! their messages here and nowhere else.
//!
//! A content is self-describing: no fRPC content starts with `FD` (polyglot envelopes start
//! with `00`, `06` or `08`, a stream-open message with `09`, an extension header with `FE`), so
//! receivers look at the first byte and need no state: a call that started before the
//! negotiation finished (polyglot) decodes as well as one after it. Errors and a stream's `EOF`
//! always stay polyglot.

use bytes::{BufMut, Bytes, BytesMut};
use frpc_wire::DecodeError;
use frpc_wire::polyglot::{self, Decoder, Envelope, Message};

/// First byte of a protobuf-encoded message content.
pub(crate) const MARKER: u8 = 0xFD;

/// Whether `content` is a protobuf-encoded message.
#[inline]
pub(crate) fn is_protobuf(content: &[u8]) -> bool {
    content.first() == Some(&MARKER)
}

/// Encodes `message`: in protobuf when `protobuf` is set (the connection negotiated it) and its
/// type has a protobuf encoding, in polyglot otherwise. One allocation at the exact size either
/// way.
#[inline]
pub(crate) fn encode<M: Message>(message: &M, protobuf: bool) -> Bytes {
    if M::PROTOBUF && protobuf {
        let mut buf = BytesMut::with_capacity(1 + message.protobuf_len());
        buf.put_u8(MARKER);
        message.encode_protobuf(&mut buf);
        return buf.freeze();
    }
    message.to_polyglot()
}

/// Decodes a message content, protobuf or polyglot by its first byte: the message, or the text
/// of a polyglot Error (a call's error, a stream's `EOF`). `bytes::Bytes` fields are zero-copy
/// slices of `content` in both encodings.
#[inline]
pub(crate) fn decode<M: Message>(content: &Bytes) -> Result<Envelope<M>, DecodeError> {
    if is_protobuf(content) {
        return M::decode_protobuf(content.slice(1..)).map(Envelope::Message);
    }
    polyglot::decode_envelope(&mut Decoder::from_bytes(content))
}
