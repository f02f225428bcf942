//! The `prost` that generated messages derive through (`prost_path("::frpc::codegen::prost")`):
//! prost itself, except that protobuf `string` fields are validated and copied as polyglot
//! strings are ([`frpc_wire::copy::assign_utf8`]: simdutf8 instead of std's `from_utf8`).
//!
//! prost's derive calls `<prost path>::encoding::string::merge` for every string field (plain,
//! optional, repeated, map keys and values, oneof members), so replacing that one module here
//! changes how all of them decode, with prost's own errors and its last-one-wins rule. At
//! 128 KiB std's validator took 6–8% of a protobuf server's CPU, simdutf8 about half of that.
//!
//! The packable scalars' `merge_repeated` (`int64`, `enum`'s `int32`, `double`, …) reserve a
//! packed run's elements before prost reads them, so that the vector is allocated once at its
//! size rather than grown one push at a time (three times its size at the peak): the decode
//! budget charges a packed run what it holds (`frpc_wire::protobuf_cost::Repeated`).

pub use ::prost::*;

/// prost's `encoding`, with [`string`](encoding::string) replaced.
pub mod encoding {
    use ::prost::bytes::{Buf, Bytes};
    pub use ::prost::encoding::*;

    /// prost's `encoding::string`, with `merge` and `merge_repeated` validating as polyglot does.
    pub mod string {
        use ::prost::DecodeError;
        use ::prost::bytes::Buf;
        pub use ::prost::encoding::string::*;
        use ::prost::encoding::{DecodeContext, WireType};
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
            let Some((prefix, len)) = super::whole_field(wire_type, buf) else {
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

    /// A packed run, whole in `buf`, taken out of it (its length prefix, then the run: a
    /// zero-copy slice of frpc's buffers) for prost to read, with how many elements it holds
    /// by `count`; `None` for anything else (an unpacked element, a truncated run), which
    /// prost reads from `buf` itself.
    fn packed_run(
        wire_type: WireType,
        buf: &mut impl Buf,
        count: fn(&[u8]) -> usize,
    ) -> Option<(Bytes, usize)> {
        let (prefix, len) = whole_field(wire_type, buf)?;
        let field = buf.copy_to_bytes(prefix + len);
        let elements = count(&field[prefix..]);
        Some((field, elements))
    }

    /// prost's module for a packable scalar, with a `merge_repeated` that reserves a packed
    /// run's elements before prost reads them.
    macro_rules! reserving {
        ($($module:ident: $ty:ty, $count:expr;)*) => {$(
            #[doc = concat!("prost's `encoding::", stringify!($module), "`, packed runs reserved.")]
            pub mod $module {
                use ::prost::DecodeError;
                use ::prost::bytes::Buf;
                pub use ::prost::encoding::$module::*;
                use ::prost::encoding::{DecodeContext, WireType};

                /// Reads a packed run (reserved first) or one more element.
                pub fn merge_repeated(
                    wire_type: WireType,
                    values: &mut Vec<$ty>,
                    buf: &mut impl Buf,
                    ctx: DecodeContext,
                ) -> Result<(), DecodeError> {
                    match super::packed_run(wire_type, buf, $count) {
                        Some((mut field, elements)) => {
                            // Exactly the run for the first; later runs (rare, or hostile:
                            // many runs of one element) grow as pushes do, amortized.
                            match values.is_empty() {
                                true => values.reserve_exact(elements),
                                false => values.reserve(elements),
                            }
                            ::prost::encoding::$module::merge_repeated(wire_type, values, &mut field, ctx)
                        }
                        None => ::prost::encoding::$module::merge_repeated(wire_type, values, buf, ctx),
                    }
                }
            }
        )*};
    }

    reserving! {
        int32: i32, frpc_wire::protobuf_cost::packed_varints;
        int64: i64, frpc_wire::protobuf_cost::packed_varints;
        uint32: u32, frpc_wire::protobuf_cost::packed_varints;
        uint64: u64, frpc_wire::protobuf_cost::packed_varints;
        sint32: i32, frpc_wire::protobuf_cost::packed_varints;
        sint64: i64, frpc_wire::protobuf_cost::packed_varints;
        bool: bool, frpc_wire::protobuf_cost::packed_varints;
        float: f32, |run| run.len() / 4;
        double: f64, |run| run.len() / 8;
        fixed32: u32, |run| run.len() / 4;
        fixed64: u64, |run| run.len() / 8;
        sfixed32: i32, |run| run.len() / 4;
        sfixed64: i64, |run| run.len() / 8;
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

    /// Packed runs read as prost reads them (values and errors, in one `Bytes`, in [`Pieces`]
    /// and split in two slices), into a vector reserved at the run's size; unpacked elements
    /// and truncated runs are prost's own.
    #[test]
    fn packed_runs_read_as_prost_reads_them_reserved() {
        use ::prost::encoding::{double, int64, sint32};
        let ids: Vec<i64> = (0..3_000).map(|i| i % 300 - 7).collect();
        let mut packed = Vec::new();
        int64::encode_packed(1, &ids, &mut packed);
        let field = Bytes::from(packed).slice(1..); // without the key
        let ctx = DecodeContext::default;
        for buf in [
            Box::new(field.clone()) as Box<dyn Buf>,
            Box::new(Pieces(field.clone())),
        ] {
            let mut buf = buf;
            let mut values = Vec::new();
            super::encoding::int64::merge_repeated(WireType::LengthDelimited, &mut values, &mut buf, ctx())
                .unwrap();
            assert_eq!(values, ids);
            assert_eq!(values.capacity(), ids.len(), "reserved at its size");
            assert_eq!(buf.remaining(), 0);
        }
        let (head, tail) = field.split_at(field.len() / 2);
        let mut values = Vec::new();
        super::encoding::int64::merge_repeated(
            WireType::LengthDelimited,
            &mut values,
            &mut head.chain(tail),
            ctx(),
        )
        .unwrap();
        assert_eq!(values, ids);
        // Truncated: prost's error, nothing reserved.
        let mut ours = Vec::new();
        let mut theirs = Vec::new();
        let short = field.slice(..field.len() - 1);
        let err = super::encoding::int64::merge_repeated(
            WireType::LengthDelimited,
            &mut ours,
            &mut short.clone(),
            ctx(),
        );
        let expected =
            int64::merge_repeated(WireType::LengthDelimited, &mut theirs, &mut short.clone(), ctx());
        assert_eq!(
            err.map_err(|e| e.to_string()),
            expected.map_err(|e| e.to_string())
        );
        assert_eq!(ours.capacity(), 0);
        // Unpacked elements, zigzag and fixed widths.
        let mut one = Vec::new();
        let mut encoded = Vec::new();
        sint32::encode(1, &-5, &mut encoded);
        super::encoding::sint32::merge_repeated(WireType::Varint, &mut one, &mut &encoded[1..], ctx())
            .unwrap();
        assert_eq!(one, [-5]);
        let floats = [1.5, -0.0, f64::NAN];
        let mut encoded = Vec::new();
        double::encode_packed(1, &floats, &mut encoded);
        let mut back = Vec::new();
        super::encoding::double::merge_repeated(
            WireType::LengthDelimited,
            &mut back,
            &mut &encoded[1..],
            ctx(),
        )
        .unwrap();
        assert_eq!(
            back.iter().map(|f: &f64| f.to_bits()).collect::<Vec<_>>(),
            floats.map(f64::to_bits)
        );
        assert_eq!(back.capacity(), 3);
    }
}
