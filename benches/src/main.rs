//! `frpc-bench`: the side-by-side matrix of frpc, tonic and a raw framed echo.
//!
//! `cargo run --release -p frpc-bench -- --quick` runs it (under two minutes); `frpc-bench serve
//! --addr 127.0.0.1:0 --framework frpc-inline` serves one framework for outside load generators.
//! Servers run in child processes this program spawns, so client and server never share a
//! runtime; both use two worker threads.

use std::io::BufRead;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use frpc_bench::load::{self, Cell};
use frpc_bench::report::{self, Row};
use frpc_bench::service::{self, Framework};

#[derive(Debug)]
struct Args {
    quick: bool,
    clients: Vec<usize>,
    sizes: Vec<usize>,
    secs: f64,
    json: Option<String>,
    csv: Option<String>,
    svg: Option<String>,
    framing: frpc::Framing,
    frameworks: Vec<Framework>,
    workloads: Vec<String>,
}

fn list(raw: &str) -> Vec<usize> {
    raw.split(',')
        .map(|s| {
            s.trim()
                .parse()
                .unwrap_or_else(|_| fail(&format!("bad number {s:?}")))
        })
        .collect()
}

fn fail(message: &str) -> ! {
    eprintln!("frpc-bench: {message}");
    std::process::exit(2)
}

fn value(args: &[String], i: usize) -> &str {
    args.get(i + 1)
        .map(String::as_str)
        .unwrap_or_else(|| fail(&format!("{} needs a value", args[i])))
}

fn parse(args: &[String]) -> Args {
    let mut parsed = Args {
        quick: false,
        clients: vec![1, 16, 128],
        sizes: vec![32, 512, 128 << 10, 1 << 20],
        secs: 2.0,
        json: None,
        csv: None,
        svg: None,
        framing: frpc::Framing::Frisbee,
        frameworks: Framework::ALL.to_vec(),
        workloads: vec!["A".into(), "B".into()],
    };
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--quick" => parsed.quick = true,
            "--clients" => parsed.clients = list(value(args, i)),
            "--sizes" => parsed.sizes = list(value(args, i)),
            "--secs" => parsed.secs = value(args, i).parse().unwrap_or_else(|_| fail("bad --secs")),
            "--json" => parsed.json = Some(value(args, i).to_owned()),
            "--csv" => parsed.csv = Some(value(args, i).to_owned()),
            "--svg" => parsed.svg = Some(value(args, i).to_owned()),
            "--framing" => parsed.framing = value(args, i).parse().unwrap_or_else(|e: String| fail(&e)),
            "--frameworks" => {
                parsed.frameworks = value(args, i)
                    .split(',')
                    .map(|f| f.parse().unwrap_or_else(|e: String| fail(&e)))
                    .collect()
            }
            "--workloads" => parsed.workloads = value(args, i).split(',').map(str::to_owned).collect(),
            other => fail(&format!("unknown argument {other:?}")),
        }
        i += if matches!(args[i].as_str(), "--quick") {
            1
        } else {
            2
        };
    }
    parsed
}

/// The cells to run: `(workload, cell)`.
fn matrix(args: &Args) -> Vec<(&'static str, Cell)> {
    let secs = if args.quick && args.secs == 2.0 {
        1.0
    } else {
        args.secs
    };
    let cell = |clients, inflight, size| Cell {
        clients,
        inflight,
        size,
        duration: Duration::from_secs_f64(secs),
        warmup: Duration::from_millis(200),
    };
    let mut cells = Vec::new();
    if args.quick {
        for size in [32, 512] {
            for clients in [1, 16, 128] {
                cells.push(("A", cell(clients, 1, size)));
            }
        }
        for size in [128 << 10, 1 << 20] {
            cells.push(("A", cell(16, 1, size)));
        }
        for clients in [16, 128] {
            cells.push(("B", cell(clients, 10, 32)));
        }
    } else {
        for &size in &args.sizes {
            for &clients in &args.clients {
                cells.push(("A", cell(clients, 1, size)));
            }
        }
        for &clients in &args.clients {
            cells.push(("B", cell(clients, 10, 32)));
        }
    }
    cells.retain(|(workload, _)| args.workloads.iter().any(|w| w == workload));
    cells
}

/// A server child process; killed on drop.
struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn_server(framework: Framework, framing: frpc::Framing) -> Server {
    let exe = std::env::current_exe().unwrap_or_else(|e| fail(&format!("cannot find myself: {e}")));
    let framing = match framing {
        frpc::Framing::Frisbee => "frisbee",
        frpc::Framing::Legacy => "legacy",
    };
    let mut child = Command::new(exe)
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--framework",
            framework.name(),
            "--framing",
            framing,
        ])
        .stdout(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| fail(&format!("cannot start the {framework} server: {e}")));
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("piped"))
        .read_line(&mut line)
        .expect("read");
    let addr = line
        .strip_prefix("LISTENING ")
        .and_then(|a| a.trim().parse().ok())
        .unwrap_or_else(|| fail(&format!("the {framework} server said {line:?}")));
    Server { child, addr }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// `frpc-bench serve --addr A --framework F [--framing frisbee|legacy] [--concurrency inline|per-rpc]`
fn serve(args: &[String]) {
    let (mut addr, mut framework, mut framing) = (
        "127.0.0.1:0".to_owned(),
        Framework::FrpcInline,
        frpc::Framing::Frisbee,
    );
    let mut i = 0;
    while i < args.len() {
        let v = value(args, i);
        match args[i].as_str() {
            "--addr" => addr = v.to_owned(),
            "--framework" => {
                framework = match v {
                    "frpc" => Framework::FrpcInline,
                    other => other.parse().unwrap_or_else(|e: String| fail(&e)),
                }
            }
            "--framing" => framing = v.parse().unwrap_or_else(|e: String| fail(&e)),
            "--concurrency" => {
                framework = match v {
                    "inline" => Framework::FrpcInline,
                    "per-rpc" => Framework::FrpcPerRpc,
                    other => fail(&format!("unknown concurrency {other:?}")),
                }
            }
            other => fail(&format!("unknown argument {other:?}")),
        }
        i += 2;
    }
    runtime().block_on(async {
        let listener = tokio::net::TcpListener::bind(&addr)
            .await
            .unwrap_or_else(|e| fail(&e.to_string()));
        println!("LISTENING {}", listener.local_addr().expect("bound"));
        if let Err(err) = service::serve(framework, listener, framing).await {
            fail(&err.to_string());
        }
    });
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("serve") {
        return serve(&args[1..]);
    }
    let args = parse(&args);
    let cells = matrix(&args);
    let started = Instant::now();
    let servers: Vec<(Framework, Server)> = args
        .frameworks
        .iter()
        .map(|&f| (f, spawn_server(f, args.framing)))
        .collect();
    let progress = indicatif::ProgressBar::new((cells.len() * servers.len()) as u64);
    progress.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} {msg}").expect("valid template"),
    );
    let rt = runtime();
    let mut rows = Vec::new();
    for (workload, cell) in &cells {
        // Frameworks interleaved within each cell, so drift on a shared machine hits all alike.
        for (framework, server) in &servers {
            progress.set_message(format!(
                "{workload} {}c {} {framework}",
                cell.clients,
                report::size_label(cell.size)
            ));
            let outcome = rt.block_on(load::run(*framework, server.addr, *cell, args.framing));
            let secs = cell.duration.as_secs_f64();
            rows.push(Row {
                framework: framework.name().to_owned(),
                workload: (*workload).to_owned(),
                clients: cell.clients,
                inflight: cell.inflight,
                size: cell.size,
                rps_total: outcome.calls as f64 / secs,
                rps_per_client: outcome.calls as f64 / secs / cell.clients as f64,
                p50_us: outcome.latency.value_at_quantile(0.5),
                p99_us: outcome.latency.value_at_quantile(0.99),
            });
            progress.inc(1);
        }
    }
    progress.finish_and_clear();
    print!("{}", report::table(&rows));
    println!(
        "({} cells in {:.0} s, {} cores)",
        cells.len(),
        started.elapsed().as_secs_f64(),
        cores()
    );
    let write = |path: &Option<String>, content: String| {
        if let Some(path) = path {
            std::fs::write(path, content).unwrap_or_else(|e| fail(&format!("cannot write {path}: {e}")));
        }
    };
    write(
        &args.json,
        serde_json::to_string_pretty(&rows).expect("rows serialize"),
    );
    write(&args.csv, report::csv(&rows));
    let title = format!("RPC/s, frpc vs tonic vs raw ({} cores)", cores());
    write(&args.svg, report::svg(&rows, &title));
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
