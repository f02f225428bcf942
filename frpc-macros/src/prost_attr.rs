//! The protobuf numbers and types of a `#[frpc(protobuf)]` struct's fields, read from their
//! prost attributes (`#[prost(double, tag = "1")]`), so that frpc-codegen's protobuf encoder
//! writes the struct (Go's bytes; -0.0 kept, which prost's derive drops) instead of prost.

use frpc_codegen::model::{ProtoField, ProtoKind};
use syn::{Attribute, LitStr, Token};

/// The field's protobuf number and type, or `None` when it has no `#[prost(...)]` attribute (a
/// hand-written `prost::Message`) or one frpc's encoder does not write the way prost's derive
/// does (a oneof, a group, a proto2 `required` or `default`): prost then encodes the struct.
pub(crate) fn proto_field(attrs: &[Attribute]) -> Option<ProtoField> {
    let attr = attrs.iter().find(|a| a.path().is_ident("prost"))?;
    let mut field = Parsed::default();
    attr.parse_nested_meta(|meta| {
        let name = meta.path.get_ident().map(ToString::to_string).unwrap_or_default();
        let value = if meta.input.peek(Token![=]) {
            Some(meta.value()?.parse::<LitStr>()?.value())
        } else {
            None
        };
        field.item(&name, value);
        Ok(())
    })
    .ok()?;
    field.finish()
}

/// What one `#[prost(...)]` attribute said so far.
#[derive(Default)]
struct Parsed {
    number: Option<u32>,
    kind: Option<ProtoKind>,
    map_key: Option<ProtoKind>,
    packed: Option<bool>,
    unsupported: bool,
}

impl Parsed {
    /// One item: `double`, `tag = "1"`, `map = "string, double"`, `packed = "false"`, ….
    fn item(&mut self, name: &str, value: Option<String>) {
        match (name, value) {
            ("tag", Some(v)) => self.number = v.parse().ok(),
            ("packed", Some(v)) => self.packed = Some(v != "false"),
            ("map" | "hash_map" | "btree_map", Some(v)) => match v.split_once(',') {
                Some((key, value)) => {
                    self.map_key = kind(key.trim());
                    self.kind = kind(value.trim());
                    self.unsupported |= self.map_key.is_none() || self.kind.is_none();
                }
                None => self.unsupported = true,
            },
            // `boxed`: the field's Rust type (`Option<Box<M>>`, prost-build's recursive
            // fields) says it already.
            ("optional" | "repeated" | "boxed", None) => {}
            ("enumeration", Some(_)) => self.kind = Some(ProtoKind::Enum),
            // `bytes = "vec"` / `bytes = "bytes"`: the Rust type, not the wire.
            ("bytes", _) => self.kind = Some(ProtoKind::Bytes),
            (name, None) => match kind(name) {
                Some(k) => self.kind = Some(k),
                None => self.unsupported = true,
            },
            _ => self.unsupported = true,
        }
    }

    fn finish(self) -> Option<ProtoField> {
        if self.unsupported {
            return None;
        }
        let kind = self.kind?;
        Some(ProtoField {
            number: self.number?,
            kind,
            map_key: self.map_key,
            // proto3 packs repeated scalars unless told not to, as prost's derive does
            // (strings, bytes and messages are never packed).
            packed: kind.packable() && self.packed.unwrap_or(true),
            // `required` is not among the attributes read: such a type is left to prost.
            required: false,
        })
    }
}

/// A protobuf type as prost's attributes name it (`enumeration(Level)` in a map's value).
fn kind(name: &str) -> Option<ProtoKind> {
    Some(match name {
        "double" => ProtoKind::Double,
        "float" => ProtoKind::Float,
        "int64" => ProtoKind::Int64,
        "uint64" => ProtoKind::Uint64,
        "int32" => ProtoKind::Int32,
        "fixed64" => ProtoKind::Fixed64,
        "fixed32" => ProtoKind::Fixed32,
        "bool" => ProtoKind::Bool,
        "string" => ProtoKind::String,
        "bytes" => ProtoKind::Bytes,
        "uint32" => ProtoKind::Uint32,
        "sfixed32" => ProtoKind::Sfixed32,
        "sfixed64" => ProtoKind::Sfixed64,
        "sint32" => ProtoKind::Sint32,
        "sint64" => ProtoKind::Sint64,
        "message" => ProtoKind::Message,
        _ if name.starts_with("enumeration") => ProtoKind::Enum,
        _ => return None,
    })
}
