//! Tunables, each in a `Config` struct whose `Default` matches Go fRPC where Go has a value.
//! A leaf: it imports nothing from the crate.

use std::time::Duration;

use frpc_wire::{DEFAULT_MAX_CONTENT_LENGTH, Framing};

/// Settings of one connection, shared by clients and servers.
#[derive(Debug, Clone)]
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
    /// Packets queued for the writer before senders wait (backpressure). Default: 1024.
    pub write_queue: usize,
    /// Messages buffered per inbound stream before it overflows. Default: 1024.
    pub stream_buffer: usize,
    /// Streams open at once on one connection; more are refused. Default: 4096.
    pub max_streams: usize,
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
            stream_buffer: 1024,
            max_streams: 4096,
        }
    }
}

/// Settings of a [`crate::Client`].
#[derive(Debug, Clone, Default)]
pub struct ClientConfig {
    /// The connection's settings. Default: [`ConnectionConfig::default`].
    pub connection: ConnectionConfig,
    /// Timeout applied to every call that sets none. Default: `None` (wait until the reply or
    /// the connection closes, like Go).
    pub timeout: Option<Duration>,
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
    /// A task per RPC, at most this many at once across all connections of the server.
    Limited(usize),
}

/// Settings of a [`crate::Server`].
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Each connection's settings. Default: [`ConnectionConfig::default`].
    pub connection: ConnectionConfig,
    /// Handler scheduling. Default: [`Concurrency::PerRpc`].
    pub concurrency: Concurrency,
    /// Connections served at once; further ones are closed at accept. Default: 10,000.
    pub max_connections: usize,
    /// RPCs running at once on one connection; while at the limit, the connection is not read
    /// (TCP backpressure). Default: 4096.
    pub max_inflight_per_connection: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            connection: ConnectionConfig::default(),
            concurrency: Concurrency::PerRpc,
            max_connections: 10_000,
            max_inflight_per_connection: 4096,
        }
    }
}
