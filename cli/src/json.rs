//! Messages and proto3 JSON: requests read from text, replies written as one line each.

use std::io::Read as _;

use prost_reflect::{
    DynamicMessage, FieldDescriptor, Kind, MessageDescriptor, MethodDescriptor, ReflectMessage as _,
    SerializeOptions,
};
use serde_json::Value;

use crate::error::{CliError, other};

/// The request text: the argument itself, `@file`, or standard input for `-` or none.
pub fn request_text(arg: Option<&str>) -> Result<String, CliError> {
    match arg {
        Some(path) if path.starts_with('@') => {
            std::fs::read_to_string(&path[1..]).map_err(|e| other(format!("cannot read {}: {e}", &path[1..])))
        }
        Some(text) if text != "-" => Ok(text.to_string()),
        _ => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text).map_err(other)?;
            Ok(text)
        }
    }
}

/// Parses proto3 JSON into a message of the method's input type (empty text: the empty message).
pub fn parse_request(method: &MethodDescriptor, text: &str) -> Result<DynamicMessage, CliError> {
    let desc = method.input();
    if text.trim().is_empty() {
        return Ok(DynamicMessage::new(desc));
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let message = match DynamicMessage::deserialize(desc.clone(), &mut de) {
        Ok(message) => message,
        // Only what prost-reflect refuses goes the slower way, so all else reads as before.
        Err(err) => {
            return with_floats_rounded(&desc, text).ok_or_else(|| {
                other(format!(
                    "the request is not a valid `{}` in JSON: {err}",
                    desc.full_name()
                ))
            });
        }
    };
    de.end().map_err(other)?;
    Ok(message)
}

/// The message `text` holds once its floats are rounded ([`round_floats`]); `None` when
/// rounding changes nothing or does not make it valid.
fn with_floats_rounded(desc: &MessageDescriptor, text: &str) -> Option<DynamicMessage> {
    let mut value: Value = serde_json::from_str(text).ok()?;
    let given = value.clone();
    round_floats(desc, &mut value);
    if value == given {
        return None;
    }
    DynamicMessage::deserialize(desc.clone(), value).ok()
}

/// Rounds the numbers of float fields that lie past `f32::MAX` but round to it (as
/// `3.4028235e+38`, the way proto3 JSON prints it, does) to the nearest float, as Go's
/// protojson reads them: prost-reflect refuses any number above `f32::MAX`, so a reply's float
/// could not be sent back. Numbers that round to infinity are left for it to refuse.
fn round_floats(desc: &MessageDescriptor, value: &mut Value) {
    let Value::Object(fields) = value else { return };
    for (name, value) in fields.iter_mut() {
        let field = desc
            .get_field_by_json_name(name)
            .or_else(|| desc.get_field_by_name(name));
        if let Some(field) = field {
            round_field(&field, value);
        }
    }
}

/// [`round_floats`] for one field's value: each of a list's items, each of a map's values.
fn round_field(field: &FieldDescriptor, value: &mut Value) {
    match (value, field.kind()) {
        (Value::Array(items), kind) if field.is_list() => {
            items.iter_mut().for_each(|item| round_value(&kind, item));
        }
        (Value::Object(entries), Kind::Message(entry)) if field.is_map() => {
            let kind = entry.map_entry_value_field().kind();
            entries.values_mut().for_each(|item| round_value(&kind, item));
        }
        (value, kind) => round_value(&kind, value),
    }
}

/// [`round_floats`] for one value of kind `kind`.
fn round_value(kind: &Kind, value: &mut Value) {
    match kind {
        Kind::Float => round_float(value),
        Kind::Message(m) if m.full_name() == "google.protobuf.FloatValue" => round_float(value),
        Kind::Message(m) => round_floats(m, value),
        _ => {}
    }
}

/// A float's number (or string) past `f32::MAX` that rounds to it, as that float.
fn round_float(value: &mut Value) {
    let number = match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.parse::<f64>().ok(),
        _ => None,
    };
    // `as` rounds to the nearest float, and to infinity only past f32::MAX's half ulp.
    if let Some(x) = number.filter(|x| x.abs() > f64::from(f32::MAX) && (*x as f32).is_finite()) {
        *value = Value::from(f64::from(x as f32));
    }
}

/// A message as one line of proto3 JSON, default values included (as `grpcurl -emit-defaults`
/// prints them: a reply shows every field the server sent, which polyglot always sends).
///
/// A reply can hold what proto3 JSON cannot write (an `Any` of a type the schema lacks, a
/// `Timestamp` beyond year 9999, a `FieldMask` path that does not round-trip): that is an
/// error, as grpcurl makes it, not a panic.
pub fn to_json(message: &DynamicMessage) -> Result<String, CliError> {
    let options = SerializeOptions::new().skip_default_fields(false);
    let mut out = serde_json::Serializer::new(Vec::new());
    message.serialize_with_options(&mut out, &options).map_err(|e| {
        other(format!(
            "the reply, a `{}`, cannot be written as proto3 JSON: {e}",
            message.descriptor().full_name()
        ))
    })?;
    // serde_json writes UTF-8 only; the check costs one pass over the line.
    String::from_utf8(out.into_inner()).map_err(other)
}
