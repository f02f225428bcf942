//! The matrix run: its options, its cells, and the sampling loop that interleaves frameworks
//! sample by sample within each cell.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use indicatif::ProgressBar;

use crate::frameworks::{Client, Framework};
use crate::pool;
use crate::report::{self, Row};
use crate::workload::{self, Body, Callers, Cell, Outcome, Payload};

/// Samples per framework and cell unless `--reps` says otherwise.
pub const DEFAULT_REPS: usize = 7;
/// Measured seconds per sample with `--quick`.
pub const QUICK_SECS: f64 = 0.2;
/// Measured seconds per sample of the full matrix.
pub const FULL_SECS: f64 = 0.5;

/// Options of the matrix run (the default command).
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// The reduced matrix: A with 1, 16 and 128 clients at 32 B and 512 B, A with 16 clients at
    /// 128 KiB and 1 MiB (string and bytes payloads), B with 16 and 128 clients; short samples.
    #[arg(long)]
    pub quick: bool,
    /// Client counts of the full matrix.
    #[arg(long, value_delimiter = ',', default_values_t = [1, 16, 128])]
    pub clients: Vec<usize>,
    /// Message sizes (bytes) of workload A in the full matrix.
    #[arg(long, value_delimiter = ',', default_values_t = [32, 512, 128 << 10, 1 << 20])]
    pub sizes: Vec<usize>,
    /// Payloads of workload A in the full matrix: string (`Benchmark`, a `string` field) and
    /// bytes (`Blob`, a `bytes` field as `bytes::Bytes`). Workload B is always string.
    #[arg(long, value_delimiter = ',', default_values_t = [Payload::String])]
    pub payloads: Vec<Payload>,
    /// Measured seconds per sample [default: 0.2 with --quick, else 0.5].
    #[arg(long)]
    pub secs: Option<f64>,
    /// Samples per framework and cell, frameworks interleaved sample by sample.
    #[arg(long, default_value_t = DEFAULT_REPS)]
    pub reps: usize,
    /// Write the report as JSON (the input of --baseline).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write the rows as CSV.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Write the chart as SVG.
    #[arg(long)]
    pub svg: Option<PathBuf>,
    /// Compare with an earlier run's --json (same cells): changes larger than both spreads are
    /// flagged.
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// The framing of frpc and raw: frisbee (v0.11) or legacy (v0.10).
    #[arg(long, default_value = "frisbee")]
    pub framing: frpc::Framing,
    /// The frameworks measured.
    #[arg(long, value_delimiter = ',', default_values_t = Framework::ALL)]
    pub frameworks: Vec<Framework>,
    /// The workloads: A (one call in flight per client), B (ten).
    #[arg(long, value_delimiter = ',', default_values = ["A", "B"])]
    pub workloads: Vec<String>,
    /// How workload B's 10 calls per client are issued: tasks, joined.
    #[arg(long, value_delimiter = ',', default_values_t = Callers::ALL)]
    pub callers: Vec<Callers>,
    /// Also measure the raw client on the frpc-inline server and the frpc client on the raw echo.
    #[arg(long)]
    pub probe: bool,
    /// Worker threads of each server process's runtime.
    #[arg(long, default_value_t = 2)]
    pub server_threads: usize,
    /// Worker threads of the load generator's runtime.
    #[arg(long, default_value_t = 2)]
    pub client_threads: usize,
    /// Offer each cell this many calls per second (all clients together), every in-flight
    /// slot starting its calls on a schedule, instead of closed loops: every framework then
    /// serves the same load, and below saturation each process's CPU per call is its own
    /// cost (see "Paced runs" in benches/README.md).
    #[arg(long, value_parser = workload::parse_rate)]
    pub rate: Option<f64>,
}

impl RunArgs {
    /// Measured seconds per sample.
    pub fn secs(&self) -> f64 {
        self.secs
            .unwrap_or(if self.quick { QUICK_SECS } else { FULL_SECS })
    }
}

/// The `--probe` peers: `(name, client, server)`. The raw client on the frpc-inline server
/// measures frpc's server alone; the frpc client on the raw echo measures frpc's client alone.
/// (Only inline handlers answer in order, which the raw client's latency FIFO assumes.) The
/// frpc client on the echo offers no extensions, as with a Go server: the echo would send the
/// offer back instead of answering it.
pub const PROBES: [(&str, Framework, Framework); 2] = [
    ("raw→frpc-inline", Framework::Raw, Framework::FrpcInline),
    ("frpc→raw", Framework::FrpcPlain, Framework::Raw),
];

/// A cell of workload `workload` with the run's sample length and rate.
fn cell(
    args: &RunArgs,
    clients: usize,
    inflight: usize,
    callers: Callers,
    size: usize,
    payload: Payload,
) -> Cell {
    Cell {
        clients,
        inflight,
        callers,
        size,
        payload,
        duration: Duration::from_secs_f64(args.secs()),
        warmup: Duration::from_millis(200),
        settle: Duration::from_millis(50),
        rate: args.rate,
    }
}

/// The cells to run, as `(workload, cell)`. B runs once per `--callers` mode (A has one call in
/// flight, where the modes are the same), always with the string payload; A runs once per
/// payload (`--quick`: the large messages only), each size's payloads side by side.
pub fn cells(args: &RunArgs) -> Vec<(&'static str, Cell)> {
    let (a_cells, b_clients): (Vec<(usize, usize, Payload)>, Vec<usize>) = if args.quick {
        let small = [32, 512]
            .into_iter()
            .flat_map(|s| [1, 16, 128].map(|c| (c, s, Payload::String)));
        let large = [128 << 10, 1 << 20]
            .into_iter()
            .flat_map(|s| Payload::ALL.map(|p| (16, s, p)));
        (small.chain(large).collect(), vec![16, 128])
    } else {
        let all = args.sizes.iter().flat_map(|&s| {
            args.clients
                .iter()
                .flat_map(move |&c| args.payloads.iter().map(move |&p| (c, s, p)))
        });
        (all.collect(), args.clients.clone())
    };
    let mut cells: Vec<(&str, Cell)> = a_cells
        .into_iter()
        .map(|(clients, size, payload)| ("A", cell(args, clients, 1, Callers::Tasks, size, payload)))
        .collect();
    for &callers in &args.callers {
        cells.extend(
            b_clients
                .iter()
                .map(|&c| ("B", cell(args, c, 10, callers, 32, Payload::String))),
        );
    }
    cells.retain(|(workload, _)| args.workloads.iter().any(|w| w.eq_ignore_ascii_case(workload)));
    cells
}

/// One measured side of a cell: clients of `client` on the server at `addr`.
#[derive(Debug, Clone)]
pub struct Peer {
    /// The name its rows carry.
    pub name: String,
    /// The kind of client.
    pub client: Framework,
    /// The server.
    pub addr: SocketAddr,
    /// The server's process, when this program started it (its CPU time is measured).
    pub server_pid: Option<u32>,
}

/// The order of the peers in sample `rep`: rotated by one each time, so no framework always
/// runs first or right after another.
pub fn order(rep: usize, peers: usize) -> impl Iterator<Item = usize> {
    (0..peers).map(move |k| (rep + k) % peers)
}

/// Measures `cell` on every peer: connects all of them, warms each up, then runs `reps`
/// samples of each, interleaved sample by sample. Returns each peer's samples, or why a peer's
/// clients could not connect.
pub async fn measure(
    peers: &[Peer],
    cell: &Cell,
    reps: usize,
    framing: frpc::Framing,
    progress: &ProgressBar,
) -> Result<Vec<Vec<Outcome>>, String> {
    let body = Body::random(cell.payload, cell.size);
    let mut pools: Vec<Vec<Client>> = Vec::with_capacity(peers.len());
    for peer in peers {
        let clients = pool::connect(peer.client, peer.addr, cell.clients, framing).await?;
        pools.push(pool::warm_up(clients, &body, cell).await);
    }
    let mut samples = vec![Vec::with_capacity(reps); peers.len()];
    for rep in 0..reps {
        for i in order(rep, peers.len()) {
            let clients = std::mem::take(&mut pools[i]);
            let (clients, outcome) =
                pool::sample(clients, &body, cell, cell.settle, peers[i].server_pid).await;
            pools[i] = clients;
            samples[i].push(outcome);
            progress.inc(1);
        }
    }
    Ok(samples)
}

/// Runs every cell on every peer; the rows with their ratios filled, or why a peer could not
/// be measured.
pub fn run(args: &RunArgs, cells: &[(&'static str, Cell)], peers: &[Peer]) -> Result<Vec<Row>, String> {
    let progress = ProgressBar::new((cells.len() * peers.len() * args.reps) as u64);
    progress.set_style(
        indicatif::ProgressStyle::with_template("{elapsed_precise} {bar:40} {pos}/{len} {msg}")
            .expect("valid template"),
    );
    let rt = workload::runtime(args.client_threads);
    let mut rows = Vec::new();
    for (workload, cell) in cells {
        progress.set_message(format!(
            "{workload} {}c×{} ({}) {}",
            cell.clients,
            cell.inflight,
            cell.callers,
            report::size_payload_label(cell.size, cell.payload.name())
        ));
        let samples = rt.block_on(measure(peers, cell, args.reps, args.framing, &progress))?;
        for (peer, samples) in peers.iter().zip(&samples) {
            rows.push(Row::new(&peer.name, workload, cell, samples));
        }
    }
    progress.finish_and_clear();
    report::add_ratios(&mut rows);
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }

    fn args(line: &[&str]) -> RunArgs {
        Cli::try_parse_from(std::iter::once("frpc-bench").chain(line.iter().copied()))
            .expect("valid arguments")
            .run
    }

    #[test]
    fn quick_matrix_has_fourteen_cells() {
        let cells = cells(&args(&["--quick"]));
        assert_eq!(cells.len(), 14);
        assert_eq!(cells.iter().filter(|(w, _)| *w == "B").count(), 4);
        assert_eq!(cells[0].1.duration, Duration::from_secs_f64(QUICK_SECS));
        let bytes: Vec<_> = cells
            .iter()
            .filter(|(_, c)| c.payload == Payload::Bytes)
            .map(|(w, c)| (*w, c.clients, c.size))
            .collect();
        assert_eq!(bytes, vec![("A", 16, 128 << 10), ("A", 16, 1 << 20)]);
        let large: Vec<_> = cells.iter().filter(|(_, c)| c.size >= 128 << 10).collect();
        assert_eq!(large.len(), 4, "each large size in both payloads");
    }

    #[test]
    fn payloads_multiply_workload_a_only() {
        let a = args(&[
            "--clients",
            "16",
            "--sizes",
            "32,1048576",
            "--payloads",
            "string,bytes",
        ]);
        let shape: Vec<_> = cells(&a)
            .iter()
            .map(|(w, c)| (*w, c.size, c.payload, c.callers))
            .collect();
        let (s, b) = (Payload::String, Payload::Bytes);
        assert_eq!(
            shape,
            vec![
                ("A", 32, s, Callers::Tasks),
                ("A", 32, b, Callers::Tasks),
                ("A", 1 << 20, s, Callers::Tasks),
                ("A", 1 << 20, b, Callers::Tasks),
                ("B", 32, s, Callers::Tasks),
                ("B", 32, s, Callers::Joined),
            ]
        );
        assert_eq!(args(&[]).payloads, vec![Payload::String]);
        assert!(Cli::try_parse_from(["frpc-bench", "--payloads", "blob"]).is_err());
    }

    #[test]
    fn full_matrix_follows_the_lists() {
        let a = args(&[
            "--clients",
            "1,8",
            "--sizes",
            "64",
            "--workloads",
            "a",
            "--secs",
            "2",
        ]);
        let cells = cells(&a);
        let shape: Vec<_> = cells.iter().map(|(w, c)| (*w, c.clients, c.size)).collect();
        assert_eq!(shape, vec![("A", 1, 64), ("A", 8, 64)]);
        assert_eq!(cells[0].1.duration, Duration::from_secs(2));
        assert_eq!((a.reps, a.server_threads, a.client_threads), (DEFAULT_REPS, 2, 2));
    }

    #[test]
    fn a_rate_paces_every_cell_and_none_leaves_the_loops_closed() {
        let paced = cells(&args(&["--quick", "--rate", "80000"]));
        assert!(paced.iter().all(|(_, c)| c.rate == Some(80_000.0)));
        // 16 clients × 1 in flight: a start every 200 µs per slot; B's 16 × 10: every 2 ms.
        let pace = |w: &str, clients| {
            let (_, cell) = paced
                .iter()
                .find(|(wl, c)| *wl == w && c.clients == clients)
                .unwrap();
            cell.pace()
        };
        assert_eq!(pace("A", 16), Some(Duration::from_micros(200)));
        assert_eq!(pace("B", 16), Some(Duration::from_millis(2)));
        assert!(cells(&args(&["--quick"])).iter().all(|(_, c)| c.pace().is_none()));
    }

    #[test]
    fn order_rotates_each_sample() {
        let orders: Vec<Vec<usize>> = (0..3).map(|r| order(r, 3).collect()).collect();
        assert_eq!(orders, vec![vec![0, 1, 2], vec![1, 2, 0], vec![2, 0, 1]]);
    }
}
