//! Polyglot encodings for the protobuf well-known types that prost maps to `prost-types`.
//!
//! Each is encoded exactly as Go fRPC would encode a user message with the same fields:
//! `Timestamp`/`Duration` = envelope + `seconds` (i64) + `nanos` (i32); `Empty` (prost's `()`)
//! = the bare envelope `08 00`. Wrapper types (`StringValue`, …) map to plain Rust values in
//! prost and use [`super::value::Wrapped`].

use bytes::BufMut;

use super::decode::Decoder;
use super::encode as enc;
use super::message::Message;
use crate::error::DecodeError;

macro_rules! seconds_nanos {
    ($ty:ty) => {
        impl Message for $ty {
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
