//! `#[derive(frpc::Message)]` on more shapes: every scalar, enums with sparse numbers, the
//! field-order example of the wire spec (§4.7), optional scalars, bytes, maps, recursion,
//! keywords and empty messages. Where `codegen-tests/proto/kitchen` has the same message,
//! the bytes must be those of the generated type.

use std::collections::{BTreeMap, HashMap};

use frpc::codegen::{Bytes, Message};
use frpc_codegen_tests::kitchen as generated;

fn same(rust_first: &impl Message, generated: &impl Message) {
    assert_eq!(
        hex::encode(rust_first.to_polyglot()),
        hex::encode(generated.to_polyglot())
    );
    assert_eq!(rust_first.polyglot_len(), generated.polyglot_len());
}

fn round_trip<M: Message + PartialEq + std::fmt::Debug>(m: &M) {
    let bytes = m.to_polyglot();
    assert_eq!(bytes.len(), m.polyglot_len());
    assert_eq!(&M::from_polyglot(&bytes).unwrap(), m);
}

/// `kitchen.Scalars`: every proto3 scalar type.
#[derive(frpc::Message, Clone, Debug, Default, PartialEq)]
struct Scalars {
    d: f64,
    f: f32,
    i32: i32,
    i64: i64,
    u32: u32,
    u64: u64,
    s32: i32,
    s64: i64,
    fx32: u32,
    fx64: u64,
    sfx32: i32,
    sfx64: i64,
    b: bool,
    s: String,
    by: Vec<u8>,
}

#[test]
fn scalars_match_generated() {
    let rust_first = Scalars {
        d: -1.5,
        f: 2.25,
        i32: -7,
        i64: i64::MIN,
        u32: u32::MAX,
        u64: u64::MAX,
        s32: 3,
        s64: -3,
        fx32: 9,
        fx64: 10,
        sfx32: -11,
        sfx64: 12,
        b: true,
        s: "é".into(),
        by: vec![0, 1, 255],
    };
    let g = generated::Scalars {
        d: -1.5,
        f: 2.25,
        i32: -7,
        i64: i64::MIN,
        u32: u32::MAX,
        u64: u64::MAX,
        s32: 3,
        s64: -3,
        fx32: 9,
        fx64: 10,
        sfx32: -11,
        sfx64: 12,
        b: true,
        s: "é".into(),
        by: vec![0, 1, 255],
    };
    same(&rust_first, &g);
    same(&Scalars::default(), &generated::Scalars::default());
    round_trip(&rust_first);
}

/// `kitchen.Inner`.
#[derive(frpc::Message, Clone, Debug, Default, PartialEq)]
struct Inner {
    name: String,
    n: i32,
}

/// `kitchen.Sparse`: numbers 0, 5, 2 travel as indices 0, 1, 2.
#[derive(frpc::Message, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[frpc(name = "kitchen.Sparse")]
enum Sparse {
    #[default]
    Zero = 0,
    Five = 5,
    Two = 2,
}

/// `kitchen.Edge`, the field-order example of spec §4.7, with its oneof flattened the way Go
/// writes it (every member in its own group).
#[derive(frpc::Message, Clone, Debug, Default, PartialEq)]
struct Edge {
    first_msg: Option<Inner>,
    name: String,
    nums: Vec<i32>,
    by_name: HashMap<String, Inner>,
    #[frpc(enumeration)]
    sp: Sparse,
    blob: Vec<u8>,
    inners: Vec<Inner>,
    #[frpc(enumeration)]
    enum_map: HashMap<i64, Sparse>,
    s: i32,
    f: u64,
    d: f64,
    c_str: String,
    c_msg: Option<Inner>,
    flag: bool,
}

fn inner(name: &str, n: i32) -> Inner {
    Inner { name: name.into(), n }
}

fn g_inner(name: &str, n: i32) -> generated::Inner {
    generated::Inner { name: name.into(), n }
}

#[test]
fn sparse_enum_numbers_and_indices() {
    use frpc::codegen::EnumIndex;
    assert_eq!(i32::from(Sparse::Five), 5);
    assert_eq!(Sparse::try_from(2), Ok(Sparse::Two));
    assert!(Sparse::try_from(1).is_err());
    assert_eq!(<Sparse as EnumIndex>::to_index(5), 1);
    assert_eq!(<Sparse as EnumIndex>::from_index(2), Some(2));
    assert_eq!(<Sparse as EnumIndex>::NAME, "kitchen.Sparse");
}

#[test]
fn edge_matches_generated_field_order() {
    // One map entry each, so map order cannot differ.
    let rust_first = Edge {
        first_msg: Some(inner("first", 1)),
        name: "edge".into(),
        nums: vec![1, -2],
        by_name: [("k".to_string(), inner("v", 2))].into_iter().collect(),
        sp: Sparse::Five,
        blob: vec![7],
        inners: vec![inner("a", 3), Inner::default()],
        enum_map: [(-4, Sparse::Two)].into_iter().collect(),
        s: -5,
        f: 6,
        d: 0.5,
        c_str: "choice".into(),
        c_msg: None,
        flag: true,
    };
    let g = generated::Edge {
        first_msg: Some(g_inner("first", 1)),
        name: "edge".into(),
        nums: vec![1, -2],
        by_name: [("k".to_string(), g_inner("v", 2))].into_iter().collect(),
        sp: generated::Sparse::Five as i32,
        blob: vec![7],
        inners: vec![g_inner("a", 3), generated::Inner::default()],
        enum_map: [(-4, generated::Sparse::Two as i32)].into_iter().collect(),
        s: -5,
        f: 6,
        d: 0.5,
        flag: true,
        choice: Some(generated::edge::Choice::CStr("choice".into())),
    };
    same(&rust_first, &g);
    round_trip(&rust_first);

    let with_msg = Edge {
        c_msg: Some(inner("m", 9)),
        ..Default::default()
    };
    let g_with_msg = generated::Edge {
        choice: Some(generated::edge::Choice::CMsg(g_inner("m", 9))),
        ..Default::default()
    };
    same(&with_msg, &g_with_msg);
    same(&Edge::default(), &generated::Edge::default());
}

/// `kitchen.Extras.Nested`: a nested enum, a repeated enum and recursion through
/// `Option<Box<_>>`.
#[derive(frpc::Message, Clone, Debug, Default, PartialEq)]
struct Nested {
    #[frpc(enumeration)]
    mode: Mode,
    #[frpc(enumeration)]
    modes: Vec<Mode>,
    child: Option<Box<Nested>>,
}

#[derive(frpc::Message, Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Mode {
    #[default]
    ModeOff,
    ModeOn,
}

#[test]
fn recursive_message_matches_generated() {
    use generated::extras::{Nested as GNested, nested::Mode as GMode};
    let rust_first = Nested {
        mode: Mode::ModeOn,
        modes: vec![Mode::ModeOff, Mode::ModeOn],
        child: Some(Box::new(Nested {
            mode: Mode::ModeOn,
            ..Default::default()
        })),
    };
    let g = GNested {
        mode: GMode::On as i32,
        modes: vec![GMode::Off as i32, GMode::On as i32],
        child: Some(Box::new(GNested {
            mode: GMode::On as i32,
            ..Default::default()
        })),
    };
    same(&rust_first, &g);
    round_trip(&rust_first);
}

/// Shapes without a kitchen twin: optional scalars, `Bytes`, `BTreeMap`, a message held by
/// value, `()`, prost-style `i32` enums, keywords, an empty unit struct.
#[derive(frpc::Message, Clone, Debug, Default, PartialEq)]
struct Extras {
    maybe_int: Option<i32>,
    maybe_str: Option<String>,
    #[frpc(enumeration)]
    maybe_mode: Option<Mode>,
    maybe_bytes: Option<Vec<u8>>,
    chunks: Vec<Vec<u8>>,
    buf: Bytes,
    bufs: Vec<Bytes>,
    sorted: BTreeMap<u32, Inner>,
    #[frpc(enumeration)]
    mode_map: BTreeMap<bool, Mode>,
    required: Inner,
    boxed: Box<Inner>,
    empty: (),
    maybe_empty: Option<()>,
    #[frpc(enumeration = "Sparse")]
    number: i32,
    #[frpc(enumeration = "Sparse")]
    numbers: Vec<i32>,
    r#type: String,
    unit: Empty,
}

#[derive(frpc::Message, Clone, Debug, Default, PartialEq)]
struct Empty;

#[test]
fn more_shapes_round_trip() {
    let extras = Extras {
        maybe_int: Some(0),
        maybe_str: None,
        maybe_mode: Some(Mode::ModeOn),
        maybe_bytes: Some(vec![]),
        chunks: vec![vec![1], vec![]],
        buf: Bytes::from_static(b"buf"),
        bufs: vec![Bytes::from_static(b"x")],
        sorted: [(2, inner("two", 2)), (1, inner("one", 1))].into_iter().collect(),
        mode_map: [(true, Mode::ModeOn), (false, Mode::ModeOff)]
            .into_iter()
            .collect(),
        required: inner("req", 0),
        boxed: Box::new(inner("box", 1)),
        empty: (),
        maybe_empty: Some(()),
        number: 5,
        numbers: vec![0, 2, 5],
        r#type: "kw".into(),
        unit: Empty,
    };
    round_trip(&extras);
    round_trip(&Extras::default());
    assert_eq!(Empty.to_polyglot().as_ref(), [0x08, 0x00]);

    // Group order: plain values first (optionals: `00` when absent; enums by index), then
    // repeated, then messages and maps.
    let bytes = Extras::default().to_polyglot();
    let expected = concat!(
        "0800",           // flags
        "00",             // maybe_int: None
        "00",             // maybe_str: None
        "00",             // maybe_mode: None
        "00",             // maybe_bytes: None
        "040a00",         // buf
        "0a00",           // number: index 0
        "050a00",         // r#type
        "01040a00",       // chunks
        "01040a00",       // bufs
        "010a0a00",       // numbers: U32 indices
        "020a030a00",     // sorted: map<u32, message>
        "02070a0a00",     // mode_map: map<bool, enum>
        "0800050a000c00", // required: always present
        "0800050a000c00", // boxed
        "0800",           // empty: ()
        "00",             // maybe_empty: None
        "0800",           // unit
    );
    assert_eq!(hex::encode(&bytes), expected);
    // Sparse number 5 is index 1.
    let five = Extras {
        number: 5,
        ..Default::default()
    };
    assert!(hex::encode(five.to_polyglot()).contains("040a000a01050a00"));
}
