//! Messages and proto3 JSON: requests read from text, replies written as one line each.

use std::io::Read as _;

use prost_reflect::{DynamicMessage, MethodDescriptor, SerializeOptions};

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
    let message = DynamicMessage::deserialize(desc.clone(), &mut de).map_err(|e| {
        other(format!(
            "the request is not a valid `{}` in JSON: {e}",
            desc.full_name()
        ))
    })?;
    de.end().map_err(other)?;
    Ok(message)
}

/// A message as one line of proto3 JSON, default values included (as `grpcurl -emit-defaults`
/// prints them: a reply shows every field the server sent, which polyglot always sends).
pub fn to_json(message: &DynamicMessage) -> String {
    let options = SerializeOptions::new().skip_default_fields(false);
    let mut out = serde_json::Serializer::new(Vec::new());
    // Serializing into memory cannot fail, and prost-reflect's JSON is valid UTF-8.
    message
        .serialize_with_options(&mut out, &options)
        .expect("JSON into memory");
    String::from_utf8(out.into_inner()).expect("JSON is UTF-8")
}
