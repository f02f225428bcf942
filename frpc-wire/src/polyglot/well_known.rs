//! Polyglot encodings for the protobuf well-known types that prost maps to `prost-types`.
//!
//! Each is encoded exactly as Go fRPC would encode a user message with the same fields:
//! `Timestamp`/`Duration` = envelope + `seconds` (i64) + `nanos` (i32); `Empty` (prost's `()`)
//! = the bare envelope `08 00`. Wrapper types (`StringValue`, …) map to plain Rust values in
//! prost and use [`super::value::Wrapped`].
//!
//! All three also have their protobuf encoding (prost's), so a service whose methods take or
//! return them keeps protobuf on: one that lacked it would turn protobuf off for the whole
//! server (a server accepts protobuf only if every message of every service has it).

use bytes::BufMut;

use super::decode::Decoder;
use super::encode as enc;
use super::message::Message;
use crate::error::DecodeError;

macro_rules! seconds_nanos {
    ($ty:ty) => {
        impl Message for $ty {
            const PROTOBUF: bool = true;
            fn protobuf_len(&self) -> usize {
                prost::Message::encoded_len(self)
            }
            fn encode_protobuf(&self, buf: &mut impl BufMut) {
                prost::Message::encode_raw(self, buf)
            }
            fn decode_protobuf(buf: bytes::Bytes) -> Result<Self, DecodeError> {
                prost::Message::decode(buf).map_err(|e| DecodeError::Protobuf(e.to_string()))
            }
            fn fields_len(&self) -> usize {
                enc::i64_len(self.seconds) + enc::i32_len(self.nanos)
            }
            fn encode_fields(&self, buf: &mut impl BufMut) {
                enc::put_i64(buf, self.seconds);
                enc::put_i32(buf, self.nanos);
            }
            fn decode_fields(&mut self, dec: &mut Decoder<'_>) -> Result<(), DecodeError> {
                self.seconds = dec.i64()?;
                self.nanos = dec.i32()?;
                Ok(())
            }
        }
    };
}

seconds_nanos!(prost_types::Timestamp);
seconds_nanos!(prost_types::Duration);

/// `google.protobuf.Empty`, which prost maps to `()`. Its protobuf encoding is empty; reading
/// one ignores whatever fields it carries (a later version's, which protobuf readers skip).
impl Message for () {
    const PROTOBUF: bool = true;
    fn decode_protobuf(_: bytes::Bytes) -> Result<(), DecodeError> {
        Ok(())
    }
    fn fields_len(&self) -> usize {
        0
    }
    fn encode_fields(&self, _: &mut impl BufMut) {}
    fn decode_fields(&mut self, _: &mut Decoder<'_>) -> Result<(), DecodeError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost_types::{Duration, Timestamp};

    fn protobuf<M: Message>(m: &M) -> Vec<u8> {
        let mut buf = Vec::new();
        m.encode_protobuf(&mut buf);
        assert_eq!(buf.len(), m.protobuf_len());
        buf
    }

    #[test]
    fn timestamp_and_duration_have_protobufs_bytes() {
        let at = Timestamp {
            seconds: 1_700_000_000,
            nanos: 5,
        };
        // Field 1 (varint), field 2 (varint); zeros are left out, negatives take 10 bytes.
        assert_eq!(protobuf(&at), [0x08, 0x80, 0xe2, 0xcf, 0xaa, 0x06, 0x10, 0x05]);
        assert_eq!(protobuf(&Timestamp::default()), [0u8; 0]);
        let back = Duration {
            seconds: -1,
            nanos: 0,
        };
        let bytes = protobuf(&back);
        assert_eq!(bytes.len(), 11);
        assert_eq!(Duration::decode_protobuf(bytes.into()).unwrap(), back);
        assert_eq!(Timestamp::decode_protobuf(protobuf(&at).into()).unwrap(), at);
    }

    #[test]
    fn a_truncated_protobuf_timestamp_is_an_error() {
        let err = Timestamp::decode_protobuf(bytes::Bytes::from_static(&[0x08, 0x80])).unwrap_err();
        assert!(matches!(err, DecodeError::Protobuf(_)), "{err:?}");
    }
}
