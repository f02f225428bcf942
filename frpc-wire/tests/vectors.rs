//! The 17 polyglot vectors Go's polyglot v2 wrote (`testdata/vectors/polyglot-v2.json`): each
//! decodes to the stated value and encodes back to exactly the same bytes.

use base64::Engine;
use bytes::BytesMut;
use std::collections::{BTreeMap, HashMap};

use frpc_wire::polyglot::value::{self, Str, U32};
use frpc_wire::polyglot::{Decoder, Kind, encode};
use serde_json::Value;

/// The 17 names, in file order (spec §4.6).
const NAMES: [&str; 17] = [
    "None",
    "true Bool",
    "false Bool",
    "U8",
    "U16",
    "U32",
    "U64",
    "I32",
    "I64",
    "F32",
    "F64",
    "Array",
    "Map",
    "nil or empty Map",
    "Bytes",
    "String",
    "Error",
];

/// `(name, kind, decodedValue, encoded bytes)` for every vector.
fn vectors() -> Vec<(String, u8, Value, Vec<u8>)> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/vectors/polyglot-v2.json"
    );
    let json: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    json.as_array()
        .unwrap()
        .iter()
        .map(|v| {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(v["encodedValue"].as_str().unwrap())
                .unwrap();
            (
                v["name"].as_str().unwrap().to_owned(),
                u8::try_from(v["kind"].as_u64().unwrap()).unwrap(),
                v["decodedValue"].clone(),
                bytes,
            )
        })
        .collect()
}

/// Decodes `bytes` as the vector's kind, checks the value, re-encodes, and returns the encoding.
fn roundtrip(name: &str, expected: &Value, bytes: &[u8]) -> Vec<u8> {
    let mut dec = Decoder::new(bytes);
    let mut out = BytesMut::new();
    match name {
        "None" => {
            dec.nil().unwrap();
            encode::put_nil(&mut out);
        }
        "true Bool" | "false Bool" => {
            let v = dec.bool().unwrap();
            assert_eq!(v, expected.as_bool().unwrap());
            encode::put_bool(&mut out, v);
        }
        "U8" => {
            let v = dec.u8().unwrap();
            assert_eq!(u64::from(v), expected.as_u64().unwrap());
            encode::put_u8(&mut out, v);
        }
        "U16" => {
            let v = dec.u16().unwrap();
            assert_eq!(u64::from(v), expected.as_u64().unwrap());
            assert_eq!(encode::u16_len(v), bytes.len());
            encode::put_u16(&mut out, v);
        }
        "U32" => {
            let v = dec.u32().unwrap();
            assert_eq!(u64::from(v), expected.as_u64().unwrap());
            assert_eq!(encode::u32_len(v), bytes.len());
            encode::put_u32(&mut out, v);
        }
        "U64" => {
            let v = dec.u64().unwrap();
            assert_eq!(v, expected.as_u64().unwrap());
            assert_eq!(encode::u64_len(v), bytes.len());
            encode::put_u64(&mut out, v);
        }
        "I32" => {
            let v = dec.i32().unwrap();
            assert_eq!(i64::from(v), expected.as_i64().unwrap());
            assert_eq!(encode::i32_len(v), bytes.len());
            encode::put_i32(&mut out, v);
        }
        "I64" => {
            let v = dec.i64().unwrap();
            assert_eq!(v, expected.as_i64().unwrap());
            assert_eq!(encode::i64_len(v), bytes.len());
            encode::put_i64(&mut out, v);
        }
        "F32" => {
            let v = dec.f32().unwrap();
            assert_eq!(v, expected.as_f64().unwrap() as f32);
            encode::put_f32(&mut out, v);
        }
        "F64" => {
            let v = dec.f64().unwrap();
            // serde_json's `float_roundtrip` feature parses this exactly.
            assert_eq!(v, expected.as_f64().unwrap());
            encode::put_f64(&mut out, v);
        }
        "Array" => {
            let count = dec.slice_header(Kind::String).unwrap();
            let items: Vec<String> = (0..count).map(|_| dec.string().unwrap()).collect();
            let want: Vec<&str> = expected
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            assert_eq!(items, want);
            encode::put_slice_header(&mut out, Kind::String, items.len());
            items.iter().for_each(|s| encode::put_str(&mut out, s));
            assert_eq!(
                encode::slice_header_len(items.len())
                    + items.iter().map(|s| encode::bytes_len(s.len())).sum::<usize>(),
                bytes.len()
            );
            let mut via_value = BytesMut::new();
            value::encode_repeated::<Str>(&items, &mut via_value);
            assert_eq!(&via_value[..], bytes, "{name}: encode_repeated");
            assert_eq!(value::repeated_len::<Str>(&items), bytes.len());
            assert_eq!(
                value::decode_repeated::<Str>(&mut Decoder::new(bytes)).unwrap(),
                items,
                "{name}: decode_repeated"
            );
        }
        "Map" | "nil or empty Map" => {
            let count = dec.map_header(Kind::String, Kind::U32).unwrap();
            let pairs: Vec<(String, u32)> = (0..count)
                .map(|_| (dec.string().unwrap(), dec.u32().unwrap()))
                .collect();
            let want = expected.as_object().unwrap();
            assert_eq!(pairs.len(), want.len());
            for (k, v) in &pairs {
                assert_eq!(u64::from(*v), want[k].as_u64().unwrap(), "{name}: {k}");
            }
            encode::put_map_header(&mut out, Kind::String, Kind::U32, pairs.len());
            for (k, v) in &pairs {
                encode::put_str(&mut out, k);
                encode::put_u32(&mut out, *v);
            }
            assert_eq!(
                encode::map_header_len(pairs.len())
                    + pairs
                        .iter()
                        .map(|(k, v)| encode::bytes_len(k.len()) + encode::u32_len(*v))
                        .sum::<usize>(),
                bytes.len(),
                "{name}"
            );
            // The field helpers agree: Go wrote the keys in sorted order here, as a BTreeMap does.
            let sorted: BTreeMap<String, u32> = pairs.iter().cloned().collect();
            let mut via_value = BytesMut::new();
            value::encode_map::<Str, U32>(&sorted, &mut via_value);
            assert_eq!(&via_value[..], bytes, "{name}: encode_map");
            let back: HashMap<String, u32> =
                value::decode_map::<Str, U32, _>(&mut Decoder::new(bytes)).unwrap();
            assert_eq!(
                back,
                sorted.into_iter().collect::<HashMap<_, _>>(),
                "{name}: decode_map"
            );
        }
        "Bytes" => {
            // Also through the zero-copy path.
            let shared = bytes::Bytes::copy_from_slice(bytes);
            let zero_copy = Decoder::from_bytes(&shared).bytes().unwrap();
            assert_eq!(
                zero_copy.as_ptr(),
                shared[3..].as_ptr(),
                "{name}: a slice of the input"
            );
            let v = dec.byte_slice().unwrap();
            let want = base64::engine::general_purpose::STANDARD
                .decode(expected.as_str().unwrap())
                .unwrap();
            assert_eq!(v, &want[..]);
            assert_eq!(encode::bytes_len(v.len()), bytes.len());
            encode::put_bytes(&mut out, v);
        }
        "String" => {
            let v = dec.str().unwrap();
            assert_eq!(v, expected.as_str().unwrap());
            assert_eq!(encode::bytes_len(v.len()), bytes.len());
            encode::put_str(&mut out, v);
        }
        "Error" => {
            let v = dec.error().unwrap();
            assert_eq!(v, expected.as_str().unwrap());
            assert_eq!(encode::error_len(v.len()), bytes.len());
            encode::put_error(&mut out, &v);
        }
        other => panic!("a vector this test does not know: {other}"),
    }
    assert_eq!(dec.remaining(), 0, "{name}: every byte consumed");
    out.to_vec()
}

#[test]
fn all_seventeen_vectors_decode_and_encode_back_exactly() {
    let vectors = vectors();
    let names: Vec<&str> = vectors.iter().map(|(name, ..)| name.as_str()).collect();
    assert_eq!(names, NAMES);
    for (name, kind, expected, bytes) in &vectors {
        assert_eq!(bytes[0], *kind, "{name}: the first byte is the kind");
        assert_eq!(Kind::from_byte(*kind).map(Kind::byte), Some(*kind), "{name}");
        // Map pairs are re-encoded in the order they were read, so even the map is exact.
        let encoded = roundtrip(name, expected, bytes);
        assert_eq!(hex::encode(&encoded), hex::encode(bytes), "{name}");
    }
}

/// The files under `testdata/vectors/`, copied from the spec's `shared/vectors/`.
const VECTOR_FILES: [&str; 6] = [
    "polyglot-v2.json",
    "capture-frisbee-v0.11.json",
    "capture-frisbee-v0.11.txt",
    "capture-frisbee-v0.10.json",
    "capture-frisbee-v0.10.txt",
    "capture.proto",
];

/// When the spec's `shared/vectors/` sits beside the workspace (`<workspace>/../shared/vectors`),
/// the repo copies must be byte-identical to it. A user's checkout has no such directory: skip.
#[test]
fn vectors_match_the_shared_copy_when_present() {
    let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let ours = workspace.join("testdata/vectors");
    for file in VECTOR_FILES {
        assert!(ours.join(file).is_file(), "testdata/vectors/{file} is missing");
    }
    let shared = workspace.join("../shared/vectors");
    let Ok(entries) = std::fs::read_dir(&shared) else {
        return;
    };
    let mut in_shared = Vec::new();
    for entry in entries {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let copy = std::fs::read(ours.join(&name))
            .unwrap_or_else(|_| panic!("shared/vectors/{name} is missing from testdata/vectors"));
        assert!(
            copy == std::fs::read(&path).unwrap(),
            "testdata/vectors/{name} differs from shared/vectors/{name}"
        );
        in_shared.push(name);
    }
    for file in VECTOR_FILES {
        assert!(
            in_shared.iter().any(|name| name == file),
            "{file} is not in shared/vectors"
        );
    }
}
