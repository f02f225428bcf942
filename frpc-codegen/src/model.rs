//! The code generation model: packages, messages, enums and services, already resolved to the
//! Rust paths prost uses and with operation numbers computed once.
//!
//! Nothing here knows about protox or prost-build: `parse` builds it from descriptors and
//! `frpc-macros` can build it from Rust items. Every Rust path is relative to the package
//! module the generated code is appended to (`request::Corpus`, `super::other::Type`), or
//! absolute (`::frpc::codegen::prost_types::Timestamp`).

/// Everything generated into one package module (`<package>.rs`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Package {
    /// The proto package (`capture`, `my.pkg`; empty for none).
    pub name: String,
    /// The output file name prost uses (`capture.rs`, `my.pkg.rs`, `_.rs`).
    pub file_name: String,
    /// Every message of the package (nested ones included), in file and declaration order.
    pub messages: Vec<Message>,
    /// Every enum of the package (nested ones included).
    pub enums: Vec<Enum>,
    /// Every service of the package, with operation numbers assigned (per file by default, see
    /// [`OperationNumbering`]).
    pub services: Vec<Service>,
    /// An encoded `google.protobuf.FileDescriptorSet` of the package's .proto files and every
    /// file they import (source info stripped), emitted as the module's
    /// `FILE_DESCRIPTOR_SET` for reflection; empty when there are no descriptors (Rust-first
    /// services), and then nothing is emitted.
    pub file_descriptor_set: Vec<u8>,
}

/// A message and its fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Fully qualified proto name without the leading dot (`capture.SearchResponse.Result`).
    pub proto_name: String,
    /// The Rust path of prost's struct (`search_response::Result`).
    pub rust_path: String,
    /// Fields in .proto declaration order (oneof members included, each as its own field).
    pub fields: Vec<Field>,
    /// The message's real oneofs (not proto3 `optional`'s synthetic ones).
    pub oneofs: Vec<Oneof>,
}

impl Message {
    /// Fields in wire order: the three groups of spec §4.7, each in declaration order.
    pub fn wire_order(&self) -> impl Iterator<Item = &Field> {
        [Group::Values, Group::Repeated, Group::MessagesAndMaps]
            .into_iter()
            .flat_map(move |group| self.fields.iter().filter(move |f| f.group() == group))
    }

    /// The members of oneof number `oneof` (an index into [`Message::oneofs`]), in declaration
    /// order, with their variant names and codecs.
    pub fn oneof_members(&self, oneof: usize) -> impl Iterator<Item = (&Field, &str, &Codec)> {
        self.fields.iter().filter_map(move |f| match &f.shape {
            Shape::OneofMember {
                oneof: o,
                variant,
                codec,
            } if *o == oneof => Some((f, variant.as_str(), codec)),
            _ => None,
        })
    }
}

/// One field of a message.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The proto field name (`corpus`).
    pub proto_name: String,
    /// The Rust field name prost uses (`corpus`, `r#type`); for a oneof member, the name of the
    /// member (the Rust field is the oneof's).
    pub ident: String,
    /// How the field is held and written.
    pub shape: Shape,
    /// Its protobuf number and type, from the .proto (`None` for Rust-first fields, whose
    /// protobuf encoding, if any, is the type's own `prost::Message`).
    pub proto: Option<ProtoField>,
}

/// A field's protobuf encoding, for frpc's own protobuf encoder (prost's derive drops a
/// `float`/`double` field holding -0.0, which the protobuf spec says must be sent).
#[derive(Debug, Clone, PartialEq)]
pub struct ProtoField {
    /// The field number.
    pub number: u32,
    /// The field's type; for a map, the value's.
    pub kind: ProtoKind,
    /// A map's key type.
    pub map_key: Option<ProtoKind>,
    /// Whether a repeated scalar is written packed (proto3's default).
    pub packed: bool,
    /// A proto2 `required` field: written even when it holds its type's zero value, as prost
    /// and Go write it.
    pub required: bool,
}

/// A protobuf field type, as `prost::encoding` names its modules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum ProtoKind {
    Double,
    Float,
    Int64,
    Uint64,
    Int32,
    Fixed64,
    Fixed32,
    Bool,
    String,
    Bytes,
    Uint32,
    Enum,
    Sfixed32,
    Sfixed64,
    Sint32,
    Sint64,
    Message,
}

impl ProtoKind {
    /// The `prost::encoding` module that writes it (`double`, `sint32`; enums are `int32`).
    pub fn module(self) -> &'static str {
        match self {
            ProtoKind::Double => "double",
            ProtoKind::Float => "float",
            ProtoKind::Int64 => "int64",
            ProtoKind::Uint64 => "uint64",
            ProtoKind::Int32 | ProtoKind::Enum => "int32",
            ProtoKind::Fixed64 => "fixed64",
            ProtoKind::Fixed32 => "fixed32",
            ProtoKind::Bool => "bool",
            ProtoKind::String => "string",
            ProtoKind::Bytes => "bytes",
            ProtoKind::Uint32 => "uint32",
            ProtoKind::Sfixed32 => "sfixed32",
            ProtoKind::Sfixed64 => "sfixed64",
            ProtoKind::Sint32 => "sint32",
            ProtoKind::Sint64 => "sint64",
            ProtoKind::Message => "message",
        }
    }

    /// Whether a repeated field of this type can be packed (numbers, bools and enums).
    pub fn packable(self) -> bool {
        !matches!(self, ProtoKind::String | ProtoKind::Bytes | ProtoKind::Message)
    }
}

impl Field {
    /// The group of spec §4.7 this field is written in.
    pub fn group(&self) -> Group {
        match &self.shape {
            // A message held by value (`M`, not `Option<M>`; only `frpc-macros` builds these)
            // is still a message.
            Shape::Value(codec) if codec.is_message() => Group::MessagesAndMaps,
            Shape::Value(_) | Shape::Optional(_) => Group::Values,
            Shape::Message(_) => Group::MessagesAndMaps,
            Shape::Repeated(_) => Group::Repeated,
            Shape::Map(..) => Group::MessagesAndMaps,
            Shape::OneofMember { codec, .. } if codec.is_message() => Group::MessagesAndMaps,
            Shape::OneofMember { .. } => Group::Values,
        }
    }
}

/// The three field groups, in wire order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// Scalars, strings, bytes and enums (proto3 `optional` ones and oneof members included).
    Values,
    /// Repeated fields other than maps.
    Repeated,
    /// Singular messages, maps and oneof message members.
    MessagesAndMaps,
}

/// How a field is held in the prost struct and written.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// A plain value (`T`), always written. With a message codec (a message held by value, as
    /// `frpc-macros` allows) it is written in the messages group and never as `00`.
    Value(Codec),
    /// A proto3 `optional` scalar (`Option<T>`): `00` when absent.
    Optional(Codec),
    /// A singular message (`Option<M>`, or `Option<Box<M>>` with a [`Codec::Boxed`]): `00` when
    /// absent.
    Message(Codec),
    /// A repeated non-map field (`Vec<T>`).
    Repeated(Codec),
    /// A map (`HashMap<K, V>` or `BTreeMap<K, V>`): key codec, value codec.
    Map(Codec, Codec),
    /// A member of a oneof: written in its own group, its value when set, else its zero value
    /// (scalars) or `00` (messages).
    OneofMember {
        /// Index into [`Message::oneofs`].
        oneof: usize,
        /// The variant of prost's oneof enum (`CStr`).
        variant: String,
        /// The member's codec.
        codec: Codec,
    },
}

/// A oneof: one Rust field holding `Option<OneofEnum>`.
#[derive(Debug, Clone, PartialEq)]
pub struct Oneof {
    /// The proto oneof name (`choice`).
    pub proto_name: String,
    /// The Rust field name (`choice`).
    pub ident: String,
    /// The Rust path of prost's oneof enum (`edge::Choice`).
    pub rust_path: String,
}

/// A polyglot codec: which `::frpc::codegen` codec type carries a value.
#[derive(Debug, Clone, PartialEq)]
pub enum Codec {
    /// `bool`.
    Bool,
    /// `uint32`, `fixed32`.
    U32,
    /// `uint64`, `fixed64`.
    U64,
    /// `int32`, `sint32`, `sfixed32`.
    I32,
    /// `int64`, `sint64`, `sfixed64`.
    I64,
    /// `float`.
    F32,
    /// `double`.
    F64,
    /// `string`.
    Str,
    /// `bytes` as `Vec<u8>`.
    ByteVec,
    /// `bytes` as `bytes::Bytes`.
    ByteBuf,
    /// An enum (an `i32` in prost) by declaration index; the Rust path of prost's enum.
    Enum(String),
    /// An enum held as the Rust enum type itself (not prost's `i32`), by declaration index; the
    /// Rust path of the enum (`frpc-macros`' `#[frpc(enumeration)]` fields).
    EnumType(String),
    /// A message; the Rust path of its type (`()` for `google.protobuf.Empty`).
    Message(String),
    /// A wrapper well-known type (`StringValue`…), held as the plain value.
    Wrapped(Box<Codec>),
    /// A value prost boxes to break a recursive type.
    Boxed(Box<Codec>),
}

impl Codec {
    /// The codec type's Rust path (`::frpc::codegen::Msg<search_response::Result>`).
    pub fn rust_path(&self) -> String {
        const P: &str = "::frpc::codegen::";
        match self {
            Codec::Bool => format!("{P}Bool"),
            Codec::U32 => format!("{P}U32"),
            Codec::U64 => format!("{P}U64"),
            Codec::I32 => format!("{P}I32"),
            Codec::I64 => format!("{P}I64"),
            Codec::F32 => format!("{P}F32"),
            Codec::F64 => format!("{P}F64"),
            Codec::Str => format!("{P}Str"),
            Codec::ByteVec => format!("{P}ByteVec"),
            Codec::ByteBuf => format!("{P}ByteBuf"),
            Codec::Enum(path) => format!("{P}Enum<{path}>"),
            Codec::EnumType(path) => format!("{P}EnumType<{path}>"),
            Codec::Message(path) => format!("{P}Msg<{path}>"),
            Codec::Wrapped(inner) => format!("{P}Wrapped<{}>", inner.rust_path()),
            Codec::Boxed(inner) => format!("{P}Boxed<{}>", inner.rust_path()),
        }
    }

    /// Whether values travel as message envelopes (messages, well-known types, wrappers).
    pub fn is_message(&self) -> bool {
        match self {
            Codec::Message(_) | Codec::Wrapped(_) => true,
            Codec::Boxed(inner) => inner.is_message(),
            _ => false,
        }
    }

    /// Whether this is a floating-point codec (compared by bits when testing for zero).
    pub fn is_float(&self) -> bool {
        matches!(self, Codec::F32 | Codec::F64)
    }
}

/// An enum, for its declaration-index mapping.
#[derive(Debug, Clone, PartialEq)]
pub struct Enum {
    /// Fully qualified proto name without the leading dot (`capture.Request.Corpus`).
    pub proto_name: String,
    /// The Rust path of prost's enum (`request::Corpus`).
    pub rust_path: String,
    /// The proto numbers of the values in declaration order (aliases included): the wire value
    /// of `values[i]` is `i`.
    pub values: Vec<i32>,
}

/// A service and its methods.
#[derive(Debug, Clone, PartialEq)]
pub struct Service {
    /// The proto service name (`EchoService`).
    pub proto_name: String,
    /// The full proto name (`capture.EchoService`).
    pub full_name: String,
    /// The Rust trait name (`EchoService`).
    pub rust_name: String,
    /// Doc comment lines.
    pub comments: Vec<String>,
    /// Methods in declaration order.
    pub methods: Vec<Method>,
}

/// One RPC method.
#[derive(Debug, Clone, PartialEq)]
pub struct Method {
    /// The proto method name (`EchoStream`).
    pub proto_name: String,
    /// The Rust method name (`echo_stream`).
    pub rust_name: String,
    /// The operation number (from 10, in file order across all services of the file; see
    /// [`OperationNumbering`]).
    pub op: u16,
    /// Unary or which kind of streaming.
    pub kind: MethodKind,
    /// The Rust path of the request type.
    pub input: String,
    /// The Rust path of the response type.
    pub output: String,
    /// Doc comment lines.
    pub comments: Vec<String>,
    /// Marked `option deprecated = true;`: its client method is `#[deprecated]`, as tonic's.
    pub deprecated: bool,
}

/// The four RPC kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MethodKind {
    /// One request, one response.
    Unary,
    /// One request, a stream of responses.
    ServerStreaming,
    /// A stream of requests, one response.
    ClientStreaming,
    /// Streams both ways.
    Bidi,
}

impl MethodKind {
    /// The kind of a method from its two streaming flags.
    pub fn from_streaming(client: bool, server: bool) -> MethodKind {
        match (client, server) {
            (false, false) => MethodKind::Unary,
            (false, true) => MethodKind::ServerStreaming,
            (true, false) => MethodKind::ClientStreaming,
            (true, true) => MethodKind::Bidi,
        }
    }
}

/// The first operation number of every file (0–9 are Frisbee's).
pub const FIRST_OP: u16 = 10;

/// Which methods share one sequence of operation numbers.
///
/// Go fRPC numbers per file, so only [`OperationNumbering::PerFile`] talks to Go peers
/// generated from the same files; the others are for Rust-only deployments that serve
/// services of several files on one server (where per-file numbers would clash).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum OperationNumbering {
    /// Every file numbers its methods from [`FIRST_OP`] (what Go fRPC does; the default).
    #[default]
    PerFile,
    /// The files of one package share a sequence: the first file's methods take 10, 11, …,
    /// the next file's continue where it stopped.
    PerPackage,
    /// Every file of one code generation run (one `compile` call) shares a sequence.
    Shared,
}

/// Numbers the methods of the services of ONE file: from [`FIRST_OP`], in declaration order
/// across every service, every method (streaming too) taking a number.
///
/// # Panics
/// If a file declares more than 65,526 methods.
pub fn assign_ops(services: &mut [Service]) {
    let mut next = u32::from(FIRST_OP);
    assign_ops_from(services, &mut next).expect("too many methods in one file");
}

/// Numbers the methods of `services` in declaration order starting at `*next`, and leaves
/// `*next` at the number after the last one (for numbering shared across files).
///
/// # Errors
/// The full name (`pkg.Service.Method`) of the first method that would need a number above
/// 65,535.
pub fn assign_ops_from(services: &mut [Service], next: &mut u32) -> Result<(), String> {
    for service in services.iter_mut() {
        for method in &mut service.methods {
            method.op =
                u16::try_from(*next).map_err(|_| format!("{}.{}", service.full_name, method.proto_name))?;
            *next += 1;
        }
    }
    Ok(())
}
