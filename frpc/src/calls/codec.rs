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

use crate::config::DecodeLimits;

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
/// Polyglot is read within `limits` (nesting depth, memory budget).
#[inline]
pub(crate) fn decode<M: Message>(content: &Bytes, limits: DecodeLimits) -> Result<Envelope<M>, DecodeError> {
    if is_protobuf(content) {
        if M::PROTOBUF_AMPLIFIES {
            // prost allocates what the input asks for: charge it against the budget first.
            let budget = limits.memory_budget(content.len());
            let mut budget = frpc_wire::protobuf_cost::Budget::new(budget, limits.max_depth);
            M::protobuf_cost(&content[1..], &mut budget)?;
        }
        return M::decode_protobuf(content.slice(1..)).map(Envelope::Message);
    }
    let mut decoder = Decoder::from_bytes(content)
        .with_max_depth(limits.max_depth)
        .with_memory_limit(limits.memory_budget(content.len()));
    polyglot::decode_envelope(&mut decoder)
}

#[cfg(test)]
mod tests {
    use frpc_wire::polyglot::{Decoder, encode as enc};

    use super::*;

    /// A message with both encodings, as frpc-codegen emits it.
    #[derive(Clone, PartialEq, prost::Message)]
    struct Both {
        #[prost(string, tag = "1")]
        name: String,
        #[prost(bytes = "bytes", tag = "2")]
        data: Bytes,
    }

    impl Message for Both {
        const PROTOBUF: bool = true;
        fn protobuf_len(&self) -> usize {
            prost::Message::encoded_len(self)
        }
        fn encode_protobuf(&self, buf: &mut impl BufMut) {
            prost::Message::encode_raw(self, buf)
        }
        fn decode_protobuf(buf: Bytes) -> Result<Self, DecodeError> {
            prost::Message::decode(buf).map_err(|err| DecodeError::Protobuf(err.to_string()))
        }
        fn fields_len(&self) -> usize {
            enc::bytes_len(self.name.len()) + enc::bytes_len(self.data.len())
        }
        fn encode_fields(&self, buf: &mut impl BufMut) {
            enc::put_str(buf, &self.name);
            enc::put_bytes(buf, &self.data);
        }
        fn decode_fields(&mut self, dec: &mut Decoder<'_>) -> Result<(), DecodeError> {
            self.name = dec.string()?;
            self.data = dec.bytes()?;
            Ok(())
        }
    }

    /// A polyglot-only message (a Rust-first one).
    #[derive(Debug, Default, PartialEq)]
    struct Polyglot(u32);

    impl Message for Polyglot {
        fn fields_len(&self) -> usize {
            enc::u32_len(self.0)
        }
        fn encode_fields(&self, buf: &mut impl BufMut) {
            enc::put_u32(buf, self.0);
        }
        fn decode_fields(&mut self, dec: &mut Decoder<'_>) -> Result<(), DecodeError> {
            self.0 = dec.u32()?;
            Ok(())
        }
    }

    fn message(content: Envelope<Both>) -> Both {
        match content {
            Envelope::Message(m) => m,
            Envelope::Error(text) => panic!("an error: {text}"),
        }
    }

    #[test]
    fn both_encodings_round_trip_and_say_which_they_are() {
        let both = Both {
            name: "hi".into(),
            data: Bytes::from_static(b"\x00\xfd"),
        };
        let protobuf = encode(&both, true);
        assert_eq!(&protobuf[..], b"\xfd\x0a\x02hi\x12\x02\x00\xfd");
        assert!(is_protobuf(&protobuf));
        let polyglot = encode(&both, false);
        assert_eq!(polyglot, both.to_polyglot());
        assert!(!is_protobuf(&polyglot));
        for content in [&protobuf, &polyglot] {
            let back = message(decode(content, DecodeLimits::default()).unwrap());
            assert_eq!(back, both);
            // `Bytes` fields are slices of the content, in both encodings.
            let start = content.as_ptr() as usize;
            let at = back.data.as_ptr() as usize;
            assert!(at > start && at + back.data.len() <= start + content.len());
        }
        // Errors and EOF stay polyglot and decode as before.
        let eof = Bytes::from_static(polyglot::EOF_MESSAGE);
        assert!(
            matches!(decode::<Both>(&eof, DecodeLimits::default()), Ok(Envelope::Error(text)) if text == "EOF")
        );
    }

    #[test]
    fn a_polyglot_only_type_stays_polyglot_and_refuses_protobuf() {
        let content = encode(&Polyglot(7), true);
        assert_eq!(content, Polyglot(7).to_polyglot());
        assert!(matches!(
            decode::<Polyglot>(&content, DecodeLimits::default()),
            Ok(Envelope::Message(Polyglot(7)))
        ));
        let err =
            decode::<Polyglot>(&Bytes::from_static(b"\xfd\x08\x07"), DecodeLimits::default()).unwrap_err();
        assert!(
            matches!(&err, DecodeError::Protobuf(text) if text.contains("no protobuf encoding")),
            "{err}"
        );
    }

    /// Random bytes behind the marker: an answer, never a panic.
    #[test]
    fn random_protobuf_contents_never_panic() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut errors = 0;
        for _ in 0..20_000 {
            let len = (next() % 24) as usize;
            let mut bytes = vec![MARKER];
            bytes.extend((0..len).map(|_| match next() % 3 {
                0 => (next() % 0x20) as u8, // plausible tags and lengths
                _ => next() as u8,
            }));
            errors += usize::from(decode::<Both>(&Bytes::from(bytes), DecodeLimits::default()).is_err());
        }
        assert!(errors > 0, "random bytes all decoded");
        assert!(matches!(
            decode::<Both>(&Bytes::from_static(b"\xfd\x0a\x09hi"), DecodeLimits::default()),
            Err(DecodeError::Protobuf(_))
        ));
    }
}
