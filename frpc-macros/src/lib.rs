//! Rust-first frpc: `#[derive(Message)]` and `#[service]`, re-exported by `frpc` (default
//! feature `macros`) as `frpc::Message` and `frpc::service`.
//!
//! Both build the same model `frpc-codegen` builds from a `.proto` file and run the same
//! emitter, so a Rust-first type or service is byte-for-byte what the equivalent proto would
//! generate, and talks to Go fRPC peers generated from that proto.
//!
//! This crate only parses Rust items into that model (`message.rs`, `service.rs`, with the
//! Rust type → codec mapping in `types.rs`); errors become `compile_error!` in one place
//! (`error.rs`).
#![deny(missing_docs)]

mod attr;
mod error;
mod message;
mod prost_attr;
mod service;
mod types;

use proc_macro::TokenStream;

/// Implements polyglot encoding for a struct (a proto message) or a unit-only enum (a proto
/// enum), with the rules `frpc-codegen` applies to `.proto` files.
///
/// **Structs** (named fields, or a unit struct for an empty message) get
/// `::frpc::codegen::Message`: the fRPC envelope `08 00`, then the fields in the three groups
/// of the wire spec (plain values; repeated; messages and maps), each in declaration order.
/// The struct must implement `Default` (derive it): the derive does not generate it.
///
/// | Field type | Proto |
/// |---|---|
/// | `bool`, `u32`, `u64`, `i32`, `i64`, `f32`, `f64`, `String` | the same scalar |
/// | `Vec<u8>`, `bytes::Bytes` | `bytes` |
/// | `#[frpc(enumeration)] E` (a derived enum) | an enum, by declaration index |
/// | `#[frpc(enumeration = "E")] i32` | an enum held as its number, as prost does |
/// | any other type `M` (including `()`) | a message, always present |
/// | `Option<M>`, `Option<Box<M>>` | a singular message: `00` when `None` |
/// | `Option<scalar>` | a proto3 `optional` scalar: `00` when `None` |
/// | `Vec<T>` | `repeated T` |
/// | `HashMap<K, V>`, `BTreeMap<K, V>` | `map<K, V>` (`K`: `bool`, integers or `String`) |
///
/// **Enums** with unit variants get `::frpc::codegen::EnumIndex` (variants travel as their
/// declaration index; explicit `= N` discriminants are the proto numbers, as in prost), plus
/// `From<E> for i32` and `TryFrom<i32> for E`. Derive `Clone, Copy, Default` too (put
/// `#[default]` on the first variant: proto's zero value).
///
/// `#[frpc(name = "pkg.Name")]` on the type sets the proto name used in error messages.
///
/// `#[frpc(protobuf)]` on a struct says it also implements `prost::Message` (and `Default`):
/// the derive then gives it the protobuf encoding frpc peers can negotiate (the `protobuf`
/// extension, `docs/extensions.md` §10), delegating to that prost impl as frpc-codegen's
/// generated messages do. Without it a derived message reads only polyglot, and a server with
/// a service using it never accepts protobuf. The prost impl (derived with `prost::Message` or
/// written by hand, see `frpc::health`) must match the polyglot fields; the derive does not
/// check it. `#[frpc(protobuf)]` on an enum is an error: an enum is a number inside a message.
///
/// ```
/// #[derive(frpc::Message, prost::Message, Clone, PartialEq)]
/// #[frpc(protobuf)]
/// struct Named {
///     #[prost(string, tag = "1")]
///     name: String,
/// }
///
/// use frpc::codegen::Message as _;
/// const { assert!(<Named as frpc::codegen::Message>::PROTOBUF) };
/// let named = Named { name: "hi".into() };
/// let mut buf = Vec::new();
/// named.encode_protobuf(&mut buf);
/// assert_eq!(buf, [0x0a, 0x02, b'h', b'i']);
/// ```
///
/// ```
/// use std::collections::HashMap;
///
/// #[derive(frpc::Message, Clone, Copy, Debug, Default, PartialEq)]
/// enum Corpus {
///     #[default]
///     Universal,
///     Web,
/// }
///
/// #[derive(frpc::Message, Clone, Debug, Default, PartialEq)]
/// struct Request {
///     message: String,
///     #[frpc(enumeration)]
///     corpus: Corpus,
///     tags: Vec<String>,
///     prices: HashMap<String, f64>,
/// }
///
/// use frpc::codegen::Message as _;
/// let request = Request { message: "hi".into(), corpus: Corpus::Web, ..Default::default() };
/// let bytes = request.to_polyglot();
/// assert_eq!(&bytes[..9], [0x08, 0x00, 0x05, 0x0a, 0x02, b'h', b'i', 0x0a, 0x01]);
/// assert_eq!(Request::from_polyglot(&bytes).unwrap(), request);
/// ```
#[proc_macro_derive(Message, attributes(frpc))]
pub fn derive_message(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    error::expand(message::derive(&input), proc_macro2::TokenStream::new())
}

/// Turns a trait of `async fn`s into an frpc service: the trait `frpc-codegen` emits for the
/// equivalent `.proto` service (methods returning `impl Future + Send`, implemented with
/// `async fn`), a `FooServer<T>`, a `FooClient` and a `foo` module of operation numbers.
///
/// Methods are numbered from 10 in declaration order (from `first_op` with
/// `#[frpc::service(first_op = 12)]`, for a second service of the same `.proto` file), so the
/// service is wire-compatible with Go fRPC generated from the same methods in the same order.
/// `#[frpc::service(package = "pkg")]` makes the service name `pkg.Foo` (default `Foo`); method
/// names are the `UpperCamel` form of the Rust names (`echo_stream` → `EchoStream`), without
/// a raw identifier's `r#` (`r#type` → `Type`) or the `_` that keeps a keyword from being one
/// (`fn self_` → `Self`, `trait Self_` → `Self`): the names of the `.proto` from which
/// frpc-codegen would generate those Rust names. A method named like one of the client's own
/// (`connect`, `new`, `clone`, `client`, `with_timeout`, `with_metadata`,
/// `with_response_metadata`; raw too, `r#connect`) has a `_` after its name on the client
/// (`connect_`), as frpc-codegen names it for a `.proto`.
///
/// The trait's visibility is that of everything generated: a private trait (over private
/// messages, in a binary, say) gets a private server, client and module, without
/// `private_interfaces` or `dead_code` warnings for the parts left unused. Doc comments on the
/// trait and its methods become the generated items' docs; a method may also carry
/// `#[deprecated]`, which makes its client method deprecated (as `option deprecated = true`
/// does for an rpc); serving it is not a warning.
///
/// Accepted signatures (`In` and `Out` implement `frpc::codegen::Message`):
///
/// ```text
/// async fn m(&self, ctx: &frpc::Context, request: In) -> Result<Out, frpc::Status>;                 // unary
/// async fn m(&self, ctx: &frpc::Context, request: In, outbound: frpc::StreamSender<Out>)
///     -> Result<(), frpc::Status>;                                                                // server streaming
/// async fn m(&self, ctx: &frpc::Context, inbound: frpc::Streaming<In>) -> Result<Out, frpc::Status>; // client streaming
/// async fn m(&self, ctx: &frpc::Context, inbound: frpc::Streaming<In>, outbound: frpc::StreamSender<Out>)
///     -> Result<(), frpc::Status>;                                                                // bidi
/// ```
///
/// `In` and `Out` are messages taken and returned by value: a reference, a tuple, or a
/// standard type (`String`, `Vec<M>`, `Option<M>`, integers) is refused at the type, since an
/// RPC's request and response are one message each (wrap lists and scalars in a struct).
///
/// ```
/// use frpc::{Context, Status};
///
/// #[derive(frpc::Message, Clone, Debug, Default, PartialEq)]
/// pub struct Hello {
///     pub name: String,
/// }
///
/// /// Says hello.
/// #[frpc::service(package = "hello")]
/// pub trait Greeter {
///     async fn say_hello(&self, ctx: &Context, request: Hello) -> Result<Hello, Status>;
/// }
///
/// struct Impl;
///
/// impl Greeter for Impl {
///     async fn say_hello(&self, _: &Context, request: Hello) -> Result<Hello, Status> {
///         Ok(Hello { name: format!("hello {}", request.name) })
///     }
/// }
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// let addr = listener.local_addr()?;
/// let server = frpc::Server::builder().add_service(GreeterServer::new(Impl)).build()?;
/// tokio::spawn(async move { server.serve_listener(listener).await });
/// let client = GreeterClient::connect(addr).await?;
/// let reply = client.say_hello(Hello { name: "frpc".into() }).await?;
/// assert_eq!(reply.name, "hello frpc");
/// assert_eq!(greeter::SAY_HELLO, 10);
/// # Ok(()) }
/// # tokio::runtime::Runtime::new().unwrap().block_on(demo()).unwrap();
/// ```
#[proc_macro_attribute]
pub fn service(args: TokenStream, item: TokenStream) -> TokenStream {
    let fallback = proc_macro2::TokenStream::from(item.clone());
    let args = syn::parse_macro_input!(args with service::Args::parse);
    let item = syn::parse_macro_input!(item as syn::ItemTrait);
    error::expand(service::expand(&args, &item), fallback)
}
