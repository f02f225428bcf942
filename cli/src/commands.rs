//! The `frpc` subcommands as functions: each connects, does its one thing and returns what to
//! print, or a [`CliError`] that says what went wrong and which exit status to leave with.

use std::io::Read as _;
use std::path::PathBuf;
use std::time::Duration;

use frpc::{Caller as _, ClientConfig, ConnectionConfig, Framing, Metadata};
use prost_reflect::{DescriptorPool, DynamicMessage, MethodDescriptor, SerializeOptions};

use crate::dynamic::{self, Decoded};
use crate::schema;

/// Why a command failed, and the process's exit status for it.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The server answered the call with an error status.
    #[error("ERROR: {code} ({number}): {message}", number = *.code as u8)]
    Status {
        /// The status code.
        code: frpc::Code,
        /// The server's message.
        message: String,
    },
    /// Anything else: bad arguments, schemas, connections.
    #[error("error: {0}")]
    Other(String),
}

impl CliError {
    /// The exit status: 64 + the status code for a remote error (as grpcurl does), 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Status { code, .. } => 64 + *code as i32,
            CliError::Other(_) => 1,
        }
    }
}

fn other(err: impl std::fmt::Display) -> CliError {
    CliError::Other(err.to_string())
}

impl From<frpc::Error> for CliError {
    fn from(err: frpc::Error) -> CliError {
        match err.status() {
            Some(status) => CliError::Status {
                code: status.code(),
                message: status.message().to_string(),
            },
            None => CliError::Other(err.to_string()),
        }
    }
}

/// How to reach the server (the options every subcommand shares).
#[derive(Debug, Clone)]
pub struct Connect {
    /// `host:port`.
    pub addr: String,
    /// The packet framing the server speaks.
    pub framing: Framing,
    /// Plain fRPC: offer no frpc extensions (status codes, metadata, reflection).
    pub no_extensions: bool,
    /// The call timeout.
    pub timeout: Option<Duration>,
    /// Request metadata, `key:value`.
    pub headers: Vec<String>,
}

impl Connect {
    /// Connects and returns a client carrying the timeout and metadata.
    pub async fn client(&self) -> Result<frpc::Client, CliError> {
        let config = ClientConfig::default()
            .connection(ConnectionConfig::default().framing(self.framing))
            .extensions(!self.no_extensions)
            .timeout(self.timeout);
        let mut client = frpc::Client::connect_with(self.addr.as_str(), config).await?;
        if !self.headers.is_empty() {
            let mut metadata = Metadata::new();
            for header in &self.headers {
                let (key, value) = header
                    .split_once(':')
                    .ok_or_else(|| other(format!("header `{header}` is not `key:value`")))?;
                metadata.insert(key.trim(), value.trim()).map_err(other)?;
            }
            client = client.with_metadata(metadata);
        }
        Ok(client)
    }
}

/// Where the schema comes from.
#[derive(Debug, Clone, Default)]
pub struct Schema {
    /// `.proto` files to compile.
    pub protos: Vec<PathBuf>,
    /// Include directories for them.
    pub includes: Vec<PathBuf>,
}

impl Schema {
    /// The descriptors: compiled from the `.proto` files when given, else asked of the server
    /// through the reflection extension.
    pub async fn pool(&self, client: &frpc::Client) -> Result<DescriptorPool, CliError> {
        if !self.protos.is_empty() {
            return schema::compile(&self.protos, &self.includes).map_err(other);
        }
        reflect(client).await
    }
}

/// The descriptors of every service a server serves, through the reflection extension.
pub async fn reflect(client: &frpc::Client) -> Result<DescriptorPool, CliError> {
    let Some(set) = client.reflect().await? else {
        return Err(other(format!(
            "the server at {} does not offer reflection (a Go fRPC server, or extensions off): \
             pass its schema with --proto FILE [-I DIR]",
            client.peer_addr()
        )));
    };
    schema::from_reflection(&set).map_err(other)
}

/// The request text: the argument itself, `@file`, or standard input for `-` or none.
pub fn request_text(arg: Option<&str>) -> Result<String, CliError> {
    match arg {
        Some(path) if path.starts_with('@') => {
            std::fs::read_to_string(&path[1..]).map_err(|e| other(format!("cannot read {}: {e}", &path[1..])))
        }
        Some(text) if text != "-" => Ok(text.to_string()),
        _ => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text).map_err(other)?;
            Ok(text)
        }
    }
}

/// Parses proto3 JSON into a message of the method's input type (empty text: the empty message).
pub fn parse_request(method: &MethodDescriptor, text: &str) -> Result<DynamicMessage, CliError> {
    let desc = method.input();
    if text.trim().is_empty() {
        return Ok(DynamicMessage::new(desc));
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let message = DynamicMessage::deserialize(desc.clone(), &mut de).map_err(|e| {
        other(format!(
            "the request is not a valid `{}` in JSON: {e}",
            desc.full_name()
        ))
    })?;
    de.end().map_err(other)?;
    Ok(message)
}

/// A message as one line of proto3 JSON (default values included, as grpcurl prints them).
pub fn to_json(message: &DynamicMessage) -> String {
    let options = SerializeOptions::new().skip_default_fields(false);
    let mut out = serde_json::Serializer::new(Vec::new());
    // Serializing into memory cannot fail, and prost-reflect's JSON is valid UTF-8.
    message
        .serialize_with_options(&mut out, &options)
        .expect("JSON into memory");
    String::from_utf8(out.into_inner()).expect("JSON is UTF-8")
}

/// Makes one unary call with a dynamic request, in polyglot (what every fRPC server reads),
/// and returns the reply.
pub async fn call_unary(
    client: &frpc::Client,
    method: &MethodDescriptor,
    request: &DynamicMessage,
) -> Result<DynamicMessage, CliError> {
    if method.is_client_streaming() || method.is_server_streaming() {
        return Err(other(format!(
            "`{}` is {}: this version of frpc calls unary methods only",
            method.full_name(),
            schema::kind(method)
        )));
    }
    let body = dynamic::encode(request).map_err(other)?;
    let reply = client.call(schema::operation(method), |_| body).await?;
    match dynamic::decode(&method.output(), &reply.body).map_err(other)? {
        Decoded::Message(message) => Ok(message),
        Decoded::Error(text) => Err(CliError::Status {
            code: reply.code.unwrap_or(frpc::Code::Unknown),
            message: text,
        }),
    }
}

/// `frpc call`: the reply as JSON.
pub async fn call(
    connect: &Connect,
    schema: &Schema,
    method: &str,
    request: Option<&str>,
) -> Result<String, CliError> {
    let client = connect.client().await?;
    let pool = schema.pool(&client).await?;
    let method = schema::method(&pool, method).map_err(other)?;
    let request = parse_request(&method, &request_text(request)?)?;
    let reply = call_unary(&client, &method, &request).await?;
    Ok(to_json(&reply))
}

/// `frpc list`: every service the server reflects, one per line.
pub async fn list(connect: &Connect, schema: &Schema) -> Result<String, CliError> {
    let client = connect.client().await?;
    let pool = schema.pool(&client).await?;
    let mut names: Vec<String> = pool.services().map(|s| s.full_name().to_string()).collect();
    names.sort();
    Ok(names.join("\n"))
}

/// `frpc describe`: a service's methods (kind, types, operation number) or a message's fields.
pub async fn describe(connect: &Connect, schema: &Schema, name: &str) -> Result<String, CliError> {
    let client = connect.client().await?;
    let pool = schema.pool(&client).await?;
    let name = name.trim_start_matches('.');
    if let Some(service) = pool.get_service_by_name(name) {
        let mut out = format!("service {} {{\n", service.full_name());
        for m in service.methods() {
            let stream = |yes: bool| if yes { "stream " } else { "" };
            out.push_str(&format!(
                "  rpc {}({}{}) returns ({}{}); // operation {}, {}\n",
                m.name(),
                stream(m.is_client_streaming()),
                m.input().full_name(),
                stream(m.is_server_streaming()),
                m.output().full_name(),
                schema::operation(&m),
                schema::kind(&m),
            ));
        }
        out.push('}');
        return Ok(out);
    }
    if let Some(message) = pool.get_message_by_name(name) {
        let mut out = format!("message {} {{\n", message.full_name());
        for f in message.fields() {
            out.push_str(&format!("  {} {} = {};\n", field_type(&f), f.name(), f.number()));
        }
        out.push('}');
        return Ok(out);
    }
    Err(other(format!("no service or message `{name}` in the schema")))
}

/// A field's type as a .proto writes it (`repeated string`, `map<string, double>`,
/// `capture.Data`).
fn field_type(field: &prost_reflect::FieldDescriptor) -> String {
    use prost_reflect::Kind;
    let name = |kind: &Kind| match kind {
        Kind::Message(m) => m.full_name().to_string(),
        Kind::Enum(e) => e.full_name().to_string(),
        scalar => format!("{scalar:?}").to_lowercase(),
    };
    let kind = field.kind();
    if let (true, Kind::Message(entry)) = (field.is_map(), &kind) {
        let (k, v) = (entry.map_entry_key_field(), entry.map_entry_value_field());
        return format!("map<{}, {}>", name(&k.kind()), name(&v.kind()));
    }
    let label = if field.is_list() { "repeated " } else { "" };
    format!("{label}{}", name(&kind))
}
