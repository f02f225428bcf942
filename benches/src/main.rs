//! `frpc-bench`: the side-by-side matrix of frpc (inline and per-RPC handlers), tonic and a raw
//! framed echo, on fRPC's benchmark proto and method.
//!
//! `frpc-bench --quick` runs a reduced matrix in under two minutes; `frpc-bench serve --addr
//! 127.0.0.1:0 --framework frpc --concurrency inline` serves one framework for outside load
//! generators. Servers run in child processes this program spawns, so client and server never
//! share a runtime; both have two worker threads. Frameworks are interleaved within each cell.

use std::time::{Duration, Instant};

use frpc_bench::frameworks::Framework;
use frpc_bench::report::{self, Row};
use frpc_bench::serve::{ServeArgs, Server};
use frpc_bench::workload::{self, Callers, Cell};

const USAGE: &str = "\
usage: frpc-bench [--quick] [--clients 1,16,128] [--sizes 32,512,131072,1048576] [--secs S]
                  [--json PATH] [--csv PATH] [--svg PATH] [--framing frisbee|legacy]
                  [--frameworks frpc-inline,frpc-per-rpc,tonic,raw] [--workloads A,B]
                  [--callers tasks,joined]   (how workload B's 10 calls per client are issued)
                  [--probe]   (also raw client → frpc-inline server, frpc client → raw server)
       frpc-bench serve --addr 127.0.0.1:0 --framework frpc|tonic|raw
                  [--framing frisbee|legacy] [--concurrency inline|per-rpc]";

/// The `--probe` rows: `(name, client, server)`. The raw client on the frpc-inline server
/// measures frpc's server alone; the frpc client on the raw echo measures frpc's client alone.
/// (Only inline handlers answer in order, which the raw client's latency FIFO assumes.)
const PROBES: [(&str, Framework, Framework); 2] = [
    ("raw→frpc-inline", Framework::Raw, Framework::FrpcInline),
    ("frpc→raw", Framework::FrpcInline, Framework::Raw),
];

#[derive(Debug)]
struct Args {
    quick: bool,
    clients: Vec<usize>,
    sizes: Vec<usize>,
    secs: Option<f64>,
    json: Option<String>,
    csv: Option<String>,
    svg: Option<String>,
    framing: frpc::Framing,
    frameworks: Vec<Framework>,
    workloads: Vec<String>,
    callers: Vec<Callers>,
    probe: bool,
}

fn fail(message: &str) -> ! {
    eprintln!("frpc-bench: {message}\n{USAGE}");
    std::process::exit(2)
}

fn numbers(raw: &str) -> Vec<usize> {
    raw.split(',')
        .map(|s| {
            s.trim()
                .parse()
                .unwrap_or_else(|_| fail(&format!("bad number {s:?}")))
        })
        .collect()
}

fn parse(args: &[String]) -> Args {
    let mut parsed = Args {
        quick: false,
        clients: vec![1, 16, 128],
        sizes: vec![32, 512, 128 << 10, 1 << 20],
        secs: None,
        json: None,
        csv: None,
        svg: None,
        framing: frpc::Framing::Frisbee,
        frameworks: Framework::ALL.to_vec(),
        workloads: vec!["A".into(), "B".into()],
        callers: Callers::ALL.to_vec(),
        probe: false,
    };
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        if flag == "--quick" || flag == "--probe" {
            parsed.quick |= flag == "--quick";
            parsed.probe |= flag == "--probe";
            continue;
        }
        if flag == "--help" || flag == "-h" {
            println!("{USAGE}");
            std::process::exit(0);
        }
        let value = args
            .next()
            .unwrap_or_else(|| fail(&format!("{flag} needs a value")))
            .as_str();
        match flag.as_str() {
            "--clients" => parsed.clients = numbers(value),
            "--sizes" => parsed.sizes = numbers(value),
            "--secs" => parsed.secs = Some(value.parse().unwrap_or_else(|_| fail("bad --secs"))),
            "--json" => parsed.json = Some(value.to_owned()),
            "--csv" => parsed.csv = Some(value.to_owned()),
            "--svg" => parsed.svg = Some(value.to_owned()),
            "--framing" => parsed.framing = value.parse().unwrap_or_else(|e: String| fail(&e)),
            "--frameworks" => {
                parsed.frameworks = value
                    .split(',')
                    .map(|f| f.parse().unwrap_or_else(|e: String| fail(&e)))
                    .collect()
            }
            "--workloads" => parsed.workloads = value.split(',').map(str::to_uppercase).collect(),
            "--callers" => {
                parsed.callers = value
                    .split(',')
                    .map(|c| c.parse().unwrap_or_else(|e: String| fail(&e)))
                    .collect()
            }
            other => fail(&format!("unknown argument {other:?}")),
        }
    }
    parsed
}

/// The cells to run, as `(workload, cell)`. `--quick`: A with 1, 16 and 128 clients at 32 B and
/// 512 B, A with 16 clients at 128 KiB and 1 MiB, B with 16 and 128 clients; 1 s each. B runs
/// once per `--callers` mode (A has one call in flight, where the modes are the same).
fn matrix(args: &Args) -> Vec<(&'static str, Cell)> {
    let secs = args.secs.unwrap_or(if args.quick { 1.0 } else { 3.0 });
    let cell = |clients, inflight, callers, size| Cell {
        clients,
        inflight,
        callers,
        size,
        duration: Duration::from_secs_f64(secs),
        warmup: Duration::from_millis(200),
    };
    let mut cells = Vec::new();
    if args.quick {
        for size in [32, 512] {
            for clients in [1, 16, 128] {
                cells.push(("A", cell(clients, 1, Callers::Tasks, size)));
            }
        }
        for size in [128 << 10, 1 << 20] {
            cells.push(("A", cell(16, 1, Callers::Tasks, size)));
        }
        for &callers in &args.callers {
            for clients in [16, 128] {
                cells.push(("B", cell(clients, 10, callers, 32)));
            }
        }
    } else {
        for &size in &args.sizes {
            for &clients in &args.clients {
                cells.push(("A", cell(clients, 1, Callers::Tasks, size)));
            }
        }
        for &callers in &args.callers {
            for &clients in &args.clients {
                cells.push(("B", cell(clients, 10, callers, 32)));
            }
        }
    }
    cells.retain(|(workload, _)| args.workloads.iter().any(|w| w == workload));
    cells
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("serve") {
        let serve_args = ServeArgs::parse(&args[1..]).unwrap_or_else(|e| fail(&e));
        if let Err(err) = frpc_bench::serve::serve(&serve_args) {
            fail(&err.to_string());
        }
        return;
    }
    let args = parse(&args);
    let cells = matrix(&args);
    let started = Instant::now();
    let servers: Vec<(Framework, Server)> = args
        .frameworks
        .iter()
        .map(|&f| (f, Server::spawn(f, args.framing).unwrap_or_else(|e| fail(&e))))
        .collect();
    let server_of = |framework| servers.iter().find(|(f, _)| *f == framework).map(|(_, s)| s.addr);
    let probes: Vec<(&str, Framework, std::net::SocketAddr)> = PROBES
        .iter()
        .filter(|_| args.probe)
        .filter_map(|&(name, client, server)| server_of(server).map(|addr| (name, client, addr)))
        .collect();
    let progress = indicatif::ProgressBar::new((cells.len() * (servers.len() + probes.len())) as u64);
    progress.set_style(
        indicatif::ProgressStyle::with_template("{elapsed_precise} {bar:40} {pos}/{len} {msg}")
            .expect("valid template"),
    );
    let rt = workload::runtime();
    let mut rows = Vec::new();
    for (workload, cell) in &cells {
        // Frameworks interleaved within each cell, so drift on a shared machine hits all alike.
        for (framework, server) in &servers {
            progress.set_message(format!(
                "{workload} {}c×{} ({}) {} {framework}",
                cell.clients,
                cell.inflight,
                cell.callers,
                report::size_label(cell.size)
            ));
            let outcome = rt.block_on(workload::run(*framework, server.addr, *cell, args.framing));
            rows.push(Row::new(framework.name(), workload, cell, &outcome));
            progress.inc(1);
        }
        for &(name, client, addr) in &probes {
            progress.set_message(format!("{workload} {}c×{} {name}", cell.clients, cell.inflight));
            let outcome = rt.block_on(workload::run(client, addr, *cell, args.framing));
            rows.push(Row::new(name, workload, cell, &outcome));
            progress.inc(1);
        }
    }
    progress.finish_and_clear();
    drop(servers);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    print!("{}", report::table(&rows));
    println!(
        "({} cells × {} frameworks in {:.0} s on {cores} cores)",
        cells.len(),
        args.frameworks.len(),
        started.elapsed().as_secs_f64(),
    );
    let write = |path: &Option<String>, content: String| {
        if let Some(path) = path {
            std::fs::write(path, content).unwrap_or_else(|e| fail(&format!("cannot write {path}: {e}")));
        }
    };
    write(&args.json, report::json(&rows));
    write(&args.csv, report::csv(&rows));
    let title = format!("RPC/s: frpc vs tonic vs raw echo ({cores} cores, client and server on one host)");
    write(&args.svg, report::svg(&rows, &title));
}
