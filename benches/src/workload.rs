//! The workloads: N clients, each on its own connection, each keeping `inflight` calls
//! outstanding with one random message made once per cell, for a fixed time after a warm-up.
//! Workload A is one call in flight per client (client throughput), workload B ten (server
//! throughput). Calls that complete inside the measured window count, and their latency goes
//! into an HDR histogram.
//!
//! A client's in-flight calls are issued either from one task each ([`Callers::Tasks`], like the
//! goroutines of fRPC's benchmark) or as futures joined on the client's one task
//! ([`Callers::Joined`], like the raw client's pipelining). Both keep the same number of calls
//! outstanding; they differ in how many wake-ups a burst of replies costs and so in how well
//! the RPC client's writer can batch.
//!
//! The message travels as a proto `string` (`Benchmark`, a [`String`] on both sides) or as a
//! proto `bytes` (`Blob`, a [`bytes::Bytes`] on both sides): see [`Payload`].

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use bytes::Bytes;
/// The load generator's loops, window and outcome, shared with `frpc bench` (the `frpc-load`
/// crate).
pub use frpc_load::{Caller, Callers, Failure, Limit, Outcome, Window, drive};
use rand::Rng;

/// One cell of the matrix.
#[derive(Debug, Clone, Copy)]
pub struct Cell {
    /// Clients, each with its own connection.
    pub clients: usize,
    /// Calls each client keeps outstanding.
    pub inflight: usize,
    /// How those calls are issued.
    pub callers: Callers,
    /// Message size in bytes.
    pub size: usize,
    /// The field the message travels in.
    pub payload: Payload,
    /// Measured time.
    pub duration: Duration,
    /// Unmeasured load on fresh connections, once per framework and cell.
    pub warmup: Duration,
    /// Unmeasured load before each sample, so every sample starts in full flow.
    pub settle: Duration,
    /// Calls per second offered by all clients together, each in-flight slot starting its
    /// calls on a schedule (`None`: closed loops, each call starting as the one before it
    /// completes). See [`Cell::pace`].
    pub rate: Option<f64>,
}

impl Cell {
    /// The time between a slot's call starts that offers [`Cell::rate`]: with `clients ×
    /// inflight` slots, each starts one call per `slots / rate` seconds (`None` for a closed
    /// loop, or a rate that is not a positive number; see [`parse_rate`]).
    pub fn pace(&self) -> Option<Duration> {
        let rate = self.rate.filter(|r| r.is_finite() && *r > 0.0)?;
        let slots = (self.clients * self.inflight).max(1) as f64;
        // Too long to be a `Duration`: the schedule takes it as its longest interval.
        Some(Duration::try_from_secs_f64(slots / rate).unwrap_or(Duration::MAX))
    }

    /// `limit` paced as the cell asks (unchanged for a closed loop).
    pub fn limit(&self, limit: Limit) -> Limit {
        match self.pace() {
            Some(interval) => limit.paced(interval),
            None => limit,
        }
    }
}

/// Parses `--rate`: calls per second, a finite number above 0.
pub fn parse_rate(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(rate) if rate.is_finite() && rate > 0.0 => Ok(rate),
        _ => Err(format!("{text:?} is not a rate: give calls per second above 0")),
    }
}

/// The field a cell's message travels in. Both are one field of `size` bytes on the wire
/// (`Request.Message` or `BlobRequest.Data`); they differ in what a framework does with it: a
/// `String` is copied out of the received frame and checked as UTF-8, a `Bytes` can be a slice
/// of the frame itself (frpc's decoder hands one out without copying).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Payload {
    /// `rpc Benchmark(Request) returns (Response)`, `string Message = 1`.
    #[default]
    String,
    /// `rpc Blob(BlobRequest) returns (BlobResponse)`, `bytes Data = 1`, generated as
    /// `bytes::Bytes`.
    Bytes,
}

impl Payload {
    /// Both payloads.
    pub const ALL: [Payload; 2] = [Payload::String, Payload::Bytes];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Payload::String => "string",
            Payload::Bytes => "bytes",
        }
    }
}

impl fmt::Display for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Payload {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Payload::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| format!("unknown payload {s:?} (string, bytes)"))
    }
}

/// A cell's message, in the type its payload is generated as. Made once per cell and cloned
/// once per in-flight slot. A call moves a `Text` into its request and keeps the echoed reply's
/// `String` for the next call (no copy by the load generator: the raw client resends one
/// encoded buffer), and counts a reference to `Data`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// For [`Payload::String`].
    Text(String),
    /// For [`Payload::Bytes`].
    Data(Bytes),
}

impl Body {
    /// A random message of `size` bytes (see [`message`]) for `payload`.
    pub fn random(payload: Payload, size: usize) -> Body {
        match payload {
            Payload::String => Body::Text(message(size)),
            Payload::Bytes => Body::Data(Bytes::from(message(size).into_bytes())),
        }
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        match self {
            Body::Text(text) => text.len(),
            Body::Data(data) => data.len(),
        }
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A random printable (ASCII, so valid UTF-8) message of `size` bytes, made once per cell.
pub fn message(size: usize) -> String {
    let mut rng = rand::rng();
    (0..size).map(|_| rng.random_range(b'a'..=b'z') as char).collect()
}

/// A runtime with `threads` worker threads (the load generator's and each server's).
pub fn runtime(threads: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .enable_all()
        .build()
        .expect("tokio runtime")
}
