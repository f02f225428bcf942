//! Polyglot encoding of `prost_reflect::DynamicMessage`s, exactly as frpc-codegen's generated
//! code (and Go fRPC's) encodes the same message: the `08 00` envelope, then the fields in the
//! three groups of the wire spec (§4.7: values, repeated, messages and maps), each group in
//! declaration order; enums by declaration index; every field always written.

use bytes::{Bytes, BytesMut};
use frpc_wire::DecodeError;
use frpc_wire::polyglot::encode as enc;
use frpc_wire::polyglot::{Decoder, Kind};
use prost_reflect::{
    DynamicMessage, EnumDescriptor, FieldDescriptor, Kind as FieldKind, MapKey, MessageDescriptor,
    ReflectMessage, Value,
};

/// Why a dynamic message cannot be encoded or decoded.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    /// An enum number the enum does not declare (polyglot sends declaration indices).
    #[error("enum `{enum_name}` declares no value numbered {number}")]
    UnknownEnumNumber {
        /// The enum's full name.
        enum_name: String,
        /// The number.
        number: i32,
    },
    /// The bytes are not a polyglot encoding of the message.
    #[error("cannot decode `{message}`: {source}")]
    Decode {
        /// The message's full name.
        message: String,
        /// What the decoder found.
        source: DecodeError,
    },
}

/// A decoded top-level message body: a message or the error text the peer sent instead.
#[derive(Debug)]
pub enum Decoded {
    /// The message.
    Message(DynamicMessage),
    /// A polyglot error (a remote error reply).
    Error(String),
}

/// Which of the three field groups a field is written in.
fn group(field: &FieldDescriptor) -> u8 {
    if field.is_map() {
        3
    } else if field.is_list() {
        2
    } else if matches!(field.kind(), FieldKind::Message(_)) {
        3
    } else {
        1
    }
}

/// The fields of `desc` in wire order.
fn wire_order(desc: &MessageDescriptor) -> Vec<FieldDescriptor> {
    // The descriptor proto keeps declaration order; prost-reflect's `fields()` may not.
    let mut fields: Vec<FieldDescriptor> = desc
        .descriptor_proto()
        .field
        .iter()
        .filter_map(|f| desc.get_field(f.number() as u32))
        .collect();
    // A stable sort keeps declaration order inside each group.
    fields.sort_by_key(group);
    fields
}

/// Encodes `message` as a whole polyglot message value (`08 00` and the fields).
pub fn encode(message: &DynamicMessage) -> Result<Bytes, CodecError> {
    let mut buf = BytesMut::new();
    encode_message(message, &mut buf)?;
    Ok(buf.freeze())
}

fn encode_message(message: &DynamicMessage, buf: &mut BytesMut) -> Result<(), CodecError> {
    enc::put_u8(buf, 0);
    for field in wire_order(&message.descriptor()) {
        encode_field(message, &field, buf)?;
    }
    Ok(())
}

/// Whether the field is a proto3 `optional` scalar (written `00` when absent).
fn is_proto3_optional(field: &FieldDescriptor) -> bool {
    field.containing_oneof().is_some_and(|o| o.is_synthetic())
}

fn encode_field(
    message: &DynamicMessage,
    field: &FieldDescriptor,
    buf: &mut BytesMut,
) -> Result<(), CodecError> {
    let kind = field.kind();
    if field.is_map() {
        let FieldKind::Message(entry) = &kind else {
            unreachable!("a map field's type is its entry message")
        };
        let (key_field, value_field) = (entry.map_entry_key_field(), entry.map_entry_value_field());
        let value = message.get_field(field);
        let map = value.as_map().map(|m| {
            let mut entries: Vec<_> = m.iter().collect();
            // Sorted by key so the same map always encodes the same way.
            entries.sort_by(|a, b| a.0.cmp(b.0));
            entries
        });
        let entries = map.unwrap_or_default();
        enc::put_map_header(
            buf,
            kind_of(&key_field.kind()),
            kind_of(&value_field.kind()),
            entries.len(),
        );
        for (key, value) in entries {
            encode_value(&map_key_value(key), &key_field.kind(), buf)?;
            encode_value(value, &value_field.kind(), buf)?;
        }
        return Ok(());
    }
    if field.is_list() {
        let value = message.get_field(field);
        let items = value.as_list().unwrap_or_default();
        enc::put_slice_header(buf, kind_of(&kind), items.len());
        for item in items {
            encode_value(item, &kind, buf)?;
        }
        return Ok(());
    }
    let absent = !message.has_field(field);
    let nil_when_absent = matches!(kind, FieldKind::Message(_)) || is_proto3_optional(field);
    if absent && nil_when_absent {
        enc::put_nil(buf);
        return Ok(());
    }
    encode_value(&message.get_field(field), &kind, buf)
}

fn map_key_value(key: &MapKey) -> Value {
    match key {
        MapKey::Bool(v) => Value::Bool(*v),
        MapKey::I32(v) => Value::I32(*v),
        MapKey::I64(v) => Value::I64(*v),
        MapKey::U32(v) => Value::U32(*v),
        MapKey::U64(v) => Value::U64(*v),
        MapKey::String(v) => Value::String(v.clone()),
    }
}

/// The polyglot kind of a value of this type (in slice and map headers).
fn kind_of(kind: &FieldKind) -> Kind {
    match kind {
        FieldKind::Bool => Kind::Bool,
        FieldKind::Int32 | FieldKind::Sint32 | FieldKind::Sfixed32 => Kind::I32,
        FieldKind::Int64 | FieldKind::Sint64 | FieldKind::Sfixed64 => Kind::I64,
        FieldKind::Uint32 | FieldKind::Fixed32 | FieldKind::Enum(_) => Kind::U32,
        FieldKind::Uint64 | FieldKind::Fixed64 => Kind::U64,
        FieldKind::Float => Kind::F32,
        FieldKind::Double => Kind::F64,
        FieldKind::String => Kind::String,
        FieldKind::Bytes => Kind::Bytes,
        FieldKind::Message(_) => Kind::Any,
    }
}

fn encode_value(value: &Value, kind: &FieldKind, buf: &mut BytesMut) -> Result<(), CodecError> {
    match (value, kind) {
        (Value::Bool(v), _) => enc::put_bool(buf, *v),
        (Value::I32(v), _) => enc::put_i32(buf, *v),
        (Value::I64(v), _) => enc::put_i64(buf, *v),
        (Value::U32(v), _) => enc::put_u32(buf, *v),
        (Value::U64(v), _) => enc::put_u64(buf, *v),
        (Value::F32(v), _) => enc::put_f32(buf, *v),
        (Value::F64(v), _) => enc::put_f64(buf, *v),
        (Value::String(v), _) => enc::put_str(buf, v),
        (Value::Bytes(v), _) => enc::put_bytes(buf, v),
        (Value::EnumNumber(n), FieldKind::Enum(e)) => enc::put_u32(buf, enum_index(e, *n)?),
        (Value::Message(m), _) => encode_message(m, buf)?,
        // prost-reflect keeps values of the field's type; anything else is a bug there.
        (other, kind) => unreachable!("a {kind:?} field holding {other:?}"),
    }
    Ok(())
}

/// The declaration index of enum number `number` (the first value with it, for aliases).
fn enum_index(desc: &EnumDescriptor, number: i32) -> Result<u32, CodecError> {
    // Declaration order is the descriptor proto's; prost-reflect's `values()` is by number.
    desc.enum_descriptor_proto()
        .value
        .iter()
        .position(|v| v.number() == number)
        .map(|i| i as u32)
        .ok_or_else(|| CodecError::UnknownEnumNumber {
            enum_name: desc.full_name().to_string(),
            number,
        })
}

/// Decodes a whole polyglot message body of type `desc` (a `00` is the empty message, an error
/// value is returned as [`Decoded::Error`]).
pub fn decode(desc: &MessageDescriptor, content: &[u8]) -> Result<Decoded, CodecError> {
    let mut dec = Decoder::new(content);
    let wrap = |source| CodecError::Decode {
        message: desc.full_name().to_string(),
        source,
    };
    if dec.take_nil() {
        return Ok(Decoded::Message(DynamicMessage::new(desc.clone())));
    }
    if let Some(text) = dec.take_error().map_err(wrap)? {
        return Ok(Decoded::Error(text));
    }
    decode_body(desc, &mut dec).map(Decoded::Message).map_err(wrap)
}

/// A nested message: `00` is absent (`None`), an error value an empty message.
fn decode_nested(
    desc: &MessageDescriptor,
    dec: &mut Decoder<'_>,
) -> Result<Option<DynamicMessage>, DecodeError> {
    if dec.take_nil() {
        return Ok(None);
    }
    if dec.take_error()?.is_some() {
        return Ok(Some(DynamicMessage::new(desc.clone())));
    }
    decode_body(desc, dec).map(Some)
}

fn decode_body(desc: &MessageDescriptor, dec: &mut Decoder<'_>) -> Result<DynamicMessage, DecodeError> {
    dec.enter()?;
    dec.u8()?; // flags: accepted and ignored (spec §3.3)
    let mut message = DynamicMessage::new(desc.clone());
    // Oneof members are all on the wire; the first set one (non-zero) wins, as generated code.
    let mut oneofs_set: Vec<String> = Vec::new();
    for field in wire_order(desc) {
        let Some(value) = decode_field(&field, dec)? else {
            continue;
        };
        match field.containing_oneof().filter(|o| !o.is_synthetic()) {
            Some(oneof) => {
                let name = oneof.full_name().to_string();
                let set = !is_zero(&value) || matches!(value, Value::Message(_));
                if set && !oneofs_set.contains(&name) {
                    oneofs_set.push(name);
                    message.set_field(&field, value);
                }
            }
            // Zero values of fields without presence stay unset, as a decoded prost struct
            // would have them (and JSON leaves them out).
            None if field.supports_presence() || !is_empty(&value) => message.set_field(&field, value),
            None => {}
        }
    }
    dec.leave();
    Ok(message)
}

/// Whether a value is its field's zero value: a zero scalar, an empty list or map.
fn is_empty(value: &Value) -> bool {
    match value {
        Value::List(items) => items.is_empty(),
        Value::Map(map) => map.is_empty(),
        other => is_zero(other),
    }
}

/// Whether a scalar holds its zero value (an unset oneof member on the wire).
fn is_zero(value: &Value) -> bool {
    match value {
        Value::Bool(v) => !v,
        Value::I32(v) => *v == 0,
        Value::I64(v) => *v == 0,
        Value::U32(v) => *v == 0,
        Value::U64(v) => *v == 0,
        Value::F32(v) => v.to_bits() == 0,
        Value::F64(v) => v.to_bits() == 0,
        Value::String(v) => v.is_empty(),
        Value::Bytes(v) => v.is_empty(),
        Value::EnumNumber(v) => *v == 0,
        _ => false,
    }
}

/// One field's value, `None` when the wire says absent.
fn decode_field(field: &FieldDescriptor, dec: &mut Decoder<'_>) -> Result<Option<Value>, DecodeError> {
    let kind = field.kind();
    if field.is_map() {
        let FieldKind::Message(entry) = &kind else {
            unreachable!("a map field's type is its entry message")
        };
        let (key_field, value_field) = (entry.map_entry_key_field(), entry.map_entry_value_field());
        let mut map = std::collections::HashMap::new();
        if dec.take_nil() {
            return Ok(Some(Value::Map(map)));
        }
        let count = dec.map_header(kind_of(&key_field.kind()), kind_of(&value_field.kind()))?;
        check_count(dec, count)?;
        for _ in 0..count {
            let key = decode_value(&key_field.kind(), dec)?;
            let value = decode_value(&value_field.kind(), dec)?;
            if let Some(key) = to_map_key(key) {
                map.insert(key, value);
            }
        }
        return Ok(Some(Value::Map(map)));
    }
    if field.is_list() {
        let count = dec.slice_header(kind_of(&kind))?;
        check_count(dec, count)?;
        let items = (0..count)
            .map(|_| decode_value(&kind, dec))
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(Some(Value::List(items)));
    }
    if let FieldKind::Message(desc) = &kind {
        return Ok(decode_nested(desc, dec)?.map(Value::Message));
    }
    if is_proto3_optional(field) && dec.take_nil() {
        return Ok(None);
    }
    decode_value(&kind, dec).map(Some)
}

/// Every element takes at least one byte: a count beyond what is left is a lie, refused before
/// allocating for it.
fn check_count(dec: &Decoder<'_>, count: usize) -> Result<(), DecodeError> {
    if count > dec.remaining() {
        return Err(DecodeError::Invalid("an element count larger than the input"));
    }
    Ok(())
}

fn to_map_key(value: Value) -> Option<MapKey> {
    Some(match value {
        Value::Bool(v) => MapKey::Bool(v),
        Value::I32(v) => MapKey::I32(v),
        Value::I64(v) => MapKey::I64(v),
        Value::U32(v) => MapKey::U32(v),
        Value::U64(v) => MapKey::U64(v),
        Value::String(v) => MapKey::String(v),
        _ => return None,
    })
}

fn decode_value(kind: &FieldKind, dec: &mut Decoder<'_>) -> Result<Value, DecodeError> {
    Ok(match kind {
        FieldKind::Bool => Value::Bool(dec.bool()?),
        FieldKind::Int32 | FieldKind::Sint32 | FieldKind::Sfixed32 => Value::I32(dec.i32()?),
        FieldKind::Int64 | FieldKind::Sint64 | FieldKind::Sfixed64 => Value::I64(dec.i64()?),
        FieldKind::Uint32 | FieldKind::Fixed32 => Value::U32(dec.u32()?),
        FieldKind::Uint64 | FieldKind::Fixed64 => Value::U64(dec.u64()?),
        FieldKind::Float => Value::F32(dec.f32()?),
        FieldKind::Double => Value::F64(dec.f64()?),
        FieldKind::String => Value::String(dec.string()?),
        FieldKind::Bytes => Value::Bytes(dec.bytes()?),
        FieldKind::Enum(e) => Value::EnumNumber(enum_number(e, dec.u32()?)),
        // An element of a repeated message field: `00` is an empty message.
        FieldKind::Message(desc) => {
            Value::Message(decode_nested(desc, dec)?.unwrap_or_else(|| DynamicMessage::new(desc.clone())))
        }
    })
}

/// The number of the value at declaration index `index`; an index the enum does not declare
/// (a newer peer's) is kept as the index itself.
fn enum_number(desc: &EnumDescriptor, index: u32) -> i32 {
    desc.enum_descriptor_proto()
        .value
        .get(index as usize)
        .map_or(index as i32, |v| v.number())
}
