//! What decoding a protobuf message would cost, found without decoding it: a linear walk over
//! the protobuf wire format (frpc's negotiated protobuf encoding, decoded by prost) in which a
//! message type charges what its fields would allocate, so that protobuf decoding keeps the
//! memory and depth budget polyglot decoding has. (prost allocates what the input asks for: a
//! 5 MiB message of 2.6 million empty repeated entries would cost 36 times its size.)
//!
//! frpc-codegen's messages implement [`crate::polyglot::Message::protobuf_cost`] with
//! [`fields`] and [`Budget`]; the runtime runs it before prost decodes a message whose type
//! can allocate more than its input ([`crate::polyglot::Message::PROTOBUF_AMPLIFIES`]).

use crate::error::DecodeError;

/// The memory and nesting a message's decoding may still use.
#[derive(Debug, Clone)]
pub struct Budget {
    memory_left: usize,
    depth_left: u32,
    max_depth: u32,
}

impl Budget {
    /// A budget of `memory` bytes and `max_depth` levels of nesting (the top-level message is
    /// one).
    pub fn new(memory: usize, max_depth: u32) -> Budget {
        Budget {
            memory_left: memory,
            depth_left: max_depth.saturating_sub(1),
            max_depth,
        }
    }

    /// Takes `bytes` from the memory budget, or fails with [`DecodeError::MemoryLimit`].
    #[inline]
    pub fn charge(&mut self, bytes: usize) -> Result<(), DecodeError> {
        match self.memory_left.checked_sub(bytes) {
            Some(left) => {
                self.memory_left = left;
                Ok(())
            }
            None => Err(DecodeError::MemoryLimit {
                needed: bytes,
                left: self.memory_left,
            }),
        }
    }

    /// Charges a nested message found in `value`, with `cost`, one level deeper.
    pub fn nested(
        &mut self,
        value: &[u8],
        cost: impl FnOnce(&[u8], &mut Budget) -> Result<(), DecodeError>,
    ) -> Result<(), DecodeError> {
        let left = self.depth_left;
        self.depth_left = left
            .checked_sub(1)
            .ok_or(DecodeError::TooDeep { max: self.max_depth })?;
        let result = cost(value, self);
        self.depth_left = left;
        result
    }
}

/// One field's value on the wire.
#[derive(Debug, Clone, Copy)]
pub enum Value<'a> {
    /// A varint (wire type 0).
    Varint,
    /// A fixed 32- or 64-bit value (wire types 5 and 1).
    Fixed,
    /// A length-delimited value (wire type 2): a string, bytes, a message, a packed run.
    Bytes(&'a [u8]),
}

/// Walks the fields of one encoded message, calling `field(number, value)` for each. Input that
/// is not protobuf fails with [`DecodeError::Protobuf`] (prost would refuse it too).
///
/// Groups (wire types 3 and 4, proto2's `group` fields) are skipped, as prost skips them: no
/// frpc message has one, so a group is an unknown field from a newer schema, which decoding
/// drops without allocating.
pub fn fields<'a>(
    mut buf: &'a [u8],
    mut field: impl FnMut(u32, Value<'a>) -> Result<(), DecodeError>,
) -> Result<(), DecodeError> {
    while !buf.is_empty() {
        let key = varint(&mut buf)?;
        let number = u32::try_from(key >> 3).map_err(|_| malformed())?;
        if key & 7 == 3 {
            skip_group(&mut buf, key >> 3, MAX_GROUP_DEPTH)?;
            continue;
        }
        field(number, value(&mut buf, key)?)?;
    }
    Ok(())
}

/// The value of a field whose key is `key` (not a group), taken off the front of `buf`.
#[inline]
fn value<'a>(buf: &mut &'a [u8], key: u64) -> Result<Value<'a>, DecodeError> {
    match key & 7 {
        0 => varint(buf).map(|_| Value::Varint),
        1 => {
            *buf = buf.get(8..).ok_or_else(malformed)?;
            Ok(Value::Fixed)
        }
        5 => {
            *buf = buf.get(4..).ok_or_else(malformed)?;
            Ok(Value::Fixed)
        }
        2 => {
            let len = usize::try_from(varint(buf)?).map_err(|_| malformed())?;
            let value = buf.get(..len).ok_or_else(malformed)?;
            *buf = &buf[len..];
            Ok(Value::Bytes(value))
        }
        _ => Err(malformed()),
    }
}

/// How deep groups may nest: prost's recursion limit.
const MAX_GROUP_DEPTH: u32 = 100;

/// Skips the fields of group `number` up to and including its end, as prost's `skip_field`
/// does: the end must name the group, and groups nest at most `depth_left` deep.
fn skip_group(buf: &mut &[u8], number: u64, depth_left: u32) -> Result<(), DecodeError> {
    let depth_left = depth_left.checked_sub(1).ok_or_else(malformed)?;
    loop {
        let key = varint(buf)?;
        match key & 7 {
            3 => skip_group(buf, key >> 3, depth_left)?,
            4 if key >> 3 == number => return Ok(()),
            _ => drop(value(buf, key)?),
        }
    }
}

/// What a vector of `n` elements of `size` bytes each costs at its peak while prost decodes it,
/// pushing one element at a time: its final capacity (`Vec` starts at 4 elements, 8 for
/// single bytes, 1 above 1 KiB, and doubles), the buffer of half that it grew from (both held
/// while the elements move), and the element being decoded. At most about three times the
/// elements' size.
pub fn vec_cost(n: usize, size: usize) -> usize {
    if n == 0 || size == 0 {
        return 0;
    }
    let first = match size {
        1 => 8,
        2..=1024 => 4,
        _ => 1,
    };
    let capacity = n.checked_next_power_of_two().unwrap_or(usize::MAX).max(first);
    let grown_from = if capacity > first { capacity / 2 } else { 0 };
    capacity
        .saturating_add(grown_from)
        .saturating_add(1)
        .saturating_mul(size)
}

/// The elements of one repeated field found by the walk, and how they came: what its vector
/// costs at its peak ([`Repeated::cost`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Repeated {
    elements: usize,
    /// Packed runs (length-delimited runs of scalars).
    runs: usize,
    /// Elements each in its own field (strings, messages, unpacked scalars).
    loose: usize,
}

impl Repeated {
    /// No elements yet.
    pub const NEW: Repeated = Repeated {
        elements: 0,
        runs: 0,
        loose: 0,
    };

    /// A packed run of `n` elements.
    #[inline]
    pub fn packed(&mut self, n: usize) {
        self.elements += n;
        self.runs += 1;
    }

    /// One element in its own field.
    #[inline]
    pub fn loose(&mut self) {
        self.elements += 1;
        self.loose += 1;
    }

    /// The peak of its vector of elements of `size` bytes. With `reserved` (the decoder
    /// reserves a packed run's elements before reading it, as frpc's prost path does), one
    /// packed run alone costs exactly its elements; runs and loose elements mixed, at most
    /// three times them (a vector grows only when it is full, to at most twice what it must
    /// hold, and both buffers are held while the elements move). Elements pushed one by one
    /// cost what [`vec_cost`] says.
    pub fn cost(&self, size: usize, reserved: bool) -> usize {
        match (reserved, self.runs, self.loose) {
            (true, 1, 0) => self.elements.saturating_mul(size),
            (true, 1.., _) => self
                .elements
                .saturating_mul(3)
                .saturating_add(4)
                .saturating_mul(size),
            _ => vec_cost(self.elements, size),
        }
    }
}

/// How many varints a packed run holds (its bytes without the continuation bit).
pub fn packed_varints(run: &[u8]) -> usize {
    run.iter().filter(|b| **b < 0x80).count()
}

fn varint(buf: &mut &[u8]) -> Result<u64, DecodeError> {
    let mut value = 0u64;
    for (i, byte) in buf.iter().take(10).enumerate() {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            *buf = &buf[i + 1..];
            return Ok(value);
        }
    }
    Err(malformed())
}

fn malformed() -> DecodeError {
    DecodeError::Protobuf("malformed protobuf".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One packed run reserved costs its elements; runs and loose elements mixed, or elements
    /// pushed one at a time (a decoder that does not reserve), the growth's peak.
    #[test]
    fn repeated_fields_cost_what_their_vectors_peak_at() {
        let mut one_run = Repeated::NEW;
        one_run.packed(1_000);
        assert_eq!(one_run.cost(8, true), 8_000);
        assert_eq!(one_run.cost(8, false), vec_cost(1_000, 8));
        let mut mixed = one_run;
        mixed.loose();
        assert_eq!(mixed.cost(8, true), (3 * 1_001 + 4) * 8);
        let mut two_runs = one_run;
        two_runs.packed(1);
        assert_eq!(two_runs.cost(8, true), (3 * 1_001 + 4) * 8);
        let mut loose = Repeated::NEW;
        (0..1_000).for_each(|_| loose.loose());
        assert_eq!(loose.cost(24, true), vec_cost(1_000, 24));
        assert_eq!(Repeated::NEW.cost(8, true), 0);
    }

    #[test]
    fn walks_every_wire_type_and_refuses_garbage() {
        // 1: varint 150, 2: "hi", 3: fixed64, 4: fixed32.
        let input = [
            0x08, 0x96, 0x01, 0x12, 0x02, b'h', b'i', 0x19, 1, 2, 3, 4, 5, 6, 7, 8, 0x25, 1, 2, 3, 4,
        ];
        let mut seen = Vec::new();
        fields(&input, |number, value| {
            seen.push((number, matches!(value, Value::Bytes(b"hi"))));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, [(1, false), (2, true), (3, false), (4, false)]);
        for bad in [&[0x12, 0x05, b'h'][..], &[0x0b], &[0x08], &[0x80; 11]] {
            assert!(fields(bad, |_, _| Ok(())).is_err(), "{bad:?}");
        }
        assert_eq!(packed_varints(&[0x96, 0x01, 0x05, 0x80, 0x80, 0x01]), 3);
    }

    /// A group (an unknown proto2 field from a newer schema) is skipped, as prost skips it:
    /// the bytes Go's `proto.Marshal` writes for `{i32: 5, g: {x: 1}}` (group 99) walk as
    /// field 3 alone. A group must end, with its own number, and nests at most 100 deep.
    #[test]
    fn groups_are_skipped_like_prost_skips_them() {
        let go = [0x18, 0x05, 0x9b, 0x06, 0x08, 0x01, 0x9c, 0x06];
        let mut seen = Vec::new();
        fields(&go, |number, _| {
            seen.push(number);
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, [3]);
        // A group inside a group, with a length-delimited and a fixed field, then field 2.
        let nested = [
            0x0b, 0x13, 0x0a, 0x01, b'x', 0x14, 0x0d, 1, 2, 3, 4, 0x0c, 0x10, 0x07,
        ];
        let mut seen = Vec::new();
        fields(&nested, |number, _| {
            seen.push(number);
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, [2]);
        let deep = |levels: usize| [vec![0x0b; levels], vec![0x0c; levels]].concat();
        assert!(fields(&deep(100), |_, _| Ok(())).is_ok());
        for bad in [&[0x0b, 0x08, 0x01][..], &[0x0b, 0x14], &[0x0c], &deep(101)] {
            assert!(fields(bad, |_, _| Ok(())).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_vector_costs_its_capacity_what_it_grew_from_and_one_more() {
        assert_eq!(vec_cost(0, 104), 0);
        // Up to 4 elements: the first allocation, no growth.
        assert_eq!(vec_cost(1, 104), 5 * 104);
        assert_eq!(vec_cost(4, 104), 5 * 104);
        // 5: grown from 4 to 8.
        assert_eq!(vec_cost(5, 104), (8 + 4 + 1) * 104);
        assert_eq!(vec_cost(1_000, 104), (1024 + 512 + 1) * 104);
        // Single bytes start at 8, large elements at 1.
        assert_eq!(vec_cost(3, 1), 8 + 1);
        assert_eq!(vec_cost(3, 2048), (4 + 2 + 1) * 2048);
        // Never more than about three times the elements, never an overflow.
        assert!(vec_cost(1025, 8) <= 3 * 1025 * 8 + 8);
        assert_eq!(vec_cost(usize::MAX, 8), usize::MAX);
    }

    #[test]
    fn budgets_memory_and_depth() {
        let mut budget = Budget::new(10, 2);
        budget.charge(6).unwrap();
        assert!(matches!(
            budget.charge(5),
            Err(DecodeError::MemoryLimit { needed: 5, left: 4 })
        ));
        budget
            .nested(&[], |_, inner| inner.nested(&[], |_, _| Ok(())))
            .unwrap_err();
        budget.nested(&[], |_, _| Ok(())).unwrap();
    }
}
