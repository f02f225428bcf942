//! Hostile input: nesting depth, memory per input byte, and the unknown-enum mapping.

use bytes::{BufMut, Bytes, BytesMut};
use frpc_wire::DecodeError;
use frpc_wire::polyglot::value::{self, Codec, Msg, Str, unknown_enum_index, unknown_enum_number};
use frpc_wire::polyglot::{
    DEFAULT_MAX_DEPTH, Decoder, Kind, MEMORY_FACTOR, MEMORY_SLACK, Message, decode_nested, encode,
};

/// `message Node { repeated Node children = 1; }`, written by hand.
#[derive(Debug, Default, Clone, PartialEq)]
struct Node {
    children: Vec<Node>,
}

impl Message for Node {
    fn fields_len(&self) -> usize {
        value::repeated_len::<Msg<Node>>(&self.children)
    }
    fn encode_fields(&self, buf: &mut impl BufMut) {
        value::encode_repeated::<Msg<Node>>(&self.children, buf)
    }
    fn decode_fields(&mut self, dec: &mut Decoder<'_>) -> Result<(), DecodeError> {
        self.children = value::decode_repeated::<Msg<Node>>(dec)?;
        Ok(())
    }
}

/// `depth` Nodes, each the only child of the one before, as bytes.
fn chain(depth: usize) -> Bytes {
    let mut buf = BytesMut::new();
    for _ in 1..depth {
        buf.put_slice(&[0x08, 0x00]);
        encode::put_slice_header(&mut buf, Kind::Any, 1);
    }
    buf.put_slice(&[0x08, 0x00]);
    encode::put_slice_header(&mut buf, Kind::Any, 0);
    buf.freeze()
}

fn depth_of(node: &Node) -> usize {
    1 + node.children.first().map_or(0, depth_of)
}

/// In a thread with a tokio worker's 2 MiB stack.
fn small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap()
}

#[test]
fn nesting_is_limited() {
    let ok = small_stack(|| Node::from_polyglot(&chain(DEFAULT_MAX_DEPTH as usize)));
    assert_eq!(depth_of(&ok.unwrap()), DEFAULT_MAX_DEPTH as usize);
    let deep = small_stack(|| Node::from_polyglot(&chain(10_000)));
    assert_eq!(
        deep,
        Err(DecodeError::TooDeep {
            max: DEFAULT_MAX_DEPTH
        })
    );
    let over = Node::from_polyglot(&chain(DEFAULT_MAX_DEPTH as usize + 1));
    assert_eq!(
        over,
        Err(DecodeError::TooDeep {
            max: DEFAULT_MAX_DEPTH
        })
    );
}

#[test]
fn max_depth_is_configurable_and_depth_is_restored() {
    let input = chain(5);
    let mut dec = Decoder::from_bytes(&input).with_max_depth(4);
    assert_eq!(dec.max_depth(), 4);
    assert_eq!(
        decode_nested::<Node>(&mut dec),
        Err(DecodeError::TooDeep { max: 4 })
    );
    // Siblings do not add up: only nesting counts.
    let wide = Node {
        children: vec![
            Node {
                children: vec![Node::default(); 3]
            };
            3
        ],
    };
    let bytes = wide.to_polyglot();
    let mut dec = Decoder::from_bytes(&bytes).with_max_depth(3);
    assert_eq!(decode_nested::<Node>(&mut dec).unwrap(), wide);
    let mut dec = Decoder::from_bytes(&bytes).with_max_depth(2);
    assert!(decode_nested::<Node>(&mut dec).is_err());
}

/// A repeated message announcing a million Nil elements would be a million default messages.
#[test]
fn nil_elements_are_charged_to_the_memory_budget() {
    #[derive(Debug, Default, PartialEq)]
    struct Big {
        _fields: [u64; 32], // 256 bytes per element, from one `00` byte
    }
    impl Message for Big {
        fn fields_len(&self) -> usize {
            0
        }
        fn encode_fields(&self, _: &mut impl BufMut) {}
        fn decode_fields(&mut self, _: &mut Decoder<'_>) -> Result<(), DecodeError> {
            Ok(())
        }
    }
    let count = 1_000_000;
    let mut buf = BytesMut::new();
    encode::put_slice_header(&mut buf, Kind::Any, count);
    buf.put_bytes(0, count);
    let input = buf.freeze();
    let budget = input.len() * MEMORY_FACTOR + MEMORY_SLACK;
    let mut dec = Decoder::from_bytes(&input);
    assert_eq!(dec.memory_left(), budget);
    assert_eq!(
        value::decode_repeated::<Msg<Big>>(&mut dec),
        Err(DecodeError::MemoryLimit {
            needed: count * size_of::<Big>(),
            left: budget
        })
    );
    // With a budget that fits, they decode.
    let mut dec = Decoder::from_bytes(&input).with_memory_limit(count * size_of::<Big>());
    assert_eq!(value::decode_repeated::<Msg<Big>>(&mut dec).unwrap().len(), count);
    assert_eq!(dec.memory_left(), 0);
}

/// Elements take at least their kind's minimal size: 5 strings need 15 bytes, not 5.
#[test]
fn counts_are_checked_against_the_smallest_element() {
    let mut buf = BytesMut::new();
    encode::put_slice_header(&mut buf, Kind::String, 5);
    buf.put_bytes(0x05, 14);
    assert!(matches!(
        value::decode_repeated::<Str>(&mut Decoder::new(&buf)),
        Err(DecodeError::LengthTooLarge { len: 5, .. })
    ));
    assert_eq!(Str::MIN_LEN, 3);
    let mut buf = BytesMut::new();
    encode::put_map_header(&mut buf, Kind::String, Kind::String, 3);
    buf.put_bytes(0x05, 17);
    assert!(matches!(
        value::decode_map::<Str, Str, std::collections::HashMap<_, _>>(&mut Decoder::new(&buf)),
        Err(DecodeError::LengthTooLarge { len: 3, .. })
    ));
}

/// `unknown_enum_number` and `unknown_enum_index` are inverse and avoid declared values.
#[test]
fn unknown_enum_mapping_round_trips() {
    // ZERO = 0; FIVE = 5; TWO = 2; plus an alias of 5 and FAILED = -1: five indices.
    let count = 5;
    let mut declared = [0u32, 5, 2, -1i32 as u32];
    declared.sort_unstable();
    let samples = (count..count + 20).chain([1 << 20, i32::MAX as u32, 1 << 31, u32::MAX - 4]);
    let mut seen = std::collections::HashSet::new();
    for index in samples {
        let number = unknown_enum_number(index, count, &declared);
        assert!(
            !declared.contains(&(number as u32)),
            "{index} → declared {number}"
        );
        assert!(seen.insert(number), "{index} → {number} twice");
        assert_eq!(unknown_enum_index(number, count, &declared), index, "{number}");
    }
    assert_eq!(
        (5..10)
            .map(|i| unknown_enum_number(i, count, &declared))
            .collect::<Vec<_>>(),
        [1, 3, 4, 6, 7]
    );
    // With aliases some undeclared numbers have no index left: -2 is the last one.
    assert_eq!(unknown_enum_index(-2, count, &declared), 0);
    // Dense enums: index == number.
    assert_eq!(unknown_enum_number(7, 3, &[0, 1, 2]), 7);
    assert_eq!(unknown_enum_number(u32::MAX, 3, &[0, 1, 2]), -1);
    assert_eq!(unknown_enum_index(-1, 3, &[0, 1, 2]), u32::MAX);
}

/// Maps of short entries, what Go peers send every day (a `map<string, int64>` of ten thousand
/// words, a `map<uint32, string>` of empty values), decode within the default budget: a hash
/// map is charged the one table it is made with (its capacity reserved up front), where it
/// was charged 4 × its entries for growing and such maps failed from about 900 entries on. A
/// map announcing more than its budget still fails before anything is allocated.
#[test]
fn maps_of_short_entries_fit_the_default_budget() {
    use std::collections::{BTreeMap, HashMap};
    use value::{I64, U32};

    fn round_trip<K: Codec, V: Codec, M>(map: &M) -> Result<M, DecodeError>
    where
        M: value::MapField<K::Value, V::Value>,
    {
        let mut buf = BytesMut::new();
        value::encode_map::<K, V>(map, &mut buf);
        value::decode_map::<K, V, M>(&mut Decoder::new(&buf))
    }
    let words: HashMap<String, i64> = (0..10_000).map(|i| (format!("w{i:05}"), i)).collect();
    assert_eq!(round_trip::<Str, I64, _>(&words).unwrap(), words);
    let sorted: BTreeMap<String, i64> = words.into_iter().collect();
    assert_eq!(round_trip::<Str, I64, _>(&sorted).unwrap(), sorted);
    let empty_values: HashMap<u32, String> = (0..1_000).map(|i| (i, String::new())).collect();
    assert_eq!(round_trip::<U32, Str, _>(&empty_values).unwrap(), empty_values);

    // 100,000 entries announced in 1 MB of input: the table is charged before it is made.
    let mut buf = BytesMut::new();
    encode::put_map_header(&mut buf, Kind::U32, Kind::U32, 100_000);
    for i in 0..100_000u32 {
        U32::encode(&i, &mut buf);
        U32::encode(&i, &mut buf);
    }
    let mut dec = Decoder::new(&buf).with_memory_limit(1 << 20);
    let decoded = value::decode_map::<U32, U32, HashMap<u32, u32>>(&mut dec);
    assert!(
        matches!(decoded, Err(DecodeError::MemoryLimit { needed, .. }) if needed > 1 << 20),
        "{decoded:?}"
    );
}
