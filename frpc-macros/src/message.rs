//! `#[derive(Message)]`: a struct → `model::Message`, a unit-only enum → `model::Enum`, then
//! `frpc-codegen`'s message emitter.

use frpc_codegen::emit::messages::{Protobuf, enum_impl, message_impl};
use frpc_codegen::model;
use proc_macro2::{Literal, TokenStream};
use quote::quote;
use syn::spanned::Spanned;
use syn::{Data, DataEnum, DataStruct, DeriveInput, Expr, ExprLit, ExprUnary, Fields, Lit, UnOp};

use crate::attr;
use crate::error::Errors;
use crate::prost_attr;
use crate::types::field_shape;

/// Expands `#[derive(Message)]`.
pub(crate) fn derive(input: &DeriveInput) -> syn::Result<TokenStream> {
    if !input.generics.params.is_empty() || input.generics.where_clause.is_some() {
        return Err(syn::Error::new_spanned(
            &input.generics,
            "`#[derive(frpc::Message)]` does not support generic types: a proto message or enum \
             has one concrete layout",
        ));
    }
    let attrs = attr::type_attrs(&input.attrs)?;
    let name = attrs.name.unwrap_or_else(|| unraw(&input.ident));
    match &input.data {
        Data::Struct(data) => message(input, name, attrs.protobuf.is_some(), data),
        Data::Enum(data) => {
            if let Some(span) = attrs.protobuf {
                return Err(syn::Error::new(
                    span,
                    "`#[frpc(protobuf)]` is for structs (messages): an enum travels as a number \
                     inside the message that holds it",
                ));
            }
            enumeration(input, name, data)
        }
        Data::Union(data) => Err(syn::Error::new(
            data.union_token.span,
            "`#[derive(frpc::Message)]` supports structs (messages) and unit-only enums (proto \
             enums), not unions",
        )),
    }
}

/// A struct with named fields (or a unit struct, an empty message) → `impl Message`; with
/// `protobuf` (`#[frpc(protobuf)]`) it also has a protobuf encoding: frpc-codegen's encoder
/// when every field has a prost attribute it reads (`prost_attr`), else the type's own
/// `prost::Message` impl; prost decodes it.
fn message(
    input: &DeriveInput,
    proto_name: String,
    protobuf: bool,
    data: &DataStruct,
) -> syn::Result<TokenStream> {
    let named = match &data.fields {
        Fields::Named(named) => named.named.iter().collect(),
        Fields::Unit => Vec::new(),
        Fields::Unnamed(fields) => {
            return Err(syn::Error::new_spanned(
                fields,
                "`#[derive(frpc::Message)]` needs named fields: a tuple struct has no field names \
                 to put in declaration order; write `struct Name { field: Type, .. }`",
            ));
        }
    };
    let mut errors = Errors::default();
    let fields = named
        .into_iter()
        .filter_map(|f| {
            let ident = f.ident.as_ref()?;
            let attrs = errors.ok(attr::field_attrs(&f.attrs))?;
            let shape = errors.ok(field_shape(&f.ty, attrs.enumeration.as_ref()))?;
            Some(model::Field {
                proto_name: unraw(ident),
                ident: ident.to_string(),
                shape,
                // With `#[frpc(protobuf)]`, frpc writes the protobuf bytes itself when every
                // field's prost attribute says how (`protobuf_encoder`); prost otherwise.
                proto: protobuf.then(|| prost_attr::proto_field(&f.attrs)).flatten(),
            })
        })
        .collect();
    let msg = model::Message {
        proto_name,
        rust_path: input.ident.to_string(),
        fields,
        oneofs: Vec::new(),
    };
    let protobuf = match protobuf {
        true => Protobuf::UserProst,
        false => Protobuf::No,
    };
    errors.finish(message_impl(&msg, protobuf))
}

/// A unit-only enum → `impl EnumIndex` (declaration indices) and the `i32` conversions prost
/// enums have, which `::frpc::codegen::EnumType` uses.
fn enumeration(input: &DeriveInput, proto_name: String, data: &DataEnum) -> syn::Result<TokenStream> {
    if data.variants.is_empty() {
        return Err(syn::Error::new(
            input.ident.span(),
            "`#[derive(frpc::Message)]` needs at least one variant: a proto enum's first value is \
             its default",
        ));
    }
    let mut errors = Errors::default();
    let mut values = Vec::new();
    let mut next = 0i64;
    for variant in &data.variants {
        errors.ok(attr::no_frpc_attrs(&variant.attrs, "enum variants"));
        if !matches!(variant.fields, Fields::Unit) {
            errors.push(syn::Error::new_spanned(
                &variant.fields,
                format!(
                    "`#[derive(frpc::Message)]` enums are proto enums: variant `{}` cannot carry \
                     data (use a message with optional fields instead)",
                    variant.ident
                ),
            ));
        }
        if let Some((_, expr)) = &variant.discriminant {
            match discriminant(expr) {
                Some(n) => next = n,
                None => errors.push(syn::Error::new_spanned(
                    expr,
                    "the discriminant (the proto number) must be an integer literal",
                )),
            }
        }
        match i32::try_from(next) {
            Ok(n) => values.push(n),
            Err(_) => errors.push(syn::Error::new(
                variant.span(),
                "a proto enum number must fit in an `i32`",
            )),
        }
        next += 1;
    }
    let ty = &input.ident;
    let index = enum_impl(&model::Enum {
        proto_name,
        rust_path: ty.to_string(),
        values: values.clone(),
    });
    let variants: Vec<_> = data.variants.iter().map(|v| &v.ident).collect();
    let numbers: Vec<_> = values.iter().map(|&n| Literal::i32_unsuffixed(n)).collect();
    errors.finish(quote! {
        #index

        impl ::core::convert::From<#ty> for i32 {
            fn from(value: #ty) -> i32 {
                match value {
                    #( #ty::#variants => #numbers, )*
                }
            }
        }

        impl ::core::convert::TryFrom<i32> for #ty {
            type Error = ::frpc::codegen::prost::UnknownEnumValue;
            fn try_from(
                number: i32,
            ) -> ::core::result::Result<Self, ::frpc::codegen::prost::UnknownEnumValue> {
                match number {
                    #( #numbers => ::core::result::Result::Ok(#ty::#variants), )*
                    _ => ::core::result::Result::Err(::frpc::codegen::prost::UnknownEnumValue(number)),
                }
            }
        }
    })
}

/// An integer literal discriminant, possibly negative.
fn discriminant(expr: &Expr) -> Option<i64> {
    match expr {
        Expr::Lit(ExprLit { lit: Lit::Int(n), .. }) => n.base10_parse().ok(),
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_),
            expr,
            ..
        }) => discriminant(expr).map(|n| -n),
        Expr::Group(g) => discriminant(&g.expr),
        Expr::Paren(p) => discriminant(&p.expr),
        _ => None,
    }
}

/// An identifier without its `r#`.
fn unraw(ident: &syn::Ident) -> String {
    let s = ident.to_string();
    s.strip_prefix("r#").map_or(s.clone(), str::to_string)
}
