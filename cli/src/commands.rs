//! The `frpc` subcommands as functions: each connects, does its one thing and returns what to
//! print, or a [`CliError`] that says what went wrong and which exit status to leave with.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use frpc::{Caller as _, ClientConfig, ConnectionConfig, Framing, Metadata, MetadataSlot};
use prost_reflect::{DynamicMessage, MethodDescriptor};

use crate::dynamic::{self, Decoded};
pub use crate::error::CliError;
use crate::error::other;
pub use crate::json::{parse_request, request_text, to_json};
use crate::schema::{self, Described};
use crate::stream::{self, Requests};

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
    /// TLS: `None` for plain TCP.
    pub tls: Option<Tls>,
}

/// How to connect over TLS.
#[derive(Debug, Clone, Default)]
pub struct Tls {
    /// A PEM file of the certificates to trust (default: the system's roots).
    pub ca: Option<PathBuf>,
    /// The name the server's certificate must carry (default: the host of the address).
    pub server_name: Option<String>,
}

impl Connect {
    /// Connects and returns a client carrying the timeout and metadata.
    pub async fn client(&self) -> Result<frpc::Client, CliError> {
        let config = ClientConfig::default()
            .connection(ConnectionConfig::default().framing(self.framing))
            .extensions(!self.no_extensions)
            .timeout(self.timeout);
        // `--timeout` bounds the first answer, so the connection too (and a TLS handshake).
        let config = match self.timeout {
            Some(limit) => config.connect_timeout(limit),
            None => config,
        };
        let connect_timeout = config.connect_timeout;
        let mut client = match &self.tls {
            None => frpc::Client::connect_with(self.addr.as_str(), config).await?,
            Some(tls) => {
                let name = crate::tls::server_name(&self.addr, tls.server_name.as_deref());
                let rustls = crate::tls::client_config(tls.ca.as_deref())?;
                frpc::Client::connect_tls(self.addr.as_str(), name, rustls, config).await?
            }
        };
        self.answered(&client, connect_timeout).await?;
        if !self.headers.is_empty() {
            client = client.with_metadata(headers_metadata(&self.headers)?);
        }
        Ok(client)
    }
}

impl Connect {
    /// Waits for the server's first answer, within the connect timeout: a server that closes
    /// the connection before answering (one at its `max_connections`, a framing mismatch) or
    /// never answers fails the connection, as grpcurl's dial does (exit 1), not a call.
    async fn answered(&self, client: &frpc::Client, limit: std::time::Duration) -> Result<(), CliError> {
        match tokio::time::timeout(limit, client.negotiation()).await {
            Ok(frpc::Negotiated::Closed(reason)) => {
                Err(CliError::Other(crate::error::flags_for_framings(format!(
                    "cannot connect to {}: the server closed the connection before answering: {reason}",
                    self.addr
                ))))
            }
            Ok(_) => Ok(()),
            Err(_) => Err(other(format!(
                "cannot connect to {}: no answer within {limit:?}",
                self.addr
            ))),
        }
    }
}

/// `-H key:value` headers as metadata, as grpcurl reads them: keys in lower case, and a
/// `-bin` key's value in base64 (standard or URL-safe, padded or not). A key given twice is
/// an error (one value per key).
fn headers_metadata(headers: &[String]) -> Result<Metadata, CliError> {
    use base64::Engine as _;
    let mut metadata = Metadata::new();
    for header in headers {
        let (key, value) = header
            .split_once(':')
            .ok_or_else(|| other(format!("header `{header}` is not `key:value`")))?;
        let (key, value) = (key.trim().to_ascii_lowercase(), value.trim());
        if metadata.contains_key(&key) {
            // grpcurl sends both values; frpc metadata holds one per key, so the first would be
            // silently lost.
            return Err(other(format!(
                "header `{key}` is given twice: frpc metadata holds one value per key"
            )));
        }
        if key.ends_with("-bin") {
            let engines = [
                base64::engine::general_purpose::STANDARD,
                base64::engine::general_purpose::STANDARD_NO_PAD,
                base64::engine::general_purpose::URL_SAFE,
                base64::engine::general_purpose::URL_SAFE_NO_PAD,
            ];
            let bytes = engines
                .iter()
                .find_map(|engine| engine.decode(value).ok())
                .ok_or_else(|| {
                    other(format!(
                        "header `{key}`: a -bin value is base64; `{value}` is not"
                    ))
                })?;
            metadata.insert_bin(&key, bytes).map_err(other)?;
        } else {
            metadata.insert(&key, value).map_err(other)?;
        }
    }
    Ok(metadata)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_read_as_grpcurl_reads_them() {
        let headers = [
            "User:Ann".to_string(),
            "trace-bin: AP8=".to_string(),
            "raw-bin:AP8".to_string(),
        ];
        let metadata = headers_metadata(&headers).unwrap();
        assert_eq!(metadata.get("user"), Some("Ann"));
        assert_eq!(metadata.get_bin("trace-bin"), Some(&[0u8, 255][..]));
        assert_eq!(metadata.get_bin("raw-bin"), Some(&[0u8, 255][..]));
        let err = headers_metadata(&["x-bin:@@".to_string()]).unwrap_err();
        assert!(err.to_string().contains("base64"), "{err}");
        let twice = ["Key:v1".to_string(), "key:v2".to_string()];
        let err = headers_metadata(&twice).unwrap_err();
        assert!(err.to_string().contains("`key` is given twice"), "{err}");
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
    pub async fn pool(&self, client: &frpc::Client) -> Result<Described, CliError> {
        if !self.protos.is_empty() {
            let pool = schema::compile(&self.protos, &self.includes).map_err(other)?;
            return Ok(Described::compiled(pool));
        }
        reflect(client).await
    }
}

/// The descriptors of every service a server serves, through the reflection extension.
pub async fn reflect(client: &frpc::Client) -> Result<Described, CliError> {
    let Some(set) = client.reflect().await? else {
        return Err(other(format!(
            "the server at {} does not offer reflection (a Go fRPC server, or extensions off): \
             pass its schema with --proto FILE [-I DIR]",
            client.peer_addr()
        )));
    };
    let described = schema::from_reflection(&set).map_err(other)?;
    // A server of Rust-first services (and health alone) has no descriptors to give.
    if described.pool.services().len() == 0 {
        return Err(other(format!(
            "the server at {} describes no service through reflection (Rust-first services \
             have no descriptors): pass its schema with --proto FILE [-I DIR]",
            client.peer_addr()
        )));
    }
    Ok(described)
}

/// Makes one unary call of `method` (served on operation `op`) with a dynamic request, in
/// polyglot (what every fRPC server reads), and returns the reply.
pub async fn call_unary(
    client: &frpc::Client,
    (method, op): (&MethodDescriptor, u16),
    request: &DynamicMessage,
) -> Result<DynamicMessage, CliError> {
    let body = dynamic::encode(request).map_err(other)?;
    let reply = client.call(op, |_| body).await?;
    match dynamic::decode(&method.output(), &reply.body).map_err(other)? {
        Decoded::Message(message) => Ok(message),
        Decoded::Error(text) => Err(CliError::Status {
            code: reply.code.unwrap_or(frpc::Code::Unknown),
            message: text,
        }),
    }
}

/// What `frpc call` calls.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// `package.Service/Method`.
    pub method: &'a str,
    /// The request's text (`None` or `-`: standard input; `@file`: a file's).
    pub request: Option<&'a str>,
    /// Where the server's response metadata goes, if it is wanted (`-v`).
    pub response_metadata: Option<&'a Verbose>,
}

/// What `frpc call -v` prints after the call: the response metadata, once a call was made.
#[derive(Debug, Default)]
pub struct Verbose {
    /// Filled by the call with what the server sent.
    slot: MetadataSlot,
    /// Whether the call was made: a command that failed before it (a bad `-H`, an unknown
    /// method) has no response to show, not an empty one.
    called: AtomicBool,
}

impl Verbose {
    /// The text to print ([`metadata_text`]), or `None` when no call was made.
    pub fn text(&self) -> Option<String> {
        self.called
            .load(Ordering::Relaxed)
            .then(|| metadata_text(self.slot.take()))
    }

    /// Marks the call made.
    fn calling(&self) {
        self.called.store(true, Ordering::Relaxed);
    }
}

/// `frpc call`: each reply as a line of JSON, handed to `print` as it arrives. A unary or
/// server-streaming method takes one request (the argument, `@file`, or all of standard
/// input); client and bidi streams take one per JSON value of the argument or file, or one per
/// line of standard input, sent as it is read.
pub async fn call(
    connect: &Connect,
    schema: &Schema,
    Call {
        method,
        request,
        response_metadata,
    }: Call<'_>,
    mut print: impl FnMut(&str),
) -> Result<(), CliError> {
    let mut client = connect.client().await?;
    let pool = schema.pool(&client).await?;
    let method = schema::method(&pool, method).map_err(other)?;
    let op = pool.operation(&method).map_err(other)?;
    let unary = !method.is_client_streaming() && !method.is_server_streaming();
    let mut requests = match (method.is_client_streaming(), request) {
        (true, None | Some("-")) => Requests::stdin(&method),
        (true, Some(_)) => Requests::from_text(&method, &request_text(request)?)?,
        (false, _) => Requests::Given(vec![one_request(&method, &request_text(request)?)?].into_iter()),
    };
    if let Some(verbose) = response_metadata {
        // After the reflection call, so the slot keeps the method's own.
        client = client.with_response_metadata(&verbose.slot);
        verbose.calling();
    }
    if unary {
        let request = requests
            .next()
            .await?
            .unwrap_or_else(|| DynamicMessage::new(method.input()));
        print(&to_json(&call_unary(&client, (&method, op), &request).await?)?);
        return Ok(());
    }
    stream::call(&client, (&method, op), requests, print).await
}

/// Response metadata as `frpc call -v` prints it: `Response metadata:`, then `key: value` per
/// line (a `-bin` key's value in base64, as grpcurl shows it), or `(none)`.
pub fn metadata_text(metadata: Option<Metadata>) -> String {
    use base64::Engine as _;
    let mut text = String::from("Response metadata:\n");
    let metadata = metadata.unwrap_or_default();
    if metadata.is_empty() {
        text.push_str("(none)\n");
    }
    for (key, value) in metadata.iter() {
        let value = match key.ends_with("-bin") {
            true => base64::engine::general_purpose::STANDARD.encode(value),
            false => String::from_utf8_lossy(value).into_owned(),
        };
        text.push_str(&format!("{key}: {value}\n"));
    }
    text
}

/// The one request of a unary or server-streaming method: exactly one JSON value. Text that
/// is not JSON, after the value too, is the parser's error, not a count of requests.
fn one_request(method: &MethodDescriptor, text: &str) -> Result<DynamicMessage, CliError> {
    let values = serde_json::Deserializer::from_str(text).into_iter::<serde_json::Value>();
    let values = values
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| other(format!("the request is not JSON: {e}")))?;
    match values.as_slice() {
        [] => parse_request(method, ""),
        [value] => parse_request(method, &value.to_string()),
        _ => Err(other(format!(
            "`{}` takes one request, not {}: only client and bidi streams take several",
            method.full_name(),
            values.len()
        ))),
    }
}

/// `frpc list`: every service the server serves (as its reflection says; with `--proto`, every
/// service of the files), one per line.
pub async fn list(connect: &Connect, schema: &Schema) -> Result<String, CliError> {
    let client = connect.client().await?;
    let pool = schema.pool(&client).await?;
    let mut names: Vec<String> = pool.services().map(|s| s.full_name().to_string()).collect();
    names.sort();
    Ok(names.join("\n"))
}

/// `frpc describe`: a service's methods (kind, types, operation number), one method, a
/// message's fields (its oneofs and `optional`s as declared) or an enum's values.
pub async fn describe(connect: &Connect, schema: &Schema, name: &str) -> Result<String, CliError> {
    let client = connect.client().await?;
    let pool = schema.pool(&client).await?;
    let name = name.trim_start_matches('.');
    if let Some(service) = pool.get_service_by_name(name) {
        let mut out = format!("service {} {{\n", service.full_name());
        for m in service.methods() {
            out.push_str(&format!("  {}\n", rpc_line(&pool, &m)?));
        }
        out.push('}');
        return Ok(out);
    }
    if let Some(message) = pool.get_message_by_name(name) {
        return Ok(describe_message(&message));
    }
    if let Some(enumeration) = pool.get_enum_by_name(name) {
        let mut out = format!("enum {} {{\n", enumeration.full_name());
        // In declaration order, which is what polyglot numbers values by.
        for value in &enumeration.enum_descriptor_proto().value {
            out.push_str(&format!("  {} = {};\n", value.name(), value.number()));
        }
        out.push('}');
        return Ok(out);
    }
    if let Ok(method) = schema::method(&pool, name) {
        return rpc_line(&pool, &method);
    }
    Err(other(format!(
        "no service, method, message or enum `{name}` in the schema"
    )))
}

/// A health check that got no answer within `patience`.
fn silent_server(connect: &Connect, patience: std::time::Duration) -> CliError {
    CliError::Status {
        code: frpc::Code::DeadlineExceeded,
        message: format!(
            "no answer within {patience:?}: does {} serve frpc's health service? \
             (Go fRPC servers have none)",
            connect.addr
        ),
    }
}

/// A method as a .proto declares it, with its operation number and kind; a method the server
/// does not serve is an error.
fn rpc_line(pool: &Described, m: &MethodDescriptor) -> Result<String, CliError> {
    let stream = |yes: bool| if yes { "stream " } else { "" };
    Ok(format!(
        "rpc {}({}{}) returns ({}{}); // operation {}, {}",
        m.name(),
        stream(m.is_client_streaming()),
        m.input().full_name(),
        stream(m.is_server_streaming()),
        m.output().full_name(),
        pool.operation(m).map_err(other)?,
        schema::kind(m),
    ))
}

/// A message's fields as its .proto declares them: the members of each oneof inside it (at
/// the place of its first member), proto3 `optional` fields marked.
fn describe_message(message: &prost_reflect::MessageDescriptor) -> String {
    let mut out = format!("message {} {{\n", message.full_name());
    let mut oneofs_done = Vec::new();
    for f in message.fields() {
        let line =
            |f: &prost_reflect::FieldDescriptor| format!("{} {} = {};", field_type(f), f.name(), f.number());
        match f.containing_oneof().filter(|o| !o.is_synthetic()) {
            Some(oneof) if oneofs_done.contains(&oneof.name().to_string()) => {}
            Some(oneof) => {
                out.push_str(&format!("  oneof {} {{\n", oneof.name()));
                for member in oneof.fields() {
                    out.push_str(&format!("    {}\n", line(&member)));
                }
                out.push_str("  }\n");
                oneofs_done.push(oneof.name().to_string());
            }
            None if f.field_descriptor_proto().proto3_optional() => {
                out.push_str(&format!("  optional {}\n", line(&f)));
            }
            None => out.push_str(&format!("  {}\n", line(&f))),
        }
    }
    out.push('}');
    out
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

/// The name grpc.health.v1 gives a serving status (`SERVING`, `NOT_SERVING`, …).
pub fn status_name(status: frpc::health::ServingStatus) -> &'static str {
    use frpc::health::ServingStatus;
    match status {
        ServingStatus::Unknown => "UNKNOWN",
        ServingStatus::Serving => "SERVING",
        ServingStatus::NotServing => "NOT_SERVING",
        ServingStatus::ServiceUnknown => "SERVICE_UNKNOWN",
    }
}

/// How long `frpc health` waits for a first answer when no `--timeout` is given: servers
/// without the health service that do not answer unknown operations (Go fRPC's) stay silent.
pub const HEALTH_PATIENCE: Duration = Duration::from_secs(5);

/// `frpc health`: the serving status of `service` (`""`: the whole server), handed to `print`;
/// with `watch`, every change until the server ends the watch. Returns whether the last
/// status was `SERVING` (a watch the server ended while `SERVING` is an UNAVAILABLE error).
/// The first answer must come within the timeout ([`HEALTH_PATIENCE`] by default); a watch
/// then runs as long as the server keeps it.
pub async fn health(
    connect: &Connect,
    service: &str,
    watch: bool,
    mut print: impl FnMut(&str),
) -> Result<bool, CliError> {
    use frpc::health::{HealthClient, ServingStatus};
    let patience = connect.timeout.unwrap_or(HEALTH_PATIENCE);
    let untimed = Connect {
        timeout: None,
        ..connect.clone()
    };
    // The connection's first answer within the patience too (`--timeout` bounds connecting).
    let connected = tokio::time::timeout(patience, untimed.client()).await;
    let health = HealthClient::new(connected.map_err(|_| silent_server(connect, patience))??);
    let silent = || silent_server(connect, patience);
    let first = async {
        if !watch {
            return Ok((health.check(service).await?, None));
        }
        let mut updates = health.watch(service).await?;
        let first = updates.message().await?;
        Ok::<_, CliError>((first.unwrap_or(ServingStatus::Unknown), Some(updates)))
    };
    let (mut last, updates) = tokio::time::timeout(patience, first)
        .await
        .map_err(|_| silent())??;
    print(status_name(last));
    if let Some(mut updates) = updates {
        while let Some(update) = updates.message().await? {
            last = update;
            print(status_name(last));
        }
        // The server ended the watch: it is going away (a shutdown ends watches), so a watch
        // never ends in success; one whose last word was SERVING ends UNAVAILABLE.
        if last == ServingStatus::Serving {
            return Err(CliError::Status {
                code: frpc::Code::Unavailable,
                message: "the server ended the watch".into(),
            });
        }
    }
    Ok(last == ServingStatus::Serving)
}
