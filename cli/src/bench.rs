//! `frpc bench`: a ghz-style load run of one unary method. `-c` calls stay in flight over
//! `--connections` connections until `-n` calls are made or `--duration` passes; the summary
//! gives RPC/s, latency percentiles and the calls by status code, as text or JSON. The loops
//! are frpc-bench's (the `frpc-load` crate).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use frpc::Caller as _;
use frpc_load::{Caller, Callers, Failure, Limit, Outcome, Window};
use prost_reflect::MethodDescriptor;

use crate::commands::{Connect, Schema};
use crate::error::{CliError, other};
use crate::json::{parse_request, request_text};
use crate::{dynamic, schema};

/// How much load, for how long.
#[derive(Debug, Clone)]
pub struct Load {
    /// Calls in flight at once (all connections together).
    pub concurrency: usize,
    /// Connections the calls are spread over.
    pub connections: usize,
    /// Calls in all (`None`: until `duration` passes).
    pub total: Option<u64>,
    /// How long to run (`None`: until `total` calls are made).
    pub duration: Option<Duration>,
    /// Calls per second offered, all together (`None`: each call in flight starts again as
    /// soon as it completes).
    pub rps: Option<f64>,
    /// Draw a progress bar on standard error (a terminal only).
    pub progress: bool,
}

/// The calls `frpc bench` makes without `-n` or `--duration`.
pub const DEFAULT_TOTAL: u64 = 1000;

/// The most calls in flight `-c` takes: each is a task and a copy of the request, and an frpc
/// server runs 4,096 calls per connection by default, so more would be memory, not load.
pub const MAX_CONCURRENCY: usize = 100_000;

/// What a run did.
#[derive(Debug)]
pub struct Summary {
    /// Successful calls, their latency and the failed calls by code.
    pub outcome: Outcome,
    /// From the first call to the last reply.
    pub elapsed: Duration,
}

/// One connection's unary calls of the method, counting each finished call for the progress bar.
#[derive(Clone)]
struct UnaryCaller {
    client: frpc::Client,
    op: u16,
    finished: Arc<AtomicU64>,
}

impl Caller<Bytes> for UnaryCaller {
    async fn call(&mut self, request: &mut Bytes) -> Result<(), Failure> {
        let reply = self.client.call(self.op, |_| request.clone()).await;
        self.finished.fetch_add(1, Ordering::Relaxed);
        match reply {
            // A polyglot Error (`06 …`) is a remote error; its code came with it (frpc) or it
            // is UNKNOWN (Go).
            Ok(reply) if reply.body.first() == Some(&0x06) => {
                Err(reply.code.unwrap_or(frpc::Code::Unknown).as_str().into())
            }
            Ok(_) => Ok(()),
            Err(err) => Err(err.code().as_str().into()),
        }
    }
}

/// Runs the load against `method` with the request `request` (the argument, `@file` or
/// standard input).
pub async fn bench(
    connect: &Connect,
    schema: &Schema,
    method: &str,
    request: Option<&str>,
    load: &Load,
) -> Result<Summary, CliError> {
    let load = &load.checked()?;
    let first = connect.client().await?;
    let pool = schema.pool(&first).await?;
    let method = schema::method(&pool, method).map_err(other)?;
    let op = pool.operation(&method).map_err(other)?;
    let body = encode_request(&method, request)?;
    let mut clients = vec![first];
    for _ in 1..load.connections {
        clients.push(connect.client().await?);
    }
    let finished = Arc::new(AtomicU64::new(0));
    let progress = progress_bar(load, finished.clone());
    let run = run(clients, op, body, load, finished);
    let summary = run.await;
    if let Some(progress) = progress {
        progress.abort();
    }
    Ok(summary)
}

impl Load {
    /// The load as run: `-c` and `--connections` checked, and no more calls in flight than
    /// calls to make, nor more connections than calls in flight (one without calls is idle).
    fn checked(&self) -> Result<Load, CliError> {
        let (c, connections) = (self.concurrency, self.connections);
        if c == 0 || connections == 0 {
            return Err(other("-c and --connections take 1 or more"));
        }
        if c > MAX_CONCURRENCY {
            return Err(other(format!(
                "-c {c}: at most {MAX_CONCURRENCY} calls in flight (spread them over --connections)"
            )));
        }
        if connections > c {
            return Err(other(format!(
                "--connections {connections} is more than -c {c}: a connection needs a call in flight"
            )));
        }
        let total = match (self.total, self.duration) {
            (None, Some(_)) => u64::MAX,
            (total, _) => total.unwrap_or(DEFAULT_TOTAL),
        };
        let concurrency = c.min(usize::try_from(total).unwrap_or(usize::MAX)).max(1);
        Ok(Load {
            concurrency,
            connections: connections.min(concurrency),
            ..self.clone()
        })
    }
}

/// The method's request, encoded once for every call.
fn encode_request(method: &MethodDescriptor, request: Option<&str>) -> Result<Bytes, CliError> {
    if method.is_client_streaming() || method.is_server_streaming() {
        return Err(other(format!(
            "`{}` is {}: frpc bench calls unary methods",
            method.full_name(),
            schema::kind(method)
        )));
    }
    let request = parse_request(method, &request_text(request)?)?;
    dynamic::encode(&request).map_err(other)
}

async fn run(
    clients: Vec<frpc::Client>,
    op: u16,
    body: Bytes,
    load: &Load,
    finished: Arc<AtomicU64>,
) -> Summary {
    let duration = load.duration.unwrap_or(Duration::from_secs(365 * 24 * 3600));
    let window = Window::new(Duration::ZERO, duration);
    let limit = match (load.total, load.duration) {
        (Some(total), _) => Limit::total(window, total),
        (None, Some(_)) => Limit::window(window),
        (None, None) => Limit::total(window, DEFAULT_TOTAL),
    };
    // Each call in flight is a slot with its own schedule: `concurrency / rps` between starts
    // (too long for a `Duration`: the schedule's longest, `frpc_load::MAX_INTERVAL`).
    let limit = match load.rps {
        Some(rps) => {
            let interval = Duration::try_from_secs_f64(load.concurrency as f64 / rps);
            limit.paced(interval.unwrap_or(Duration::MAX))
        }
        None => limit,
    };
    let connections = clients.len();
    let started = std::time::Instant::now();
    let tasks: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(i, client)| {
            // The calls in flight, spread as evenly as they go.
            let inflight = load.concurrency / connections + usize::from(i < load.concurrency % connections);
            let caller = UnaryCaller {
                client,
                op,
                finished: finished.clone(),
            };
            let (body, limit) = (body.clone(), limit.clone());
            tokio::spawn(
                async move { frpc_load::drive(&caller, &body, inflight, Callers::Tasks, limit).await },
            )
        })
        .collect();
    let mut outcomes = Vec::with_capacity(tasks.len());
    for task in tasks {
        // A slot that panicked (none should) loses its count rather than the whole run.
        outcomes.extend(task.await.ok());
    }
    Summary {
        outcome: Outcome::merge(outcomes),
        elapsed: started.elapsed(),
    }
}

/// A bar on standard error, moved by a ticker task, when asked for and stderr is a terminal.
fn progress_bar(load: &Load, finished: Arc<AtomicU64>) -> Option<tokio::task::JoinHandle<()>> {
    use std::io::IsTerminal as _;
    if !load.progress || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = match load.total.or(load.duration.map(|_| 0)).unwrap_or(DEFAULT_TOTAL) {
        0 => indicatif::ProgressBar::new_spinner(),
        total => indicatif::ProgressBar::new(total),
    };
    let template = "{elapsed_precise} {bar:40} {pos}/{len} calls {per_sec}";
    if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    Some(tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        loop {
            tick.tick().await;
            bar.set_position(finished.load(Ordering::Relaxed));
        }
    }))
}

impl Summary {
    /// Every call made, successful or not.
    pub fn count(&self) -> u64 {
        self.outcome.calls + self.outcome.failed()
    }

    /// Calls per second over the run.
    pub fn rate(&self) -> f64 {
        self.count() as f64 / self.elapsed.as_secs_f64().max(f64::MIN_POSITIVE)
    }

    /// The calls by status code, `OK` included.
    pub fn by_code(&self) -> BTreeMap<&str, u64> {
        let mut codes: BTreeMap<&str, u64> = self
            .outcome
            .errors
            .iter()
            .map(|(k, v)| (k.as_ref(), *v))
            .collect();
        if self.outcome.calls > 0 {
            codes.insert("OK", self.outcome.calls);
        }
        codes
    }

    /// The latency percentiles of the successful calls, in microseconds.
    fn percentiles(&self) -> [(&'static str, u64); 4] {
        let latency = &self.outcome.latency;
        [
            ("p50", latency.value_at_quantile(0.5)),
            ("p90", latency.value_at_quantile(0.9)),
            ("p99", latency.value_at_quantile(0.99)),
            ("max", latency.max()),
        ]
    }

    /// The summary as ghz prints it, roughly.
    pub fn text(&self) -> String {
        let mut out = String::from("Summary:\n");
        out += &format!("  Count:        {}\n", self.count());
        out += &format!("  Total:        {:.3} s\n", self.elapsed.as_secs_f64());
        out += &format!("  Requests/sec: {:.1}\n", self.rate());
        if self.outcome.calls > 0 {
            out += "\nLatency (successful calls):\n";
            for (name, micros) in self.percentiles() {
                out += &format!("  {name}:  {}\n", micros_text(micros));
            }
            out += &format!("  mean: {}\n", micros_text(self.outcome.latency.mean() as u64));
        }
        out += "\nStatus codes:\n";
        for (code, count) in self.by_code() {
            out += &format!("  [{code}] {count}\n");
        }
        out
    }

    /// The summary as one JSON object.
    pub fn json(&self) -> serde_json::Value {
        let latency: serde_json::Map<String, serde_json::Value> = self
            .percentiles()
            .into_iter()
            .map(|(name, micros)| (name.to_string(), micros.into()))
            .chain([("mean".to_string(), self.outcome.latency.mean().into())])
            .collect();
        serde_json::json!({
            "count": self.count(),
            "ok": self.outcome.calls,
            "errors": self.outcome.errors,
            "codes": self.by_code(),
            "total_secs": self.elapsed.as_secs_f64(),
            "rps": self.rate(),
            "latency_us": latency,
        })
    }
}

fn micros_text(micros: u64) -> String {
    match micros {
        0..1_000 => format!("{micros} µs"),
        _ => format!("{:.2} ms", micros as f64 / 1000.0),
    }
}
