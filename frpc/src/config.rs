//! Tunables, each in a `Config` struct whose `Default` matches Go fRPC where Go has a value.
//! A leaf: it imports nothing from the crate.

use std::time::Duration;

use frpc_wire::{DEFAULT_MAX_CONTENT_LENGTH, Framing};

/// The longest `ping_interval` and `idle_timeout` accepted (a year): the timers cannot go further.
pub(crate) const MAX_INTERVAL: Duration = Duration::from_secs(365 * 24 * 3600);

/// The largest `stream_window` accepted: a stream buffers its whole window.
const MAX_STREAM_WINDOW: u32 = 1 << 20;

/// The largest count sizing a queue or a set of permits (`write_queue`, `stream_buffer`,
/// `max_inflight`, `max_inflight_per_connection`, `Concurrency::Limited`): tokio's semaphores
/// and bounded channels panic beyond `usize::MAX >> 3` (`usize::MAX` read as "no limit" took
/// the server down at `build()`, or each connection's task), and a round bound, the same on
/// 32-bit targets, reads better in an error than tokio's. Far beyond any memory: a waiting
/// call alone costs about 3 KiB.
const MAX_COUNT: usize = 1 << 28;

/// The longest call timeout honoured (a year): a longer one counts as a year. `Instant + limit`
/// overflows near `Duration::MAX`, and tonic refuses a `grpc-timeout` over about 11,000 years;
/// a year is the `stream_idle_timeout` bound, and no call outlives it in practice.
pub(crate) const MAX_CALL_TIMEOUT: Duration = MAX_INTERVAL;

/// One builder-style setter per field: `fn field(self, value) -> Self`; optional fields take
/// `impl Into<Option<T>>` (a value or `None`).
macro_rules! setters {
    ($config:ty { $($field:ident: $ty:ty),* $(,)? }) => {
        impl $config {
            $(
                #[doc = concat!("Sets [`", stringify!($field), "`](#structfield.", stringify!($field),
                    ") (its default is in the field's documentation).")]
                #[must_use]
                pub fn $field(mut self, $field: $ty) -> Self {
                    self.$field = $field.into();
                    self
                }
            )*
        }
    };
}

setters!(ConnectionConfig {
    framing: Framing,
    max_content_length: u32,
    ping_interval: Duration,
    idle_timeout: Duration,
    nodelay: bool,
    write_queue: usize,
    write_queue_bytes: usize,
    stream_buffer: usize,
    stream_window: u32,
    stream_window_bytes: u32,
    max_buffered_bytes: usize,
    max_streams: usize,
    max_metadata_size: usize,
    decode: DecodeLimits,
});

setters!(DecodeLimits {
    max_depth: u32,
    memory_factor: usize,
});

setters!(ClientConfig {
    connection: ConnectionConfig,
    timeout: impl Into<Option<Duration>>,
    connect_timeout: Duration,
    stream_idle_timeout: impl Into<Option<Duration>>,
    extensions: bool,
    protobuf: bool,
    strict_metadata: bool,
});

setters!(ServerConfig {
    connection: ConnectionConfig,
    concurrency: Concurrency,
    max_connections: usize,
    max_connections_per_address: usize,
    max_inflight_per_connection: usize,
    max_inflight: usize,
    max_open_streams: usize,
    max_buffered_stream_bytes: usize,
    extensions: bool,
    protobuf: bool,
    reflection: bool,
    shutdown_grace: Duration,
});

/// Settings of one connection, shared by clients and servers.
///
/// **Validity.** [`crate::Server::builder`]'s `build()` and every `Client::connect*` refuse a
/// configuration breaking these rules with [`crate::Error::Config`] naming the field:
/// - `ping_interval` and `idle_timeout` are above zero and at most a year;
/// - `max_content_length`, `write_queue`, `write_queue_bytes`, `stream_buffer`,
///   `stream_window`, `stream_window_bytes`, `max_buffered_bytes`, `max_metadata_size`,
///   `decode.max_depth`, `decode.memory_factor` and `max_streams` are at least 1;
///   `stream_window` is at most 1,048,576; `write_queue` and `stream_buffer` are at most
///   268,435,456 (2^28: they size tokio channels, which cannot be larger than `usize::MAX >> 3`).
///
/// The idle timeout is checked on each ping tick, so the silence that drops a peer is
/// `idle_timeout` rounded up to a whole number of `ping_interval`s (at least one). An
/// `idle_timeout` below `ping_interval` is therefore allowed: it means "one silent interval"
/// (tests use a very long `ping_interval` to keep heartbeats out of the way).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ConnectionConfig {
    /// Header layout. Default: [`Framing::Frisbee`] (frisbee-go ≥ v0.11, 10-byte header).
    pub framing: Framing,
    /// Largest packet content accepted or sent, in bytes. Default: 5,242,880 (Go's 5 MiB).
    pub max_content_length: u32,
    /// How often a PING is sent. Default: 500 ms (Go's `DefaultPingInterval`).
    pub ping_interval: Duration,
    /// A peer that sends nothing at all for this long is dropped. Default: 5 s (Go's deadline).
    pub idle_timeout: Duration,
    /// Set `TCP_NODELAY`. Default: `true`.
    pub nodelay: bool,
    /// Packets queued for the writer before senders wait (backpressure). Default: 1024. At
    /// least 1, at most 268,435,456.
    pub write_queue: usize,
    /// Bytes of packets queued for the writer before senders wait: what a peer that stops
    /// reading can make this side hold in replies and stream messages, beyond the socket's
    /// buffers (a packet larger than this goes alone, once the queue is empty). Without it, 1,024
    /// queued messages of 1 MiB held 1 GiB for a peer that read nothing. Default: 4 MiB. At
    /// least 1.
    pub write_queue_bytes: usize,
    /// Messages buffered per inbound stream without flow control (with Go peers, or
    /// extensions off): while a consumer is this far behind, its connection is not read (TCP's
    /// window holds the peer back, as Go's reader blocks; nothing is lost, and the connection's
    /// other calls wait). Default: 1024. At least 1, at most 268,435,456.
    pub stream_buffer: usize,
    /// The receive window of each flow-controlled stream, in messages (frpc peers that
    /// negotiated flow control; see `docs/extensions.md`): the peer sends at most this many
    /// messages ahead of what this side's consumer has read, and its `send` waits for more
    /// credit, which is given back every quarter window read. Such a stream buffers its whole
    /// window, so it never overflows: its memory is bounded by `stream_window` ×
    /// `max_content_length`, and, with windows in bytes too (`stream_window_bytes`), by that
    /// plus one message. Default: 1024 (the `stream_buffer` default, so a stream
    /// may hold as much as without flow control). At least 1, at most 1,048,576.
    pub stream_window: u32,
    /// The receive window of each flow-controlled stream in bytes, beside `stream_window` in
    /// messages, between frpc peers that negotiated flow control in bytes (`docs/extensions.md`
    /// §9): the peer sends while its byte credit is above zero, so a stream buffers at most
    /// this plus one message. A message larger than the window still passes, alone. Like
    /// HTTP/2's stream window, given back every quarter window read. On a server's gRPC face
    /// it also bounds the replies a streaming handler sends ahead of HTTP/2 taking them (the
    /// rest wait for the client's window; one larger reply goes alone). Default: 1,048,576 (1
    /// MiB, hyper's HTTP/2 default; h2's protocol default is 64 KiB). At least 1.
    pub stream_window_bytes: u32,
    /// Bytes of inbound stream messages one connection may hold buffered (read from the socket,
    /// not yet taken by their consumers), over all its streams, with peers whose streams have
    /// no windows in bytes (plain fRPC peers such as Go's, frpc peers from before byte windows;
    /// with byte windows each stream holds at most `stream_window_bytes` and one message, and
    /// once a stream of the connection has none, opened before they were negotiated or with
    /// a window of 0, the connection takes the budget again). When they reach it, the
    /// connection is not read until consumers catch up: TCP's own window then holds the peer
    /// back, nothing is lost, and the idle timeout does not count the wait (the peer's packets
    /// wait unread). A message larger than the budget takes
    /// all of it. Default: 16,777,216 (16 MiB: sixteen full byte windows). At least 1.
    pub max_buffered_bytes: usize,
    /// Streams open at once on one connection; more are refused. Default: 4096.
    pub max_streams: usize,
    /// The largest metadata block (the METADATA field of an extension header) accepted from the
    /// peer, in bytes, counted as HTTP/2 counts a header list: each entry's key and value plus
    /// 32 bytes (what keeps a parsed block's memory near its size). A request or stream open
    /// over it is answered with RESOURCE_EXHAUSTED naming the limit; a reply over it fails its
    /// call. Parsing is linear in the block's size. Default: 8,192 (gRPC C-core's default
    /// metadata limit, counted the same way; Go's gRPC allows 16 KiB). At least 1. On a
    /// server's gRPC face (`Builder::grpc`) it bounds a request's metadata too: its HTTP/2
    /// header list may hold this plus 1 KiB for gRPC's own headers, over which the request is
    /// refused with HTTP 431 (see `GrpcServer::max_metadata_size`).
    pub max_metadata_size: usize,
    /// What decoding one of the peer's messages may cost: nesting depth and memory. Default:
    /// [`DecodeLimits::default`] (100 levels; 10 × the encoded size + 64 KiB).
    pub decode: DecodeLimits,
}

/// What decoding one message from the peer may cost, in polyglot (fRPC's encoding, what Go
/// peers send) and, for the depth, as far as prost allows in protobuf.
///
/// Go fRPC accepts messages nested to any depth and allocates whatever a message asks for; frpc
/// bounds both so that no peer can overflow a stack or make a small message cost a lot of
/// memory. A message that needs more fails to decode: a server answers the call (or stream)
/// with INVALID_ARGUMENT, a client's call fails with the decode error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct DecodeLimits {
    /// How deep messages may nest (a top-level message is depth 1). Default: 100 (protobuf's
    /// usual limit). Raise it to serve or call a Go peer that nests deeper; each level costs
    /// a stack frame of the decoding task. Protobuf-encoded messages (between frpc peers) keep
    /// prost's fixed limit of 100. At least 1.
    pub max_depth: u32,
    /// The memory budget of the vectors, maps and boxes a polyglot message allocates, as this
    /// many bytes per encoded byte plus 64 KiB; strings and copied bytes cost at most the
    /// encoded size again, so a decoded message never costs more than (`memory_factor` + 1) ×
    /// its encoded size + 64 KiB. Default: 10. At least 1.
    pub memory_factor: usize,
}

impl Default for DecodeLimits {
    fn default() -> Self {
        DecodeLimits {
            max_depth: frpc_wire::polyglot::DEFAULT_MAX_DEPTH,
            memory_factor: frpc_wire::polyglot::MEMORY_FACTOR,
        }
    }
}

impl DecodeLimits {
    /// The memory budget for a message of `len` encoded bytes.
    pub fn memory_budget(&self, len: usize) -> usize {
        len.saturating_mul(self.memory_factor)
            .saturating_add(frpc_wire::polyglot::MEMORY_SLACK)
    }
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        ConnectionConfig {
            framing: Framing::Frisbee,
            max_content_length: DEFAULT_MAX_CONTENT_LENGTH,
            ping_interval: Duration::from_millis(500),
            idle_timeout: Duration::from_secs(5),
            nodelay: true,
            write_queue: 1024,
            write_queue_bytes: 4 << 20,
            stream_buffer: 1024,
            stream_window: 1024,
            stream_window_bytes: 1 << 20,
            max_buffered_bytes: 16 << 20,
            max_streams: 4096,
            max_metadata_size: 8 * 1024,
            decode: DecodeLimits::default(),
        }
    }
}

impl ConnectionConfig {
    /// The first rule (see the type's doc) this configuration breaks, naming the field.
    pub(crate) fn check(&self) -> Result<(), String> {
        positive("connection.ping_interval", self.ping_interval)?;
        positive("connection.idle_timeout", self.idle_timeout)?;
        for (field, value) in [
            ("connection.ping_interval", self.ping_interval),
            ("connection.idle_timeout", self.idle_timeout),
        ] {
            if value > MAX_INTERVAL {
                return Err(format!(
                    "{field} is {value:?}; the most is a year ({MAX_INTERVAL:?})"
                ));
            }
        }
        at_least_one("connection.max_content_length", self.max_content_length as usize)?;
        count("connection.write_queue", self.write_queue)?;
        at_least_one("connection.write_queue_bytes", self.write_queue_bytes)?;
        count("connection.stream_buffer", self.stream_buffer)?;
        at_least_one("connection.stream_window", self.stream_window as usize)?;
        if self.stream_window > MAX_STREAM_WINDOW {
            return Err(format!(
                "connection.stream_window is {}; the most is {MAX_STREAM_WINDOW} messages",
                self.stream_window
            ));
        }
        at_least_one(
            "connection.stream_window_bytes",
            self.stream_window_bytes as usize,
        )?;
        at_least_one("connection.max_buffered_bytes", self.max_buffered_bytes)?;
        at_least_one("connection.max_metadata_size", self.max_metadata_size)?;
        at_least_one("connection.decode.max_depth", self.decode.max_depth as usize)?;
        at_least_one("connection.decode.memory_factor", self.decode.memory_factor)?;
        at_least_one("connection.max_streams", self.max_streams)
    }
}

fn positive(field: &str, value: Duration) -> Result<(), String> {
    match value.is_zero() {
        true => Err(format!("{field} is zero; it must be above zero")),
        false => Ok(()),
    }
}

fn at_least_one(field: &str, value: usize) -> Result<(), String> {
    match value {
        0 => Err(format!("{field} is 0; it must be at least 1")),
        _ => Ok(()),
    }
}

/// A count that sizes a queue or permits: at least 1, at most [`MAX_COUNT`].
fn count(field: &str, value: usize) -> Result<(), String> {
    at_least_one(field, value)?;
    match value > MAX_COUNT {
        true => Err(format!(
            "{field} is {value}; the most is {MAX_COUNT} (2^28; it sizes a queue or permits)"
        )),
        false => Ok(()),
    }
}

/// Settings of a [`crate::Client`].
///
/// **Validity.** `Client::connect*` refuse with [`crate::Error::Config`] a zero `timeout`,
/// `connect_timeout` or `stream_idle_timeout`, a `stream_idle_timeout` over a year, and an
/// invalid [`ConnectionConfig`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClientConfig {
    /// The connection's settings. Default: [`ConnectionConfig::default`].
    pub connection: ConnectionConfig,
    /// The deadline of every call that sets none (`with_timeout`), for every kind of call: a
    /// unary call's whole exchange (waiting for room in the write queue, sending, the reply),
    /// and a stream's whole life from its opening (with an frpc server, also its
    /// `ctx.deadline()`). Long-lived streams (watches) want `None` here and a
    /// `stream_idle_timeout` instead. Default: `None` (wait until the reply or the connection
    /// closes, like Go). A timeout over a year counts as a year (a deadline that far is none;
    /// fRPC's wire carries at most about 49 days, the rest is enforced on this side).
    pub timeout: Option<Duration>,
    /// How long `Client::connect*` may spend resolving and connecting before failing with
    /// [`crate::Error::Connect`] (kind `TimedOut`); `connect_tls` then allows the TLS handshake
    /// as long again. Default: 10 s.
    pub connect_timeout: Duration,
    /// How long a client stream may wait for its next message, received or sent (room in the
    /// write queue, or flow-control credit from an frpc server), before failing with
    /// [`crate::Error::Timeout`], which ends the stream.
    /// Default: `None` (streams wait as long as the connection lives, like Go).
    pub stream_idle_timeout: Option<Duration>,
    /// Offer frpc's extensions (cancellation, deadlines, status codes, metadata, stream flow
    /// control and open acknowledgement; see `docs/extensions.md`) with one packet right after
    /// connecting. A Go fRPC server ignores
    /// the offer and everything stays plain fRPC; an frpc server answers, and from its answer
    /// on both sides use them. `false`: the client writes exactly what a Go client writes.
    /// Default: `true`.
    pub extensions: bool,
    /// Offer the protobuf extension with the others (ignored when `extensions` is off): with a
    /// server that accepts it, messages of calls and streams started from then on travel in
    /// their standard protobuf encoding (frpc-codegen's messages; Rust-first ones stay
    /// polyglot unless `#[frpc(protobuf)]`), so schemas evolve by field number (docs/guide/schema-evolution.md). `false`:
    /// polyglot, as with Go. Default: `true`.
    pub protobuf: bool,
    /// A call carrying metadata to a peer that does not take it (a Go server, or extensions
    /// off on either side) fails with [`crate::Error::Metadata`] instead of going out without
    /// its metadata. Default: `false`.
    pub strict_metadata: bool,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            connection: ConnectionConfig::default(),
            timeout: None,
            connect_timeout: Duration::from_secs(10),
            stream_idle_timeout: None,
            extensions: true,
            protobuf: true,
            strict_metadata: false,
        }
    }
}

impl ClientConfig {
    /// The first rule (see the type's doc) this configuration breaks, naming the field.
    pub(crate) fn check(&self) -> Result<(), String> {
        self.connection.check()?;
        positive("connect_timeout", self.connect_timeout)?;
        if let Some(timeout) = self.timeout {
            positive("timeout", timeout)?;
        }
        if let Some(idle) = self.stream_idle_timeout {
            positive("stream_idle_timeout", idle)?;
            if idle > MAX_INTERVAL {
                return Err(format!("stream_idle_timeout is {idle:?}; the most is a year"));
            }
        }
        Ok(())
    }
}

/// How a server runs the handlers of one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Concurrency {
    /// A task per RPC; replies may leave out of order. Go's default (concurrency 0). The default.
    #[default]
    PerRpc,
    /// A connection's RPCs run one after another, in order, on its own task (Go's concurrency 1):
    /// the lowest latency when a client keeps one call in flight.
    Inline,
    /// A task per RPC, at most this many at once across all connections of the server. A call
    /// beyond the cap waits for a place in arrival order, where its client can still cancel it
    /// and its deadline still ends it (a plain peer's call waits on its connection's reader).
    /// At least 1, at most 268,435,456.
    Limited(usize),
}

/// Settings of a [`crate::Server`].
///
/// The config structs (this one, [`ClientConfig`], [`ConnectionConfig`], [`DecodeLimits`]) are
/// `#[non_exhaustive]`, so a release can add settings without breaking anyone:
/// start from `default()` and chain setters named after the fields (or assign the public
/// fields of a `let mut` binding); struct literals do not compile outside frpc.
///
/// ```
/// use std::time::Duration;
///
/// let config = frpc::ServerConfig::default()
///     .max_connections(1_000)
///     .shutdown_grace(Duration::from_secs(2))
///     .connection(frpc::ConnectionConfig::default().framing(frpc::Framing::Legacy));
/// assert_eq!(config.max_connections, 1_000);
///
/// let mut client = frpc::ClientConfig::default().timeout(Duration::from_secs(1));
/// client.connection.stream_window = 64; // fields stay public
/// assert_eq!(client.timeout, Some(Duration::from_secs(1)));
/// ```
///
/// **Validity.** `build()` refuses with [`crate::Error::Config`] `max_connections`,
/// `max_connections_per_address`, `max_inflight_per_connection`, `max_inflight`, `max_open_streams`,
/// `max_buffered_stream_bytes` or [`Concurrency::Limited`] at 0; `max_inflight_per_connection`,
/// `max_inflight` or `Limited(n)` over 268,435,456 (2^28: they size tokio semaphores, which
/// cannot be larger than `usize::MAX >> 3`; the other limits take `usize::MAX` as "no limit");
/// and an invalid [`ConnectionConfig`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerConfig {
    /// Each connection's settings. Default: [`ConnectionConfig::default`].
    pub connection: ConnectionConfig,
    /// Handler scheduling. Default: [`Concurrency::PerRpc`].
    pub concurrency: Concurrency,
    /// Connections served at once; further ones are closed at accept. Default: 10,000.
    pub max_connections: usize,
    /// TCP connections from one IP address served at once; its further ones are closed at
    /// accept (logged). One peer can otherwise take every `max_connections` place: a
    /// connection that sends a byte now and then is not idle (a packet's header announcing
    /// 5 MiB, then a byte every 2 s: 10,000 connections for 5 kB/s). Default: no limit
    /// (`usize::MAX`), as clients behind one proxy or NAT share an address: set it where
    /// clients have their own (say 100). At least 1. Unix sockets and `serve_io` are not
    /// counted.
    pub max_connections_per_address: usize,
    /// RPCs running at once on one connection; while at the limit, the connection is not read
    /// (TCP backpressure). Default: 4096. At least 1, at most 268,435,456.
    pub max_inflight_per_connection: usize,
    /// Unary calls whose handlers wait (the ones that did not finish on their first poll, each
    /// in a task of its own under `PerRpc`) at once across every connection of the server.
    /// While at the limit, a connection with another such call is not read until one finishes
    /// (TCP backpressure, as at `max_inflight_per_connection`); others go on as long as their
    /// handlers finish at once. A waiting call costs about 3 KiB before its request and what
    /// its handler holds (measured with 1-byte requests: 112 connections × 4,096 calls held
    /// 1.2 GiB when only the per-connection limit applied), so the default bounds that to
    /// about 48 MiB. `Concurrency::Limited(n)` caps running handlers at n, and its calls waiting for
    /// a place count here; `Inline` handlers wait on
    /// their connection's reader, one per connection. Streams are counted by
    /// `max_open_streams`. Default: 16,384. At least 1, at most 268,435,456.
    pub max_inflight: usize,
    /// Streams open at once across every connection of the server (each connection also has
    /// its own `connection.max_streams`); a stream opened beyond it is refused with
    /// RESOURCE_EXHAUSTED (Go clients get its text) and the client may
    /// retry later. An open stream costs about 12 KiB before any message (its handler's task
    /// and future, its inbound buffer and state: measured by the `flow_budgets` test), so the
    /// default bounds that to about 96 MiB. With flow control (frpc peers) a stream buffers at
    /// most `connection.stream_window` messages and `connection.stream_window_bytes` bytes
    /// (plus one message); in bytes, inbound stream data is bounded across the server by
    /// `max_buffered_stream_bytes`. Default: 8,192. At least 1.
    pub max_open_streams: usize,
    /// Bytes of inbound stream messages buffered at once across every connection of the server
    /// (messages received and not yet read by their handlers). While it is full the server
    /// stops reading the connection whose message does not fit (TCP backpressure), until
    /// handlers read: a well-behaved peer waits and loses nothing. A message larger than the
    /// whole budget waits until it is the only one. Inbound stream data therefore costs at most
    /// this much, plus one message per stream a handler holds. Default: 64 MiB. At least 1.
    pub max_buffered_stream_bytes: usize,
    /// Answer an frpc client's extension offer (cancellation, deadlines, status codes,
    /// metadata, stream flow control and open acknowledgement; see `docs/extensions.md`). Go clients never offer, so they always get plain
    /// fRPC. `false`: offers are ignored as a Go server ignores them. Default: `true`.
    pub extensions: bool,
    /// Accept the protobuf extension when a client offers it (with `extensions` on, and only if
    /// every service's message types have a protobuf encoding: a Rust-first service's do not
    /// unless they are `#[frpc(protobuf)]`, the health service's do):
    /// then that client's protobuf requests are answered in protobuf, and the streams it opens
    /// for protobuf carry protobuf both ways. `false`: the connection stays polyglot, as with
    /// Go clients (who never offer). Default: `true`.
    pub protobuf: bool,
    /// Describe the served services to anyone who asks: the fRPC reflection extension
    /// (`frpc list`, `Client::reflect`) and, with `Builder::grpc` (feature `grpc`), gRPC's
    /// `grpc.reflection.v1`/`v1alpha` (`grpcurl list`, `describe`). Reflection is answered
    /// before routing: neither layers nor interceptors see it, so a server whose interceptor
    /// checks credentials still describes its schema to a client without any. `false` turns it
    /// off on both faces (the fRPC answer is empty, as from a server of Rust-first services;
    /// gRPC's is `UNIMPLEMENTED`, as for any service not served). Default: `true`.
    pub reflection: bool,
    /// How long a shutting-down server (`serve_with_shutdown`) waits for running calls. When
    /// shutdown begins the server refuses calls and streams started from then on with
    /// UNAVAILABLE (it reads on, as HTTP/2 after its GOAWAY), and its streams' `send`s fail
    /// with [`crate::Error::ShuttingDown`]; unary calls and client-streaming replies still
    /// answer (client streams still sending deliver their requests). Once the grace is over,
    /// handlers'
    /// [`crate::Context::cancelled`] fires and every connection is closed. `Duration::ZERO`:
    /// cancel and close at once. Default: 5 s.
    pub shutdown_grace: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            connection: ConnectionConfig::default(),
            concurrency: Concurrency::PerRpc,
            max_connections: 10_000,
            max_connections_per_address: usize::MAX,
            max_inflight_per_connection: 4096,
            max_inflight: 16_384,
            max_open_streams: 8_192,
            max_buffered_stream_bytes: 64 << 20,
            extensions: true,
            protobuf: true,
            reflection: true,
            shutdown_grace: Duration::from_secs(5),
        }
    }
}

impl ServerConfig {
    /// The first rule (see the type's doc) this configuration breaks, naming the field.
    pub(crate) fn check(&self) -> Result<(), String> {
        self.connection.check()?;
        at_least_one("max_connections", self.max_connections)?;
        at_least_one("max_connections_per_address", self.max_connections_per_address)?;
        count("max_inflight_per_connection", self.max_inflight_per_connection)?;
        count("max_inflight", self.max_inflight)?;
        at_least_one("max_open_streams", self.max_open_streams)?;
        at_least_one("max_buffered_stream_bytes", self.max_buffered_stream_bytes)?;
        match self.concurrency {
            Concurrency::Limited(0) => Err("concurrency is Limited(0); the limit must be at least 1".into()),
            Concurrency::Limited(n) if n > MAX_COUNT => Err(format!(
                "concurrency is Limited({n}); the most is Limited({MAX_COUNT}) (2^28)"
            )),
            _ => Ok(()),
        }
    }
}
