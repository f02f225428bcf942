//! The `prost` that generated messages derive through (`prost_path("::frpc::codegen::prost")`):
//! prost itself, except that protobuf `string` fields are validated and copied as polyglot
//! strings are ([`frpc_wire::copy::assign_utf8`]: simdutf8 instead of std's `from_utf8`).
//!
//! prost's derive calls `<prost path>::encoding::string::merge` for every string field (plain,
//! optional, repeated, map keys and values, oneof members), so replacing that one module here
//! changes how all of them decode, with prost's own errors and its last-one-wins rule. At
//! 128 KiB std's validator took 6–8% of a protobuf server's CPU, simdutf8 about half of that.

pub use ::prost::*;

/// prost's `encoding`, with [`string`](encoding::string) replaced.
pub mod encoding {
    pub use ::prost::encoding::*;

    /// prost's `encoding::string`, with `merge` and `merge_repeated` validating as polyglot does.
    pub mod string {
        use ::prost::DecodeError;
        use ::prost::bytes::Buf;
        pub use ::prost::encoding::string::*;
        use ::prost::encoding::{DecodeContext, WireType, decode_varint};
        use frpc_wire::copy::assign_utf8;

        /// A string field's encoding holding one invalid byte: what prost is given to build the
        /// error it reports for invalid UTF-8, which is not otherwise constructible.
        const INVALID: &[u8] = &[1, 0xFF];

        /// Reads a string field into `value` (replacing it, as protobuf's last value wins).
        ///
        /// Where its length prefix lies whole in `buf`'s first chunk and its content is all
        /// there, the content is validated where it lies (or in a zero-copy slice, for
        /// [`frpc_wire::copy::Pieces`]) and copied once. Anything else (a wrong wire type, a
        /// truncated field, a prefix split across chunks) is left to prost's own `merge`.
        pub fn merge(
            wire_type: WireType,
            value: &mut String,
            buf: &mut impl Buf,
            ctx: DecodeContext,
        ) -> Result<(), DecodeError> {
            let Some((prefix, len)) = whole_field(wire_type, buf) else {
                return ::prost::encoding::string::merge(wire_type, value, buf, ctx);
            };
            buf.advance(prefix);
            let valid = match buf.chunk().len() >= len {
                true => {
                    let valid = assign_utf8(value, &buf.chunk()[..len]);
                    buf.advance(len);
                    valid
                }
                false => assign_utf8(value, &buf.copy_to_bytes(len)),
            };
            match valid {
                true => Ok(()),
                false => ::prost::encoding::string::merge(wire_type, value, &mut &INVALID[..], ctx),
            }
        }

        /// Reads one more element of a repeated string field.
        pub fn merge_repeated(
            wire_type: WireType,
            values: &mut Vec<String>,
            buf: &mut impl Buf,
            ctx: DecodeContext,
        ) -> Result<(), DecodeError> {
            let mut value = String::new();
            merge(wire_type, &mut value, buf, ctx)?;
            values.push(value);
            Ok(())
        }

        /// The length of a length-delimited field's prefix and of its content, when both the
        /// prefix lies whole in `buf`'s first chunk and the content is all in `buf`.
        #[inline]
        fn whole_field(wire_type: WireType, buf: &impl Buf) -> Option<(usize, usize)> {
            if wire_type != WireType::LengthDelimited {
                return None;
            }
            let mut chunk = buf.chunk();
            let len = decode_varint(&mut chunk).ok()?;
            let prefix = buf.chunk().len() - chunk.len();
            let len = usize::try_from(len).ok()?;
            (len <= buf.remaining() - prefix).then_some((prefix, len))
        }
    }
}

#[cfg(test)]
mod tests {
    use ::prost::bytes::{Buf, Bytes};
    use ::prost::encoding::{DecodeContext, WireType, encode_varint};
    use frpc_wire::copy::Pieces;

    use super::encoding::string;

    /// A string field's encoding (without its key): the length prefix, then `content`.
    fn field(content: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_varint(content.len() as u64, &mut out);
        out.extend_from_slice(content);
        out
    }

    /// What one merge did: its result (errors as prost's text), the value, and what was left.
    type Outcome = (Result<(), String>, String, usize);

    /// `merge` on `buf` over a field that held "previous" (protobuf's last value wins).
    fn run<B: Buf>(
        merge: fn(WireType, &mut String, &mut B, DecodeContext) -> Result<(), ::prost::DecodeError>,
        wire_type: WireType,
        mut buf: B,
    ) -> Outcome {
        let mut value = String::from("previous");
        let result = merge(wire_type, &mut value, &mut buf, DecodeContext::default());
        (result.map_err(|e| e.to_string()), value, buf.remaining())
    }

    /// Ours and prost's on the same encoding, as one `Bytes`, in [`Pieces`], and split in two
    /// slices at every position up to `splits` (length prefixes split included).
    fn assert_as_prost(wire_type: WireType, encoded: &[u8], splits: usize) -> Outcome {
        let bytes = Bytes::copy_from_slice(encoded);
        let expected = run(::prost::encoding::string::merge, wire_type, bytes.clone());
        assert_eq!(run(string::merge, wire_type, bytes.clone()), expected, "Bytes");
        assert_eq!(run(string::merge, wire_type, Pieces(bytes)), expected, "Pieces");
        for at in 0..=splits.min(encoded.len()) {
            let (head, tail) = encoded.split_at(at);
            assert_eq!(
                run(string::merge, wire_type, head.chain(tail)),
                expected,
                "split at {at}"
            );
        }
        expected
    }

    #[test]
    fn strings_decode_as_prost_decodes_them() {
        let long: String = "aé€😀".chars().cycle().take(5_000).collect();
        for text in ["", "hello", "ünïcödé €😀", long.as_str()] {
            let (result, value, left) =
                assert_as_prost(WireType::LengthDelimited, &field(text.as_bytes()), 8);
            assert_eq!((result, value.as_str(), left), (Ok(()), text, 0));
        }
    }

    #[test]
    fn bad_strings_fail_as_prost_fails() {
        let mut long_invalid = "x".repeat(3_000).into_bytes();
        long_invalid.push(0xC3); // a character cut short
        let cases: [(WireType, Vec<u8>); 6] = [
            (WireType::LengthDelimited, field(&[b'a', 0xFF, b'b'])),
            (WireType::LengthDelimited, field(&long_invalid)),
            (WireType::LengthDelimited, field(b"cut short")[..5].to_vec()),
            (WireType::LengthDelimited, vec![0x80, 0x80]),
            (WireType::LengthDelimited, Vec::new()),
            (WireType::Varint, field(b"wrong wire type")),
        ];
        for (wire_type, encoded) in cases {
            let (result, value, _) = assert_as_prost(wire_type, &encoded, 8);
            assert!(result.is_err(), "{encoded:?} decoded");
            assert!(
                value.is_empty() || value == "previous",
                "no invalid text is kept: {value:?}"
            );
        }
        let (result, _, _) = assert_as_prost(WireType::LengthDelimited, &field(&[0xFF]), 0);
        assert!(
            result.unwrap_err().contains("not UTF-8"),
            "prost's own error text"
        );
    }

    #[test]
    fn repeated_strings_append() {
        let encoded = field("ünï".as_bytes());
        let mut values = vec![String::from("first")];
        string::merge_repeated(
            WireType::LengthDelimited,
            &mut values,
            &mut Bytes::from(encoded),
            DecodeContext::default(),
        )
        .expect("decodes");
        assert_eq!(values, ["first", "ünï"]);
        let mut bad = &field(&[0xFF])[..];
        let invalid = string::merge_repeated(
            WireType::LengthDelimited,
            &mut values,
            &mut bad,
            DecodeContext::default(),
        );
        assert!(invalid.is_err());
        assert_eq!(values.len(), 2, "nothing pushed for an invalid string");
    }
}
