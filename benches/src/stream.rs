//! The `stream` subcommand: messages/s of one streaming call of N messages between two frpc
//! peers, with flow control (docs/extensions.md §9) at the default window and a larger one, and
//! plain (extensions off, as with Go peers), modes interleaved rep by rep.
//!
//! A small Rust-first service (`#[frpc::service]`), so the benchmark proto and the other
//! frameworks stay as they are. The server runs on its own runtime (its own worker threads) in
//! this process; the client on another, whose calls run in one task there (as an application
//! would consume a stream), not in `block_on` on the main thread.
//!
//! **Plain mode.** Without flow control a receiver buffers up to `stream_buffer` messages per
//! stream and fails the stream when its consumer falls that far behind; a producer never waits.
//! Plain mode sets the receiving side's `stream_buffer` to N (+ a little room for `EOF` and
//! errors), so the stream can never overflow however far the consumer lags: it measures the
//! unbounded best case flow control is compared with (memory up to N × size per stream).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::stats::Summary;

/// What a download asks for, and what an upload answers.
#[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
pub struct Spec {
    /// Messages.
    pub count: u64,
    /// Payload bytes per message.
    pub size: u64,
}

/// One streamed message.
#[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
pub struct Chunk {
    /// The payload.
    pub data: Bytes,
}

/// Server streaming (download) and client streaming (upload) of [`Chunk`]s.
#[frpc::service(package = "streambench")]
pub trait StreamBench {
    /// Sends `count` chunks of `size` bytes.
    async fn download(
        &self,
        ctx: &frpc::Context,
        request: Spec,
        outbound: frpc::StreamSender<Chunk>,
    ) -> Result<(), frpc::Status>;
    /// Reads chunks to the end; answers how many and how many bytes in all.
    async fn upload(
        &self,
        ctx: &frpc::Context,
        inbound: frpc::Streaming<Chunk>,
    ) -> Result<Spec, frpc::Status>;
}

struct Svc;

impl StreamBench for Svc {
    async fn download(
        &self,
        _: &frpc::Context,
        request: Spec,
        out: frpc::StreamSender<Chunk>,
    ) -> Result<(), frpc::Status> {
        let data = Bytes::from(vec![0x5a; request.size as usize]);
        for _ in 0..request.count {
            out.send(Chunk { data: data.clone() }).await?;
        }
        Ok(())
    }

    async fn upload(
        &self,
        _: &frpc::Context,
        mut inbound: frpc::Streaming<Chunk>,
    ) -> Result<Spec, frpc::Status> {
        let mut spec = Spec::default();
        while let Some(chunk) = inbound.message().await? {
            spec.count += 1;
            spec.size += chunk.data.len() as u64;
        }
        Ok(spec)
    }
}

/// Options of `stream`.
#[derive(Debug, Clone, clap::Args)]
pub struct StreamArgs {
    /// Messages per call.
    #[arg(long, default_value_t = 100_000)]
    pub messages: u64,
    /// Payload sizes in bytes (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = [32usize, 1024])]
    pub size: Vec<usize>,
    /// Flow-control windows to measure (comma-separated; the default window is 1024).
    #[arg(long, value_delimiter = ',', default_values_t = [1024u32, 8192])]
    pub window: Vec<u32>,
    /// Calls per mode, size and direction; modes interleaved call by call.
    #[arg(long, default_value_t = 7)]
    pub reps: usize,
    /// Directions: `down` (server streaming), `up` (client streaming), or both.
    #[arg(long, value_delimiter = ',', default_values_t = [Direction::Down, Direction::Up])]
    pub direction: Vec<Direction>,
    /// Leave out the flow-controlled modes (to profile plain alone).
    #[arg(long)]
    pub no_flow: bool,
    /// Leave out plain mode (to profile flow control alone).
    #[arg(long)]
    pub no_plain: bool,
    /// Worker threads of the server's runtime.
    #[arg(long, default_value_t = 1)]
    pub server_threads: usize,
    /// Worker threads of the client's runtime.
    #[arg(long, default_value_t = 1)]
    pub client_threads: usize,
}

/// Which way the messages go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Direction {
    /// Server streaming: the server sends, the client reads.
    Down,
    /// Client streaming: the client sends, the server reads.
    Up,
}

impl std::fmt::Display for Direction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Direction::Down => "down",
            Direction::Up => "up",
        })
    }
}

/// Flow control with a window, or plain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Flow(u32),
    Plain,
}

impl Mode {
    fn name(self) -> String {
        match self {
            Mode::Flow(window) => format!("flow w={window}"),
            Mode::Plain => "plain".to_owned(),
        }
    }

    /// The connection settings of both sides: extensions, window, and a buffer that never
    /// overflows in plain mode.
    fn connection(self, messages: u64) -> (bool, frpc::ConnectionConfig) {
        let mut connection = frpc::ConnectionConfig::default();
        match self {
            Mode::Flow(window) => {
                connection.stream_window = window;
                (true, connection)
            }
            Mode::Plain => {
                connection.stream_buffer = messages as usize + 16;
                (false, connection)
            }
        }
    }
}

fn runtime(threads: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .enable_all()
        .build()
        .expect("tokio runtime")
}

async fn serve(mode: Mode, messages: u64) -> std::net::SocketAddr {
    let (extensions, connection) = mode.connection(messages);
    let config = frpc::ServerConfig::default()
        .extensions(extensions)
        .connection(connection);
    let bound = frpc::Server::builder()
        .config(config)
        .add_service(StreamBenchServer::new(Svc))
        .bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    addr
}

async fn connect(mode: Mode, messages: u64, addr: std::net::SocketAddr) -> StreamBenchClient {
    let (extensions, connection) = mode.connection(messages);
    let config = frpc::ClientConfig::default()
        .extensions(extensions)
        .connection(connection);
    let client = frpc::Client::connect_with(addr, config).await.expect("connect");
    assert_eq!(client.negotiated().await, extensions, "the server's answer");
    StreamBenchClient::new(client)
}

/// One call of `count` messages of `size` bytes; its duration.
async fn once(client: &StreamBenchClient, direction: Direction, count: u64, size: usize) -> Duration {
    let started = Instant::now();
    match direction {
        Direction::Down => {
            let mut inbound = client
                .download(Spec {
                    count,
                    size: size as u64,
                })
                .await
                .expect("download");
            let mut got = 0u64;
            while let Some(chunk) = inbound.message().await.expect("download message") {
                debug_assert_eq!(chunk.data.len(), size);
                got += 1;
            }
            assert_eq!(got, count, "download messages");
        }
        Direction::Up => {
            let mut call = client.upload().await.expect("upload");
            let data = Bytes::from(vec![0xa5; size]);
            for _ in 0..count {
                call.send(Chunk { data: data.clone() })
                    .await
                    .expect("upload send");
            }
            let spec = call.close_and_recv().await.expect("upload result");
            assert_eq!(spec.count, count, "upload messages");
        }
    }
    started.elapsed()
}

/// What one run measures: directions, sizes, and calls of `messages` each, `reps` per mode.
struct Plan {
    direction: Vec<Direction>,
    size: Vec<usize>,
    messages: u64,
    reps: usize,
}

/// Messages/s and CPU time per message (ns), `[direction][size][mode]`, one value per rep.
type Samples = Vec<Vec<Vec<Vec<f64>>>>;

/// Runs `plan` on `clients` (one per mode), modes interleaved rep by rep.
async fn measure(clients: Vec<StreamBenchClient>, plan: Plan) -> (Samples, Samples) {
    let modes = clients.len();
    let mut samples: Samples = vec![vec![vec![Vec::new(); modes]; plan.size.len()]; plan.direction.len()];
    // The process's CPU time per message (ns) per rep: both peers run in this process, so it
    // is what a message costs end to end, idle time excluded.
    let mut cpu = samples.clone();
    // Warm-up: one short call per mode, size and direction.
    for &direction in &plan.direction {
        for &size in &plan.size {
            for client in &clients {
                once(client, direction, (plan.messages / 10).max(1), size).await;
            }
        }
    }
    for rep in 0..plan.reps {
        for (d, &direction) in plan.direction.iter().enumerate() {
            for (s, &size) in plan.size.iter().enumerate() {
                // Rotate the order rep by rep so no mode always goes first.
                for k in 0..modes {
                    let m = (k + rep) % modes;
                    let cpu_before = process_cpu_ns();
                    let elapsed = once(&clients[m], direction, plan.messages, size).await;
                    samples[d][s][m].push(plan.messages as f64 / elapsed.as_secs_f64());
                    if let (Some(a), Some(b)) = (cpu_before, process_cpu_ns()) {
                        cpu[d][s][m].push(b.saturating_sub(a) as f64 / plan.messages as f64);
                    }
                }
            }
        }
    }
    (samples, cpu)
}

/// Runs the measurement and prints the table.
pub fn run(args: &StreamArgs) {
    let mut modes: Vec<Mode> = match args.no_flow {
        true => Vec::new(),
        false => args.window.iter().map(|&w| Mode::Flow(w)).collect(),
    };
    if !args.no_plain {
        modes.push(Mode::Plain);
    }
    if modes.is_empty() {
        eprintln!("frpc-bench stream: no mode left to measure");
        return;
    }
    let server_rt = Arc::new(runtime(args.server_threads));
    let client_rt = runtime(args.client_threads);
    let load_before = crate::report::load_average();
    let started = Instant::now();
    let clients: Vec<StreamBenchClient> = modes
        .iter()
        .map(|&mode| {
            let addr = server_rt.block_on(serve(mode, args.messages));
            client_rt.block_on(connect(mode, args.messages, addr))
        })
        .collect();
    // The calls run in a task on the client's runtime, where an application consumes a
    // stream, not in `block_on` on this thread: there, each message that finds the consumer
    // waiting would cost a wake-up of a third thread, and flow control (whose consumer catches
    // up with its producer at every grant) would pay more of them than plain mode.
    let plan = Plan {
        direction: args.direction.clone(),
        size: args.size.clone(),
        messages: args.messages,
        reps: args.reps,
    };
    let measured = client_rt.spawn(measure(clients, plan));
    let (samples, cpu) = client_rt.block_on(measured).expect("the measurement task");
    let load = load_before
        .zip(crate::report::load_average())
        .map_or(String::new(), |(a, b)| format!(", load average {a:.1} → {b:.1}"));
    println!(
        "{:<5} {:>6} {:<12} {:>12} {:>21} {:>9} {:>9} {:>17} {:>9}",
        "dir", "size", "mode", "msg/s (med)", "min – max", "MB/s", "vs plain", "CPU ns/msg (med)", "vs plain"
    );
    for (d, direction) in args.direction.iter().enumerate() {
        for (s, &size) in args.size.iter().enumerate() {
            let plain = modes
                .iter()
                .position(|&m| m == Mode::Plain)
                .and_then(|p| Summary::of(&samples[d][s][p]))
                .map(|p| p.median);
            let plain_cpu = modes
                .iter()
                .position(|&m| m == Mode::Plain)
                .and_then(|p| Summary::of(&cpu[d][s][p]))
                .map(|p| p.median);
            for (m, mode) in modes.iter().enumerate() {
                let Some(sum) = Summary::of(&samples[d][s][m]) else {
                    continue;
                };
                let ratio = plain.map_or(String::new(), |p| format!("{:.2}", sum.median / p));
                let cpu_sum = Summary::of(&cpu[d][s][m]);
                let cpu_text = cpu_sum.as_ref().map_or(String::new(), |c| {
                    format!("{:.0} ({:.0}–{:.0})", c.median, c.min, c.max)
                });
                let cpu_ratio = cpu_sum
                    .zip(plain_cpu)
                    .map_or(String::new(), |(c, p)| format!("{:.2}", c.median / p));
                println!(
                    "{:<5} {:>6} {:<12} {:>12} {:>21} {:>9.1} {:>9} {:>17} {:>9}",
                    direction.to_string(),
                    format!("{size} B"),
                    mode.name(),
                    rate(sum.median),
                    format!("{} – {}", rate(sum.min), rate(sum.max)),
                    sum.median * size as f64 / 1e6,
                    ratio,
                    cpu_text,
                    cpu_ratio,
                );
            }
        }
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "({} messages per call, {} reps, modes interleaved; server {} and client {} worker \
         threads in one process; {:.0} s on {cores} cores{load})",
        args.messages,
        args.reps,
        args.server_threads,
        args.client_threads,
        started.elapsed().as_secs_f64(),
    );
    // The server's runtime goes with its connections' tasks.
    if let Ok(rt) = Arc::try_unwrap(server_rt) {
        rt.shutdown_background();
    }
}

/// CPU time of this whole process so far (every thread's, user and system), in nanoseconds
/// (`None` off Linux: the CPU columns stay empty).
fn process_cpu_ns() -> Option<u64> {
    frpc_load::cpu::process_cpu("self").map(|cpu| cpu.as_nanos() as u64)
}

fn rate(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else {
        format!("{:.0}k", v / 1e3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every direction, size and mode gets one rate and one CPU figure per rep, from calls over
    /// real sockets that carried every message (`once` checks the count): a flow-controlled
    /// stream whose small window makes its producer wait for grants, and a plain one.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn measure_fills_every_cell_from_real_calls() {
        let messages = 300;
        let mut clients = Vec::new();
        for mode in [Mode::Flow(16), Mode::Plain] {
            let addr = serve(mode, messages).await;
            clients.push(connect(mode, messages, addr).await);
        }
        let plan = Plan {
            direction: vec![Direction::Down, Direction::Up],
            size: vec![32, 1024],
            messages,
            reps: 2,
        };
        let (samples, cpu) = tokio::spawn(measure(clients, plan)).await.unwrap();
        for figures in [&samples, &cpu] {
            assert_eq!(figures.len(), 2, "directions");
            for by_size in figures {
                assert_eq!(by_size.len(), 2, "sizes");
                for by_mode in by_size {
                    assert_eq!(by_mode.len(), 2, "modes");
                    for reps in by_mode {
                        assert_eq!(reps.len(), 2, "reps");
                        assert!(reps.iter().all(|v| v.is_finite() && *v >= 0.0), "{reps:?}");
                    }
                }
            }
        }
        assert!(
            samples
                .iter()
                .flatten()
                .flatten()
                .flatten()
                .all(|rate| *rate > 0.0)
        );
    }
}
