//! `impl ::frpc::codegen::Message` for every message and `impl ::frpc::codegen::EnumIndex`
//! for every enum: the byte-exact polyglot encoding of spec §4.7.

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};

use super::protobuf::{protobuf_cost, protobuf_encoder, protobuf_into_parts};
use super::{ident, path};
use crate::model::{Codec, Enum, Field, Message, Shape};

/// Whether a message has a protobuf side, and whose prost derive decodes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protobuf {
    /// Polyglot only (a Rust-first message not marked `#[frpc(protobuf)]`).
    No,
    /// prost's derive through frpc's path (`::frpc::codegen::prost`, as frpc-codegen sets it),
    /// whose decoder reserves a packed run's elements before reading them.
    FrpcProst,
    /// The user's own prost derive (a Rust-first message marked `#[frpc(protobuf)]`).
    UserProst,
}

/// The `Message` impl of one message: fields in three groups, each in declaration order. With
/// a `protobuf` side (a prost message, as frpc-codegen generates, or a Rust-first message
/// marked `#[frpc(protobuf)]`), also its protobuf encoding through prost; without (other
/// Rust-first messages), the type stays polyglot only.
pub fn message_impl(msg: &Message, protobuf: Protobuf) -> TokenStream {
    let ty = path(&msg.rust_path);
    let ordered: Vec<&Field> = msg.wire_order().collect();
    let protobuf = match protobuf {
        Protobuf::No => TokenStream::new(),
        Protobuf::FrpcProst => protobuf_methods(msg, true),
        Protobuf::UserProst => protobuf_methods(msg, false),
    };
    if ordered.is_empty() {
        return quote! {
            impl ::frpc::codegen::Message for #ty {
                #protobuf
                fn fields_len(&self) -> usize { 0 }
                fn encode_fields(&self, _buf: &mut impl ::frpc::codegen::BufMut) {}
                fn decode_fields(
                    &mut self,
                    _dec: &mut ::frpc::codegen::Decoder<'_>,
                ) -> ::core::result::Result<(), ::frpc::codegen::DecodeError> {
                    ::core::result::Result::Ok(())
                }
            }
        };
    }
    let mut lens: Vec<TokenStream> = ordered.iter().map(|f| field_len(msg, f)).collect();
    // A oneof's length is a `match`; first in a sum, it would parse as a statement followed
    // by `+ …` (alone it needs no parentheses, which would be a warning).
    if lens.len() > 1 && matches!(ordered[0].shape, Shape::OneofMember { .. }) {
        let first = &lens[0];
        lens[0] = quote!((#first));
    }
    let encodes = ordered.iter().map(|f| field_encode(msg, f));
    let parts = encode_fields_parts(msg, &ordered);
    let owned_parts = into_fields_parts(msg, &ordered);
    let decodes = ordered.iter().map(|f| field_decode(msg, f));
    // Oneof members decode into locals; each oneof is resolved once every field is read.
    let resolves = msg.oneofs.iter().enumerate().map(|(i, oneof)| {
        let field = ident(&oneof.ident);
        let enum_path = path(&oneof.rust_path);
        let mut members = msg.oneof_members(i).map(|(f, variant, _)| {
            let local = oneof_local(msg, f);
            let variant = ident(variant);
            quote! { #local.map(#enum_path::#variant) }
        });
        let first = members
            .next()
            .unwrap_or_else(|| quote!(::core::option::Option::None));
        quote! { self.#field = #first #( .or_else(|| #members) )*; }
    });
    quote! {
        // Deprecated fields are still encoded and decoded.
        #[allow(deprecated)]
        impl ::frpc::codegen::Message for #ty {
            #protobuf
            fn fields_len(&self) -> usize {
                #( #lens )+*
            }
            fn encode_fields(&self, buf: &mut impl ::frpc::codegen::BufMut) {
                #( #encodes )*
            }
            #parts
            #owned_parts
            fn decode_fields(
                &mut self,
                dec: &mut ::frpc::codegen::Decoder<'_>,
            ) -> ::core::result::Result<(), ::frpc::codegen::DecodeError> {
                #( #decodes )*
                #( #resolves )*
                ::core::result::Result::Ok(())
            }
        }
    }
}

/// The protobuf side of every message's `Message` impl (frpc sends it on connections that
/// negotiated protobuf): the type is a prost message, which prost decodes; frpc's own encoder
/// (`super::protobuf`) writes it when the model has its field numbers (messages from a
/// .proto), prost otherwise (Rust-first messages marked `#[frpc(protobuf)]`).
/// `packed_reserved`: the decoder reserves packed runs (see [`Protobuf::FrpcProst`]).
fn protobuf_methods(msg: &Message, packed_reserved: bool) -> TokenStream {
    let encoder = protobuf_encoder(msg).unwrap_or_else(|| {
        quote! {
            fn protobuf_len(&self) -> usize {
                ::frpc::codegen::prost::Message::encoded_len(self)
            }
            fn encode_protobuf(&self, buf: &mut impl ::frpc::codegen::BufMut) {
                ::frpc::codegen::prost::Message::encode_raw(self, buf)
            }
        }
    });
    let cost = protobuf_cost(msg, packed_reserved);
    let parts = protobuf_into_parts(msg);
    quote! {
        const PROTOBUF: bool = true;
        #encoder
        #parts
        #cost
        fn decode_protobuf(
            buf: ::frpc::codegen::Bytes,
        ) -> ::core::result::Result<Self, ::frpc::codegen::DecodeError> {
            ::frpc::codegen::decode_protobuf(buf)
        }
    }
}

/// `<C as ::frpc::codegen::Codec>`.
fn codec(c: &Codec) -> TokenStream {
    let c = path(&c.rust_path());
    quote!(<#c as ::frpc::codegen::Codec>)
}

fn codec_ty(c: &Codec) -> TokenStream {
    path(&c.rust_path())
}

/// The local a oneof member decodes into: `oneof_<field ident without r#>`.
fn oneof_local(_msg: &Message, f: &Field) -> proc_macro2::Ident {
    format_ident!("oneof_{}", f.ident.trim_start_matches("r#"))
}

/// The Rust field and the oneof enum path for a oneof member.
fn oneof_parts(msg: &Message, oneof: usize, variant: &str) -> (TokenStream, TokenStream) {
    let o = &msg.oneofs[oneof];
    let field = ident(&o.ident);
    let enum_path = path(&o.rust_path);
    let variant = ident(variant);
    (quote!(self.#field), quote!(#enum_path::#variant))
}

fn field_len(msg: &Message, f: &Field) -> TokenStream {
    let name = ident(&f.ident);
    match &f.shape {
        Shape::Value(c) => {
            let c = codec(c);
            quote!(#c::len(&self.#name))
        }
        Shape::Optional(c) | Shape::Message(c) => {
            let c = codec_ty(c);
            quote!(::frpc::codegen::optional_len::<#c>(&self.#name))
        }
        Shape::Repeated(c) => {
            let c = codec_ty(c);
            quote!(::frpc::codegen::repeated_len::<#c>(&self.#name))
        }
        Shape::Map(k, v) => {
            let (k, v) = (codec_ty(k), codec_ty(v));
            quote!(::frpc::codegen::map_len::<#k, #v>(&self.#name))
        }
        Shape::OneofMember {
            oneof,
            variant,
            codec: c,
        } => {
            let (field, variant) = oneof_parts(msg, *oneof, variant);
            let unset = if c.is_message() {
                let ty = codec_ty(c);
                quote!(::frpc::codegen::optional_len::<#ty>(&::core::option::Option::None))
            } else {
                let c = codec(c);
                quote!(#c::len(&::core::default::Default::default()))
            };
            let c = codec(c);
            quote! {
                match &#field {
                    ::core::option::Option::Some(#variant(v)) => #c::len(v),
                    _ => #unset,
                }
            }
        }
    }
}

fn field_encode(msg: &Message, f: &Field) -> TokenStream {
    let name = ident(&f.ident);
    match &f.shape {
        Shape::Value(c) => {
            let c = codec(c);
            quote!(#c::encode(&self.#name, buf);)
        }
        Shape::Optional(c) | Shape::Message(c) => {
            let c = codec_ty(c);
            quote!(::frpc::codegen::encode_optional::<#c>(&self.#name, buf);)
        }
        Shape::Repeated(c) => {
            let c = codec_ty(c);
            quote!(::frpc::codegen::encode_repeated::<#c>(&self.#name, buf);)
        }
        Shape::Map(k, v) => {
            let (k, v) = (codec_ty(k), codec_ty(v));
            quote!(::frpc::codegen::encode_map::<#k, #v>(&self.#name, buf);)
        }
        Shape::OneofMember {
            oneof,
            variant,
            codec: c,
        } => {
            let (field, variant) = oneof_parts(msg, *oneof, variant);
            let unset = if c.is_message() {
                let ty = codec_ty(c);
                quote!(::frpc::codegen::encode_optional::<#ty>(&::core::option::Option::None, buf))
            } else {
                let c = codec(c);
                quote!(#c::encode(&::core::default::Default::default(), buf))
            };
            let c = codec(c);
            quote! {
                match &#field {
                    ::core::option::Option::Some(#variant(v)) => #c::encode(v, buf),
                    _ => #unset,
                }
            }
        }
    }
}

/// `encode_fields_parts` for a message with a `bytes::Bytes` field or a message field (which
/// may hold one): the fields as `encode_fields` writes them, those referenced rather than copied
/// when large (`Codec::encode_parts`). Nothing for other messages (the default copies).
fn encode_fields_parts(msg: &Message, ordered: &[&Field]) -> TokenStream {
    let own = |f: &Field| matches!(&f.shape, Shape::Value(Codec::ByteBuf));
    let Some(encodes) = parts_encodes(msg, ordered, own, |c, name| match c {
        Given::Value(c) => quote!(#c::encode_parts(&self.#name, parts);),
        Given::Optional(c) => quote!(::frpc::codegen::encode_optional_parts::<#c>(&self.#name, parts);),
    }) else {
        return TokenStream::new();
    };
    let parts = parts_const(ordered, own, quote!(PARTS));
    quote! {
        const POLYGLOT_PARTS: bool = #parts;
        fn encode_fields_parts(&self, parts: &mut ::frpc::codegen::Parts) {
            #( #encodes )*
        }
    }
}

/// `into_fields_parts` for a message with a `String` or `bytes::Bytes` field (plain or proto3
/// `optional`) or a message field: as `encode_fields_parts`, but the message is given up, so
/// a large string's buffer is handed over as a part rather than copied (`Codec::into_parts`).
/// Repeated, map and oneof fields are written into the buffer. Nothing for other messages.
///
/// The fields are taken out with `mem::take` rather than moved, so a message type with its own
/// `Drop` (a Rust-first one may have it) compiles too.
fn into_fields_parts(msg: &Message, ordered: &[&Field]) -> TokenStream {
    let own = |f: &Field| matches!(&f.shape, Shape::Value(c) | Shape::Optional(c) if matches!(c, Codec::Str | Codec::ByteBuf));
    let Some(encodes) = parts_encodes(msg, ordered, own, |c, name| match c {
        Given::Value(c) => quote!(#c::into_parts(::core::mem::take(&mut self.#name), parts);),
        Given::Optional(c) => {
            quote!(::frpc::codegen::encode_optional_into_parts::<#c>(self.#name.take(), parts);)
        }
    }) else {
        return TokenStream::new();
    };
    let parts = parts_const(ordered, own, quote!(OWNED_PARTS));
    quote! {
        const POLYGLOT_OWNED_PARTS: bool = #parts;
        fn into_fields_parts(mut self, parts: &mut ::frpc::codegen::Parts) {
            #( #encodes )*
        }
    }
}

/// A field a parts method writes as a part of its own, with its codec: a plain value
/// (`<C as Codec>`), or an optional one or a message (the codec type).
enum Given {
    Value(TokenStream),
    Optional(TokenStream),
}

/// The statements of a parts method, field by field: those `own` picks and message fields by
/// `part` (given the field's codec and name), the others written into the buffer as
/// `encode_fields` writes them. `None` when no field would be a part.
fn parts_encodes(
    msg: &Message,
    ordered: &[&Field],
    own: impl Fn(&Field) -> bool,
    part: impl Fn(Given, proc_macro2::Ident) -> TokenStream,
) -> Option<Vec<TokenStream>> {
    let given = |f: &Field| own(f) || message_field(f).is_some();
    if !ordered.iter().any(|f| given(f)) {
        return None;
    }
    let encodes = ordered.iter().map(|f| {
        let name = ident(&f.ident);
        match &f.shape {
            Shape::Value(c) if own(f) => part(Given::Value(codec(c)), name),
            Shape::Optional(c) | Shape::Message(c) if given(f) => part(Given::Optional(codec_ty(c)), name),
            _ => {
                let encode = field_encode(msg, f);
                quote!({ let buf = parts.buf_mut(); #encode })
            }
        }
    });
    Some(encodes.collect())
}

/// The codec of a singular message field (plain or optional).
fn message_field(f: &Field) -> Option<&Codec> {
    match &f.shape {
        Shape::Optional(c) | Shape::Message(c) if matches!(c, Codec::Message(_)) => Some(c),
        _ => None,
    }
}

/// A parts constant (`POLYGLOT_PARTS`, `POLYGLOT_OWNED_PARTS`): `true` when the message has a
/// field `own` picks, otherwise whether one of its message fields' codecs has `codec_const`.
/// Parts only where a value that can be left in its own buffer can be met.
fn parts_const(ordered: &[&Field], own: impl Fn(&Field) -> bool, codec_const: TokenStream) -> TokenStream {
    if ordered.iter().any(|f| own(f)) {
        return quote!(true);
    }
    ordered
        .iter()
        .filter_map(|f| message_field(f))
        .map(|c| {
            let c = codec_ty(c);
            quote!(<#c as ::frpc::codegen::Codec>::#codec_const)
        })
        .reduce(|all, next| quote!(#all || #next))
        .unwrap_or_else(|| quote!(false))
}

fn field_decode(msg: &Message, f: &Field) -> TokenStream {
    let name = ident(&f.ident);
    match &f.shape {
        Shape::Value(c) => {
            let c = codec(c);
            quote!(self.#name = #c::decode(dec)?;)
        }
        Shape::Optional(c) | Shape::Message(c) => {
            let c = codec_ty(c);
            quote!(self.#name = ::frpc::codegen::decode_optional::<#c>(dec)?;)
        }
        Shape::Repeated(c) => {
            let c = codec_ty(c);
            quote!(self.#name = ::frpc::codegen::decode_repeated::<#c>(dec)?;)
        }
        Shape::Map(k, v) => {
            let (k, v) = (codec_ty(k), codec_ty(v));
            quote!(self.#name = ::frpc::codegen::decode_map::<#k, #v, _>(dec)?;)
        }
        Shape::OneofMember { codec: c, .. } => {
            let local = oneof_local(msg, f);
            if c.is_message() {
                let c = codec_ty(c);
                quote!(let #local = ::frpc::codegen::decode_optional::<#c>(dec)?;)
            } else {
                let is_set = is_set(c);
                let c = codec(c);
                quote! {
                    let #local = {
                        let v = #c::decode(dec)?;
                        (#is_set).then_some(v)
                    };
                }
            }
        }
    }
}

/// Whether a decoded scalar `v` differs from its zero value (which marks an unset oneof member).
fn is_set(c: &Codec) -> TokenStream {
    match c {
        Codec::Bool => quote!(v),
        Codec::F32 | Codec::F64 => quote!(v.to_bits() != 0),
        Codec::Str | Codec::ByteVec | Codec::ByteBuf => quote!(!v.is_empty()),
        _ => quote!(v != 0),
    }
}

/// The `EnumIndex` impl of one enum: proto numbers ↔ declaration indices.
///
/// Indices the enum does not declare (from a peer with a newer .proto) are kept as numbers it
/// does not declare, so they re-encode unchanged: for an enum numbered `0..n` in order the
/// number is the index itself; otherwise `::frpc::codegen::unknown_enum_number` and
/// `unknown_enum_index` number them around the declared values.
pub fn enum_impl(e: &Enum) -> TokenStream {
    let ty = path(&e.rust_path);
    let name = &e.proto_name;
    let dense = e
        .values
        .iter()
        .enumerate()
        .all(|(i, &n)| i64::from(n) == i as i64);
    let (to_index, from_index) = if dense {
        // Index == number, declared or not: every u32 maps to a distinct i32 and back.
        (
            quote!(number as u32),
            quote!(::core::option::Option::Some(index as i32)),
        )
    } else {
        sparse_enum_bodies(&e.values)
    };
    quote! {
        impl ::frpc::codegen::EnumIndex for #ty {
            const NAME: &'static str = #name;
            fn to_index(number: i32) -> u32 {
                #to_index
            }
            fn from_index(index: u32) -> ::core::option::Option<i32> {
                #from_index
            }
        }
    }
}

/// `to_index` and `from_index` bodies for an enum with gaps, aliases or another order.
fn sparse_enum_bodies(values: &[i32]) -> (TokenStream, TokenStream) {
    let count = Literal::u32_unsuffixed(values.len() as u32);
    let mut declared: Vec<u32> = values.iter().map(|&n| n as u32).collect();
    declared.sort_unstable();
    declared.dedup();
    let declared = declared.iter().map(|&d| Literal::u32_unsuffixed(d));
    let declared = quote!(&[#(#declared),*]);
    // to_index: the first index of each number (an alias's later indices are never written).
    let mut seen = Vec::new();
    let to_arms = values.iter().enumerate().filter_map(|(index, &number)| {
        if seen.contains(&number) {
            return None;
        }
        seen.push(number);
        let number = int_lit(number);
        let index = Literal::u32_unsuffixed(index as u32);
        Some(quote!(#number => #index,))
    });
    let from_arms = values.iter().enumerate().map(|(index, &number)| {
        let number = int_lit(number);
        let index = Literal::u32_unsuffixed(index as u32);
        quote!(#index => #number,)
    });
    (
        quote! {
            match number {
                #(#to_arms)*
                _ => ::frpc::codegen::unknown_enum_index(number, #count, #declared),
            }
        },
        quote! {
            ::core::option::Option::Some(match index {
                #(#from_arms)*
                _ => ::frpc::codegen::unknown_enum_number(index, #count, #declared),
            })
        },
    )
}

/// An unsuffixed integer literal that may be negative (`-1` as two tokens).
fn int_lit(n: i32) -> TokenStream {
    let abs = Literal::u64_unsuffixed(u64::from(n.unsigned_abs()));
    if n < 0 { quote!(-#abs) } else { quote!(#abs) }
}
