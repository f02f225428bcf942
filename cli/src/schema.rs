//! The schema a call needs: descriptors compiled from `.proto` files at run time (protox, no
//! protoc), the method a `pkg.Service/Method` names, and its fRPC operation number.

use std::collections::HashMap;
use std::path::PathBuf;

use prost_reflect::{DescriptorPool, MethodDescriptor, ServiceDescriptor};

/// Why the schema could not be had.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// protox could not compile the files.
    #[error("cannot compile the .proto files: {0}")]
    Compile(String),
    /// The descriptors are inconsistent.
    #[error("invalid descriptors: {0}")]
    Descriptors(String),
    /// The method name is not `pkg.Service/Method`.
    #[error("`{0}` is not a method name: write `package.Service/Method`")]
    BadName(String),
    /// No such service.
    #[error("no service `{0}` in the schema (services: {1})")]
    NoService(String, String),
    /// No such method.
    #[error("service `{0}` has no method `{1}` (methods: {2})")]
    NoMethod(String, String, String),
    /// The server's files describe the method, but the server does not serve it (reflection
    /// named the methods it serves).
    #[error(
        "the server does not serve `{0}`: its files describe it beside what it serves (services served: {1})"
    )]
    NotServed(String, String),
}

/// Compiles `protos`, searched in `includes` (the directory of each file when none is given).
/// A name is a path from the working directory or, as grpcurl's `-proto` takes it (and as an
/// `import` names a file), from one of `includes`.
pub fn compile(protos: &[PathBuf], includes: &[PathBuf]) -> Result<DescriptorPool, SchemaError> {
    let found = |p: &PathBuf| p.is_file() || includes.iter().any(|dir| dir.join(p).is_file());
    if let Some(missing) = protos.iter().find(|p| !found(p)) {
        let dirs: Vec<String> = includes.iter().map(|d| d.display().to_string()).collect();
        return Err(SchemaError::Compile(match dirs.is_empty() {
            true => format!("no file {}", missing.display()),
            false => format!("no file {}, nor in {}", missing.display(), dirs.join(", ")),
        }));
    }
    let mut includes = includes.to_vec();
    if includes.is_empty() {
        for proto in protos {
            let dir = proto.parent().filter(|d| !d.as_os_str().is_empty());
            includes.push(dir.map_or_else(|| PathBuf::from("."), PathBuf::from));
        }
    }
    let fds = protox::compile(protos, &includes).map_err(|e| SchemaError::Compile(format!("{e:?}")))?;
    DescriptorPool::from_file_descriptor_set(fds).map_err(|e| SchemaError::Descriptors(e.to_string()))
}

/// A schema: the descriptors, and the operation numbers a reflecting server sent beside them.
/// Derefs to the descriptors.
#[derive(Debug, Clone)]
pub struct Described {
    /// The files' descriptors.
    pub pool: DescriptorPool,
    /// Operation numbers by method full name (`pkg.Service.Method`): what the server serves
    /// each method on, whatever its numbering; empty for compiled files.
    ops: HashMap<String, u16>,
}

impl Described {
    /// Descriptors compiled from files: operation numbers counted per file.
    pub fn compiled(pool: DescriptorPool) -> Described {
        Described {
            pool,
            ops: HashMap::new(),
        }
    }

    /// The method's operation number: the server's own when it sent them (a server numbering
    /// across files, `OperationNumbering::PerPackage` or `Shared`, cannot be told from its
    /// files), else counted per file ([`operation`]). A server that sent its numbers serves
    /// no other method: counting one its files describe beside them would name another
    /// method's operation, so such a method is [`SchemaError::NotServed`].
    pub fn operation(&self, method: &MethodDescriptor) -> Result<u16, SchemaError> {
        match self.ops.get(method.full_name()) {
            Some(op) => Ok(*op),
            None if self.ops.is_empty() => Ok(operation(method)),
            None => Err(SchemaError::NotServed(
                method.full_name().to_string(),
                self.services()
                    .map(|s| s.full_name().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            )),
        }
    }

    /// The services to call: those the server serves where it said (a reflecting frpc
    /// server names its methods), else every service of the files.
    pub fn services(&self) -> impl Iterator<Item = ServiceDescriptor> + '_ {
        self.pool
            .services()
            .filter(|s| self.ops.is_empty() || s.methods().any(|m| self.ops.contains_key(m.full_name())))
    }
}

impl std::ops::Deref for Described {
    type Target = DescriptorPool;

    fn deref(&self) -> &DescriptorPool {
        &self.pool
    }
}

/// A REFLECTION answer (docs/extensions.md §13): a `FileDescriptorSet`, whose files are
/// field 1, and the operation numbers of frpc servers that send them, field 1000.
#[derive(Clone, PartialEq, prost::Message)]
struct Reflected {
    #[prost(message, repeated, tag = "1")]
    file: Vec<prost_types::FileDescriptorProto>,
    #[prost(message, repeated, tag = "1000")]
    operations: Vec<ReflectedOperation>,
}

/// One method's operation number.
#[derive(Clone, PartialEq, prost::Message)]
struct ReflectedOperation {
    /// `pkg.Service.Method`.
    #[prost(string, tag = "1")]
    method: String,
    #[prost(uint32, tag = "2")]
    op: u32,
}

/// The descriptors a reflecting server sent: an encoded `FileDescriptorSet` in which a file
/// may repeat (one copy per service set that holds it; the first of each name is kept),
/// and, from frpc servers that send them, the methods' operation numbers.
pub fn from_reflection(bytes: &[u8]) -> Result<Described, SchemaError> {
    use prost::Message as _;
    let answer = Reflected::decode(bytes).map_err(|e| SchemaError::Descriptors(e.to_string()))?;
    let mut seen = std::collections::HashSet::new();
    let file = answer
        .file
        .into_iter()
        .filter(|f| seen.insert(f.name().to_string()))
        .collect();
    let pool = DescriptorPool::from_file_descriptor_set(prost_types::FileDescriptorSet { file })
        .map_err(|e| SchemaError::Descriptors(e.to_string()))?;
    let ops = answer
        .operations
        .into_iter()
        .filter_map(|o| Some((o.method, u16::try_from(o.op).ok()?)))
        .collect();
    Ok(Described { pool, ops })
}

/// The method `name` (`pkg.Service/Method`, or `pkg.Service.Method`) names in `pool`.
pub fn method(pool: &DescriptorPool, name: &str) -> Result<MethodDescriptor, SchemaError> {
    let name = name.trim_start_matches('.');
    let (service, method) = name
        .rsplit_once('/')
        .or_else(|| name.rsplit_once('.'))
        .ok_or_else(|| SchemaError::BadName(name.to_string()))?;
    let svc = pool.get_service_by_name(service).ok_or_else(|| {
        let all: Vec<String> = pool.services().map(|s| s.full_name().to_string()).collect();
        SchemaError::NoService(service.to_string(), all.join(", "))
    })?;
    let found = svc.methods().find(|m| m.name() == method);
    found.ok_or_else(|| {
        let all: Vec<String> = svc.methods().map(|m| m.name().to_string()).collect();
        SchemaError::NoMethod(service.to_string(), method.to_string(), all.join(", "))
    })
}

/// The method's fRPC operation number: 10 upward over every method of its .proto file, services
/// and methods in declaration order (what Go fRPC and frpc-codegen's default numbering do).
pub fn operation(method: &MethodDescriptor) -> u16 {
    let file = method.parent_file();
    let position = file
        .services()
        .flat_map(|s| s.methods().collect::<Vec<_>>())
        .position(|m| m.full_name() == method.full_name())
        .unwrap_or_default();
    10 + position as u16
}

/// How a method streams, as a user reads it.
pub fn kind(method: &MethodDescriptor) -> &'static str {
    match (method.is_client_streaming(), method.is_server_streaming()) {
        (false, false) => "unary",
        (false, true) => "server streaming",
        (true, false) => "client streaming",
        (true, true) => "bidirectional streaming",
    }
}
