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
    let fields = numbered_fields(msg)?;
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

/// `into_protobuf_parts` for a message from a .proto with a `string` or `bytes::Bytes` field
/// (plain or proto3 `optional`) or a message field: the bytes of `encode_protobuf`, with a
/// large string's or bytes' own buffer handed over as a part (`pb::*_into_parts`). Repeated,
/// map, oneof and boxed fields are written into the buffer. `None` for other messages (and
/// Rust-first ones, which prost encodes).
pub fn protobuf_into_parts(msg: &Message) -> Option<TokenStream> {
    let fields = numbered_fields(msg)?;
    // What hands a field's own buffer over as a part. A proto2 `required` string or bytes is
    // written into the buffer: it is written even empty, which the part functions skip.
    let given = |f: &Field, p: &ProtoField| match &f.shape {
        Shape::Value(_) if p.required => None,
        Shape::Value(Codec::Str) | Shape::Optional(Codec::Str) => Some(quote!(string_into_parts)),
        Shape::Value(Codec::ByteBuf) | Shape::Optional(Codec::ByteBuf) => Some(quote!(bytes_into_parts)),
        Shape::Optional(Codec::Message(_)) | Shape::Message(Codec::Message(_)) => {
            Some(quote!(message_into_parts))
        }
        _ => None,
    };
    if !fields.iter().any(|(f, p)| given(f, p).is_some()) {
        return None;
    }
    let encodes = fields.iter().map(|(f, p)| {
        let name = ident(&f.ident);
        let tag = Literal::u32_unsuffixed(p.number);
        match (&f.shape, given(f, p)) {
            (Shape::Value(_), Some(into)) => quote! {
                if !self.#name.is_empty() {
                    ::frpc::codegen::pb::#into(#tag, ::core::mem::take(&mut self.#name), parts);
                }
            },
            (_, Some(into)) => quote! {
                if let ::core::option::Option::Some(value) = self.#name.take() {
                    ::frpc::codegen::pb::#into(#tag, value, parts);
                }
            },
            (_, None) => {
                let (_, encode) = field(msg, f, p);
                quote!({ let buf = parts.buf_mut(); #encode })
            }
        }
    });
    let own = fields.iter().any(|(f, p)| {
        given(f, p).is_some()
            && matches!(&f.shape, Shape::Value(c) | Shape::Optional(c) if matches!(c, Codec::Str | Codec::ByteBuf))
    });
    let constant = match own {
        true => quote!(true),
        false => fields
            .iter()
            .filter_map(|(f, _)| match &f.shape {
                Shape::Optional(Codec::Message(ty)) | Shape::Message(Codec::Message(ty)) => {
                    let ty = path(ty);
                    Some(quote!(<#ty as ::frpc::codegen::Message>::PROTOBUF_OWNED_PARTS))
                }
                _ => None,
            })
            .reduce(|all, next| quote!(#all || #next))
            .unwrap_or_else(|| quote!(false)),
    };
    Some(quote! {
        const PROTOBUF_OWNED_PARTS: bool = #constant;
        fn into_protobuf_parts(mut self, parts: &mut ::frpc::codegen::Parts) {
            #( #encodes )*
        }
    })
}

/// The fields with their protobuf numbers, in number order; `None` when a field has none (a
/// Rust-first message).
fn numbered_fields(msg: &Message) -> Option<Vec<(&Field, &ProtoField)>> {
    let mut fields: Vec<(&Field, &ProtoField)> = msg
        .fields
        .iter()
        .map(|f| Some((f, f.proto.as_ref()?)))
        .collect::<Option<_>>()?;
    fields.sort_by_key(|(_, p)| p.number);
    Some(fields)
}

/// The length expression and the encoding statement of one field.
fn field(msg: &Message, f: &Field, p: &ProtoField) -> (TokenStream, TokenStream) {
    let name = ident(&f.ident);
    let tag = Literal::u32_unsuffixed(p.number);
    match &f.shape {
        Shape::Value(codec) if p.required => value_parts(codec, p.kind, &tag, &quote!(&self.#name)),
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

/// `PROTOBUF_AMPLIFIES` and `protobuf_cost` for `msg` when decoding it can allocate more than
/// its input (a repeated field, a map or a message field: what prost allocates per element or
/// box is charged, nested messages recursively); `None` otherwise, or without field numbers.
/// Strings and bytes are not charged: they cost at most the input again. A repeated field's
/// elements are counted during the walk and its vector charged after it, at the peak its
/// growth reaches for that count, or at what a packed run holds where the decoder reserves
/// it first (`packed_reserved`; `Repeated::cost`).
pub fn protobuf_cost(msg: &Message, packed_reserved: bool) -> Option<TokenStream> {
    let fields: Vec<(&Field, &ProtoField)> = msg
        .fields
        .iter()
        .map(|f| Some((f, f.proto.as_ref()?)))
        .collect::<Option<_>>()?;
    let mut vectors = Vec::new();
    let arms: Vec<TokenStream> = fields
        .iter()
        .filter_map(|(f, p)| cost_arm(f, p, &mut vectors))
        .collect();
    if arms.is_empty() {
        return None;
    }
    let walk = quote! {
        ::frpc::codegen::protobuf_fields(buf, |number, value| match (number, value) {
            #( #arms )*
            _ => ::core::result::Result::Ok(()),
        })
    };
    let body = match vectors.len() {
        0 => walk,
        n => {
            let slots = (0..n).map(Literal::usize_unsuffixed);
            let n = Literal::usize_unsuffixed(n);
            quote! {
                let mut counts = [::frpc::codegen::Repeated::NEW; #n];
                #walk?;
                #( budget.charge(counts[#slots].cost(::core::mem::size_of::<#vectors>(), #packed_reserved))?; )*
                ::core::result::Result::Ok(())
            }
        }
    };
    Some(quote! {
        const PROTOBUF_AMPLIFIES: bool = true;
        fn protobuf_cost(
            buf: &[u8],
            budget: &mut ::frpc::codegen::ProtobufBudget,
        ) -> ::core::result::Result<(), ::frpc::codegen::DecodeError> {
            #body
        }
    })
}

/// The match arm charging one field, if decoding it can allocate beyond its input; a repeated
/// field counts its elements in `counts[i]` instead, `i` its element type's place in
/// `vectors`.
fn cost_arm(f: &Field, p: &ProtoField, vectors: &mut Vec<TokenStream>) -> Option<TokenStream> {
    let number = Literal::u32_unsuffixed(p.number);
    let ok = quote!(::core::result::Result::Ok(()));
    let value = quote!(::frpc::codegen::ProtobufValue);
    match &f.shape {
        // A `Value` message: a proto2 `required` one, which prost holds by value.
        Shape::Message(codec) | Shape::Value(codec) | Shape::OneofMember { codec, .. }
            if codec.is_message() =>
        {
            let nested = nested_cost(codec)?;
            Some(quote! { (#number, #value::Bytes(bytes)) => { #nested } })
        }
        Shape::Repeated(codec) => {
            let slot = Literal::usize_unsuffixed(vectors.len());
            vectors.push(rust_type(codec));
            let nested = nested_cost(codec);
            let per_run = match p.kind {
                ProtoKind::Double | ProtoKind::Fixed64 | ProtoKind::Sfixed64 => quote!(bytes.len() / 8),
                ProtoKind::Float | ProtoKind::Fixed32 | ProtoKind::Sfixed32 => quote!(bytes.len() / 4),
                _ => quote!(::frpc::codegen::packed_varints(bytes)),
            };
            let packed = match (p.kind.packable(), nested) {
                (true, _) => quote! {
                    (#number, #value::Bytes(bytes)) => {
                        counts[#slot].packed(#per_run);
                        #ok
                    }
                },
                (false, Some(nested)) => quote! {
                    (#number, #value::Bytes(bytes)) => {
                        counts[#slot].loose();
                        #nested
                    }
                },
                // Strings and bytes: one element each, whatever the value.
                (false, None) => TokenStream::new(),
            };
            Some(quote! {
                #packed
                (#number, _) => {
                    counts[#slot].loose();
                    #ok
                }
            })
        }
        Shape::Map(key, value_codec) => {
            let (k, v) = (rust_type(key), rust_type(value_codec));
            // An entry in a hash map, which may hold twice its entries while it grows.
            let charge = quote!(2 * (::core::mem::size_of::<#k>() + ::core::mem::size_of::<#v>() + 8));
            Some(match nested_cost(value_codec) {
                None => quote! {
                    (#number, #value::Bytes(_)) => budget.charge(#charge),
                },
                Some(nested) => quote! {
                    (#number, #value::Bytes(bytes)) => {
                        budget.charge(#charge)?;
                        ::frpc::codegen::protobuf_fields(bytes, |number, value| match (number, value) {
                            (2, #value::Bytes(bytes)) => { #nested }
                            _ => #ok,
                        })
                    }
                },
            })
        }
        _ => None,
    }
}

/// Charges a nested message held in `bytes` (and its box, if prost boxes it); `None` for a
/// codec that is not a message or a wrapper (which allocates nothing beyond its input).
fn nested_cost(codec: &Codec) -> Option<TokenStream> {
    match codec {
        Codec::Boxed(inner) => {
            let ty = rust_type(inner);
            let nested = nested_cost(inner)?;
            Some(quote! {
                budget.charge(::core::mem::size_of::<#ty>())?;
                #nested
            })
        }
        Codec::Message(path) => {
            let ty = super::path(path);
            Some(quote! {
                budget.nested(bytes, <#ty as ::frpc::codegen::Message>::protobuf_cost)
            })
        }
        _ => None,
    }
}

/// The Rust type prost holds a value of `codec` in.
fn rust_type(codec: &Codec) -> TokenStream {
    match codec {
        Codec::Bool => quote!(bool),
        Codec::U32 => quote!(u32),
        Codec::U64 => quote!(u64),
        Codec::I32 | Codec::Enum(_) => quote!(i32),
        Codec::I64 => quote!(i64),
        Codec::F32 => quote!(f32),
        Codec::F64 => quote!(f64),
        Codec::Str => quote!(::std::string::String),
        Codec::ByteVec => quote!(::std::vec::Vec<u8>),
        Codec::ByteBuf => quote!(::frpc::codegen::Bytes),
        Codec::EnumType(path) | Codec::Message(path) => super::path(path),
        Codec::Wrapped(inner) => {
            let inner = rust_type(inner);
            quote!(::core::option::Option<#inner>)
        }
        Codec::Boxed(inner) => {
            let inner = rust_type(inner);
            quote!(::std::boxed::Box<#inner>)
        }
    }
}
