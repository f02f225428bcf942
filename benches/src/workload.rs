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
use std::future::Future;
use std::str::FromStr;
use std::time::Duration;

use bytes::Bytes;
use hdrhistogram::Histogram;
use rand::Rng;
use tokio::time::Instant;

use crate::cpu::CpuUse;

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
}

/// What one framework did in one cell (or one client, or one in-flight slot).
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Calls completed in the measured window.
    pub calls: u64,
    /// Latency of those calls, in microseconds.
    pub latency: Histogram<u64>,
    /// CPU time of the server and the clients over the measured window (a whole sample's;
    /// a slot's own outcome has none).
    pub cpu: CpuUse,
}

impl Outcome {
    /// No calls yet.
    pub fn new() -> Outcome {
        Outcome {
            calls: 0,
            latency: Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid bounds"),
            cpu: CpuUse::default(),
        }
    }

    /// Adds up several outcomes.
    pub fn merge(outcomes: impl IntoIterator<Item = Outcome>) -> Outcome {
        let mut total = Outcome::new();
        for outcome in outcomes {
            total.calls += outcome.calls;
            total.latency.add(&outcome.latency).expect("same bounds");
            total.cpu = total.cpu.plus(outcome.cpu);
        }
        total
    }
}

impl Default for Outcome {
    fn default() -> Self {
        Outcome::new()
    }
}

/// The measured window, shared by every task of a cell.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    /// Calls completing before this are warm-up.
    pub start: Instant,
    /// No call starts after this; calls completing after it do not count.
    pub end: Instant,
}

impl Window {
    /// A window opening after `warmup` and lasting `duration`.
    pub fn new(warmup: Duration, duration: Duration) -> Window {
        let start = Instant::now() + warmup;
        Window {
            start,
            end: start + duration,
        }
    }

    /// Records a call that started at `sent` and completed now.
    pub fn record(&self, sent: Instant, outcome: &mut Outcome) {
        self.record_at(sent, Instant::now(), outcome)
    }

    /// Records a call that started at `sent` and completed at `now`, if inside the window.
    pub fn record_at(&self, sent: Instant, now: Instant, outcome: &mut Outcome) {
        if now >= self.start && now <= self.end {
            outcome.calls += 1;
            let _ = outcome.latency.record((now - sent).as_micros().max(1) as u64);
        }
    }
}

/// How a client issues its in-flight calls (the raw client always pipelines on one task).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Callers {
    /// One task per in-flight call, all sharing the client's connection.
    Tasks,
    /// One future per in-flight call, joined on the client's task.
    Joined,
}

impl Callers {
    /// Both modes.
    pub const ALL: [Callers; 2] = [Callers::Tasks, Callers::Joined];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Callers::Tasks => "tasks",
            Callers::Joined => "joined",
        }
    }
}

impl fmt::Display for Callers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Callers {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Callers::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| format!("unknown callers {s:?} (tasks, joined)"))
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

/// A cell's message, in the type its payload is generated as. Made once per cell; every call
/// clones it, which copies a `Text` (a request owns its `String`) and only counts a reference to
/// `Data`.
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

/// When a client stops: at the end of the window, or after `calls` calls per in-flight slot
/// (criterion runs a fixed number of iterations).
#[derive(Debug, Clone, Copy)]
pub struct Limit {
    /// The measured window.
    pub window: Window,
    /// Calls per in-flight slot.
    pub calls: u64,
}

impl Limit {
    /// Whether a slot that has made `done` calls starts another.
    fn more(&self, done: u64) -> bool {
        done < self.calls && Instant::now() < self.window.end
    }
}

/// One call of an RPC client (the frameworks with a call API: frpc and tonic).
pub trait Caller: Clone + Send + 'static {
    /// Sends `body` (with the method its payload names) and waits for the echo.
    fn call(&mut self, body: &Body) -> impl Future<Output = ()> + Send;
}

/// Keeps `inflight` calls outstanding through `caller`, all sharing its connection. With
/// [`Callers::Tasks`] one slot runs on the current task and the others on their own tasks (like
/// the goroutines of fRPC's benchmark); with [`Callers::Joined`] all run on the current task.
pub async fn slots<C: Caller>(
    caller: &C,
    body: &Body,
    inflight: usize,
    callers: Callers,
    limit: Limit,
) -> Outcome {
    if callers == Callers::Joined {
        let all = (0..inflight).map(|_| slot(caller.clone(), body.clone(), limit));
        return Outcome::merge(futures_util::future::join_all(all).await);
    }
    let others: Vec<_> = (1..inflight)
        .map(|_| tokio::spawn(slot(caller.clone(), body.clone(), limit)))
        .collect();
    let mut outcomes = vec![slot(caller.clone(), body.clone(), limit).await];
    for task in others {
        outcomes.push(task.await.expect("call slot"));
    }
    Outcome::merge(outcomes)
}

async fn slot<C: Caller>(mut caller: C, body: Body, limit: Limit) -> Outcome {
    let mut outcome = Outcome::new();
    let mut done = 0;
    while limit.more(done) {
        let sent = Instant::now();
        caller.call(&body).await;
        limit.window.record(sent, &mut outcome);
        done += 1;
    }
    outcome
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
