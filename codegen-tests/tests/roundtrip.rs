//! Round trips over the kitchen-sink messages in both encodings (encode → decode gives the
//! original, floats to the bit: NaN payloads and signed zeros included; and
//! `polyglot_len` is exactly what is written), hand-checked bytes for the spec's `Edge`
//! example, and decode errors (never panics).

use std::collections::HashMap;

use frpc::codegen::{Bytes, Message};
use frpc_codegen_tests::kitchen::{
    Edge, Extras, Inner, Keywords, Node, OneofFirst, OnlyOneofs, Row, Scalars, Sparse, State, Table, Wkt,
    edge, extras, keywords, node, oneof_first, only_oneofs, other,
};
use frpc_codegen_tests::shared::v1::{Level, Tag};
use proptest::collection::{hash_map, vec};
use proptest::prelude::*;

/// Encodes, checks the length, decodes, and returns the bytes; the same through frpc's
/// protobuf encoding (prost decodes it). Floats compare by their bits (NaN payloads and signed
/// zeros included), the rest with `==`.
fn round_trip<M: Message + PartialEq + std::fmt::Debug + Clone + FloatBits>(m: &M) -> Bytes {
    let bytes = m.to_polyglot();
    assert_eq!(m.polyglot_len(), bytes.len(), "polyglot_len");
    assert_same(&M::from_polyglot(&bytes).expect("decodes"), m, "polyglot");
    let mut protobuf = Vec::new();
    m.encode_protobuf(&mut protobuf);
    assert_eq!(m.protobuf_len(), protobuf.len(), "protobuf_len");
    assert_same(
        &M::decode_protobuf(Bytes::from(protobuf)).expect("decodes"),
        m,
        "protobuf",
    );
    bytes
}

/// `back` is `m` to the bit.
fn assert_same<M: PartialEq + std::fmt::Debug + Clone + FloatBits>(back: &M, m: &M, encoding: &str) {
    assert_eq!(
        back.float_bits(),
        m.float_bits(),
        "{encoding}: float bits of {m:?}"
    );
    let (mut back, mut m) = (back.clone(), m.clone());
    back.clear_floats();
    m.clear_floats();
    assert_eq!(back, m, "{encoding}");
}

/// The bits of a message's floats, in a fixed order (`==` cannot compare NaNs, nor tell -0.0
/// from 0.0), and the message with them all zeroed, for `==` on the rest.
trait FloatBits {
    fn float_bits(&self) -> Vec<u64> {
        Vec::new()
    }
    fn clear_floats(&mut self) {}
}

impl FloatBits for Scalars {
    fn float_bits(&self) -> Vec<u64> {
        vec![self.d.to_bits(), self.f.to_bits().into()]
    }
    fn clear_floats(&mut self) {
        (self.d, self.f) = (0.0, 0.0);
    }
}

impl FloatBits for Edge {
    fn float_bits(&self) -> Vec<u64> {
        vec![self.d.to_bits()]
    }
    fn clear_floats(&mut self) {
        self.d = 0.0;
    }
}

impl FloatBits for Extras {
    fn float_bits(&self) -> Vec<u64> {
        let pick = match &self.pick {
            Some(extras::Pick::PFloat(f)) => Some(f.to_bits().into()),
            _ => None,
        };
        self.maybe_d.map(f64::to_bits).into_iter().chain(pick).collect()
    }
    fn clear_floats(&mut self) {
        self.maybe_d = self.maybe_d.map(|_| 0.0);
        if let Some(extras::Pick::PFloat(f)) = &mut self.pick {
            *f = 1.0;
        }
    }
}

impl FloatBits for Keywords {}
impl FloatBits for Wkt {}
impl FloatBits for Node {}
impl FloatBits for OneofFirst {}
impl FloatBits for OnlyOneofs {}
impl FloatBits for Table {}

fn text() -> impl Strategy<Value = String> {
    "[a-zé🦀]{0,6}"
}

fn nonempty_text() -> impl Strategy<Value = String> {
    "[a-z]{1,6}"
}

fn blob() -> impl Strategy<Value = Vec<u8>> {
    vec(any::<u8>(), 0..6)
}

/// Any f64: NaN payloads, signed zeros, infinities and the extremes included.
fn any64() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(0.0),
        Just(-0.0),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(-1.5),
        -1e12..1e12f64,
        Just(f64::MAX),
        Just(f64::MIN_POSITIVE),
        any::<u64>().prop_map(f64::from_bits),
    ]
}

/// Any f32, as `any64`.
fn any32() -> impl Strategy<Value = f32> {
    prop_oneof![
        Just(0.0f32),
        Just(-0.0f32),
        Just(f32::NEG_INFINITY),
        -1e6..1e6f32,
        Just(f32::MAX),
        any::<u32>().prop_map(f32::from_bits),
    ]
}

fn sparse() -> impl Strategy<Value = i32> {
    prop_oneof![Just(Sparse::Zero), Just(Sparse::Five), Just(Sparse::Two)].prop_map(|s| s as i32)
}

fn state() -> impl Strategy<Value = i32> {
    prop_oneof![Just(0), Just(1), Just(2), Just(-1)]
}

fn inner() -> impl Strategy<Value = Inner> {
    (text(), any::<i32>()).prop_map(|(name, n)| Inner { name, n })
}

fn tag() -> impl Strategy<Value = Tag> {
    (text(), any::<i64>()).prop_map(|(key, weight)| Tag { key, weight })
}

fn remote() -> impl Strategy<Value = other::Remote> {
    (
        text(),
        proptest::option::of(tag()),
        prop_oneof![Just(0), Just(7)],
        vec(tag(), 0..3),
    )
        .prop_map(|(name, tag, level, tags)| other::Remote {
            name,
            tag,
            level,
            tags,
        })
}

prop_compose! {
    fn scalars()(
        d in any64(), f in any32(), i32_ in any::<i32>(), i64_ in any::<i64>(),
        u32_ in any::<u32>(), u64_ in any::<u64>(), s32 in any::<i32>(), s64 in any::<i64>(),
        fx32 in any::<u32>(), fx64 in any::<u64>(), sfx32 in any::<i32>(), sfx64 in any::<i64>(),
        b in any::<bool>(), s in text(), by in blob(),
    ) -> Scalars {
        Scalars { d, f, i32: i32_, i64: i64_, u32: u32_, u64: u64_, s32, s64, fx32, fx64, sfx32, sfx64, b, s, by }
    }
}

prop_compose! {
    fn edge_msg()(
        first_msg in proptest::option::of(inner()), name in text(), nums in vec(any::<i32>(), 0..4),
        by_name in hash_map(text(), inner(), 0..3), sp in sparse(), blob in blob(),
        inners in vec(inner(), 0..3), enum_map in hash_map(any::<i64>(), sparse(), 0..3),
        s in any::<i32>(), f in any::<u64>(), d in any64(),
        // Only oneof values whose set member is non-default survive a round trip.
        choice in proptest::option::of(prop_oneof![
            nonempty_text().prop_map(edge::Choice::CStr),
            inner().prop_map(edge::Choice::CMsg),
        ]),
        flag in any::<bool>(),
    ) -> Edge {
        Edge { first_msg, name, nums, by_name, sp, blob, inners, enum_map, s, f, d, choice, flag }
    }
}

prop_compose! {
    fn keywords_msg()(
        ty in text(), m in any::<i32>(),
        r#async in proptest::option::of(prop_oneof![
            Just(keywords::Async::Yield(true)),
            nonempty_text().prop_map(keywords::Async::Self_),
        ]),
        r#impl in proptest::option::of(text().prop_map(|f| keywords::Struct { r#fn: f })),
    ) -> Keywords {
        Keywords { r#type: ty, r#match: m, r#async, r#impl }
    }
}

fn nested() -> impl Strategy<Value = extras::Nested> {
    let leaf = (0..2i32, vec(0..2i32, 0..3)).prop_map(|(mode, modes)| extras::Nested {
        mode,
        modes,
        child: None,
    });
    leaf.prop_recursive(3, 8, 2, |child| {
        (0..2i32, vec(0..2i32, 0..3), proptest::option::of(child)).prop_map(|(mode, modes, child)| {
            extras::Nested {
                mode,
                modes,
                child: child.map(Box::new),
            }
        })
    })
}

prop_compose! {
    fn extras_msg()(
        maybe_int in proptest::option::of(any::<i32>()), maybe_str in proptest::option::of(text()),
        maybe_state in proptest::option::of(state()), maybe_d in proptest::option::of(any64()),
        chunks in vec(blob(), 0..3), inner_map in hash_map(text(), inner(), 0..3),
        state_map in hash_map(any::<u32>(), state(), 0..3), blob_map in hash_map(text(), blob(), 0..3),
        states in vec(state(), 0..4),
        pick in proptest::option::of(prop_oneof![
            inner().prop_map(extras::Pick::PInner),
            any::<i64>().prop_filter("set", |v| *v != 0).prop_map(extras::Pick::PInt),
            prop_oneof![Just(1), Just(2), Just(-1)].prop_map(extras::Pick::PState),
            vec(any::<u8>(), 1..4).prop_map(extras::Pick::PBytes),
            // In polyglot a oneof member of all-zero bits reads as unset; -0.0 is set.
            any32().prop_filter("set", |f| f.to_bits() != 0).prop_map(extras::Pick::PFloat),
            remote().prop_map(extras::Pick::PRemote),
        ]),
        nested in proptest::option::of(nested()), nesteds in vec(nested(), 0..2),
    ) -> Extras {
        Extras {
            maybe_int, maybe_str, maybe_state, maybe_d, chunks, inner_map, state_map, blob_map, states,
            pick, nested, nesteds,
        }
    }
}

fn timestamp() -> impl Strategy<Value = frpc::codegen::prost_types::Timestamp> {
    (any::<i64>(), any::<i32>())
        .prop_map(|(seconds, nanos)| frpc::codegen::prost_types::Timestamp { seconds, nanos })
}

fn duration() -> impl Strategy<Value = frpc::codegen::prost_types::Duration> {
    (any::<i64>(), any::<i32>())
        .prop_map(|(seconds, nanos)| frpc::codegen::prost_types::Duration { seconds, nanos })
}

prop_compose! {
    fn wkt_msg()(
        at in proptest::option::of(timestamp()), took in proptest::option::of(duration()),
        nothing in proptest::option::of(Just(())), label in proptest::option::of(text()),
        count in proptest::option::of(any::<i64>()), times in vec(timestamp(), 0..3),
        labels in vec(text(), 0..3), durations in hash_map(text(), duration(), 0..3),
        remote in proptest::option::of(remote()), tag in proptest::option::of(tag()),
        color in 0..2i32, colors in vec(0..2i32, 0..3), flag in proptest::option::of(any::<bool>()),
        raw in proptest::option::of(blob()),
    ) -> Wkt {
        Wkt { at, took, nothing, label, count, times, labels, durations, remote, tag, color, colors, flag, raw }
    }
}

fn node_msg() -> impl Strategy<Value = Node> {
    let leaf = any::<i32>().prop_map(|value| Node {
        value,
        ..Default::default()
    });
    leaf.prop_recursive(3, 12, 2, |inner| {
        (
            any::<i32>(),
            proptest::option::of(inner.clone()),
            vec(inner.clone(), 0..2),
            proptest::option::of(prop_oneof![
                inner.prop_map(|n| node::Link::Alt(Box::new(n))),
                nonempty_text().prop_map(node::Link::Note),
            ]),
        )
            .prop_map(|(value, next, children, link)| Node {
                value,
                next: next.map(Box::new),
                children,
                link,
            })
    })
}

proptest! {
    #[test]
    fn scalars_round_trip(m in scalars()) { round_trip(&m); }

    #[test]
    fn edge_round_trips(m in edge_msg()) { round_trip(&m); }

    #[test]
    fn keywords_round_trip(m in keywords_msg()) { round_trip(&m); }

    #[test]
    fn extras_round_trip(m in extras_msg()) { round_trip(&m); }

    #[test]
    fn wkt_round_trips(m in wkt_msg()) { round_trip(&m); }

    #[test]
    fn node_round_trips(m in node_msg()) { round_trip(&m); }

    /// Any bytes: decoding returns a value or an error, never panics.
    #[test]
    fn arbitrary_input_never_panics(data in vec(any::<u8>(), 0..64)) {
        let data = Bytes::from(data);
        let _ = Edge::from_polyglot(&data);
        let _ = Extras::from_polyglot(&data);
        let _ = Node::from_polyglot(&data);
        let mut prefixed = vec![0x08, 0x00];
        prefixed.extend_from_slice(&data);
        let prefixed = Bytes::from(prefixed);
        let _ = Edge::from_polyglot(&prefixed);
        let _ = Extras::from_polyglot(&prefixed);
        let _ = Wkt::from_polyglot(&prefixed);
    }
}

fn edge_example(choice: edge::Choice) -> Edge {
    Edge {
        first_msg: Some(Inner {
            name: "a".into(),
            n: 1,
        }),
        name: "n".into(),
        nums: vec![1, 2],
        by_name: HashMap::from([(
            "k".to_string(),
            Inner {
                name: "b".into(),
                n: 0,
            },
        )]),
        sp: Sparse::Five as i32,
        blob: vec![0xff],
        inners: vec![Inner {
            name: "c".into(),
            n: 2,
        }],
        enum_map: HashMap::from([(3, Sparse::Two as i32)]),
        s: -1,
        f: 7,
        d: 1.0,
        choice: Some(choice),
        flag: true,
    }
}

/// Spec §4.7: flags; `name, sp, blob, s, f, d, c_str, flag`; `nums, inners`;
/// `first_msg, by_name, enum_map, c_msg`.
#[test]
fn edge_field_order_matches_the_spec() {
    let values = "0800 050a016e 0a01 040a01ff 0c01 0b07 0f3ff0000000000000";
    let tail_repeated = "010c0a02 0c02 0c04 01030a01 0800050a01630c04";
    let first_msg = "0800050a01610c02";
    let by_name = "02050 30a01 050a016b 0800050a01620c00";
    let enum_map = "020d0a0a01 0d06 0a02";
    let hex = |parts: &[&str]| parts.concat().replace(' ', "");

    let with_str = edge_example(edge::Choice::CStr("x".into()));
    let expected = hex(&[
        values,
        "050a0178",
        "0701",
        tail_repeated,
        first_msg,
        by_name,
        enum_map,
        "00",
    ]);
    assert_eq!(hex::encode(round_trip(&with_str)), expected);

    let with_msg = edge_example(edge::Choice::CMsg(Inner {
        name: "m".into(),
        n: 0,
    }));
    let expected = hex(&[
        values,
        "050a00", // unset c_str: its zero value
        "0701",
        tail_repeated,
        first_msg,
        by_name,
        enum_map,
        "0800050a016d0c00",
    ]);
    assert_eq!(hex::encode(round_trip(&with_msg)), expected);
}

/// Enums travel as declaration indices: gaps and aliases.
#[test]
fn enum_indices() {
    use frpc::codegen::EnumIndex;
    assert_eq!([0, 5, 2].map(Sparse::to_index), [0, 1, 2]);
    assert_eq!([0, 1, 2].map(Sparse::from_index), [Some(0), Some(5), Some(2)]);
    // Undeclared indices are undeclared numbers (1, 3, 4, … here), see tests/hostile.rs.
    assert_eq!(Sparse::from_index(3), Some(1));
    // IDLE=0, STARTED=1, RUNNING=1 (alias), DONE=2, FAILED=-1.
    assert_eq!([0, 1, 2, -1].map(State::to_index), [0, 1, 3, 4]);
    assert_eq!(
        (0..6).map(State::from_index).collect::<Vec<_>>(),
        [Some(0), Some(1), Some(1), Some(2), Some(-1), Some(3)]
    );
    assert_eq!(Level::to_index(7), 1);
    // Numbers the enum does not declare go out as the index they come back from.
    assert_eq!(Sparse::to_index(42), 42);
    assert_eq!(Sparse::from_index(42), Some(42));
    assert_eq!(State::NAME, "kitchen.State");
}

/// Oneofs first in their groups' wire order: the generated length is a sum that starts with
/// the oneof's (which once did not compile).
#[test]
fn oneofs_first_in_wire_order() {
    let inner = Inner {
        name: "i".into(),
        n: 1,
    };
    let heads = [
        None,
        Some(oneof_first::Head::Text("t".into())),
        Some(oneof_first::Head::Number(7)),
    ];
    for head in heads {
        round_trip(&OneofFirst {
            head,
            nums: vec![1, 2],
            tail: Some(oneof_first::Tail::Inner(inner.clone())),
            last: Some(inner.clone()),
        });
    }
    round_trip(&OnlyOneofs {
        one: Some(only_oneofs::One::A(inner)),
        two: None,
    });
    round_trip(&OnlyOneofs::default());
}

/// The protobuf decode budget (`DecodeLimits::default()`: 10 × the size + 64 KiB) takes a list
/// of rows that set two of their five fields (104 bytes each in Rust, about 15 on the wire):
/// the vector is charged at the peak its growth reaches for the rows counted (once three times
/// each row, which refused 1,000 of them). A flood of empty rows is still refused.
#[test]
fn sparse_lists_fit_the_protobuf_budget_and_floods_do_not() {
    use frpc::codegen::ProtobufBudget;
    let limits = frpc::DecodeLimits::default();
    let cost = |bytes: &[u8]| {
        let mut budget = ProtobufBudget::new(limits.memory_budget(bytes.len()), limits.max_depth);
        Table::protobuf_cost(bytes, &mut budget)
    };
    for n in [1, 5, 1_000, 8_000] {
        let rows = (0..n)
            .map(|i| Row {
                a: format!("item-{i}"),
                id: i,
                ..Default::default()
            })
            .collect();
        let table = Table {
            rows,
            ids: (0..n).collect(),
        };
        let mut bytes = Vec::new();
        table.encode_protobuf(&mut bytes);
        assert!(cost(&bytes).is_ok(), "{n} rows: {:?}", cost(&bytes));
        assert_eq!(Table::decode_protobuf(Bytes::from(bytes)).unwrap(), table);
    }
    let flood: Vec<u8> = [0x0a, 0x00].repeat(100_000);
    let err = cost(&flood).unwrap_err();
    assert!(err.to_string().contains("more than the"), "{err}");
}

/// A newer schema's unknown fields pass the protobuf budget's walk as prost's decode skips
/// them, groups included (proto2 `group`, wire types 3 and 4: a grpcurl request with one was
/// refused as "malformed protobuf"), in the message and in a nested row.
#[test]
fn unknown_groups_pass_the_protobuf_budget() {
    use frpc::codegen::ProtobufBudget;
    let limits = frpc::DecodeLimits::default();
    let table = Table {
        rows: vec![Row {
            a: "x".into(),
            ..Default::default()
        }],
        ids: vec![7],
    };
    let mut bytes = Vec::new();
    table.encode_protobuf(&mut bytes);
    // Group 99 holding `x = 1`, at the end of the table; group 50 (empty) inside its row.
    bytes.extend_from_slice(&[0x9b, 0x06, 0x08, 0x01, 0x9c, 0x06]);
    assert_eq!(bytes[0], 0x0a, "the row comes first, its length in one byte");
    bytes.splice(2..2, [0x93, 0x03, 0x94, 0x03]);
    bytes[1] += 4;
    let mut budget = ProtobufBudget::new(limits.memory_budget(bytes.len()), limits.max_depth);
    Table::protobuf_cost(&bytes, &mut budget).unwrap();
    assert_eq!(Table::decode_protobuf(Bytes::from(bytes)).unwrap(), table);
}

/// proto3 `optional`: absent is `00`, present is the value.
#[test]
fn optional_fields() {
    let absent = Extras::default().to_polyglot();
    assert_eq!(&absent[..6], &[0x08, 0x00, 0x00, 0x00, 0x00, 0x00]);
    let present = Extras {
        maybe_int: Some(0),
        ..Default::default()
    }
    .to_polyglot();
    assert_eq!(&present[..5], &[0x08, 0x00, 0x0c, 0x00, 0x00]);
    round_trip(&Extras {
        maybe_int: Some(0),
        maybe_str: Some(String::new()),
        ..Default::default()
    });
}

/// The same message in the `bytes::Bytes` configuration encodes identically.
#[test]
fn bytes_configuration_is_wire_identical() {
    use frpc_codegen_tests::bytes::kitchen as b;
    let vec = Scalars {
        by: vec![1, 2, 3],
        s: "s".into(),
        ..Default::default()
    };
    let buf = b::Scalars {
        by: Bytes::from_static(&[1, 2, 3]),
        s: "s".into(),
        ..Default::default()
    };
    assert_eq!(vec.to_polyglot(), buf.to_polyglot());
    let chunks = b::Extras {
        chunks: vec![Bytes::from_static(b"ab")],
        ..Default::default()
    };
    let back = b::Extras::from_polyglot(&chunks.to_polyglot()).unwrap();
    assert_eq!(back, chunks);
}

/// `btree_map(["."])` (the `bytes` configuration): maps are `BTreeMap`s, encoded in key order,
/// which the default configuration's `HashMap`s read back, in both encodings.
#[test]
fn btree_maps_encode_in_key_order_and_read_as_hash_maps() {
    use frpc_codegen_tests::bytes::kitchen as b;
    let by_name: std::collections::BTreeMap<String, b::Inner> = ["c", "a", "b"]
        .into_iter()
        .map(|key| {
            (
                key.to_string(),
                b::Inner {
                    name: key.into(),
                    n: 1,
                },
            )
        })
        .collect();
    let sorted = b::Edge {
        by_name,
        ..Default::default()
    };
    let polyglot = sorted.to_polyglot();
    let keys: Vec<usize> = ["a", "b", "c"]
        .iter()
        .map(|key| {
            // A string: `05`, its length as a u32 (`0a 01`), its byte (first as the key).
            polyglot
                .windows(4)
                .position(|w| w == [0x05, 0x0a, 0x01, key.as_bytes()[0]])
                .unwrap()
        })
        .collect();
    assert!(keys.is_sorted(), "keys at {keys:?}");
    assert_eq!(b::Edge::from_polyglot(&polyglot).unwrap(), sorted);

    let hashed = Edge::from_polyglot(&polyglot).unwrap();
    assert_eq!(hashed.by_name.len(), 3);
    assert_eq!(hashed.by_name["b"].name, "b");
    let mut protobuf = Vec::new();
    sorted.encode_protobuf(&mut protobuf);
    let back = <Edge as frpc::codegen::prost::Message>::decode(&protobuf[..]).unwrap();
    assert_eq!(back.by_name, hashed.by_name);
}

/// A Go peer built from a newer .proto sends an index `Test` does not declare: it is kept.
#[test]
fn unknown_enum_index_is_kept() {
    use frpc_codegen_tests::capture::Data;
    // Data { message: "", checker: index 7 } — Test has 2 values, numbered 0 and 1.
    let input = Bytes::from_static(&[0x08, 0x00, 0x05, 0x0a, 0x00, 0x0a, 0x07]);
    let data = Data::from_polyglot(&input).unwrap();
    assert_eq!(data.checker, 7);
    assert_eq!(data.to_polyglot(), input);
}

#[test]
fn truncated_input_is_an_error_at_every_cut() {
    for m in [
        edge_example(edge::Choice::CStr("x".into())),
        edge_example(edge::Choice::CMsg(Inner::default())),
    ] {
        let full = m.to_polyglot();
        for cut in 0..full.len() {
            assert!(
                Edge::from_polyglot(&full.slice(..cut)).is_err(),
                "cut at {cut} of {}",
                full.len()
            );
        }
    }
}

#[test]
fn wrong_kind_is_an_error() {
    let full = edge_example(edge::Choice::CStr("x".into()))
        .to_polyglot()
        .to_vec();
    // The first field, `name`, is a string (`05`); claim bytes (`04`), then a u32, then nil.
    for kind in [0x04, 0x0a, 0x07, 0x01] {
        let mut bad = full.clone();
        bad[2] = kind;
        assert!(Edge::from_polyglot(&Bytes::from(bad)).is_err(), "kind {kind:#x}");
    }
    // A map header with the wrong key kind.
    let mut bad = Edge::default().to_polyglot().to_vec();
    let pos = bad.windows(3).position(|w| w == [0x02, 0x05, 0x03]).unwrap();
    bad[pos + 1] = 0x0d;
    assert!(Edge::from_polyglot(&Bytes::from(bad)).is_err());
}

/// Protobuf strings are validated by frpc's own `string::merge` (simdutf8; prost's derive
/// reaches it through `::frpc::codegen::prost`): a byte that is not UTF-8 is prost's error in
/// every shape a string field takes, short and long (long ones are read in pieces).
#[test]
fn protobuf_strings_that_are_not_utf8_are_refused_in_every_shape() {
    use frpc_codegen_tests::bytes::blob::Note;

    fn refused<M: Message + std::fmt::Debug>(m: M, shape: &str) {
        let mut encoded = Vec::new();
        m.encode_protobuf(&mut encoded);
        let at = encoded.windows(4).position(|w| w == b"MARK").expect("the marker");
        encoded[at] = 0xFF;
        let err = M::decode_protobuf(Bytes::from(encoded)).expect_err(shape);
        assert!(err.to_string().contains("not UTF-8"), "{shape}: {err}");
    }
    for pad in [0, 3_000] {
        let marked = format!("{}MARK", "x".repeat(pad));
        let inner = |name: &str| Inner {
            name: name.into(),
            n: 1,
        };
        let edge = |choice| Edge {
            choice: Some(choice),
            ..Edge::default()
        };
        refused(
            Edge {
                name: marked.clone(),
                ..Edge::default()
            },
            "plain",
        );
        refused(edge(edge::Choice::CStr(marked.clone())), "oneof");
        refused(edge(edge::Choice::CMsg(inner(&marked))), "nested");
        refused(
            Edge {
                by_name: HashMap::from([(marked.clone(), inner("v"))]),
                ..Edge::default()
            },
            "map key",
        );
        refused(
            Extras {
                maybe_str: Some(marked.clone()),
                ..Extras::default()
            },
            "optional",
        );
        refused(
            Note {
                tags: vec!["a".into(), marked.clone()],
                ..Note::default()
            },
            "repeated",
        );
    }
}
