//! The protobuf encoder of a generated message (`protobuf_len`, `encode_protobuf` of its
//! `::frpc::codegen::Message` impl): the bytes Go's protobuf library writes, field by field in
//! number order through `prost::encoding`'s per-type functions. prost's derive is not used to
//! encode because it drops a `float`/`double` holding -0.0 (equal to the default 0.0; prost
//! issue #1177), which the protobuf spec says must be sent. Decoding stays prost's.
//!
//! Presence follows Go: an implicit-presence scalar is written unless it is zero (floats:
//! unless its bits are all zero, so -0.0 and NaNs are written), a proto3 `optional`, a oneof
//! member and a message whenever set, repeated scalars packed (proto3's default), and a map
//! entry always with both its key and its value.

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use super::{ident, path};
use crate::model::{Codec, Field, Message, ProtoField, ProtoKind, Shape};

/// `protobuf_len` and `encode_protobuf` for `msg`, or `None` when a field has no protobuf
/// number (a Rust-first message: its own `prost::Message` then does the work).
pub fn protobuf_encoder(msg: &Message) -> Option<TokenStream> {
    let mut fields: Vec<(&Field, &ProtoField)> = msg
        .fields
        .iter()
        .map(|f| Some((f, f.proto.as_ref()?)))
        .collect::<Option<_>>()?;
    fields.sort_by_key(|(_, p)| p.number);
    let parts: Vec<(TokenStream, TokenStream)> = fields.iter().map(|(f, p)| field(msg, f, p)).collect();
    if parts.is_empty() {
        return Some(quote! {
            fn protobuf_len(&self) -> usize { 0 }
            fn encode_protobuf(&self, _buf: &mut impl ::frpc::codegen::BufMut) {}
        });
    }
    let lens = parts.iter().map(|(len, _)| len);
    let encodes = parts.iter().map(|(_, encode)| encode);
    Some(quote! {
        fn protobuf_len(&self) -> usize {
            let mut len = 0;
            #( len += #lens; )*
            len
        }
        fn encode_protobuf(&self, buf: &mut impl ::frpc::codegen::BufMut) {
            #( #encodes )*
        }
    })
}

/// The length expression and the encoding statement of one field.
fn field(msg: &Message, f: &Field, p: &ProtoField) -> (TokenStream, TokenStream) {
    let name = ident(&f.ident);
    let tag = Literal::u32_unsuffixed(p.number);
    match &f.shape {
        Shape::Value(codec) => {
            let (len, encode) = value_parts(codec, p.kind, &tag, &quote!(&self.#name));
            let set = is_set(p.kind, &quote!(self.#name));
            (quote!(if #set { #len } else { 0 }), quote!(if #set { #encode }))
        }
        Shape::Optional(codec) | Shape::Message(codec) => {
            let (len, encode) = value_parts(codec, p.kind, &tag, &quote!(value));
            (
                quote!(self.#name.as_ref().map_or(0, |value| #len)),
                quote!(if let ::core::option::Option::Some(value) = &self.#name { #encode }),
            )
        }
        Shape::Repeated(codec) => repeated(codec, p, &tag, &quote!(self.#name)),
        Shape::Map(_, value_codec) => map(value_codec, p, &tag, &quote!(self.#name)),
        Shape::OneofMember {
            oneof,
            variant,
            codec,
        } => {
            let o = &msg.oneofs[*oneof];
            let (field, enum_path, variant) = (ident(&o.ident), path(&o.rust_path), ident(variant));
            let (len, encode) = value_parts(codec, p.kind, &tag, &quote!(value));
            let pattern = quote!(::core::option::Option::Some(#enum_path::#variant(value)));
            (
                quote!(if let #pattern = &self.#field { #len } else { 0 }),
                quote!(if let #pattern = &self.#field { #encode }),
            )
        }
    }
}

/// Whether an implicit-presence value (a place expression) is written: not zero (a float by
/// its bits).
fn is_set(kind: ProtoKind, place: &TokenStream) -> TokenStream {
    match kind {
        ProtoKind::Double | ProtoKind::Float => quote!(#place.to_bits() != 0),
        ProtoKind::String | ProtoKind::Bytes => quote!(!#place.is_empty()),
        ProtoKind::Bool => quote!(#place),
        ProtoKind::Message => quote!(true),
        _ => quote!(#place != 0),
    }
}

/// The length and encoding of one value (a reference expression) always written with `tag`.
fn value_parts(
    codec: &Codec,
    kind: ProtoKind,
    tag: &Literal,
    value: &TokenStream,
) -> (TokenStream, TokenStream) {
    match codec {
        Codec::Boxed(inner) => value_parts(inner, kind, tag, &quote!(&**(#value))),
        Codec::Wrapped(inner) => wrapped(inner, tag, value),
        Codec::Message(_) => (
            quote!(::frpc::codegen::pb::message_len(#tag, #value)),
            quote!(::frpc::codegen::pb::encode_message(#tag, #value, buf);),
        ),
        _ => {
            let module = scalar_module(kind);
            (
                quote!(#module::encoded_len(#tag, #value)),
                quote!(#module::encode(#tag, #value, buf);),
            )
        }
    }
}

/// A wrapper well-known type (`DoubleValue`…, held as the plain value): a message whose field 1
/// is the value with implicit presence, as Go's `wrapperspb` writes it.
fn wrapped(inner: &Codec, tag: &Literal, value: &TokenStream) -> (TokenStream, TokenStream) {
    let kind = wrapped_kind(inner);
    let one = Literal::u32_unsuffixed(1);
    let (len, encode) = value_parts(inner, kind, &one, value);
    let set = match kind {
        ProtoKind::Double | ProtoKind::Float => quote!(#value.to_bits() != 0),
        ProtoKind::String | ProtoKind::Bytes => quote!(!#value.is_empty()),
        ProtoKind::Bool => quote!(*#value),
        _ => quote!(*#value != 0),
    };
    let body = quote!(if #set { #len } else { 0 });
    (
        quote!(::frpc::codegen::pb::len_delimited_len(#tag, #body)),
        quote! {
            ::frpc::codegen::pb::encode_len_delimited_key(#tag, #body, buf);
            if #set { #encode }
        },
    )
}

/// The protobuf type a wrapper's plain value has.
fn wrapped_kind(inner: &Codec) -> ProtoKind {
    match inner {
        Codec::F64 => ProtoKind::Double,
        Codec::F32 => ProtoKind::Float,
        Codec::I64 => ProtoKind::Int64,
        Codec::U64 => ProtoKind::Uint64,
        Codec::I32 => ProtoKind::Int32,
        Codec::U32 => ProtoKind::Uint32,
        Codec::Bool => ProtoKind::Bool,
        Codec::Str => ProtoKind::String,
        _ => ProtoKind::Bytes,
    }
}

/// A repeated field (`values`, a place): scalars packed or one by one, strings, bytes and
/// messages one by one.
fn repeated(
    codec: &Codec,
    p: &ProtoField,
    tag: &Literal,
    values: &TokenStream,
) -> (TokenStream, TokenStream) {
    if codec.is_message() || matches!(codec, Codec::Boxed(_)) {
        let (len, encode) = value_parts(codec, p.kind, tag, &quote!(value));
        return (
            quote!(#values.iter().map(|value| #len).sum::<usize>()),
            quote!(for value in &#values { #encode }),
        );
    }
    let module = scalar_module(p.kind);
    match p.packed {
        true => (
            quote!(#module::encoded_len_packed(#tag, &#values)),
            quote!(#module::encode_packed(#tag, &#values, buf);),
        ),
        false => (
            quote!(#module::encoded_len_repeated(#tag, &#values)),
            quote!(#module::encode_repeated(#tag, &#values, buf);),
        ),
    }
}

/// A map (a place): one entry (field 1 the key, field 2 the value, both always written) per
/// pair.
fn map(value_codec: &Codec, p: &ProtoField, tag: &Literal, map: &TokenStream) -> (TokenStream, TokenStream) {
    let key_module = scalar_module(p.map_key.unwrap_or(ProtoKind::String));
    let (one, two) = (Literal::u32_unsuffixed(1), Literal::u32_unsuffixed(2));
    let (value_len, value_encode) = value_parts(value_codec, p.kind, &two, &quote!(value));
    let entry_len = quote!(#key_module::encoded_len(#one, key) + #value_len);
    (
        quote! {
            #map.iter().map(|(key, value)| {
                let entry = #entry_len;
                ::frpc::codegen::pb::len_delimited_len(#tag, entry)
            }).sum::<usize>()
        },
        quote! {
            for (key, value) in &#map {
                let entry = #entry_len;
                ::frpc::codegen::pb::encode_len_delimited_key(#tag, entry, buf);
                #key_module::encode(#one, key, buf);
                #value_encode
            }
        },
    )
}

/// `::frpc::codegen::prost::encoding::<module>`.
fn scalar_module(kind: ProtoKind) -> TokenStream {
    let module = ident(kind.module());
    quote!(::frpc::codegen::prost::encoding::#module)
}
