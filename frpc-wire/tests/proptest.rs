//! Property tests: every kind round-trips with exact sizes and shortest varints, and neither
//! decoder panics on arbitrary bytes.

use std::collections::BTreeMap;

use bytes::BytesMut;
use frpc_wire::polyglot::value::{self, Str, U32};
use frpc_wire::polyglot::{Decoder, Kind, encode};
use frpc_wire::{Frame, Framing, Packet, PacketCodec};
use proptest::prelude::*;
use proptest::sample::Index;
use tokio_util::codec::{Decoder as _, Encoder as _};

fn written(f: impl FnOnce(&mut BytesMut)) -> BytesMut {
    let mut buf = BytesMut::new();
    f(&mut buf);
    buf
}

/// XORs a few bytes of `wire` (the positions chosen by `flips`).
fn corrupt(mut wire: Vec<u8>, flips: Vec<(Index, u8)>) -> Vec<u8> {
    if !wire.is_empty() {
        for (at, mask) in flips {
            let at = at.index(wire.len());
            wire[at] ^= mask;
        }
    }
    wire
}

/// Either arbitrary bytes, or well-framed packets (either framing) with a few bytes flipped,
/// so that headers are plausible often enough to reach the content paths.
fn packet_stream() -> impl Strategy<Value = Vec<u8>> {
    let arbitrary = proptest::collection::vec(any::<u8>(), 0..2048);
    let packets = proptest::collection::vec(
        (
            any::<u16>(),
            any::<u16>(),
            proptest::collection::vec(any::<u8>(), 0..100),
        ),
        0..10,
    );
    let flips = proptest::collection::vec((any::<Index>(), any::<u8>()), 0..4);
    let framed = (any::<bool>(), packets, flips).prop_map(|(legacy, packets, flips)| {
        let framing = if legacy { Framing::Legacy } else { Framing::Frisbee };
        let mut codec = PacketCodec::new(framing);
        let mut wire = BytesMut::new();
        for (id, op, content) in packets {
            codec.encode(Packet::new(id, op, content), &mut wire).unwrap();
        }
        corrupt(wire.to_vec(), flips)
    });
    prop_oneof![arbitrary, framed]
}

/// Either arbitrary bytes, or a run of well-formed polyglot values with a few bytes flipped.
fn polyglot_input() -> impl Strategy<Value = Vec<u8>> {
    let arbitrary = proptest::collection::vec(any::<u8>(), 0..256);
    let values = proptest::collection::vec((0u8..16, any::<u64>(), ".{0,6}"), 0..12);
    let flips = proptest::collection::vec((any::<Index>(), any::<u8>()), 0..3);
    let encoded = (values, flips).prop_map(|(values, flips)| {
        let mut b = BytesMut::new();
        for (kind, n, text) in values {
            match kind {
                0 => encode::put_nil(&mut b),
                1 => encode::put_bool(&mut b, n & 1 == 1),
                2 => encode::put_u8(&mut b, n as u8),
                3 => encode::put_u16(&mut b, n as u16),
                4 => encode::put_u32(&mut b, n as u32),
                5 => encode::put_u64(&mut b, n),
                6 => encode::put_i32(&mut b, n as i32),
                7 => encode::put_i64(&mut b, n as i64),
                8 => encode::put_f32(&mut b, f32::from_bits(n as u32)),
                9 => encode::put_f64(&mut b, f64::from_bits(n)),
                10 => encode::put_str(&mut b, &text),
                11 => encode::put_bytes(&mut b, text.as_bytes()),
                12 => encode::put_error(&mut b, &text),
                13 => encode::put_slice_header(&mut b, Kind::String, (n % 4) as usize),
                14 => encode::put_map_header(&mut b, Kind::String, Kind::U32, (n % 3) as usize),
                _ => {
                    encode::put_slice_header(&mut b, Kind::String, 1);
                    encode::put_str(&mut b, &text);
                }
            }
        }
        corrupt(b.to_vec(), flips)
    });
    prop_oneof![arbitrary, encoded]
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

    /// Varints are the shortest form, and canonical inputs decode and re-encode to themselves.
    #[test]
    fn varints_are_shortest(v: u64, w: u32, h: u16, i: i32, j: i64) {
        let buf = written(|b| encode::put_u64(b, v));
        prop_assert_eq!(buf.len(), 1 + encode::varint_len(v));
        prop_assert!(buf.len() == 2 || buf[buf.len() - 1] != 0, "no trailing zero group");
        prop_assert!(buf[1..buf.len() - 1].iter().all(|b| b & 0x80 != 0));
        prop_assert!(buf[buf.len() - 1] & 0x80 == 0);
        let again = written(|b| encode::put_u64(b, Decoder::new(&buf).u64().unwrap()));
        prop_assert_eq!(again, buf);
        // The same through every integer kind.
        let buf = written(|b| { encode::put_u32(b, w); encode::put_u16(b, h); encode::put_i32(b, i); encode::put_i64(b, j); });
        let mut dec = Decoder::new(&buf);
        let again = written(|b| {
            encode::put_u32(b, dec.u32().unwrap());
            encode::put_u16(b, dec.u16().unwrap());
            encode::put_i32(b, dec.i32().unwrap());
            encode::put_i64(b, dec.i64().unwrap());
        });
        prop_assert_eq!(again, buf);
    }

    /// Any canonical varint (built from random 7-bit groups, the last one non-zero) decodes to
    /// a value whose shortest encoding is that very varint.
    #[test]
    fn canonical_varints_reencode_to_themselves(groups in proptest::collection::vec(0u8..0x80, 1..10)) {
        let mut groups = groups;
        let last = groups.len() - 1;
        if last > 0 && groups[last] == 0 {
            groups[last] = 1;
        }
        if groups.len() == 10 && groups[last] > 1 {
            groups[last] = 1; // the tenth group carries bit 63 only
        }
        let mut input = vec![0x0b];
        for (n, g) in groups.iter().enumerate() {
            input.push(if n < last { g | 0x80 } else { *g });
        }
        let v = Decoder::new(&input).u64().unwrap();
        prop_assert_eq!(&written(|b| encode::put_u64(b, v))[..], &input[..]);
    }

    /// Arbitrary bytes, in arbitrary chunks, in both framings, with a small and the default
    /// limit: no panic, and the packets that come out re-encode to exactly the bytes consumed.
    #[test]
    fn the_packet_decoder_never_panics(data in packet_stream(), legacy: bool, small: bool, chunk in 1usize..64) {
        let framing = if legacy { Framing::Legacy } else { Framing::Frisbee };
        let mut codec = PacketCodec::new(framing);
        if small {
            codec = codec.with_max_content_length(64);
        }
        let mut buf = BytesMut::new();
        let mut fed = 0;
        let mut reencoded = BytesMut::new();
        let mut failed = false;
        'feed: for piece in data.chunks(chunk) {
            buf.extend_from_slice(piece);
            fed += piece.len();
            loop {
                match codec.decode(&mut buf) {
                    Ok(Some(packet)) => {
                        prop_assert!(packet.content.len() <= codec.max_content_length() as usize);
                        codec.encode(&packet, &mut reencoded).unwrap();
                    }
                    Ok(None) => break,
                    Err(_) => {
                        failed = true;
                        break 'feed;
                    }
                }
            }
        }
        let consumed = fed - buf.len();
        prop_assert_eq!(&reencoded[..], &data[..consumed], "prefix-consistent");
        if !failed {
            let tail = buf.len();
            match codec.decode_eof(&mut buf) {
                Ok(None) => prop_assert_eq!(tail, 0),
                Ok(Some(_)) => prop_assert!(false, "every whole packet was already taken"),
                Err(_) => prop_assert!(tail > 0),
            }
        }
    }

    /// The same for `FrameCodec` with a small limit: oversize packets are skipped, and the
    /// headers and packets that come out, with the skipped bytes, are exactly the bytes consumed.
    #[test]
    fn the_frame_decoder_never_panics(data in packet_stream(), legacy: bool, chunk in 1usize..64) {
        let framing = if legacy { Framing::Legacy } else { Framing::Frisbee };
        let mut codec = PacketCodec::new(framing).with_max_content_length(16).frames().with_max_skip(1024);
        let mut buf = BytesMut::new();
        let mut fed = 0;
        let mut rebuilt = BytesMut::new();
        let mut failed = false;
        'feed: for piece in data.chunks(chunk) {
            buf.extend_from_slice(piece);
            fed += piece.len();
            loop {
                match codec.decode(&mut buf) {
                    Ok(Some(Frame::Packet(packet))) => {
                        prop_assert!(packet.content.len() <= 16);
                        codec.encode(&packet, &mut rebuilt).unwrap();
                    }
                    Ok(Some(Frame::Oversize(header))) => {
                        prop_assert!(header.len > 16 && header.len <= 1024);
                        header.encode(framing, &mut rebuilt);
                        let from = rebuilt.len();
                        let to = (from + header.len as usize).min(data.len());
                        rebuilt.extend_from_slice(&data[from..to]);
                    }
                    Ok(None) => break,
                    Err(_) => {
                        failed = true;
                        break 'feed;
                    }
                }
            }
        }
        let consumed = fed - buf.len();
        prop_assert_eq!(&rebuilt[..consumed], &data[..consumed]);
        if !failed {
            // All of `data` was fed: what is still to skip is past its end.
            prop_assert_eq!(rebuilt.len(), consumed);
            let pending = buf.len() + codec.skipping() as usize;
            match codec.decode_eof(&mut buf) {
                Ok(None) => prop_assert_eq!(pending, 0),
                Ok(Some(_)) => prop_assert!(false, "every whole packet was already taken"),
                Err(_) => prop_assert!(pending > 0),
            }
        }
    }

    /// Well-formed packets around arbitrary content survive any chunking.
    #[test]
    fn packets_roundtrip_through_any_chunking(
        packets in proptest::collection::vec((any::<u16>(), any::<u16>(), proptest::collection::vec(any::<u8>(), 0..100)), 0..10),
        legacy: bool, chunk in 1usize..50) {
        let framing = if legacy { Framing::Legacy } else { Framing::Frisbee };
        let mut codec = PacketCodec::new(framing);
        let packets: Vec<Packet> = packets.into_iter().map(|(id, op, c)| Packet::new(id, op, c)).collect();
        let mut wire = BytesMut::new();
        for packet in &packets {
            codec.encode(packet, &mut wire).unwrap();
        }
        prop_assert_eq!(wire.len(), packets.iter().map(|p| framing.header_len() + p.content.len()).sum::<usize>());
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for piece in wire.chunks(chunk) {
            buf.extend_from_slice(piece);
            while let Some(packet) = codec.decode(&mut buf).unwrap() {
                out.push(packet);
            }
        }
        prop_assert!(buf.is_empty());
        prop_assert_eq!(out, packets);
    }

    #[test]
    fn the_polyglot_decoder_never_panics(data in polyglot_input(), calls in proptest::collection::vec(0u8..20, 0..40)) {
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
