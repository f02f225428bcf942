//! Property tests: every kind round-trips with exact sizes and shortest varints, and neither
//! decoder panics on arbitrary bytes.

use std::collections::BTreeMap;

use bytes::BytesMut;
use frpc_wire::polyglot::value::{self, Str, U32};
use frpc_wire::polyglot::{Decoder, Kind, encode};
use frpc_wire::{Framing, PacketCodec};
use proptest::prelude::*;
use tokio_util::codec::Decoder as _;

fn written(f: impl FnOnce(&mut BytesMut)) -> BytesMut {
    let mut buf = BytesMut::new();
    f(&mut buf);
    buf
}

macro_rules! roundtrip {
    ($name:ident, $ty:ty, $put:path, $get:ident, $len:expr) => {
        proptest! {
            #[test]
            fn $name(v: $ty) {
                let buf = written(|b| $put(b, v));
                let len: fn($ty) -> usize = $len;
                prop_assert_eq!(buf.len(), len(v));
                let mut dec = Decoder::new(&buf);
                prop_assert_eq!(dec.$get().unwrap(), v);
                prop_assert_eq!(dec.remaining(), 0);
            }
        }
    };
}

roundtrip!(bool_roundtrip, bool, encode::put_bool, bool, |_| 2);
roundtrip!(u8_roundtrip, u8, encode::put_u8, u8, |_| 2);
roundtrip!(u16_roundtrip, u16, encode::put_u16, u16, encode::u16_len);
roundtrip!(u32_roundtrip, u32, encode::put_u32, u32, encode::u32_len);
roundtrip!(u64_roundtrip, u64, encode::put_u64, u64, encode::u64_len);
roundtrip!(i32_roundtrip, i32, encode::put_i32, i32, encode::i32_len);
roundtrip!(i64_roundtrip, i64, encode::put_i64, i64, encode::i64_len);

proptest! {
    #[test]
    fn floats_roundtrip_bitwise(a: u32, b: u64) {
        let (f, d) = (f32::from_bits(a), f64::from_bits(b));
        let buf = written(|buf| { encode::put_f32(buf, f); encode::put_f64(buf, d); });
        prop_assert_eq!(buf.len(), 5 + 9);
        let mut dec = Decoder::new(&buf);
        prop_assert_eq!(dec.f32().unwrap().to_bits(), a);
        prop_assert_eq!(dec.f64().unwrap().to_bits(), b);
    }

    #[test]
    fn strings_bytes_and_errors_roundtrip(s in ".{0,64}", raw in proptest::collection::vec(any::<u8>(), 0..300)) {
        let buf = written(|b| { encode::put_str(b, &s); encode::put_bytes(b, &raw); encode::put_error(b, &s); });
        prop_assert_eq!(buf.len(), encode::bytes_len(s.len()) * 2 + 1 + encode::bytes_len(raw.len()));
        let mut dec = Decoder::new(&buf);
        prop_assert_eq!(dec.str().unwrap(), s.as_str());
        prop_assert_eq!(dec.byte_slice().unwrap(), &raw[..]);
        prop_assert_eq!(dec.error().unwrap(), s);
    }

    #[test]
    fn slices_and_maps_roundtrip(list in proptest::collection::vec(".{0,8}", 0..20),
                                 map in proptest::collection::btree_map(".{0,8}", any::<u32>(), 0..20)) {
        let buf = written(|b| { value::encode_repeated::<Str>(&list, b); value::encode_map::<Str, U32>(&map, b); });
        prop_assert_eq!(buf.len(), value::repeated_len::<Str>(&list) + value::map_len::<Str, U32>(&map));
        let mut dec = Decoder::new(&buf);
        prop_assert_eq!(value::decode_repeated::<Str>(&mut dec).unwrap(), list);
        let back: BTreeMap<String, u32> = value::decode_map::<Str, U32, _>(&mut dec).unwrap();
        prop_assert_eq!(back, map);
    }

    /// Canonical (shortest) varints decode and re-encode to the same bytes.
    #[test]
    fn varints_are_shortest(v: u64) {
        let buf = written(|b| encode::put_u64(b, v));
        prop_assert_eq!(buf.len(), 1 + encode::varint_len(v));
        prop_assert!(buf.len() == 2 || buf[buf.len() - 1] != 0, "no trailing zero group");
        let again = written(|b| encode::put_u64(b, Decoder::new(&buf).u64().unwrap()));
        prop_assert_eq!(again, buf);
    }

    #[test]
    fn the_packet_decoder_never_panics(data in proptest::collection::vec(any::<u8>(), 0..2048),
                                       legacy: bool, small: bool, chunk in 1usize..64) {
        let framing = if legacy { Framing::Legacy } else { Framing::Frisbee };
        let mut codec = PacketCodec::new(framing);
        if small {
            codec = codec.with_max_content_length(64);
        }
        let mut buf = BytesMut::new();
        'feed: for piece in data.chunks(chunk) {
            buf.extend_from_slice(piece);
            loop {
                match codec.decode(&mut buf) {
                    Ok(Some(packet)) => prop_assert!(packet.content.len() <= codec.max_content_length() as usize),
                    Ok(None) => break,
                    Err(_) => break 'feed,
                }
            }
        }
        let _ = codec.decode_eof(&mut buf);
    }

    #[test]
    fn the_polyglot_decoder_never_panics(data in proptest::collection::vec(any::<u8>(), 0..256),
                                         calls in proptest::collection::vec(0u8..20, 0..40)) {
        let mut dec = Decoder::new(&data);
        for call in calls {
            let before = dec.position();
            let ok = match call {
                0 => dec.nil().is_ok(),
                1 => dec.bool().is_ok(),
                2 => dec.u8().is_ok(),
                3 => dec.u16().is_ok(),
                4 => dec.u32().is_ok(),
                5 => dec.u64().is_ok(),
                6 => dec.i32().is_ok(),
                7 => dec.i64().is_ok(),
                8 => dec.f32().is_ok(),
                9 => dec.f64().is_ok(),
                10 => dec.str().is_ok(),
                11 => dec.bytes().is_ok(),
                12 => dec.error().is_ok(),
                13 => dec.slice_header(Kind::String).is_ok(),
                14 => dec.map_header(Kind::String, Kind::U32).is_ok(),
                15 => dec.take_error().is_ok(),
                16 => { dec.take_nil(); true }
                17 => value::decode_repeated::<Str>(&mut dec).is_ok(),
                18 => value::decode_map::<Str, U32, BTreeMap<_, _>>(&mut dec).is_ok(),
                _ => value::decode_optional::<U32>(&mut dec).is_ok(),
            };
            if !ok && call < 17 {
                prop_assert_eq!(dec.position(), before, "a failed read consumes nothing");
            }
        }
    }
}
