//! `#[service]`: a trait of `async fn`s → `model::Service`, then `frpc-codegen`'s service
//! emitter (the same trait, server, client and operation numbers a `.proto` would give).

use frpc_codegen::emit::service::service_prelude_free;
use frpc_codegen::model::{self, MethodKind};
use frpc_codegen::naming::{sanitize_identifier, to_upper_camel};
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::parse::ParseStream;
use syn::spanned::Spanned;
use syn::{
    FnArg, GenericArgument, LitInt, LitStr, PathArguments, ReturnType, Signature, TraitItem, TraitItemFn,
    Type,
};

use crate::attr::{docs_only, method_attrs};
use crate::error::Errors;
use crate::types::type_string;

/// `#[frpc::service(package = "pkg", first_op = 10)]`.
pub(crate) struct Args {
    package: Option<String>,
    first_op: u16,
}

impl Args {
    /// Parses the attribute's arguments.
    pub(crate) fn parse(input: ParseStream<'_>) -> syn::Result<Args> {
        let mut args = Args {
            package: None,
            first_op: model::FIRST_OP,
        };
        let parser = syn::meta::parser(|meta| {
            if meta.path.is_ident("package") {
                let lit = meta.value()?.parse::<LitStr>()?;
                let package = lit.value();
                if !is_package_name(&package) {
                    return Err(syn::Error::new(
                        lit.span(),
                        "not a proto package name: identifiers (a letter or `_`, then letters, \
                         digits or `_`) joined by dots, as `my.pkg.v1`",
                    ));
                }
                args.package = Some(package);
                Ok(())
            } else if meta.path.is_ident("first_op") {
                let lit: LitInt = meta.value()?.parse()?;
                let op: u16 = lit.base10_parse()?;
                if op < model::FIRST_OP {
                    return Err(syn::Error::new(
                        lit.span(),
                        "operation numbers below 10 belong to Frisbee",
                    ));
                }
                args.first_op = op;
                Ok(())
            } else {
                Err(meta.error(
                    "unknown argument: expected `package = \"pkg\"` or `first_op = N` (the number of \
                     the first method, 10 unless earlier services of the same .proto file took some)",
                ))
            }
        });
        syn::parse::Parser::parse2(parser, input.parse()?)?;
        Ok(args)
    }
}

/// Whether `name` is a proto package name (empty: none).
fn is_package_name(name: &str) -> bool {
    let identifier = |part: &str| {
        let mut chars = part.chars();
        chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    name.is_empty() || name.split('.').all(identifier)
}

/// Expands `#[service]` on a trait.
pub(crate) fn expand(args: &Args, item: &syn::ItemTrait) -> syn::Result<TokenStream> {
    let mut errors = Errors::default();
    let comments = errors.ok(docs_only(&item.attrs, "the trait")).unwrap_or_default();
    if let Some(unsafety) = item.unsafety {
        errors.push(syn::Error::new(
            unsafety.span,
            "a service trait cannot be `unsafe`",
        ));
    }
    if let Some(auto) = item.auto_token {
        errors.push(syn::Error::new(auto.span, "a service trait cannot be `auto`"));
    }
    if !item.generics.params.is_empty() || item.generics.where_clause.is_some() {
        errors.push(syn::Error::new_spanned(
            &item.generics,
            "a service trait cannot be generic: the methods' request and response types are fixed",
        ));
    }
    if let Some(colon) = item.colon_token {
        let supertraits = &item.supertraits;
        errors.push(syn::Error::new_spanned(
            quote!(#colon #supertraits),
            "a service trait cannot declare supertraits (it is always `Send + Sync + 'static`)",
        ));
    }
    let mut methods: Vec<model::Method> = Vec::new();
    let mut checks = Vec::new();
    for it in &item.items {
        match it {
            TraitItem::Fn(f) => {
                let Some((m, check)) = errors.ok(method(f)) else {
                    continue;
                };
                // `echo_stream` and `EchoStream` would be one RPC, one constant.
                if let Some(first) = methods.iter().find(|other| other.proto_name == m.proto_name) {
                    errors.push(syn::Error::new_spanned(
                        &f.sig.ident,
                        format!(
                            "method `{}` collides with method `{}`: both are the RPC `{}`",
                            m.rust_name, first.rust_name, m.proto_name
                        ),
                    ));
                    continue;
                }
                methods.push(m);
                checks.push(check);
            }
            other => errors.push(syn::Error::new_spanned(
                other,
                "a service trait can only contain `async fn` methods",
            )),
        }
    }
    for (i, m) in methods.iter_mut().enumerate() {
        match u16::try_from(i).ok().and_then(|i| args.first_op.checked_add(i)) {
            Some(op) => m.op = op,
            None => errors.push(syn::Error::new(
                Span::call_site(),
                "too many methods: operation numbers end at 65535",
            )),
        }
    }
    let name = item.ident.to_string();
    let proto_name = unsanitized(name.strip_prefix("r#").unwrap_or(&name).to_string());
    let full_name = match &args.package {
        Some(package) if !package.is_empty() => format!("{package}.{proto_name}"),
        _ => proto_name.clone(),
    };
    let svc = model::Service {
        proto_name,
        full_name,
        rust_name: name,
        comments,
        methods,
    };
    // The trait's own visibility, for the trait, its server, client and operation numbers.
    let vis = &item.vis;
    let tokens = service_prelude_free(&svc, true, true, quote!(#vis));
    // Only compiles against the frpc series this frpc-macros was built for.
    let version = frpc_codegen::emit::version_check();
    errors.finish(quote! {
        #version
        #tokens
        const _: () = { #(#checks)* };
    })
}

const SHAPES: &str = "expected one of\n  \
    async fn m(&self, ctx: &frpc::Context, request: In) -> Result<Out, frpc::Status>\n  \
    async fn m(&self, ctx: &frpc::Context, request: In, outbound: frpc::StreamSender<Out>) -> Result<(), frpc::Status>\n  \
    async fn m(&self, ctx: &frpc::Context, inbound: frpc::Streaming<In>) -> Result<Out, frpc::Status>\n  \
    async fn m(&self, ctx: &frpc::Context, inbound: frpc::Streaming<In>, outbound: frpc::StreamSender<Out>) -> Result<(), frpc::Status>";

/// One trait method → a model method (its `op` is set by the caller).
fn method(f: &TraitItemFn) -> syn::Result<(model::Method, TokenStream)> {
    let sig = &f.sig;
    let mut errors = Errors::default();
    let (comments, deprecated) = errors.ok(method_attrs(&f.attrs, "methods")).unwrap_or_default();
    if sig.asyncness.is_none() {
        errors.push(syn::Error::new(
            sig.fn_token.span,
            format!("`#[frpc::service]` methods must be `async fn`: {SHAPES}"),
        ));
    }
    if let Some(t) = &sig.constness {
        errors.push(syn::Error::new(t.span, "a service method cannot be `const`"));
    }
    if let Some(t) = &sig.unsafety {
        errors.push(syn::Error::new(t.span, "a service method cannot be `unsafe`"));
    }
    if let Some(abi) = &sig.abi {
        errors.push(syn::Error::new(abi.span(), "a service method cannot have an ABI"));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.push(syn::Error::new_spanned(
            &sig.generics,
            "a service method cannot be generic: an RPC has one request type and one response type",
        ));
    }
    if let Some(body) = &f.default {
        errors.push(syn::Error::new(
            body.span(),
            "a service method cannot have a default body: implement it in the `impl` block",
        ));
    }
    let parts = errors.ok(signature(sig));
    errors.finish(())?;
    let (kind, input, output, checks) = parts.expect("a signature error is recorded in `errors`");
    let rust_name = sig.ident.to_string();
    let method = model::Method {
        proto_name: rpc_name(&rust_name),
        rust_name,
        op: 0,
        kind,
        input,
        output,
        comments,
        deprecated,
    };
    Ok((method, checks))
}

/// The RPC name of the Rust method `rust_name`: what a `.proto`'s `rpc` would be called for
/// `frpc-codegen` to give the method that name (`echo_stream` → `EchoStream`, `r#type` →
/// `Type`, `self_` → `Self`), so the two ways round agree on descriptors, metric labels and
/// gRPC paths. The operation numbers do not depend on it (declaration order).
fn rpc_name(rust_name: &str) -> String {
    unsanitized(to_upper_camel(rust_name.strip_prefix("r#").unwrap_or(rust_name)))
}

/// `name` without the `_` that [`sanitize_identifier`] puts after a keyword that cannot be a
/// raw identifier (`Self_` → `Self`): a proto name is no Rust identifier, and `frpc-codegen`
/// adds that `_` back (`service Self` → trait `Self_`, `rpc Self` → method `self_`).
fn unsanitized(name: String) -> String {
    match name.strip_suffix('_') {
        Some(keyword) if sanitize_identifier(keyword) == name => keyword.to_string(),
        _ => name,
    }
}

/// The kind, request type and response type of a signature.
///
/// Arguments and results are recognized by name (`Context`, `Streaming`, `StreamSender`,
/// `Result<_, Status>`), so the returned checks assert, at compile time, that the types the
/// user wrote are frpc's (which also keeps the user's imports of them in use).
fn signature(sig: &Signature) -> syn::Result<(MethodKind, String, String, TokenStream)> {
    let mut inputs = sig.inputs.iter();
    match inputs.next() {
        Some(FnArg::Receiver(r))
            if r.reference.is_some() && r.mutability.is_none() && r.colon_token.is_none() => {}
        Some(other) => {
            return Err(syn::Error::new_spanned(
                other,
                "a service method takes `&self` first (the service is shared between calls)",
            ));
        }
        None => {
            return Err(syn::Error::new(
                sig.paren_token.span.join(),
                format!("a service method takes `&self`, then the context: {SHAPES}"),
            ));
        }
    }
    let rest_args: Vec<&FnArg> = inputs.collect();
    let rest: Vec<&Type> = rest_args
        .iter()
        .map(|arg| match arg {
            FnArg::Typed(t) => &*t.ty,
            FnArg::Receiver(r) => &r.ty,
        })
        .collect();
    let is_ctx = |ty: &Type| matches!(ty, Type::Reference(r) if r.mutability.is_none() && last_ident(&r.elem).is_some_and(|(n, _)| n == "Context"));
    let Some((ctx, args)) = rest.split_first().filter(|(ctx, _)| is_ctx(ctx)) else {
        let msg = format!("the argument after `&self` must be the context, `ctx: &frpc::Context`: {SHAPES}");
        return Err(match rest_args.first() {
            Some(arg) => syn::Error::new_spanned(arg, msg),
            None => syn::Error::new(sig.paren_token.span.join(), msg),
        });
    };
    let wrong_args = || {
        let msg = format!("unsupported arguments after the context: {SHAPES}");
        match &rest_args[1..] {
            [] => syn::Error::new(sig.paren_token.span.join(), msg),
            args => syn::Error::new_spanned(quote!(#(#args),*), msg),
        }
    };
    let (kind, input, sent) = match args {
        [one] => match wrapped(one, "Streaming") {
            Some(input) => (MethodKind::ClientStreaming, input, None),
            None if wrapped(one, "StreamSender").is_none() => (MethodKind::Unary, *one, None),
            None => return Err(wrong_args()),
        },
        [first, second] => {
            let Some(out) = wrapped(second, "StreamSender") else {
                return Err(wrong_args());
            };
            match wrapped(first, "Streaming") {
                Some(input) => (MethodKind::Bidi, input, Some(out)),
                None if wrapped(first, "StreamSender").is_none() => {
                    (MethodKind::ServerStreaming, *first, Some(out))
                }
                None => return Err(wrong_args()),
            }
        }
        _ => return Err(wrong_args()),
    };
    let ok = ok_type(sig, sent.is_some())?;
    let output = match sent {
        Some(out) => out,
        None => ok,
    };
    let mut errors = Errors::default();
    errors.ok(message_type(input, "request"));
    errors.ok(message_type(output, "response"));
    errors.finish(())?;
    let mut checks = Vec::new();
    if let Type::Reference(r) = ctx {
        checks.push(same_type(&r.elem, |s| quote_spanned!(s=> ::frpc::Context)));
    }
    if matches!(kind, MethodKind::ClientStreaming | MethodKind::Bidi) {
        checks.push(same_type(
            args[0],
            |s| quote_spanned!(s=> ::frpc::Streaming<#input>),
        ));
    }
    if let Some(sender) = args.get(1) {
        checks.push(same_type(
            sender,
            |s| quote_spanned!(s=> ::frpc::StreamSender<#output>),
        ));
    }
    if let ReturnType::Type(_, ty) = &sig.output {
        checks.push(same_type(
            ty,
            |s| quote_spanned!(s=> ::core::result::Result<#ok, ::frpc::Status>),
        ));
    }
    Ok((kind, type_string(input), type_string(output), quote!(#(#checks)*)))
}

/// A compile-time assertion that the user's type `written` is `expected` (built with the
/// span of `written`, so a mismatch points at it).
fn same_type(written: &Type, expected: impl FnOnce(Span) -> TokenStream) -> TokenStream {
    let span = written.span();
    let expected = expected(span);
    quote_spanned! {span=>
        let _: ::core::marker::PhantomData<#written> = ::core::marker::PhantomData::<#expected>;
    }
}

/// The `T` of `Result<T, Status>`; for streaming responses it must be `()`.
fn ok_type(sig: &Signature, streams_out: bool) -> syn::Result<&Type> {
    let expected = if streams_out {
        "`Result<(), frpc::Status>` (responses go through `outbound`)"
    } else {
        "`Result<Out, frpc::Status>`"
    };
    let ReturnType::Type(_, ty) = &sig.output else {
        return Err(syn::Error::new(
            sig.paren_token.span.close(),
            format!("a service method must return {expected}"),
        ));
    };
    let ok = match last_ident(ty) {
        Some((name, args)) if name == "Result" && args.len() == 2 => {
            let is_status = last_ident(args[1]).is_some_and(|(n, _)| n == "Status");
            is_status.then_some(args[0])
        }
        _ => None,
    };
    match ok {
        Some(ok) if !streams_out => Ok(ok),
        Some(unit @ Type::Tuple(t)) if t.elems.is_empty() => Ok(unit),
        _ => Err(syn::Error::new_spanned(
            ty,
            format!("a service method must return {expected}"),
        )),
    }
}

/// Refuses, at the type, request and response types that are never messages: references,
/// slices, tuples, and the standard library's scalars and containers. Without this, rustc
/// reports each place the generated code needs a message (5-9 identical errors at the
/// attribute); other types that are not messages still get those, each saying what a
/// message is (`Message`'s `on_unimplemented`).
fn message_type(ty: &Type, role: &str) -> syn::Result<()> {
    let ty = match ty {
        Type::Group(g) => &*g.elem,
        Type::Paren(p) => &*p.elem,
        ty => ty,
    };
    let what = match ty {
        Type::Path(_) => match last_ident(ty) {
            Some((name, _)) if is_std_path(ty) && NOT_MESSAGES.contains(&name.as_str()) => {
                format!("`{name}`")
            }
            _ => return Ok(()),
        },
        Type::Tuple(t) if t.elems.is_empty() => return Ok(()), // `()` is the empty message
        Type::Reference(_) => {
            return Err(syn::Error::new_spanned(
                ty,
                format!("a {role} is a message passed by value: write the message type without `&`"),
            ));
        }
        Type::Tuple(_) => "a tuple".to_string(),
        Type::Slice(_) | Type::Array(_) => "a slice or array".to_string(),
        _ => "this type".to_string(),
    };
    Err(syn::Error::new_spanned(
        ty,
        format!(
            "{what} is not a message: a {role} is one message type, a struct with \
             `#[derive(frpc::Message)]` (put scalars and lists in its fields: \
             `struct Items {{ items: Vec<Item> }}`)"
        ),
    ))
}

/// Standard types that are never messages (by the last path segment).
const NOT_MESSAGES: &[&str] = &[
    "String", "str", "Vec", "VecDeque", "Option", "Box", "Arc", "Rc", "HashMap", "BTreeMap", "HashSet",
    "BTreeSet", "bool", "char", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64",
    "i128", "isize", "f32", "f64",
];

/// Whether a path names the standard library's item: a lone name (the prelude's), or one
/// under `std`, `core` or `alloc`. A user's `my::Vec` is left to the type checker.
fn is_std_path(ty: &Type) -> bool {
    let Type::Path(p) = ty else { return false };
    let segments = &p.path.segments;
    p.qself.is_none()
        && (segments.len() == 1 || matches!(segments[0].ident.to_string().as_str(), "std" | "core" | "alloc"))
}

/// The `T` of `Wrapper<T>` (by the last path segment: `frpc::Streaming<T>`, `Streaming<T>`).
fn wrapped<'a>(ty: &'a Type, wrapper: &str) -> Option<&'a Type> {
    match last_ident(ty) {
        Some((name, args)) if name == wrapper && args.len() == 1 => Some(args[0]),
        _ => None,
    }
}

/// The last segment of a path type and its generic type arguments.
fn last_ident(ty: &Type) -> Option<(String, Vec<&Type>)> {
    let ty = match ty {
        Type::Group(g) => &*g.elem,
        ty => ty,
    };
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last().filter(|_| p.qself.is_none())?;
    let args = match &last.arguments {
        PathArguments::AngleBracketed(a) => a
            .args
            .iter()
            .filter_map(|a| match a {
                GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    Some((last.ident.to_string(), args))
}
