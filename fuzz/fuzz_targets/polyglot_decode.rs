//! Drives the polyglot decoder with reads the input's first bytes choose (up to 16), over the
//! rest of the input: it must never panic, and a failed read must consume nothing. Then the
//! collection helpers (`decode_repeated::<Str>`, `decode_map::<Str, U32, HashMap>`) and the
//! zero-copy `bytes()` run over the same input.
#![no_main]

use std::collections::HashMap;

use bytes::Bytes;
use frpc_wire::polyglot::value::{self, Str, U32};
use frpc_wire::polyglot::{Decoder, Kind};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let split = data.len().min(16);
    let (calls, input) = data.split_at(split);
    let mut dec = Decoder::new(input);
    for &call in calls {
        let before = dec.position();
        let ok = match call % 20 {
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
            16 => {
                dec.take_nil();
                true
            }
            17 => value::decode_repeated::<Str>(&mut dec).is_ok(),
            18 => value::decode_map::<Str, U32, HashMap<_, _>>(&mut dec).is_ok(),
            _ => value::decode_optional::<U32>(&mut dec).is_ok(),
        };
        if !ok && call % 20 < 17 {
            assert_eq!(dec.position(), before, "a failed read consumed input");
        }
        assert!(dec.position() <= input.len());
    }
    // The collection helpers over the whole input, and the zero-copy path.
    let _ = value::decode_repeated::<Str>(&mut Decoder::new(input));
    let _ = value::decode_map::<Str, U32, HashMap<_, _>>(&mut Decoder::new(input));
    let shared = Bytes::copy_from_slice(input);
    let mut dec = Decoder::from_bytes(&shared);
    while let Ok(b) = dec.bytes() {
        assert!(b.is_empty() || shared.as_ptr_range().contains(&b.as_ptr()));
    }
});
