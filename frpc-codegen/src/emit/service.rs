//! Per service: the async trait, `FooServer<T>` (routes operations to the trait), `FooClient`
//! and a `foo` module of operation-number constants.

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};

use super::{Attributes, docs, ident, path};
use crate::model::{Method, MethodKind, Service};
use crate::naming::{sanitize_identifier, to_const, to_snake};

/// Extra attributes for the items of one service (`server_attribute` / `client_attribute`).
#[derive(Debug, Clone, Default)]
pub struct ServiceAttributes {
    /// On `FooServer`; their `#[cfg]`s also on the service trait and the server's impls.
    pub server: Vec<Attributes>,
    /// On `FooClient`; their `#[cfg]`s also on its impl.
    pub client: Vec<Attributes>,
    /// Whether the package module defines `FILE_DESCRIPTOR_SET`: the server then returns it
    /// from `Service::file_descriptor_set` (for reflection).
    pub descriptors: bool,
    /// Whether every trait method has a default body answering `UNIMPLEMENTED` (tonic-build's
    /// `generate_default_stubs`): an implementation then compiles with only some methods.
    pub default_stubs: bool,
    /// The visibility of the trait, the server, the client and the operation-number module
    /// (`None`: `pub`). Any other (a Rust-first trait's own `pub(crate)`, or none) also allows
    /// `dead_code` on them: a private service may well use only its server or its client.
    pub visibility: Option<TokenStream>,
}

/// The generated items' visibility, and the `#[allow(dead_code)]` a restricted one brings.
fn visibility(attributes: &ServiceAttributes) -> (TokenStream, TokenStream) {
    match &attributes.visibility {
        Some(vis) if vis.to_string() != "pub" => (vis.clone(), quote!(#[allow(dead_code)])),
        _ => (quote!(pub), TokenStream::new()),
    }
}

/// The attributes and visibility of the server's or the client's items.
struct TypeAttributes {
    /// On the struct: the configured attributes, and `allow(dead_code)` for a restricted one.
    on_struct: TokenStream,
    /// On the trait and every impl: the configured `#[cfg]`s (they gate the whole side), and
    /// `allow(dead_code)` for a restricted one (its inherent methods may go unused).
    on_impls: TokenStream,
    vis: TokenStream,
}

fn type_attributes(configured: &[Attributes], service: &ServiceAttributes) -> TypeAttributes {
    let (vis, allow) = visibility(service);
    let attrs = configured.iter().map(Attributes::tokens);
    let cfgs = configured.iter().map(Attributes::cfg);
    TypeAttributes {
        on_struct: quote!(#(#attrs)* #allow),
        on_impls: quote!(#(#cfgs)* #allow),
        vis,
    }
}

/// Everything generated for one service.
pub fn service(s: &Service, server: bool, client: bool) -> TokenStream {
    service_tokens(s, server, client, false, &ServiceAttributes::default())
}

/// Like [`service`], with extra attributes on the server and client.
pub fn service_with_attributes(
    s: &Service,
    server: bool,
    client: bool,
    attributes: &ServiceAttributes,
) -> TokenStream {
    service_tokens(s, server, client, false, attributes)
}

/// Like [`service`], but trait methods are called through their trait
/// (`::core::clone::Clone::clone(&arc)` rather than `Arc::clone(&arc)`), so the code also compiles
/// in a `#![no_implicit_prelude]` module, and the items have the visibility `vis` (see
/// [`ServiceAttributes::visibility`]). For `frpc-macros`, whose output lands in user modules.
pub fn service_prelude_free(s: &Service, server: bool, client: bool, vis: TokenStream) -> TokenStream {
    let attributes = ServiceAttributes {
        visibility: Some(vis),
        ..ServiceAttributes::default()
    };
    service_tokens(s, server, client, true, &attributes)
}

/// The names [`service`] gives the items it puts in the package module, each with what it is
/// (`("StoreSvcClient", "the client")`): for name-collision checks.
pub fn generated_names(s: &Service, server: bool, client: bool) -> Vec<(String, &'static str)> {
    let mut names = Vec::new();
    if server {
        names.push((s.rust_name.clone(), "the trait"));
        names.push((server_name(s).to_string(), "the server"));
    }
    if client {
        names.push((client_name(s).to_string(), "the client"));
    }
    names.push((ops_module(s).to_string(), "the operation-number module"));
    names
}

fn server_name(s: &Service) -> proc_macro2::Ident {
    format_ident!("{}Server", type_prefix(s))
}

fn client_name(s: &Service) -> proc_macro2::Ident {
    format_ident!("{}Client", type_prefix(s))
}

/// What `Server` and `Client` follow: the trait's name, less the `_` that keeps a keyword
/// (`service Self` → trait `Self_`) from being one, since `SelfServer` is no keyword and
/// `Self_Server` would trip `non_camel_case_types` in the user's crate.
fn type_prefix(s: &Service) -> String {
    let name = s.rust_name.trim_start_matches("r#");
    match name.strip_suffix('_') {
        Some(keyword) if sanitize_identifier(keyword) == name => keyword.to_string(),
        _ => name.to_string(),
    }
}

/// The name of `m`'s operation-number constant: its name in `SHOUTY_SNAKE`, with `_` after
/// it where that is `SERVICE_NAME`, the module's constant of the service's full name (as a
/// client method named like the client's own gets a `_`): `rpc ServiceName` → `SERVICE_NAME_`.
pub fn op_const_name(m: &Method) -> String {
    match to_const(&m.proto_name) {
        name if name == "SERVICE_NAME" => format!("{name}_"),
        name => name,
    }
}

fn ops_module(s: &Service) -> proc_macro2::Ident {
    ident(&to_snake(&s.proto_name))
}

fn service_tokens(
    s: &Service,
    server: bool,
    client: bool,
    prelude_free: bool,
    attributes: &ServiceAttributes,
) -> TokenStream {
    let ops = op_consts(s, attributes);
    let server = if server {
        server_tokens(s, prelude_free, attributes)
    } else {
        TokenStream::new()
    };
    let client = if client {
        client_tokens(s, attributes)
    } else {
        TokenStream::new()
    };
    quote! { #server #client #ops }
}

fn op_lit(m: &Method) -> Literal {
    Literal::u16_unsuffixed(m.op)
}

fn kind_str(kind: MethodKind) -> &'static str {
    match kind {
        MethodKind::Unary => "unary",
        MethodKind::ServerStreaming => "server streaming",
        MethodKind::ClientStreaming => "client streaming",
        MethodKind::Bidi => "bidirectional streaming",
    }
}

/// Doc lines from the proto comments, or a generated line when there are none.
fn doc_or(comments: &[String], fallback: String) -> TokenStream {
    if comments.is_empty() {
        docs(&[fallback])
    } else {
        docs(comments)
    }
}

fn op_consts(s: &Service, attributes: &ServiceAttributes) -> TokenStream {
    let (vis, allow) = visibility(attributes);
    let module = ops_module(s);
    // `package shop; service Shop` puts `mod shop` in the package's module `shop`.
    let package_last = s.full_name.rsplit('.').nth(1);
    let inception = if package_last.is_some_and(|p| module == to_snake(p)) {
        quote!(#[allow(clippy::module_inception)])
    } else {
        TokenStream::new()
    };
    let doc = format!(" Operation numbers of `{}`.", s.full_name);
    let consts = s.methods.iter().map(|m| {
        let name = ident(&op_const_name(m));
        let op = op_lit(m);
        let doc = format!(" `{}` ({}).", m.proto_name, kind_str(m.kind));
        quote! { #[doc = #doc] pub const #name: u16 = #op; }
    });
    // The full name, for health reporting and routing by name; always there, as the docs
    // promise (an `rpc ServiceName`'s constant is `SERVICE_NAME_`).
    let full_name = &s.full_name;
    let name_doc = format!(" The service's full name, `{full_name}` (what health checks ask for).");
    let name = quote! { #[doc = #name_doc] pub const SERVICE_NAME: &str = #full_name; };
    quote! {
        #[doc = #doc]
        #inception
        #allow
        #vis mod #module {
            #name
            #(#consts)*
        }
    }
}

fn server_tokens(s: &Service, prelude_free: bool, service_attributes: &ServiceAttributes) -> TokenStream {
    let has_descriptors = service_attributes.descriptors;
    let TypeAttributes {
        on_struct,
        on_impls: cfg,
        vis,
    } = type_attributes(&service_attributes.server, service_attributes);
    let arc_clone = if prelude_free {
        quote!(::core::clone::Clone::clone)
    } else {
        quote!(::std::sync::Arc::clone)
    };
    let trait_name = ident(&s.rust_name);
    let server_name = server_name(s);
    let full_name = &s.full_name;
    let trait_doc = doc_or(&s.comments, format!(" The `{full_name}` service."));
    let trait_methods = s
        .methods
        .iter()
        .map(|m| trait_method(s, m, service_attributes.default_stubs));
    let server_doc = format!(" Serves a [`{trait_name}`] implementation: add it to a `frpc::Server`.");
    let descs = s.methods.iter().map(|m| {
        let name = &m.proto_name;
        let op = op_lit(m);
        let kind = format_ident!(
            "{}",
            match m.kind {
                MethodKind::Unary => "Unary",
                MethodKind::ServerStreaming => "ServerStreaming",
                MethodKind::ClientStreaming => "ClientStreaming",
                MethodKind::Bidi => "Bidi",
            }
        );
        quote! {
            ::frpc::codegen::MethodDesc { name: #name, op: #op, kind: ::frpc::codegen::MethodKind::#kind }
        }
    });
    // `call_unary` and `call_unary_in` (what the server calls: the call's future in the
    // connection's slot, the reply's large `bytes` fields in their own buffers) dispatch alike:
    // `run` is called with the context, the request, then `extra` and the method's closure.
    // Every handler is called through the trait (`Trait::method(&*svc, ..)`): `svc.method(..)`
    // would call `Arc`'s own method of that name, if it has one (`rpc Clone`).
    let unary_arms = |run: TokenStream, extra: TokenStream| -> Vec<TokenStream> {
        s.methods
            .iter()
            .filter(|m| m.kind == MethodKind::Unary)
            .map(|m| {
                let op = op_lit(m);
                let f = ident(&m.rust_name);
                let input = message_path(&m.input);
                quote! {
                    #op => #run(ctx, request, #extra move |ctx, req: #input| async move {
                        #trait_name::#f(&*svc, &ctx, req).await
                    }),
                }
            })
            .collect()
    };
    let unary = unary_arms(quote!(::frpc::codegen::unary), TokenStream::new());
    let unary_in = unary_arms(quote!(::frpc::codegen::unary_in), quote!(slot,));
    let streaming: Vec<TokenStream> = s
        .methods
        .iter()
        .filter(|m| m.kind != MethodKind::Unary)
        .map(|m| {
            let op = op_lit(m);
            let f = ident(&m.rust_name);
            let input = message_path(&m.input);
            match m.kind {
                MethodKind::ServerStreaming => quote! {
                    #op => ::frpc::codegen::server_streaming(ctx, stream, move |ctx, req: #input, out| async move {
                        #trait_name::#f(&*svc, &ctx, req, out).await
                    }),
                },
                MethodKind::ClientStreaming => quote! {
                    #op => ::frpc::codegen::client_streaming(
                        ctx, stream, move |ctx, inbound: ::frpc::Streaming<#input>| async move {
                            #trait_name::#f(&*svc, &ctx, inbound).await
                        }
                    ),
                },
                _ => quote! {
                    #op => ::frpc::codegen::bidi(
                        ctx, stream, move |ctx, inbound: ::frpc::Streaming<#input>, out| async move {
                            #trait_name::#f(&*svc, &ctx, inbound, out).await
                        }
                    ),
                },
            }
        })
        .collect();
    let call_unary = if unary.is_empty() {
        quote! { ::core::mem::drop((ctx, request)); ::frpc::codegen::unimplemented_unary(op) }
    } else {
        quote! {
            let svc = #arc_clone(&self.inner);
            match op {
                #(#unary)*
                _ => ::frpc::codegen::unimplemented_unary(op),
            }
        }
    };
    let call_unary_in = match unary_in.is_empty() {
        true => TokenStream::new(),
        false => quote! {
            fn call_unary_in(
                &self,
                op: u16,
                ctx: ::frpc::Context,
                request: ::frpc::codegen::Bytes,
                slot: &mut ::frpc::codegen::UnarySlot,
            ) {
                let svc = #arc_clone(&self.inner);
                match op {
                    #(#unary_in)*
                    _ => ::frpc::codegen::unimplemented_unary_in(op, slot),
                }
            }
        },
    };
    let call_streaming = if streaming.is_empty() {
        quote! { ::core::mem::drop((ctx, stream)); ::frpc::codegen::unimplemented_streaming(op) }
    } else {
        quote! {
            let svc = #arc_clone(&self.inner);
            match op {
                #(#streaming)*
                _ => ::frpc::codegen::unimplemented_streaming(op),
            }
        }
    };
    let server_debug = server_name.to_string();
    // Protobuf-capable when every request and response type is (a Rust-first or extern type may
    // read only polyglot): the server then accepts the protobuf extension.
    let mut types: Vec<&str> = s
        .methods
        .iter()
        .flat_map(|m| [m.input.as_str(), m.output.as_str()])
        .collect();
    types.sort_unstable();
    types.dedup();
    let protobuf = types
        .into_iter()
        .map(|ty| {
            let ty = message_path(ty);
            quote!(<#ty as ::frpc::codegen::Message>::PROTOBUF)
        })
        .reduce(|all, next| quote!(#all && #next))
        .unwrap_or_else(|| quote!(true));
    let descriptors = if has_descriptors {
        quote! {
            fn file_descriptor_set(&self) -> &'static [u8] {
                FILE_DESCRIPTOR_SET
            }
        }
    } else {
        TokenStream::new()
    };
    quote! {
        #trait_doc
        #cfg
        #vis trait #trait_name: ::core::marker::Send + ::core::marker::Sync + 'static {
            #(#trait_methods)*
        }

        #[doc = #server_doc]
        #on_struct
        #vis struct #server_name<T> {
            inner: ::std::sync::Arc<T>,
        }

        #cfg
        impl<T> #server_name<T> {
            /// Wraps a service implementation.
            pub fn new(inner: T) -> Self {
                Self::from_arc(::std::sync::Arc::new(inner))
            }
            /// Wraps a shared service implementation.
            pub fn from_arc(inner: ::std::sync::Arc<T>) -> Self {
                Self { inner }
            }
        }

        #cfg
        impl<T: #trait_name> #server_name<T> {
            /// Checks every call to this service with `check` before its handler, like
            /// tonic's `with_interceptor`: `Err(status)` answers the call with that status,
            /// `Ok(())` lets it through. Other services and health checks are not checked.
            /// See `frpc::LayeredService`.
            pub fn with_interceptor<F>(self, check: F) -> ::frpc::LayeredService
            where
                F: ::core::ops::FnMut(&::frpc::CallRequest) -> ::core::result::Result<(), ::frpc::Status>
                    + ::core::marker::Send
                    + ::core::marker::Sync
                    + 'static,
            {
                ::frpc::LayeredService::new(self).with_interceptor(check)
            }
            /// Wraps every call to this service in `layer`, a `tower::Layer` over
            /// `frpc::CallRequest`s (as `frpc::Builder::layer`, for this service only). See
            /// `frpc::LayeredService`.
            pub fn layer<L: ::frpc::middleware::CallLayer>(self, layer: L) -> ::frpc::LayeredService {
                ::frpc::LayeredService::new(self).layer(layer)
            }
        }

        #cfg
        impl<T> ::core::clone::Clone for #server_name<T> {
            fn clone(&self) -> Self {
                Self { inner: #arc_clone(&self.inner) }
            }
        }

        #cfg
        impl<T> ::core::fmt::Debug for #server_name<T> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(#server_debug)
            }
        }

        #cfg
        impl<T> ::frpc::NamedService for #server_name<T> {
            const NAME: &'static str = #full_name;
        }

        #cfg
        impl<T: #trait_name> ::frpc::codegen::Service for #server_name<T> {
            fn name(&self) -> &'static str {
                #full_name
            }
            fn methods(&self) -> &'static [::frpc::codegen::MethodDesc] {
                &[#(#descs),*]
            }
            fn call_unary(
                &self,
                op: u16,
                ctx: ::frpc::Context,
                request: ::frpc::codegen::Bytes,
            ) -> ::frpc::codegen::BoxFuture<::core::result::Result<::frpc::codegen::Bytes, ::frpc::Status>> {
                #call_unary
            }
            #call_unary_in
            fn call_streaming(
                &self,
                op: u16,
                ctx: ::frpc::Context,
                stream: ::frpc::codegen::ServerStream,
            ) -> ::frpc::codegen::BoxFuture<::core::result::Result<(), ::frpc::Status>> {
                #call_streaming
            }
            fn protobuf(&self) -> bool {
                #protobuf
            }
            #descriptors
        }
    }
}

fn trait_method(s: &Service, m: &Method, default_stub: bool) -> TokenStream {
    let mut doc = doc_or(
        &m.comments,
        format!(" `{}` ({}).", m.proto_name, kind_str(m.kind)),
    );
    let f = ident(&m.rust_name);
    let input = message_path(&m.input);
    let output = message_path(&m.output);
    let (args, names, ok) = match m.kind {
        MethodKind::Unary => (quote!(request: #input), quote!(request), quote!(#output)),
        MethodKind::ServerStreaming => (
            quote!(request: #input, outbound: ::frpc::StreamSender<#output>),
            quote!(request, outbound),
            quote!(()),
        ),
        MethodKind::ClientStreaming => (
            quote!(inbound: ::frpc::Streaming<#input>),
            quote!(inbound),
            quote!(#output),
        ),
        MethodKind::Bidi => (
            quote!(inbound: ::frpc::Streaming<#input>, outbound: ::frpc::StreamSender<#output>),
            quote!(inbound, outbound),
            quote!(()),
        ),
    };
    let allow = self_convention(&m.rust_name);
    let signature = quote! {
        fn #f(&self, ctx: &::frpc::Context, #args)
            -> impl ::core::future::Future<Output = ::core::result::Result<#ok, ::frpc::Status>>
                + ::core::marker::Send
    };
    if !default_stub {
        return quote! { #doc #allow #signature; };
    }
    let text = format!("`{}/{}` is not implemented", s.full_name, m.proto_name);
    doc.extend(docs(&[
        String::new(),
        " Answers `UNIMPLEMENTED` unless implemented (`generate_default_stubs`).".to_string(),
    ]));
    quote! {
        #doc
        #allow
        #signature {
            let _unused = (ctx, #names);
            async { ::core::result::Result::Err(::frpc::Status::unimplemented(#text)) }
        }
    }
}

/// `#[allow(clippy::wrong_self_convention)]` for a method named `name` that takes `&self` where
/// clippy expects no `self` (`new`, `from_*`) or `self` (`into_*`): the name is the proto's
/// (`rpc FromCache`), so the user's clippy is not to flag it. Nothing for other names.
fn self_convention(name: &str) -> TokenStream {
    let name = name.strip_prefix("r#").unwrap_or(name);
    match name == "new" || name.starts_with("from_") || name.starts_with("into_") {
        true => quote!(#[allow(clippy::wrong_self_convention)]),
        false => TokenStream::new(),
    }
}

/// The client's own methods, which a method of the service cannot be named.
const CLIENT_OWN: &[&str] = &[
    "connect",
    "new",
    // `Clone::clone`, which method calls would no longer find.
    "clone",
    "client",
    "with_timeout",
    "with_metadata",
    "with_response_metadata",
];

/// The name of `m`'s method on the client: its Rust name, or, where the client has a method of
/// that name (`rpc Connect`, `rpc New`), the name with `_` after it (`connect_`), as prost
/// names a field `self` `self_`. A raw name (a Rust-first `r#connect`) is the same identifier
/// as the plain one, so it is compared and renamed without its `r#`.
pub fn client_method_name(m: &Method) -> String {
    let name = m.rust_name.strip_prefix("r#").unwrap_or(&m.rust_name);
    match CLIENT_OWN.contains(&name) {
        true => format!("{name}_"),
        false => m.rust_name.clone(),
    }
}

fn client_tokens(s: &Service, service_attributes: &ServiceAttributes) -> TokenStream {
    let TypeAttributes {
        on_struct,
        on_impls: cfg,
        vis,
    } = type_attributes(&service_attributes.client, service_attributes);
    let client_name = client_name(s);
    let doc = format!(" A client for the `{}` service.", s.full_name);
    let full_name = &s.full_name;
    let methods = s.methods.iter().map(|m| {
        let name = &m.proto_name;
        let f = client_method_name(m);
        let mut doc = doc_or(
            &m.comments,
            format!(" Calls `{}` ({}).", m.proto_name, kind_str(m.kind)),
        );
        if f != m.rust_name {
            let own = m.rust_name.trim_start_matches("r#");
            let note = format!(" Named `{f}`: `{own}` is the client's own method.");
            doc.extend(docs(&[String::new(), note]));
        }
        if m.deprecated {
            doc.extend(quote!(#[deprecated]));
        }
        doc.extend(self_convention(&f));
        let f = ident(&f);
        let op = op_lit(m);
        let input = message_path(&m.input);
        let output = message_path(&m.output);
        // gRPC's path of the method, for clients that call gRPC servers.
        let grpc_path = format!("/{full_name}/{name}");
        match m.kind {
            MethodKind::Unary => {
                quote! {
                    #doc
                    pub async fn #f(&self, request: #input) -> ::core::result::Result<#output, ::frpc::Error> {
                        ::frpc::codegen::traced_unary(&self.client, (#full_name, #name), #op, #grpc_path, request).await
                    }
                }
            }
            MethodKind::ServerStreaming => quote! {
                #doc
                pub async fn #f(
                    &self,
                    request: #input,
                ) -> ::core::result::Result<::frpc::Streaming<#output>, ::frpc::Error> {
                    ::frpc::codegen::traced(#full_name, #name, #op, ::frpc::codegen::call_server_streaming_at(&self.client, #op, #grpc_path, &request)).await
                }
            },
            MethodKind::ClientStreaming => quote! {
                #doc
                pub async fn #f(
                    &self,
                ) -> ::core::result::Result<::frpc::ClientStreamingCall<#input, #output>, ::frpc::Error> {
                    ::frpc::codegen::traced(#full_name, #name, #op, ::frpc::codegen::call_client_streaming_at(&self.client, #op, #grpc_path)).await
                }
            },
            MethodKind::Bidi => quote! {
                #doc
                pub async fn #f(
                    &self,
                ) -> ::core::result::Result<::frpc::BidiCall<#input, #output>, ::frpc::Error> {
                    ::frpc::codegen::traced(#full_name, #name, #op, ::frpc::codegen::call_bidi_at(&self.client, #op, #grpc_path)).await
                }
            },
        }
    });
    quote! {
        #[doc = #doc]
        ///
        /// `T` is what calls go through: an `frpc::Client` (one connection, the default) or an
        /// `frpc::Channel` (reconnecting, balanced, with client layers).
        #[derive(Debug, Clone)]
        #on_struct
        #vis struct #client_name<T = ::frpc::Client> {
            client: T,
        }

        #cfg
        impl #client_name<::frpc::Client> {
            /// Connects to `addr` with the default client configuration.
            pub async fn connect(
                addr: impl ::frpc::codegen::ToSocketAddrs,
            ) -> ::core::result::Result<Self, ::frpc::Error> {
                ::frpc::Client::connect(addr).await.map(Self::new)
            }
        }

        #cfg
        impl<T: ::frpc::Caller> #client_name<T> {
            /// Calls through `client`: an `frpc::Client` (shared with other service clients) or
            /// an `frpc::Channel`.
            pub fn new(client: T) -> Self {
                Self { client }
            }
            /// The underlying connection or channel.
            pub fn client(&self) -> &T {
                &self.client
            }
            /// A client of the same connection whose calls have `timeout` as their deadline:
            /// a unary call's whole exchange, a stream's whole life (the server sees it as
            /// `ctx.deadline()`); see `frpc::Client::with_timeout`.
            pub fn with_timeout(&self, timeout: ::core::time::Duration) -> Self {
                Self::new(::frpc::Caller::with_timeout(&self.client, timeout))
            }
            /// A client of the same connection whose calls carry `metadata` (for one call:
            /// `client.with_metadata(md).method(request)`); see `frpc::Client::with_metadata`.
            pub fn with_metadata(&self, metadata: ::frpc::Metadata) -> Self {
                Self::new(::frpc::Caller::with_metadata(&self.client, metadata))
            }
            /// A client of the same connection that leaves the response metadata of each
            /// unary call in `slot`; see `frpc::Client::with_response_metadata`.
            pub fn with_response_metadata(&self, slot: &::frpc::MetadataSlot) -> Self {
                Self::new(::frpc::Caller::with_response_metadata(&self.client, slot))
            }
            #(#methods)*
        }
    }
}

/// A request or response type's path where the server's and client's impls use it: a message
/// named `T` (or `T<..>`) would be their type parameter there, so it is named `self::T`, the
/// module's item (a proto `message T`, or a Rust-first `struct T`).
fn message_path(ty: &str) -> TokenStream {
    match ty == "T" || ty.starts_with("T<") {
        true => path(&format!("self::{ty}")),
        false => path(ty),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `CLIENT_OWN` names every method the generated client has of its own (the inherent
    /// ones, plus `clone` from its derive): a method added to the client without it would
    /// collide with an rpc of that name again.
    #[test]
    fn client_own_lists_every_method_of_the_client() {
        let service = Service {
            proto_name: "Svc".into(),
            full_name: "pkg.Svc".into(),
            rust_name: "Svc".into(),
            comments: Vec::new(),
            methods: Vec::new(),
        };
        let file: syn::File = syn::parse2(client_tokens(&service, &ServiceAttributes::default())).unwrap();
        let mut own: Vec<String> = file
            .items
            .iter()
            .filter_map(|item| match item {
                syn::Item::Impl(block) => Some(block),
                _ => None,
            })
            .flat_map(|block| &block.items)
            .filter_map(|item| match item {
                syn::ImplItem::Fn(f) => Some(f.sig.ident.to_string()),
                _ => None,
            })
            .chain(["clone".to_string()])
            .collect();
        own.sort();
        let mut listed: Vec<String> = CLIENT_OWN.iter().map(|name| name.to_string()).collect();
        listed.sort();
        assert_eq!(own, listed);
    }

    /// A raw name is the same identifier as the plain one: `r#connect` clashed with the
    /// client's `connect` (E0592) until it was renamed as `connect` is.
    #[test]
    fn raw_names_of_the_clients_own_methods_are_renamed_too() {
        let method = |rust_name: &str| Method {
            proto_name: "Connect".into(),
            rust_name: rust_name.into(),
            op: 10,
            kind: MethodKind::Unary,
            input: "In".into(),
            output: "Out".into(),
            comments: Vec::new(),
            deprecated: false,
        };
        assert_eq!(client_method_name(&method("connect")), "connect_");
        assert_eq!(client_method_name(&method("r#connect")), "connect_");
        assert_eq!(client_method_name(&method("r#new")), "new_");
        assert_eq!(client_method_name(&method("r#type")), "r#type");
    }
}
