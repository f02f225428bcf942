//! `#[frpc(...)]` helper attributes and doc comments.

use syn::spanned::Spanned;
use syn::{Attribute, Expr, ExprLit, Lit, LitStr, Meta};

/// How a field holds an enum.
pub(crate) enum Enumeration {
    /// `#[frpc(enumeration)]`: the field's type is the enum itself.
    Type,
    /// `#[frpc(enumeration = "Path")]`: an `i32` holding the proto number, as prost does.
    Number(Box<syn::Type>),
}

/// `#[frpc(...)]` on a field.
#[derive(Default)]
pub(crate) struct FieldAttrs {
    pub(crate) enumeration: Option<Enumeration>,
}

/// Parses the `#[frpc(...)]` attributes of a field: `enumeration` or `enumeration = "Path"`.
pub(crate) fn field_attrs(attrs: &[Attribute]) -> syn::Result<FieldAttrs> {
    let mut out = FieldAttrs::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("frpc")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("enumeration") {
                out.enumeration = Some(if meta.input.peek(syn::Token![=]) {
                    let path: LitStr = meta.value()?.parse()?;
                    Enumeration::Number(Box::new(path.parse()?))
                } else {
                    Enumeration::Type
                });
                Ok(())
            } else {
                Err(meta.error(
                    "unknown field attribute: expected `#[frpc(enumeration)]` or \
                     `#[frpc(enumeration = \"EnumType\")]`",
                ))
            }
        })?;
    }
    Ok(out)
}

/// `#[frpc(...)]` on a type.
#[derive(Default)]
pub(crate) struct TypeAttrs {
    /// `name = "pkg.Name"`: the proto name in error messages.
    pub(crate) name: Option<String>,
    /// `protobuf`: the type also implements `prost::Message`, its protobuf encoding (structs
    /// only). Keeps the span to point at when it means nothing (on an enum).
    pub(crate) protobuf: Option<proc_macro2::Span>,
}

/// Parses the `#[frpc(...)]` attributes of a type: `name = "pkg.Name"` and `protobuf`.
pub(crate) fn type_attrs(attrs: &[Attribute]) -> syn::Result<TypeAttrs> {
    let mut out = TypeAttrs::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("frpc")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("name") {
                out.name = Some(meta.value()?.parse::<LitStr>()?.value());
                Ok(())
            } else if meta.path.is_ident("protobuf") {
                if meta.input.peek(syn::Token![=]) || meta.input.peek(syn::token::Paren) {
                    return Err(meta.error("`protobuf` takes no value: write `#[frpc(protobuf)]`"));
                }
                out.protobuf = Some(meta.path.span());
                Ok(())
            } else {
                Err(meta.error(
                    "unknown attribute: expected `#[frpc(name = \"pkg.Name\")]` or \
                     `#[frpc(protobuf)]`",
                ))
            }
        })?;
    }
    Ok(out)
}

/// Rejects `#[frpc(...)]` where it means nothing (enum variants).
pub(crate) fn no_frpc_attrs(attrs: &[Attribute], what: &str) -> syn::Result<()> {
    match attrs.iter().find(|a| a.path().is_ident("frpc")) {
        Some(attr) => Err(syn::Error::new_spanned(
            attr,
            format!("`#[frpc(...)]` is not supported on {what}"),
        )),
        None => Ok(()),
    }
}

/// The doc comment lines of an item (`/// text` is `#[doc = " text"]`), as proto comments.
/// Any other attribute is an error naming `what`.
pub(crate) fn docs_only(attrs: &[Attribute], what: &str) -> syn::Result<Vec<String>> {
    let (lines, deprecated) = docs_and_deprecated(attrs, what)?;
    match deprecated {
        Some(attr) => Err(unsupported(attr, what)),
        None => Ok(lines),
    }
}

/// A method's doc comment lines, and whether it is `#[deprecated]` (in any of its forms; the
/// generated client method then is, as for an rpc with `option deprecated = true`). Any
/// other attribute is an error naming `what`.
pub(crate) fn method_attrs(attrs: &[Attribute], what: &str) -> syn::Result<(Vec<String>, bool)> {
    let (lines, deprecated) = docs_and_deprecated(attrs, what)?;
    Ok((lines, deprecated.is_some()))
}

/// The doc comment lines of an item, and its `#[deprecated]` attribute if it has one.
fn docs_and_deprecated<'a>(
    attrs: &'a [Attribute],
    what: &str,
) -> syn::Result<(Vec<String>, Option<&'a Attribute>)> {
    let mut lines = Vec::new();
    let mut deprecated = None;
    for attr in attrs {
        match &attr.meta {
            Meta::NameValue(nv) if nv.path.is_ident("doc") => match &nv.value {
                Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => {
                    let text = s.value();
                    match text.is_empty() {
                        true => lines.push(text),
                        false => lines.extend(text.lines().map(str::to_string)),
                    }
                }
                other => return Err(syn::Error::new_spanned(other, "expected a doc string")),
            },
            meta if meta.path().is_ident("deprecated") => deprecated = Some(attr),
            _ => return Err(unsupported(attr, what)),
        }
    }
    Ok((lines, deprecated))
}

fn unsupported(attr: &Attribute, what: &str) -> syn::Error {
    let allowed = match what {
        "methods" => "doc comments and `#[deprecated]`",
        _ => "doc comments",
    };
    syn::Error::new_spanned(
        attr,
        format!("`#[frpc::service]` supports only {allowed} on {what}"),
    )
}
