//! `frpc-bench load`: drives any server of the benchmark proto (this program's `serve`, or Go
//! fRPC's benchmark server) with one cell's load, and prints the same table row and JSON as the
//! matrix run.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use indicatif::ProgressBar;

use crate::frameworks::Framework;
use crate::matrix::{self, DEFAULT_REPS, Peer};
use crate::report::{self, Report, Row};
use crate::workload::{self, Callers, Cell, Payload};

/// Options of `load`.
#[derive(Debug, Clone, clap::Args)]
pub struct LoadArgs {
    /// The server, HOST:PORT.
    #[arg(long)]
    pub addr: String,
    /// The client: frpc (the generated frpc client, offering frpc's extensions), frpc-plain
    /// (the same without them: for servers that take none, as Go fRPC's), tonic, or raw (bare
    /// framed packets).
    #[arg(long, default_value = "frpc", value_parser = client_kind)]
    pub client: Framework,
    /// Clients, each with its own connection.
    #[arg(long, default_value_t = 16)]
    pub clients: usize,
    /// Calls each client keeps outstanding.
    #[arg(long, default_value_t = 1)]
    pub inflight: usize,
    /// How a client issues its calls: tasks or joined.
    #[arg(long, default_value = "tasks")]
    pub callers: Callers,
    /// Message size in bytes.
    #[arg(long, default_value_t = 32)]
    pub size: usize,
    /// The field the message travels in: string (`Benchmark`) or bytes (`Blob`, which Go
    /// fRPC's benchmark server does not have).
    #[arg(long, default_value_t = Payload::String)]
    pub payload: Payload,
    /// Measured seconds per sample.
    #[arg(long, default_value_t = 1.0)]
    pub secs: f64,
    /// Samples.
    #[arg(long, default_value_t = DEFAULT_REPS)]
    pub reps: usize,
    /// The framing of frpc and raw: frisbee (v0.11) or legacy (v0.10).
    #[arg(long, default_value = "frisbee")]
    pub framing: frpc::Framing,
    /// Worker threads of the load generator's runtime.
    #[arg(long, default_value_t = 2)]
    pub client_threads: usize,
    /// Offer this many calls per second (all clients together) on a schedule instead of
    /// closed loops (see "Paced runs" in benches/README.md).
    #[arg(long, value_parser = workload::parse_rate)]
    pub rate: Option<f64>,
    /// The server's process id, when it runs on this machine: the report then has its CPU
    /// time per call too (from procfs, as the matrix run measures its servers).
    #[arg(long)]
    pub server_pid: Option<u32>,
    /// Write the report as JSON (`-`: standard output).
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// Parses a client kind, where `frpc` means the frpc client (the same for both concurrencies).
fn client_kind(name: &str) -> Result<Framework, String> {
    match name {
        "frpc" => Ok(Framework::FrpcInline),
        other => other.parse(),
    }
}

impl LoadArgs {
    /// The cell: workload A with one call in flight, B with more.
    pub fn cell(&self) -> (&'static str, Cell) {
        let workload = if self.inflight > 1 { "B" } else { "A" };
        let cell = Cell {
            clients: self.clients,
            inflight: self.inflight,
            callers: self.callers,
            size: self.size,
            payload: self.payload,
            duration: Duration::from_secs_f64(self.secs),
            warmup: Duration::from_millis(200),
            settle: Duration::from_millis(50),
            rate: self.rate,
        };
        (workload, cell)
    }

    fn peer(&self) -> Result<Peer, String> {
        let addr: SocketAddr = self
            .addr
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve {}: {e}", self.addr))?
            .next()
            .ok_or_else(|| format!("{} resolves to nothing", self.addr))?;
        let client = match self.client {
            Framework::FrpcInline
            | Framework::FrpcPerRpc
            | Framework::FrpcProtobuf
            | Framework::FrpcPlain => "frpc",
            Framework::FrpcChannel => "frpc-channel",
            // frpc-grpc's client is tonic's.
            Framework::FrpcGrpc => "tonic",
            other => other.name(),
        };
        Ok(Peer {
            name: format!("{client}→{}", self.addr),
            client: self.client,
            addr,
            server_pid: self.server_pid,
        })
    }
}

/// Runs `load`: the samples, then the table row (and JSON).
pub fn load(args: &LoadArgs) -> Result<(), String> {
    let peer = args.peer()?;
    let (workload, cell) = args.cell();
    let rt = workload::runtime(args.client_threads);
    let samples = rt.block_on(matrix::measure(
        std::slice::from_ref(&peer),
        &cell,
        args.reps,
        args.framing,
        &ProgressBar::hidden(),
    ))?;
    let report = Report {
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        reps: args.reps,
        secs: args.secs,
        load_average: None,
        rows: vec![Row::new(&peer.name, workload, &cell, &samples[0])],
    };
    let mut table = report::table(&report.rows, report.cores);
    if let Some(paced) = report::paced_label(report.rows[0].rate) {
        table += &format!("({paced})\n");
    }
    match args.json.as_deref() {
        Some(path) if path.as_os_str() == "-" => print!("{}", report::json(&report)),
        Some(path) => {
            print!("{table}");
            std::fs::write(path, report::json(&report))
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        None => print!("{table}"),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        load: LoadArgs,
    }

    fn cell(line: &[&str]) -> Result<(&'static str, Cell), String> {
        let cli = Cli::try_parse_from(
            ["load", "--addr", "127.0.0.1:1"]
                .into_iter()
                .chain(line.iter().copied()),
        )
        .map_err(|e| e.to_string())?;
        Ok(cli.load.cell())
    }

    #[test]
    fn payload_defaults_to_string_and_parses_bytes() {
        let (workload, default) = cell(&[]).unwrap();
        assert_eq!(
            (workload, default.payload, default.size),
            ("A", Payload::String, 32)
        );
        let (_, bytes) = cell(&["--payload", "bytes", "--size", "1048576"]).unwrap();
        assert_eq!((bytes.payload, bytes.size), (Payload::Bytes, 1 << 20));
        assert!(cell(&["--payload", "blob"]).is_err());
    }

    #[test]
    fn a_rate_paces_the_cell() {
        assert_eq!(cell(&[]).unwrap().1.pace(), None);
        let (_, paced) = cell(&["--rate", "1000", "--clients", "4"]).unwrap();
        assert_eq!(paced.pace(), Some(Duration::from_millis(4)));
        for bad in ["0", "-5", "NaN", "inf", "fast"] {
            assert!(cell(&[&format!("--rate={bad}")]).is_err(), "{bad}");
        }
        // A rate too low for a `Duration` paces by the longest interval, not a panic.
        let (_, slow) = cell(&["--rate", "1e-300"]).unwrap();
        assert_eq!(slow.pace(), Some(Duration::MAX));
    }
}
