//! `frpc-bench`: the side-by-side matrix of frpc (inline and per-RPC handlers), tonic and a raw
//! framed echo, on fRPC's benchmark proto and method.
//!
//! `frpc-bench --quick` runs a reduced matrix in under two minutes, each cell in several short
//! samples with the frameworks interleaved sample by sample; `--baseline old.json` compares with
//! an earlier run. `frpc-bench serve` serves one framework for outside load generators and
//! `frpc-bench load` loads any server of the proto. Servers run in child processes this program
//! spawns, so client and server never share a runtime. `frpc-bench stream` measures streaming
//! throughput between frpc peers, flow control against plain (server and client on separate
//! runtimes in this process). `--help` lists every option.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::{Parser, Subcommand};

use frpc_bench::frameworks::Framework;
use frpc_bench::load::LoadArgs;
use frpc_bench::matrix::{self, Peer, RunArgs};
use frpc_bench::report::{self, Report};
use frpc_bench::serve::{ServeArgs, Server};
use frpc_bench::{chart, compare};

/// frpc vs tonic vs a raw framed echo on fRPC's benchmark proto: each cell in several short
/// samples, frameworks interleaved, medians and spreads reported.
#[derive(Debug, Parser)]
#[command(name = "frpc-bench", args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve one framework (prints `LISTENING <addr>` first) for outside load generators.
    Serve(ServeArgs),
    /// Load any server of the benchmark proto (Go fRPC's too) with one cell.
    Load(LoadArgs),
    /// Print a saved run (`--json`) again, and redraw its chart or compare it with a baseline.
    Report(ReportArgs),
    /// Messages/s of one streaming call between frpc peers: flow control (per window) vs plain.
    Stream(frpc_bench::stream::StreamArgs),
}

/// Options of `report`.
#[derive(Debug, clap::Args)]
struct ReportArgs {
    /// A report written by `--json`.
    input: PathBuf,
    /// Write the rows as CSV.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Write the chart as SVG.
    #[arg(long)]
    svg: Option<PathBuf>,
    /// Compare with an earlier run's --json.
    #[arg(long)]
    baseline: Option<PathBuf>,
}

fn fail(message: &str) -> ! {
    eprintln!("frpc-bench: {message}");
    std::process::exit(2)
}

fn main() {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Serve(args)) => {
            frpc_bench::serve::serve(&args).unwrap_or_else(|e| fail(&e.to_string()))
        }
        Some(Command::Load(args)) => frpc_bench::load::load(&args).unwrap_or_else(|e| fail(&e)),
        Some(Command::Report(args)) => {
            let report = read_report(&args.input);
            print!("{}", report::table(&report.rows, report.cores));
            println!("{}", report::LEGEND);
            let baseline = args.baseline.as_deref().map(read_report);
            emit(
                &report,
                None,
                args.csv.as_deref(),
                args.svg.as_deref(),
                baseline.as_ref(),
            );
        }
        Some(Command::Stream(args)) => frpc_bench::stream::run(&args),
        None => run_matrix(&cli.run),
    }
}

/// Spawns one server per framework; the peers to measure (with the probes if asked) and the
/// servers, which stop when dropped.
fn spawn(args: &RunArgs) -> (Vec<Peer>, Vec<(Framework, Server)>) {
    let servers: Vec<(Framework, Server)> = args
        .frameworks
        .iter()
        .map(|&f| {
            let server = Server::spawn(f, args.framing, args.server_threads).unwrap_or_else(|e| fail(&e));
            (f, server)
        })
        .collect();
    let server_of = |framework| servers.iter().find(|(f, _)| *f == framework).map(|(_, s)| s);
    let mut peers: Vec<Peer> = servers
        .iter()
        .map(|(f, s)| Peer {
            name: f.name().to_owned(),
            client: *f,
            addr: s.addr,
            server_pid: Some(s.pid()),
        })
        .collect();
    for (name, client, server) in matrix::PROBES.iter().filter(|_| args.probe) {
        if let Some(server) = server_of(*server) {
            peers.push(Peer {
                name: (*name).to_owned(),
                client: *client,
                addr: server.addr,
                server_pid: Some(server.pid()),
            });
        }
    }
    (peers, servers)
}

fn run_matrix(args: &RunArgs) {
    let baseline = args.baseline.as_deref().map(read_report);
    let cells = matrix::cells(args);
    let started = Instant::now();
    let load_before = report::load_average();
    let (peers, servers) = spawn(args);
    let rows = matrix::run(args, &cells, &peers).unwrap_or_else(|e| fail(&e));
    drop(servers);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    print!("{}", report::table(&rows, cores));
    println!("{}", report::LEGEND);
    let load_average = load_before.zip(report::load_average());
    let load = load_average.map_or(String::new(), |(a, b)| format!(", load average {a:.1} → {b:.1}"));
    println!(
        "({} cells × {} peers × {} samples of {} s{} in {:.0} s on {cores} cores{load})",
        cells.len(),
        peers.len(),
        args.reps,
        args.secs(),
        report::paced_label(args.rate).map_or(String::new(), |paced| format!(", {paced}")),
        started.elapsed().as_secs_f64(),
    );
    let report = Report {
        cores,
        reps: args.reps,
        secs: args.secs(),
        load_average,
        rows,
    };
    let (json, csv, svg) = (args.json.as_deref(), args.csv.as_deref(), args.svg.as_deref());
    emit(&report, json, csv, svg, baseline.as_ref());
}

/// Prints the comparison with `baseline` (if any) and writes the files asked for.
fn emit(
    report: &Report,
    json: Option<&Path>,
    csv: Option<&Path>,
    svg: Option<&Path>,
    baseline: Option<&Report>,
) {
    if let Some(before) = baseline {
        println!();
        let compared = compare::compare(&before.rows, &report.rows);
        print!("{}", compare::table(&compared));
        let (new, gone) = compare::unmatched(&before.rows, &report.rows);
        if new + gone > 0 {
            println!("({new} rows not in the baseline, {gone} baseline rows not in this run)");
        }
    }
    write(json, report::json(report));
    write(csv, report::csv(&report.rows));
    let title = format!(
        "frpc vs tonic vs raw echo: RPC/s relative to raw, median of {} samples of {} s \
         ({} cores, client and server on one host)",
        report.reps, report.secs, report.cores
    );
    write(svg, chart::svg(&report.rows, &title));
}

fn read_report(path: &Path) -> Report {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| fail(&format!("cannot read {}: {e}", path.display())));
    report::read_json(&text).unwrap_or_else(|e| fail(&format!("{}: {e}", path.display())))
}

fn write(path: Option<&Path>, content: String) {
    if let Some(path) = path {
        std::fs::write(path, content)
            .unwrap_or_else(|e| fail(&format!("cannot write {}: {e}", path.display())));
    }
}
