//! Descriptors to [`model`](crate::model): walks a protox `FileDescriptorSet` the way
//! prost-build 0.14 does, so every path and name matches the structs prost generated.

use std::collections::{HashMap, HashSet};

use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorProto, FileDescriptorSet};

use crate::Error;
use crate::comments::doc_lines;
use crate::model::{self, Codec, Field, MethodKind, Oneof, OperationNumbering, Package, Shape};
use crate::naming::{self, ExternPaths, package_file_name, resolve_path, to_snake, to_upper_camel};

/// What parsing needs to know of the prost-build configuration.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// prost-build `bytes(...)` matchers: fields that are `bytes::Bytes`.
    pub bytes: Vec<String>,
    /// prost-build `boxed(...)` matchers: singular message fields held in a `Box`.
    pub boxed: Vec<String>,
    /// `disable_comments(...)` matchers: services and methods whose proto comments are left
    /// out (prost-build leaves out those of the matching messages, fields and enums).
    pub disable_comments: Vec<String>,
    /// prost-build `extern_path(...)`s: types not generated here, and their Rust paths.
    pub extern_paths: ExternPaths,
    /// Which methods share a sequence of operation numbers.
    pub numbering: OperationNumbering,
}

/// Parses every file of `fds` (imports included, `google.protobuf` skipped) into packages,
/// in order of first appearance.
pub fn parse(fds: &FileDescriptorSet, options: &Options) -> Result<Vec<Package>, Error> {
    let index = Index::new(fds);
    let mut packages: Vec<Package> = Vec::new();
    // The next operation number: one counter per file, per package or for everything.
    let mut shared_op = u32::from(model::FIRST_OP);
    let mut package_ops: HashMap<String, u32> = HashMap::new();
    for file in &fds.file {
        let package_name = file.package().to_string();
        if is_google(&package_name) {
            continue;
        }
        let pos = match packages.iter().position(|p| p.name == package_name) {
            Some(pos) => pos,
            None => {
                packages.push(Package {
                    name: package_name.clone(),
                    file_name: package_file_name(&package_name),
                    ..Package::default()
                });
                packages.len() - 1
            }
        };
        let cx = FileCx {
            file,
            index: &index,
            options,
            package: &package_name,
        };
        let package = &mut packages[pos];
        let prefix = if package_name.is_empty() {
            String::new()
        } else {
            format!(".{package_name}")
        };
        for msg in &file.message_type {
            cx.message(&prefix, msg, &mut package.messages, &mut package.enums)?;
        }
        for e in &file.enum_type {
            package.enums.extend(cx.enumeration(&prefix, e));
        }
        let mut services = cx.services()?;
        let mut file_op = u32::from(model::FIRST_OP);
        let next = match options.numbering {
            OperationNumbering::PerFile => &mut file_op,
            OperationNumbering::PerPackage => package_ops
                .entry(package_name.clone())
                .or_insert(u32::from(model::FIRST_OP)),
            OperationNumbering::Shared => &mut shared_op,
        };
        model::assign_ops_from(&mut services, next).map_err(|method| {
            Error::Unsupported(format!(
                "method `{method}` would need an operation number above 65535 ({:?} numbering)",
                options.numbering
            ))
        })?;
        package.services.extend(services);
    }
    Ok(packages)
}

fn is_google(package: &str) -> bool {
    package == "google.protobuf" || package.starts_with("google.protobuf.")
}

/// Facts about every type of the set: map entries and prost's message graph (for boxing).
struct Index {
    /// Map entry message → (key, value) fields.
    map_entries: HashMap<String, (FieldDescriptorProto, FieldDescriptorProto)>,
    /// Message → the types of its non-repeated message fields.
    edges: HashMap<String, Vec<String>>,
}

impl Index {
    fn new(fds: &FileDescriptorSet) -> Index {
        let mut index = Index {
            map_entries: HashMap::new(),
            edges: HashMap::new(),
        };
        for file in &fds.file {
            let prefix = if file.package().is_empty() {
                String::new()
            } else {
                format!(".{}", file.package())
            };
            for msg in &file.message_type {
                index.add(&prefix, msg);
            }
        }
        index
    }

    fn add(&mut self, prefix: &str, msg: &DescriptorProto) {
        let name = format!("{prefix}.{}", msg.name());
        if msg.options.as_ref().and_then(|o| o.map_entry).unwrap_or(false) && msg.field.len() == 2 {
            self.map_entries
                .insert(name.clone(), (msg.field[0].clone(), msg.field[1].clone()));
        }
        let targets = msg
            .field
            .iter()
            .filter(|f| f.r#type() == Type::Message && f.label() != Label::Repeated)
            .map(|f| f.type_name().to_string())
            .collect();
        self.edges.insert(name.clone(), targets);
        for nested in &msg.nested_type {
            self.add(&name, nested);
        }
    }

    /// prost's `MessageGraph::is_nested(outer, inner)`: a path of non-repeated message fields
    /// leads from `outer` to `inner` (always true when they are the same message).
    fn is_nested(&self, outer: &str, inner: &str) -> bool {
        if !self.edges.contains_key(outer) || !self.edges.contains_key(inner) {
            return false;
        }
        let mut seen = HashSet::new();
        let mut stack = vec![outer];
        while let Some(at) = stack.pop() {
            if at == inner {
                return true;
            }
            if seen.insert(at) {
                stack.extend(self.edges.get(at).into_iter().flatten().map(String::as_str));
            }
        }
        false
    }
}

struct FileCx<'a> {
    file: &'a FileDescriptorProto,
    index: &'a Index,
    options: &'a Options,
    package: &'a str,
}

impl FileCx<'_> {
    fn proto2(&self) -> bool {
        matches!(self.file.syntax.as_deref(), None | Some("proto2"))
    }

    fn message(
        &self,
        prefix: &str,
        msg: &DescriptorProto,
        messages: &mut Vec<model::Message>,
        enums: &mut Vec<model::Enum>,
    ) -> Result<(), Error> {
        let fq = format!("{prefix}.{}", msg.name());
        // Map entries are not types; extern types (and what they nest) are generated elsewhere.
        if self.index.map_entries.contains_key(&fq) || self.options.extern_paths.resolve(&fq).is_some() {
            return Ok(());
        }
        let rust_path = resolve_path(self.package, &fq);
        // prost: `<parent module>::<snake message>::<OneofType>`.
        let nested_module = match rust_path.rsplit_once("::") {
            Some((parent, _)) => format!("{parent}::{}", to_snake(msg.name())),
            None => to_snake(msg.name()),
        };
        let nested_names: Vec<String> = msg
            .nested_type
            .iter()
            .map(|n| to_upper_camel(n.name()))
            .chain(msg.enum_type.iter().map(|e| to_upper_camel(e.name())))
            .collect();
        // Real oneofs: those with at least one member that is not proto3 `optional`.
        let mut oneof_slots: Vec<Option<(usize, &str)>> = vec![None; msg.oneof_decl.len()];
        let mut oneofs = Vec::new();
        for (i, decl) in msg.oneof_decl.iter().enumerate() {
            let used = msg
                .field
                .iter()
                .any(|f| f.oneof_index == Some(i as i32) && !f.proto3_optional.unwrap_or(false));
            if used {
                let mut type_name = to_upper_camel(decl.name());
                if nested_names.contains(&type_name) {
                    type_name.push_str("OneOf");
                }
                oneof_slots[i] = Some((oneofs.len(), decl.name()));
                oneofs.push(Oneof {
                    proto_name: decl.name().to_string(),
                    ident: to_snake(decl.name()),
                    rust_path: format!("{nested_module}::{type_name}"),
                });
            }
        }
        let mut fields = Vec::new();
        for f in &msg.field {
            let shape = self.shape(&fq, f, &oneof_slots)?;
            fields.push(Field {
                proto_name: f.name().to_string(),
                ident: to_snake(f.name()),
                shape,
                proto: Some(self.proto_field(f)),
            });
        }
        messages.push(model::Message {
            proto_name: fq[1..].to_string(),
            rust_path,
            fields,
            oneofs,
        });
        for nested in &msg.nested_type {
            self.message(&fq, nested, messages, enums)?;
        }
        for e in &msg.enum_type {
            enums.extend(self.enumeration(&fq, e));
        }
        Ok(())
    }

    /// The enum, unless it is extern.
    fn enumeration(&self, prefix: &str, e: &prost_types::EnumDescriptorProto) -> Option<model::Enum> {
        let fq = format!("{prefix}.{}", e.name());
        if self.options.extern_paths.resolve(&fq).is_some() {
            return None;
        }
        Some(model::Enum {
            proto_name: fq[1..].to_string(),
            rust_path: resolve_path(self.package, &fq),
            values: e.value.iter().map(|v| v.number()).collect(),
        })
    }

    /// The Rust path of a referenced type: its `extern_path`, or prost's relative path.
    fn resolve(&self, fq_type: &str) -> String {
        self.options
            .extern_paths
            .resolve(fq_type)
            .unwrap_or_else(|| resolve_path(self.package, fq_type))
    }

    /// A field's number and protobuf type (a map's value and key types).
    fn proto_field(&self, f: &FieldDescriptorProto) -> model::ProtoField {
        let repeated = f.label() == Label::Repeated;
        if repeated && let Some((key, value)) = self.index.map_entries.get(f.type_name()) {
            return model::ProtoField {
                number: f.number() as u32,
                kind: proto_kind(value.r#type()),
                map_key: Some(proto_kind(key.r#type())),
                packed: false,
                required: false,
            };
        }
        let kind = proto_kind(f.r#type());
        // proto3 packs repeated scalars unless told not to; proto2 only when told to.
        let packed_option = f.options.as_ref().and_then(|o| o.packed);
        let packed = repeated
            && kind.packable()
            && match self.proto2() {
                true => packed_option == Some(true),
                false => packed_option != Some(false),
            };
        model::ProtoField {
            number: f.number() as u32,
            kind,
            map_key: None,
            packed,
            required: f.label() == Label::Required,
        }
    }

    fn shape(
        &self,
        fq_message: &str,
        f: &FieldDescriptorProto,
        oneof_slots: &[Option<(usize, &str)>],
    ) -> Result<Shape, Error> {
        if f.label() == Label::Repeated {
            if let Some((key, value)) = self.index.map_entries.get(f.type_name()) {
                // prost resolves a map's types with the entry's field names ("key"/"value")
                // under the parent message, which matters for `bytes(...)` matchers.
                // An unsupported key or value names the map field, not the entry's.
                let in_map = |side: &FieldDescriptorProto, what: &str| {
                    self.codec(fq_message, side, fq_message).map_err(|err| match err {
                        Error::Unsupported(_) => unsupported_in_map(fq_message, f.name(), what, side),
                        other => other,
                    })
                };
                let k = in_map(key, "key")?;
                let v = in_map(value, "value")?;
                return Ok(Shape::Map(k, v));
            }
            return Ok(Shape::Repeated(self.codec(fq_message, f, fq_message)?));
        }
        let codec = self.codec(fq_message, f, fq_message)?;
        let is_message = f.r#type() == Type::Message;
        // A proto3 `optional` field sits in a synthetic oneof, which prost ignores.
        let oneof = f
            .oneof_index
            .filter(|_| !f.proto3_optional.unwrap_or(false))
            .and_then(|i| oneof_slots.get(i as usize).copied().flatten());
        let codec = match self.boxed(fq_message, f, oneof.map(|(_, name)| name), &codec)? {
            true => Codec::Boxed(Box::new(codec)),
            false => codec,
        };
        if let Some((slot, _)) = oneof {
            return Ok(Shape::OneofMember {
                oneof: slot,
                variant: to_upper_camel(f.name()),
                codec,
            });
        }
        if is_message {
            // prost holds a proto2 `required` message by value.
            return Ok(match f.label() == Label::Required {
                true => Shape::Value(codec),
                false => Shape::Message(codec),
            });
        }
        if f.proto3_optional.unwrap_or(false) || (self.proto2() && f.label() == Label::Optional) {
            return Ok(Shape::Optional(codec));
        }
        Ok(Shape::Value(codec))
    }

    /// Whether prost holds the singular field `f` of `fq_message` (a member of the oneof
    /// `oneof`, if any) in a `Box`, as prost-build decides: a message that contains
    /// `fq_message` (a recursive type), or a field the `boxed(...)` option matches. frpc boxes
    /// only messages: a matched scalar, enum or wrapper is an error naming the field.
    fn boxed(
        &self,
        fq_message: &str,
        f: &FieldDescriptorProto,
        oneof: Option<&str>,
        codec: &Codec,
    ) -> Result<bool, Error> {
        if f.r#type() == Type::Message && self.index.is_nested(f.type_name(), fq_message) {
            return Ok(true);
        }
        let path = match oneof {
            Some(oneof) => format!("{fq_message}.{oneof}.{}", f.name()),
            None => format!("{fq_message}.{}", f.name()),
        };
        if !path_matches(&self.options.boxed, &path) {
            return Ok(false);
        }
        match codec {
            Codec::Message(_) => Ok(true),
            _ => Err(Error::Unsupported(format!(
                "`boxed` matches the field `{}`, which is not a message: frpc boxes only \
                 message fields (not scalars, enums or google.protobuf wrappers)",
                &path[1..]
            ))),
        }
    }

    /// The codec of a field's element type (`fq_message` is where prost looks up `bytes`).
    fn codec(&self, owner: &str, f: &FieldDescriptorProto, fq_message: &str) -> Result<Codec, Error> {
        Ok(match f.r#type() {
            Type::Double => Codec::F64,
            Type::Float => Codec::F32,
            Type::Int64 | Type::Sint64 | Type::Sfixed64 => Codec::I64,
            Type::Uint64 | Type::Fixed64 => Codec::U64,
            Type::Int32 | Type::Sint32 | Type::Sfixed32 => Codec::I32,
            Type::Uint32 | Type::Fixed32 => Codec::U32,
            Type::Bool => Codec::Bool,
            Type::String => Codec::Str,
            Type::Bytes => {
                if path_matches(&self.options.bytes, &format!("{fq_message}.{}", f.name())) {
                    Codec::ByteBuf
                } else {
                    Codec::ByteVec
                }
            }
            Type::Enum => {
                if let Some(path) = self.options.extern_paths.resolve(f.type_name()) {
                    return Ok(Codec::Enum(path));
                }
                if f.type_name().starts_with(".google.protobuf.") {
                    return Err(unsupported(owner, f));
                }
                Codec::Enum(resolve_path(self.package, f.type_name()))
            }
            Type::Message => {
                if let Some(path) = self.options.extern_paths.resolve(f.type_name()) {
                    return Ok(Codec::Message(path));
                }
                match well_known(f.type_name()) {
                    Some(Ok(codec)) => codec,
                    Some(Err(())) => return Err(unsupported(owner, f)),
                    None => Codec::Message(resolve_path(self.package, f.type_name())),
                }
            }
            Type::Group => {
                return Err(Error::Unsupported(format!(
                    "field `{}.{}` is a proto2 group, which frpc cannot encode (declare a \
                     message and a field of it instead)",
                    &owner[1..],
                    f.name()
                )));
            }
        })
    }

    fn services(&self) -> Result<Vec<model::Service>, Error> {
        let mut out = Vec::new();
        for (si, s) in self.file.service.iter().enumerate() {
            let full_name = if self.package.is_empty() {
                s.name().to_string()
            } else {
                format!("{}.{}", self.package, s.name())
            };
            let mut methods = Vec::new();
            for (mi, m) in s.method.iter().enumerate() {
                let io = |ty: &str| -> Result<String, Error> {
                    if let Some(path) = self.options.extern_paths.resolve(ty) {
                        return Ok(path);
                    }
                    match well_known(ty) {
                        None => Ok(self.resolve(ty)),
                        Some(Ok(Codec::Message(path))) => Ok(path),
                        _ => Err(Error::Unsupported(format!(
                            "method `{full_name}.{}` uses `{}`, which frpc cannot carry as a request or \
                             response (use a message, google.protobuf.Empty, Timestamp or Duration)",
                            m.name(),
                            &ty[1..]
                        ))),
                    }
                };
                methods.push(model::Method {
                    proto_name: m.name().to_string(),
                    rust_name: to_snake(m.name()),
                    op: 0,
                    kind: MethodKind::from_streaming(m.client_streaming(), m.server_streaming()),
                    input: io(m.input_type())?,
                    output: io(m.output_type())?,
                    comments: self.comments(
                        &format!(".{full_name}.{}", m.name()),
                        &[6, si as i32, 2, mi as i32],
                    ),
                    deprecated: m.options.as_ref().is_some_and(|o| o.deprecated()),
                });
            }
            out.push(model::Service {
                proto_name: s.name().to_string(),
                comments: self.comments(&format!(".{full_name}"), &[6, si as i32]),
                full_name,
                rust_name: to_upper_camel(s.name()),
                methods,
            });
        }
        Ok(out)
    }

    /// The doc lines of the proto comments at `path` (source info's path) of the service or
    /// method `full_path`, unless `disable_comments(...)` matches it.
    fn comments(&self, full_path: &str, path: &[i32]) -> Vec<String> {
        if path_matches(&self.options.disable_comments, full_path) {
            return Vec::new();
        }
        self.file
            .source_code_info
            .as_ref()
            .and_then(|info| info.location.iter().find(|l| l.path == path))
            .map_or(Vec::new(), |l| {
                doc_lines(l.leading_comments.as_deref(), l.trailing_comments.as_deref())
            })
    }
}

/// The codec of a `google.protobuf` message type: `None` for other types, `Some(Err)` for
/// well-known types frpc does not support.
fn well_known(type_name: &str) -> Option<Result<Codec, ()>> {
    let name = type_name.strip_prefix(".google.protobuf.")?;
    let wrapped = |c| Ok(Codec::Wrapped(Box::new(c)));
    Some(match name {
        "Timestamp" => Ok(Codec::Message("::frpc::codegen::prost_types::Timestamp".into())),
        "Duration" => Ok(Codec::Message("::frpc::codegen::prost_types::Duration".into())),
        "Empty" => Ok(Codec::Message("()".into())),
        "BoolValue" => wrapped(Codec::Bool),
        "BytesValue" => wrapped(Codec::ByteVec),
        "DoubleValue" => wrapped(Codec::F64),
        "FloatValue" => wrapped(Codec::F32),
        "Int32Value" => wrapped(Codec::I32),
        "Int64Value" => wrapped(Codec::I64),
        "StringValue" => wrapped(Codec::Str),
        "UInt32Value" => wrapped(Codec::U32),
        "UInt64Value" => wrapped(Codec::U64),
        _ => Err(()),
    })
}

fn unsupported(owner: &str, f: &FieldDescriptorProto) -> Error {
    unsupported_named(&format!("field `{}.{}`", &owner[1..], f.name()), f)
}

/// [`unsupported`] for the key or value (`what`) of map field `map` of `owner`.
fn unsupported_in_map(owner: &str, map: &str, what: &str, side: &FieldDescriptorProto) -> Error {
    unsupported_named(&format!("the {what} of map field `{}.{map}`", &owner[1..]), side)
}

/// `field` (what to call it) has a type frpc cannot encode.
fn unsupported_named(field: &str, f: &FieldDescriptorProto) -> Error {
    let ty = if f.type_name().is_empty() {
        "group".to_string()
    } else {
        f.type_name()[1..].to_string()
    };
    Error::Unsupported(format!(
        "{field} has type `{ty}`, which frpc cannot encode (supported well-known types: \
         Timestamp, Duration, Empty and the wrapper types)"
    ))
}

/// prost-build's path matching (`PathMap::find_best_matching`): the full path, its suffixes,
/// its prefixes, or `.` match.
fn path_matches(matchers: &[String], full_path: &str) -> bool {
    matchers.iter().any(|m| naming::path_matches(m, full_path))
}

/// The protobuf type of a field (groups are refused before this is asked).
fn proto_kind(ty: Type) -> model::ProtoKind {
    use model::ProtoKind as K;
    match ty {
        Type::Double => K::Double,
        Type::Float => K::Float,
        Type::Int64 => K::Int64,
        Type::Uint64 => K::Uint64,
        Type::Int32 => K::Int32,
        Type::Fixed64 => K::Fixed64,
        Type::Fixed32 => K::Fixed32,
        Type::Bool => K::Bool,
        Type::String => K::String,
        Type::Bytes => K::Bytes,
        Type::Uint32 => K::Uint32,
        Type::Enum => K::Enum,
        Type::Sfixed32 => K::Sfixed32,
        Type::Sfixed64 => K::Sfixed64,
        Type::Sint32 => K::Sint32,
        Type::Sint64 => K::Sint64,
        Type::Message | Type::Group => K::Message,
    }
}
