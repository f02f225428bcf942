//! Rust-first types against hostile peers, as generated ones: nesting is limited (no stack
//! overflow), and an `i32` enum field keeps indices its enum does not declare.

use frpc::codegen::{Bytes, DecodeError, Message};

#[derive(frpc::Message, Clone, Debug, Default, PartialEq)]
struct Node {
    children: Vec<Node>,
}

#[derive(frpc::Message, Clone, Debug, Default, PartialEq)]
struct Chain {
    next: Option<Box<Chain>>,
}

/// Numbers with a gap: 0, 5.
#[derive(frpc::Message, Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Gappy {
    #[default]
    Zero = 0,
    Five = 5,
}

#[derive(frpc::Message, Clone, Debug, Default, PartialEq)]
struct Holder {
    #[frpc(enumeration = "Gappy")]
    number: i32,
    #[frpc(enumeration = "Gappy")]
    numbers: Vec<i32>,
    #[frpc(enumeration)]
    value: Gappy,
}

fn nodes(depth: usize) -> Bytes {
    let mut out = Vec::new();
    for level in 1..=depth {
        out.extend_from_slice(&[0x08, 0x00, 0x01, 0x03, 0x0a, u8::from(level < depth)]);
    }
    out.into()
}

fn chains(depth: usize) -> Bytes {
    let mut out = [0x08, 0x00].repeat(depth);
    out.push(0x00);
    out.into()
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
fn deep_input_is_an_error_not_a_stack_overflow() {
    let too_deep = DecodeError::TooDeep { max: 100 };
    let (node, chain) = small_stack(|| {
        (
            Node::from_polyglot(&nodes(10_000)),
            Chain::from_polyglot(&chains(10_000)),
        )
    });
    assert_eq!(node.unwrap_err(), too_deep);
    assert_eq!(chain.unwrap_err(), too_deep);
    let (node, chain) = small_stack(|| {
        (
            Node::from_polyglot(&nodes(100)),
            Chain::from_polyglot(&chains(100)),
        )
    });
    assert_eq!(node.unwrap().to_polyglot(), nodes(100));
    assert_eq!(chain.unwrap().to_polyglot(), chains(100));
}

#[test]
fn unknown_indices_survive_in_i32_fields() {
    // Plain values first: number index 2, value index 0; then numbers [index 3, index 1].
    let wire = Bytes::from(hex::decode("08000a020a00010a0a020a030a01").unwrap());
    let holder = Holder::from_polyglot(&wire).unwrap();
    // Gappy declares 0 and 5: undeclared indices 2, 3, … are the undeclared numbers 1, 2, …
    assert_eq!(holder.number, 1);
    assert_eq!(holder.numbers, [2, 5]);
    assert_eq!(holder.to_polyglot(), wire);
    // The Rust enum itself has no room for one.
    let wire = Bytes::from(hex::decode("08000a000a02010a0a00").unwrap());
    assert!(matches!(
        Holder::from_polyglot(&wire),
        Err(DecodeError::UnknownEnumIndex { index: 2, .. })
    ));
}
