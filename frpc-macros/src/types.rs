//! Rust field types → the model's shapes and codecs (what `frpc-codegen` derives from proto
//! field types).

use frpc_codegen::model::{Codec, Shape};
use quote::ToTokens;
use syn::{GenericArgument, PathArguments, Type};

use crate::attr::Enumeration;

/// A Rust type as the model holds it (a path the emitter parses back).
pub(crate) fn type_string(ty: &Type) -> String {
    ty.to_token_stream().to_string()
}

/// The shape of a field of type `ty`.
pub(crate) fn field_shape(ty: &Type, enumeration: Option<&Enumeration>) -> syn::Result<Shape> {
    match wrapper(ty) {
        Wrapper::Option(inner) => {
            let codec = match wrapper(inner) {
                Wrapper::Box(m) => Codec::Boxed(Box::new(message(m)?)),
                Wrapper::Vec(u) if is_ident(u, "u8") => element(inner, enumeration)?,
                Wrapper::None => element(inner, enumeration)?,
                _ => {
                    return Err(syn::Error::new_spanned(
                        inner,
                        "an `Option` of a collection has no proto equivalent: use the collection \
                         itself (empty when absent)",
                    ));
                }
            };
            Ok(match codec.is_message() {
                true => Shape::Message(codec),
                false => Shape::Optional(codec),
            })
        }
        Wrapper::Vec(inner) if is_ident(inner, "u8") && enumeration.is_none() => {
            Ok(Shape::Value(Codec::ByteVec))
        }
        Wrapper::Vec(inner) => Ok(Shape::Repeated(element(inner, enumeration)?)),
        Wrapper::Map(k, v) => Ok(Shape::Map(key(k)?, element(v, enumeration)?)),
        Wrapper::Box(_) | Wrapper::None => Ok(Shape::Value(element(ty, enumeration)?)),
    }
}

/// The codec of a single value (a field, an element of a `Vec`, a map value).
fn element(ty: &Type, enumeration: Option<&Enumeration>) -> syn::Result<Codec> {
    match enumeration {
        Some(Enumeration::Number(e)) if is_ident(ty, "i32") => Ok(Codec::Enum(type_string(e))),
        Some(Enumeration::Number(_)) => Err(syn::Error::new_spanned(
            ty,
            "`#[frpc(enumeration = \"..\")]` is for an `i32` holding the enum's number (prost's \
             representation); for a field of the enum type write `#[frpc(enumeration)]`",
        )),
        Some(Enumeration::Type) => match (wrapper(ty), scalar(ty)?) {
            (Wrapper::None, None) if matches!(peel(ty), Type::Path(p) if p.qself.is_none()) => {
                Ok(Codec::EnumType(type_string(ty)))
            }
            _ => Err(syn::Error::new_spanned(
                ty,
                "`#[frpc(enumeration)]` needs the type of a `#[derive(frpc::Message)]` enum here \
                 (`corpus: Corpus`); for an `i32` holding the enum's number write \
                 `#[frpc(enumeration = \"Corpus\")]`",
            )),
        },
        None => match wrapper(ty) {
            Wrapper::Box(m) => Ok(Codec::Boxed(Box::new(message(m)?))),
            Wrapper::Vec(u) if is_ident(u, "u8") => Ok(Codec::ByteVec),
            Wrapper::None => match scalar(ty)? {
                Some(codec) => Ok(codec),
                None => message(ty),
            },
            _ => Err(syn::Error::new_spanned(
                ty,
                "nested collections have no proto equivalent: wrap the inner one in a message",
            )),
        },
    }
}

/// A map key: proto allows `bool`, integers and `string`.
fn key(ty: &Type) -> syn::Result<Codec> {
    match scalar(ty)? {
        Some(c @ (Codec::Bool | Codec::U32 | Codec::U64 | Codec::I32 | Codec::I64 | Codec::Str)) => Ok(c),
        _ => Err(syn::Error::new_spanned(
            ty,
            "a map key must be `bool`, `u32`, `u64`, `i32`, `i64` or `String` (as in proto)",
        )),
    }
}

/// A message type: any other path, or `()` (an empty message).
fn message(ty: &Type) -> syn::Result<Codec> {
    match peel(ty) {
        Type::Path(p) if p.qself.is_none() => Ok(Codec::Message(type_string(ty))),
        Type::Tuple(t) if t.elems.is_empty() => Ok(Codec::Message("()".into())),
        _ => Err(syn::Error::new_spanned(
            ty,
            "unsupported field type: expected a scalar, `String`, `Vec<u8>`, `Bytes`, a message \
             type, or `Option`, `Vec`, `HashMap` or `BTreeMap` of those",
        )),
    }
}

/// The codec of a scalar type, `None` for a type that is not one (a message or an enum), an
/// error for Rust scalars proto lacks.
fn scalar(ty: &Type) -> syn::Result<Option<Codec>> {
    let Some(name) = plain_ident(ty) else {
        return Ok(None);
    };
    Ok(Some(match name.as_str() {
        "bool" => Codec::Bool,
        "u32" => Codec::U32,
        "u64" => Codec::U64,
        "i32" => Codec::I32,
        "i64" => Codec::I64,
        "f32" => Codec::F32,
        "f64" => Codec::F64,
        "String" => Codec::Str,
        "Bytes" => Codec::ByteBuf,
        "u8" | "u16" | "usize" | "u128" => return Err(no_proto_type(ty, &name, "u32` or `u64")),
        "i8" | "i16" | "isize" | "i128" => return Err(no_proto_type(ty, &name, "i32` or `i64")),
        "char" | "str" => return Err(no_proto_type(ty, &name, "String")),
        _ => return Ok(None),
    }))
}

fn no_proto_type(ty: &Type, name: &str, instead: &str) -> syn::Error {
    syn::Error::new_spanned(ty, format!("`{name}` has no proto equivalent: use `{instead}`"))
}

/// Collections and boxes, recognized by their last path segment.
enum Wrapper<'a> {
    Option(&'a Type),
    Vec(&'a Type),
    Map(&'a Type, &'a Type),
    Box(&'a Type),
    None,
}

fn wrapper(ty: &Type) -> Wrapper<'_> {
    let Type::Path(p) = peel(ty) else {
        return Wrapper::None;
    };
    let Some(last) = p.path.segments.last().filter(|_| p.qself.is_none()) else {
        return Wrapper::None;
    };
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return Wrapper::None;
    };
    let types: Vec<&Type> = args
        .args
        .iter()
        .filter_map(|a| match a {
            GenericArgument::Type(t) => Some(t),
            _ => None,
        })
        .collect();
    match (last.ident.to_string().as_str(), types.as_slice()) {
        ("Option", [t]) => Wrapper::Option(t),
        ("Vec", [t]) => Wrapper::Vec(t),
        ("Box", [t]) => Wrapper::Box(t),
        ("HashMap", [k, v] | [k, v, _]) | ("BTreeMap", [k, v]) => Wrapper::Map(k, v),
        _ => Wrapper::None,
    }
}

/// The last identifier of a path type without generic arguments (`u32`, `bytes::Bytes`).
fn plain_ident(ty: &Type) -> Option<String> {
    match peel(ty) {
        Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?;
            matches!(last.arguments, PathArguments::None).then(|| last.ident.to_string())
        }
        _ => None,
    }
}

fn is_ident(ty: &Type, name: &str) -> bool {
    plain_ident(ty).is_some_and(|n| n == name)
}

/// Looks through invisible groups (types passed through `macro_rules!`) and parentheses.
fn peel(ty: &Type) -> &Type {
    match ty {
        Type::Group(g) => peel(&g.elem),
        Type::Paren(p) => peel(&p.elem),
        _ => ty,
    }
}
