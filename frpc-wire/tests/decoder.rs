//! The polyglot decoder and the field codecs: non-consuming failures, Go's leniency, hostile
//! lengths, zero-copy bytes, and the fRPC envelope.

use std::collections::{BTreeMap, HashMap};

use bytes::{BufMut, Bytes, BytesMut};
use frpc_wire::DecodeError;
use frpc_wire::polyglot::value::{self, Boxed, Codec, Enum, EnumIndex, Msg, Str, U32, Wrapped};
use frpc_wire::polyglot::{
    Decoder, Envelope, Kind, Message, decode_envelope, decode_nested, encode, error_to_bytes,
};

fn bytes(f: impl FnOnce(&mut BytesMut)) -> Bytes {
    let mut buf = BytesMut::new();
    f(&mut buf);
    buf.freeze()
}

/// Calls every reader on `input`; each that fails must leave the position where it was.
fn every_failure_consumes_nothing(input: &[u8]) {
    macro_rules! check {
        ($($read:ident),*) => {$(
            let mut dec = Decoder::new(input);
            if dec.$read().is_err() {
                assert_eq!(dec.position(), 0, "{} on {:02x?}", stringify!($read), input);
            }
        )*};
    }
    check!(
        nil, bool, u8, u16, u32, u64, i32, i64, f32, f64, str, string, byte_slice, bytes, error
    );
    let mut dec = Decoder::new(input);
    if dec.slice_header(Kind::String).is_err() {
        assert_eq!(dec.position(), 0);
    }
    let mut dec = Decoder::new(input);
    if dec.map_header(Kind::String, Kind::U32).is_err() {
        assert_eq!(dec.position(), 0);
    }
}

#[test]
fn a_wrong_kind_fails_without_consuming() {
    let input = [0x05, 0x0a, 0x02, b'h', b'i'];
    let mut dec = Decoder::new(&input);
    assert!(matches!(
        dec.u32(),
        Err(DecodeError::WrongKind {
            expected: "u32",
            found: 0x05,
            offset: 0
        })
    ));
    assert_eq!(dec.position(), 0);
    assert_eq!(dec.str().unwrap(), "hi");
    every_failure_consumes_nothing(&input);
}

#[test]
fn probes_for_nil_and_error_do_not_consume_on_mismatch() {
    let mut dec = Decoder::new(&[0x08, 0x00]);
    assert!(!dec.take_nil());
    assert_eq!(dec.take_error().unwrap(), None);
    assert_eq!(dec.position(), 0);
    let mut dec = Decoder::new(&[0x00, 0x06, 0x05, 0x0a, 0x01, b'x']);
    assert!(dec.next_is_nil());
    assert!(dec.take_nil());
    assert_eq!(dec.take_error().unwrap().as_deref(), Some("x"));
    assert_eq!(dec.remaining(), 0);
    // A lone error kind byte (the polyglot_rs bug in spec §4.5): an Err, nothing consumed.
    let mut dec = Decoder::new(&[0x06]);
    assert!(dec.take_error().is_err());
    assert_eq!(dec.position(), 0);
}

#[test]
fn varints_are_as_lenient_as_go_and_no_more() {
    // Bits beyond the type's width are dropped, as Go does.
    assert_eq!(Decoder::new(&[0x09, 0xff, 0xff, 0x7f]).u16().unwrap(), 65535);
    // A u16 varint of 4 bytes is too long.
    let mut dec = Decoder::new(&[0x09, 0x80, 0x80, 0x80, 0x01]);
    assert!(matches!(
        dec.u16(),
        Err(DecodeError::VarintTooLong { max: 3, .. })
    ));
    assert_eq!(dec.position(), 0);
    assert!(matches!(
        Decoder::new(&[0x0a, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]).u32(),
        Err(DecodeError::VarintTooLong { max: 5, .. })
    ));
    let eleven = [
        0x0b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
    ];
    assert!(matches!(
        Decoder::new(&eleven).u64(),
        Err(DecodeError::VarintTooLong { max: 10, .. })
    ));
    // Zigzag, from spec §4.2.
    for (v, enc) in [
        (0i32, vec![0x00]),
        (-1, vec![0x01]),
        (1, vec![0x02]),
        (63, vec![0x7e]),
        (-64, vec![0x7f]),
    ] {
        let mut buf = vec![0x0c];
        buf.extend(enc);
        assert_eq!(Decoder::new(&buf).i32().unwrap(), v);
        assert_eq!(&bytes(|b| encode::put_i32(b, v))[..], &buf[..]);
    }
}

#[test]
fn truncation_at_every_cut_is_an_error_not_a_panic() {
    let samples = [
        bytes(|b| encode::put_str(b, "hello world")),
        bytes(|b| encode::put_u64(b, u64::MAX)),
        bytes(|b| encode::put_i64(b, i64::MIN)),
        bytes(|b| encode::put_f64(b, 1.5)),
        bytes(|b| encode::put_error(b, "boom")),
        bytes(|b| {
            encode::put_slice_header(b, Kind::String, 2);
            encode::put_str(b, "a");
            encode::put_str(b, "b");
        }),
    ];
    for sample in &samples {
        for cut in 0..sample.len() {
            every_failure_consumes_nothing(&sample[..cut]);
            let mut dec = Decoder::new(&sample[..cut]);
            let first = sample[0];
            let failed = match first {
                0x05 => dec.str().is_err(),
                0x0b => dec.u64().is_err(),
                0x0d => dec.i64().is_err(),
                0x0f => dec.f64().is_err(),
                0x06 => dec.error().is_err(),
                _ => value::decode_repeated::<Str>(&mut dec).is_err(),
            };
            assert!(failed, "cut {cut} of {sample:02x?}");
        }
    }
}

/// The encoded bytes of the 17 Go vectors (`testdata/vectors/polyglot-v2.json`).
fn go_vectors() -> Vec<(String, Vec<u8>)> {
    use base64::Engine;
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/vectors/polyglot-v2.json"
    );
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    json.as_array()
        .unwrap()
        .iter()
        .map(|v| {
            let encoded = base64::engine::general_purpose::STANDARD
                .decode(v["encodedValue"].as_str().unwrap())
                .unwrap();
            (v["name"].as_str().unwrap().to_owned(), encoded)
        })
        .collect()
}

/// Decodes one whole value of the kind `kind`, as the vectors hold them (arrays of strings,
/// maps of string to u32).
fn decode_whole(kind: u8, dec: &mut Decoder<'_>) -> Result<(), DecodeError> {
    match Kind::from_byte(kind).unwrap() {
        Kind::Nil => dec.nil(),
        Kind::Bool => dec.bool().map(drop),
        Kind::U8 => dec.u8().map(drop),
        Kind::U16 => dec.u16().map(drop),
        Kind::U32 => dec.u32().map(drop),
        Kind::U64 => dec.u64().map(drop),
        Kind::I32 => dec.i32().map(drop),
        Kind::I64 => dec.i64().map(drop),
        Kind::F32 => dec.f32().map(drop),
        Kind::F64 => dec.f64().map(drop),
        Kind::String => dec.str().map(drop),
        Kind::Bytes => dec.bytes().map(drop),
        Kind::Error => dec.error().map(drop),
        Kind::Slice => value::decode_repeated::<Str>(dec).map(drop),
        Kind::Map => value::decode_map::<Str, U32, BTreeMap<_, _>>(dec).map(drop),
        Kind::Any => unreachable!("no vector is of kind Any"),
    }
}

#[test]
fn every_go_vector_fails_cleanly_at_every_cut_and_for_every_other_reader() {
    let vectors = go_vectors();
    assert_eq!(vectors.len(), 17);
    for (name, encoded) in &vectors {
        let kind = encoded[0];
        // Whole: the matching reader takes exactly all of it; the others take nothing.
        let mut dec = Decoder::new(encoded);
        decode_whole(kind, &mut dec).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(dec.remaining(), 0, "{name}");
        every_failure_consumes_nothing(encoded);
        // (A Nil where a slice or map header is expected reads as empty: tested in `field_shapes`.)
        let lenient = |k: u8| kind == Kind::Nil.byte() && (k == Kind::Slice.byte() || k == Kind::Map.byte());
        for other in (0x00..=0x0f).filter(|&k| k != kind && k != Kind::Any.byte() && !lenient(k)) {
            let mut dec = Decoder::new(encoded);
            assert!(
                decode_whole(other, &mut dec).is_err(),
                "{name} read as kind {other:#04x}"
            );
            assert_eq!(dec.position(), 0, "{name} read as kind {other:#04x}");
        }
        // Every proper prefix: an error (never a panic), and no reader consumes on failure.
        for cut in 0..encoded.len() {
            let prefix = &encoded[..cut];
            every_failure_consumes_nothing(prefix);
            let mut dec = Decoder::new(prefix);
            assert!(decode_whole(kind, &mut dec).is_err(), "{name} cut at {cut}");
            let shared = Bytes::copy_from_slice(prefix);
            assert!(decode_whole(kind, &mut Decoder::from_bytes(&shared)).is_err());
        }
    }
}

#[test]
fn take_rest_hands_out_what_is_left_and_ends_the_input() {
    let input = bytes(|b| {
        encode::put_u32(b, 7);
        encode::put_str(b, "rest");
    });
    let mut dec = Decoder::from_bytes(&input);
    assert_eq!(dec.u32().unwrap(), 7);
    let rest = dec.take_rest();
    assert_eq!(rest.as_ptr(), input[2..].as_ptr(), "a slice of the shared input");
    assert_eq!(Decoder::new(&rest).str().unwrap(), "rest");
    assert_eq!((dec.remaining(), dec.take_rest().len()), (0, 0));
    // Over a plain slice the rest is a copy.
    let mut plain = Decoder::new(&input);
    plain.u32().unwrap();
    assert_eq!(plain.take_rest(), rest);
}

#[test]
fn hostile_lengths_are_refused_before_allocating() {
    let mut dec = Decoder::new(&[0x05, 0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]);
    assert!(matches!(
        dec.str(),
        Err(DecodeError::LengthTooLarge {
            len: 4294967295,
            remaining: 0,
            ..
        })
    ));
    // A slice header claiming 4 billion elements with 3 bytes left.
    let mut dec = Decoder::new(&[0x01, 0x05, 0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0, 0]);
    assert!(matches!(
        dec.slice_header(Kind::String),
        Err(DecodeError::LengthTooLarge { .. })
    ));
    let mut dec = Decoder::new(&[0x02, 0x05, 0x0a, 0x0a, 0x03, 0x00, 0x00]);
    assert!(matches!(
        dec.map_header(Kind::String, Kind::U32),
        Err(DecodeError::LengthTooLarge { .. })
    ));
    // Element kinds must match.
    let mut dec = Decoder::new(&[0x01, 0x04, 0x0a, 0x00]);
    assert!(matches!(
        dec.slice_header(Kind::String),
        Err(DecodeError::WrongElementKind { .. })
    ));
    assert_eq!(dec.position(), 0);
}

#[test]
fn bad_bools_and_bad_utf8_are_errors() {
    assert_eq!(
        Decoder::new(&[0x07, 0x02]).bool(),
        Err(DecodeError::InvalidBool(2))
    );
    assert!(matches!(
        Decoder::new(&[0x05, 0x0a, 0x01, 0xff]).str(),
        Err(DecodeError::InvalidUtf8(1))
    ));
    // The same bytes are fine as `bytes`.
    assert_eq!(
        Decoder::new(&[0x04, 0x0a, 0x01, 0xff]).byte_slice().unwrap(),
        &[0xff]
    );
}

#[test]
fn bytes_from_shared_input_are_zero_copy() {
    let input = bytes(|b| encode::put_bytes(b, &[9u8; 64]));
    let out = Decoder::from_bytes(&input).bytes().unwrap();
    let range = input.as_ptr() as usize..input.as_ptr() as usize + input.len();
    assert!(range.contains(&(out.as_ptr() as usize)), "a slice of the input");
    assert_eq!(out.as_ptr(), input[3..].as_ptr());
    assert_eq!(&out[..], &[9u8; 64]);
    // Over a plain slice the bytes are a copy; `str` and `byte_slice` always borrow.
    let copied = Decoder::new(&input).bytes().unwrap();
    assert!(!range.contains(&(copied.as_ptr() as usize)));
    assert_eq!(copied, out);
    assert_eq!(
        Decoder::new(&input).byte_slice().unwrap().as_ptr(),
        input[3..].as_ptr()
    );
}

/// `enum Sparse { ZERO = 0; FIVE = 5; TWO = 2; }`: indices 0, 1, 2 (spec §4.7).
#[derive(Debug)]
struct Sparse;

impl EnumIndex for Sparse {
    const NAME: &'static str = "Sparse";
    fn to_index(number: i32) -> u32 {
        match number {
            5 => 1,
            2 => 2,
            _ => 0,
        }
    }
    fn from_index(index: u32) -> Option<i32> {
        [0, 5, 2].get(index as usize).copied()
    }
}

#[test]
fn enums_travel_as_declaration_indices() {
    assert_eq!(&bytes(|b| Enum::<Sparse>::encode(&5, b))[..], &[0x0a, 0x01]);
    assert_eq!(&bytes(|b| Enum::<Sparse>::encode(&2, b))[..], &[0x0a, 0x02]);
    assert_eq!(
        Enum::<Sparse>::decode(&mut Decoder::new(&[0x0a, 0x01])).unwrap(),
        5
    );
    assert_eq!(&bytes(|b| Enum::<Sparse>::encode(&0, b))[..], &[0x0a, 0x00]);
    // A number the enum does not declare goes out as index 0, the default.
    assert_eq!(&bytes(|b| Enum::<Sparse>::encode(&7, b))[..], &[0x0a, 0x00]);
    assert_eq!(Enum::<Sparse>::len(&5), 2);
    for (index, number) in [(0u8, 0), (1, 5), (2, 2)] {
        let input = [0x0a, index];
        let mut dec = Decoder::new(&input);
        assert_eq!(Enum::<Sparse>::decode(&mut dec).unwrap(), number);
        assert_eq!(dec.remaining(), 0);
    }
    // In a repeated field the header names kind U32.
    let list = bytes(|b| value::encode_repeated::<Enum<Sparse>>(&[2, 5], b));
    assert_eq!(hex::encode(&list), "010a0a020a020a01");
    assert_eq!(
        value::decode_repeated::<Enum<Sparse>>(&mut Decoder::new(&list)).unwrap(),
        vec![2, 5]
    );
    let mut dec = Decoder::new(&[0x0a, 0x03]);
    assert_eq!(
        Enum::<Sparse>::decode(&mut dec),
        Err(DecodeError::UnknownEnumIndex {
            name: "Sparse",
            index: 3
        })
    );
    assert_eq!(dec.position(), 0);
}

/// `message Pair { string name = 1; repeated uint32 nums = 2; }`, written by hand.
#[derive(Debug, Default, Clone, PartialEq)]
struct Pair {
    name: String,
    nums: Vec<u32>,
}

impl Message for Pair {
    fn fields_len(&self) -> usize {
        Str::len(&self.name) + value::repeated_len::<U32>(&self.nums)
    }
    fn encode_fields(&self, buf: &mut impl BufMut) {
        Str::encode(&self.name, buf);
        value::encode_repeated::<U32>(&self.nums, buf);
    }
    fn decode_fields(&mut self, dec: &mut Decoder<'_>) -> Result<(), DecodeError> {
        self.name = Str::decode(dec)?;
        self.nums = value::decode_repeated::<U32>(dec)?;
        Ok(())
    }
}

#[test]
fn the_frpc_envelope() {
    let pair = Pair {
        name: "a".into(),
        nums: vec![1, 300],
    };
    let encoded = pair.to_polyglot();
    assert_eq!(hex::encode(&encoded), "0800050a0161010a0a020a010aac02");
    assert_eq!(pair.polyglot_len(), encoded.len());
    assert_eq!(Pair::from_polyglot(&encoded).unwrap(), pair);
    // `00` at the top level is the default message; an Error is the error's text.
    assert_eq!(
        decode_envelope::<Pair>(&mut Decoder::new(&[0x00])).unwrap(),
        Envelope::Message(Pair::default())
    );
    let err = bytes(|b| encode::put_error(b, "boom"));
    assert_eq!(
        decode_envelope::<Pair>(&mut Decoder::new(&err)).unwrap(),
        Envelope::Error("boom".into())
    );
    assert!(Pair::from_polyglot(&err).is_err());
    // Nested, an Error gives the default message (Go keeps it in a hidden field and goes on).
    assert_eq!(
        decode_nested::<Pair>(&mut Decoder::new(&err)).unwrap(),
        Pair::default()
    );
    // Flags other than 0 are accepted and ignored; another kind than u8 is an error.
    assert_eq!(
        Pair::from_polyglot(&Bytes::from_static(b"\x08\x02\x05\x0a\x00\x01\x0a\x0a\x00")).unwrap(),
        Pair::default()
    );
    assert!(Pair::from_polyglot(&Bytes::from_static(b"\x09\x00")).is_err());
    // Trailing bytes after the top-level message are ignored, as in Go.
    let mut trailing = BytesMut::from(&encoded[..]);
    trailing.extend_from_slice(b"junk");
    assert_eq!(Pair::from_polyglot(&trailing.freeze()).unwrap(), pair);
}

#[test]
fn field_shapes() {
    // Optional: `00` when absent.
    assert_eq!(&bytes(|b| value::encode_optional::<U32>(&None, b))[..], &[0x00]);
    assert_eq!(
        value::decode_optional::<U32>(&mut Decoder::new(&[0x00])).unwrap(),
        None
    );
    assert_eq!(
        value::decode_optional::<U32>(&mut Decoder::new(&[0x0a, 0x07])).unwrap(),
        Some(7)
    );
    assert_eq!(value::optional_len::<U32>(&None), 1);
    // Repeated messages: element kind Any, a `00` element is a default message.
    let list = vec![
        Pair::default(),
        Pair {
            name: "x".into(),
            nums: vec![],
        },
    ];
    let encoded = bytes(|b| value::encode_repeated::<Msg<Pair>>(&list, b));
    assert_eq!(&encoded[..3], &[0x01, 0x03, 0x0a]);
    assert_eq!(value::repeated_len::<Msg<Pair>>(&list), encoded.len());
    assert_eq!(
        value::decode_repeated::<Msg<Pair>>(&mut Decoder::new(&encoded)).unwrap(),
        list
    );
    let nil_element = [0x01, 0x03, 0x0a, 0x01, 0x00];
    assert_eq!(
        value::decode_repeated::<Msg<Pair>>(&mut Decoder::new(&nil_element)).unwrap(),
        vec![Pair::default()]
    );
    // An Error element also becomes a default message, and decoding carries on after it.
    let mut with_error = BytesMut::from(&[0x01, 0x03, 0x0a, 0x02][..]);
    encode::put_error(&mut with_error, "bad");
    Msg::<Pair>::encode(&list[1], &mut with_error);
    assert_eq!(
        value::decode_repeated::<Msg<Pair>>(&mut Decoder::new(&with_error)).unwrap(),
        vec![Pair::default(), list[1].clone()]
    );
    // A singular message field: optional, `00` when absent.
    let present = Some(list[1].clone());
    let encoded = bytes(|b| value::encode_optional::<Msg<Pair>>(&present, b));
    assert_eq!(value::optional_len::<Msg<Pair>>(&present), encoded.len());
    assert_eq!(
        value::decode_optional::<Msg<Pair>>(&mut Decoder::new(&encoded)).unwrap(),
        present
    );
    assert_eq!(
        value::decode_optional::<Msg<Pair>>(&mut Decoder::new(&[0x00])).unwrap(),
        None
    );
    // Maps, HashMap and BTreeMap alike; empty = an empty header.
    let map: BTreeMap<String, u32> = [("a".to_owned(), 1), ("b".to_owned(), 2)].into();
    let encoded = bytes(|b| value::encode_map::<Str, U32>(&map, b));
    assert_eq!(hex::encode(&encoded), "02050a0a02050a01610a01050a01620a02");
    assert_eq!(value::map_len::<Str, U32>(&map), encoded.len());
    let back: HashMap<String, u32> = value::decode_map::<Str, U32, _>(&mut Decoder::new(&encoded)).unwrap();
    assert_eq!(back, map.clone().into_iter().collect::<HashMap<_, _>>());
    let back: BTreeMap<String, u32> = value::decode_map::<Str, U32, _>(&mut Decoder::new(&encoded)).unwrap();
    assert_eq!(back, map);
    let one: HashMap<String, u32> = [("k".to_owned(), 300)].into();
    let encoded = bytes(|b| value::encode_map::<Str, U32>(&one, b));
    assert_eq!(hex::encode(&encoded), "02050a0a01050a016b0aac02");
    assert_eq!(value::map_len::<Str, U32>(&one), encoded.len());
    // A `00` instead of the header is an empty map; wrong key or value kinds are refused.
    let empty: BTreeMap<String, u32> = value::decode_map::<Str, U32, _>(&mut Decoder::new(&[0x00])).unwrap();
    assert!(empty.is_empty());
    let mut dec = Decoder::new(&encoded);
    assert!(matches!(
        value::decode_map::<Str, Str, HashMap<_, _>>(&mut dec),
        Err(DecodeError::WrongElementKind { .. })
    ));
    assert_eq!(dec.position(), 0);
    assert_eq!(
        &bytes(|b| value::encode_map::<Str, U32>(&HashMap::new(), b))[..],
        &[0x02, 0x05, 0x0a, 0x0a, 0x00]
    );
    // A wrapper type (`StringValue`): a one-field message.
    assert_eq!(
        hex::encode(bytes(|b| Wrapped::<Str>::encode(&"v".to_owned(), b))),
        "0800050a0176"
    );
    assert_eq!(
        Wrapped::<Str>::decode(&mut Decoder::new(b"\x08\x00\x05\x0a\x01v")).unwrap(),
        "v"
    );
    assert_eq!(Wrapped::<Str>::len(&"v".to_owned()), 6);
    assert_eq!(Wrapped::<Str>::decode(&mut Decoder::new(&[0x00])).unwrap(), "");
    assert_eq!(
        Wrapped::<U32>::decode(&mut Decoder::new(&error_to_bytes("x"))).unwrap(),
        0,
        "a nested Error gives the default"
    );
    assert!(Wrapped::<Str>::decode(&mut Decoder::new(&[0x05, 0x0a, 0x00])).is_err());
}

/// `message Node { string name = 1; Node next = 2; }`: recursive, so prost boxes `next`.
#[derive(Debug, Default, Clone, PartialEq)]
struct Node {
    name: String,
    next: Option<Box<Node>>,
}

impl Message for Node {
    fn fields_len(&self) -> usize {
        Str::len(&self.name) + value::optional_len::<Boxed<Msg<Node>>>(&self.next)
    }
    fn encode_fields(&self, buf: &mut impl BufMut) {
        Str::encode(&self.name, buf);
        value::encode_optional::<Boxed<Msg<Node>>>(&self.next, buf);
    }
    fn decode_fields(&mut self, dec: &mut Decoder<'_>) -> Result<(), DecodeError> {
        self.name = Str::decode(dec)?;
        self.next = value::decode_optional::<Boxed<Msg<Node>>>(dec)?;
        Ok(())
    }
}

#[test]
fn boxed_values_encode_exactly_like_the_inner_codec() {
    // A boxed scalar: the same bytes, size and kind as the unboxed one.
    let boxed = Box::new("hi".to_owned());
    let encoded = bytes(|b| Boxed::<Str>::encode(&boxed, b));
    assert_eq!(encoded, bytes(|b| Str::encode(&"hi".to_owned(), b)));
    assert_eq!(Boxed::<Str>::len(&boxed), encoded.len());
    assert_eq!(<Boxed<Str> as Codec>::KIND, Kind::String);
    assert_eq!(<Boxed<Msg<Node>> as Codec>::KIND, Kind::Any);
    assert_eq!(Boxed::<Str>::decode(&mut Decoder::new(&encoded)).unwrap(), boxed);
    let mut dec = Decoder::new(&[0x0a, 0x01]);
    assert!(Boxed::<Str>::decode(&mut dec).is_err());
    assert_eq!(dec.position(), 0, "a wrong kind consumes nothing, boxed or not");

    // A recursive message: the present link is a nested envelope, the absent one `00`.
    let list = Node {
        name: "a".into(),
        next: Some(Box::new(Node {
            name: "b".into(),
            next: None,
        })),
    };
    let encoded = list.to_polyglot();
    assert_eq!(hex::encode(&encoded), "0800050a01610800050a016200");
    assert_eq!(list.polyglot_len(), encoded.len());
    assert_eq!(Node::from_polyglot(&encoded).unwrap(), list);
    // Every cut of it is an error, never a panic.
    for cut in 0..encoded.len() {
        assert!(
            Node::from_polyglot(&encoded.slice(..cut)).is_err(),
            "cut at {cut}"
        );
    }
    // A nested Error in the link gives a default `next`, as `decode_nested` does.
    let mut with_error = BytesMut::from(&b"\x08\x00\x05\x0a\x01a"[..]);
    encode::put_error(&mut with_error, "gone");
    assert_eq!(
        Node::from_polyglot(&with_error.freeze()).unwrap(),
        Node {
            name: "a".into(),
            next: Some(Box::default()),
        }
    );
}

#[test]
fn well_known_types_round_trip() {
    let ts = prost_types::Timestamp {
        seconds: -5,
        nanos: 7,
    };
    assert_eq!(hex::encode(ts.to_polyglot()), "08000d090c0e");
    assert_eq!(
        prost_types::Timestamp::from_polyglot(&ts.to_polyglot()).unwrap(),
        ts
    );
    let d = prost_types::Duration {
        seconds: 3,
        nanos: -1,
    };
    assert_eq!(hex::encode(d.to_polyglot()), "08000d060c01");
    assert_eq!(d.polyglot_len(), 6);
    assert_eq!(prost_types::Duration::from_polyglot(&d.to_polyglot()).unwrap(), d);
    let extreme = prost_types::Timestamp {
        seconds: i64::MIN,
        nanos: i32::MAX,
    };
    assert_eq!(extreme.polyglot_len(), extreme.to_polyglot().len());
    assert_eq!(
        prost_types::Timestamp::from_polyglot(&extreme.to_polyglot()).unwrap(),
        extreme
    );
    // `google.protobuf.Empty` is prost's `()`: the bare envelope.
    assert_eq!(&().to_polyglot()[..], &[0x08, 0x00]);
    assert_eq!(().polyglot_len(), 2);
    <() as Message>::from_polyglot(&Bytes::from_static(&[0x08, 0x00])).unwrap();
    <() as Message>::from_polyglot(&Bytes::from_static(&[0x00])).unwrap();
    assert!(<() as Message>::from_polyglot(&Bytes::from_static(&[0x07, 0x00])).is_err());
    // Truncated: an error.
    assert!(prost_types::Timestamp::from_polyglot(&Bytes::from_static(&[0x08, 0x00, 0x0d])).is_err());
}
