//! The cluster demo: three node processes and one balanced client under load, printing calls
//! per node each half second; one node is killed mid-run (SIGKILL) and started again on its
//! port: calls keep succeeding on the other two (only those in flight on the killed node fail,
//! with `UNAVAILABLE`), and the restarted node gets traffic again within a few seconds.
//!
//! `cargo run -p frpc-examples --bin cluster` (the demo) or
//! `cluster server --name s0 --addr 127.0.0.1:7000` (one node).

use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use frpc::channel::Backoff;
use frpc::{Channel, Endpoint};
use frpc_examples::cluster::{self, Load, Process, Tally};

#[derive(Debug, Parser)]
#[command(
    name = "cluster",
    about = "Three frpc servers behind one balanced client, one killed mid-run"
)]
struct Args {
    #[command(subcommand)]
    command: Option<Cmd>,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Runs the demo (the default).
    Demo {
        /// Concurrent callers.
        #[arg(long, default_value_t = 16)]
        workers: usize,
    },
    /// Serves one node; prints `LISTENING <addr>` once it accepts.
    Server {
        /// The node's name (its replies carry it).
        #[arg(long)]
        name: String,
        /// Address to listen on (port 0: any free port).
        #[arg(long, default_value = "127.0.0.1:0")]
        addr: String,
    },
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    match Args::parse().command {
        Some(Cmd::Server { name, addr }) => Ok(cluster::serve(&name, &addr).await?),
        Some(Cmd::Demo { workers }) => demo(workers).await,
        None => demo(16).await,
    }
}

fn line(started: Instant, what: &str, tally: &Tally) {
    let calls: Vec<String> = tally
        .calls
        .iter()
        .map(|(name, n)| format!("{name}={n}"))
        .collect();
    println!(
        "{:>5.1}s {what:<28} {}  errors={}",
        started.elapsed().as_secs_f64(),
        calls.join(" "),
        tally.errors.len()
    );
}

async fn demo(workers: usize) -> Result<(), Box<dyn std::error::Error>> {
    let exe = std::env::current_exe()?;
    let mut nodes = Vec::new();
    for name in ["s0", "s1", "s2"] {
        nodes.push(Process::spawn(&exe, name, "127.0.0.1:0")?);
    }
    let backoff = Backoff::default()
        .initial(Duration::from_millis(50))
        .max(Duration::from_millis(500));
    let endpoints = nodes
        .iter()
        .map(|node| Endpoint::from(node.addr).backoff(backoff));
    let channel = Channel::balance_list(endpoints).with_timeout(Duration::from_secs(5));
    channel.connected(3).await;
    for node in &nodes {
        println!("{} listening on {}", node.name, node.addr);
    }

    let started = Instant::now();
    let load = Load::start(channel.clone(), workers);
    let tick = Duration::from_millis(500);
    for _ in 0..4 {
        tokio::time::sleep(tick).await;
        line(started, "all three up", &load.tally());
    }

    nodes[1].kill()?;
    line(started, "s1 killed", &load.tally());
    for _ in 0..4 {
        tokio::time::sleep(tick).await;
        line(started, "s1 down", &load.tally());
    }

    let port = nodes[1].addr.to_string();
    nodes[1] = Process::spawn(&exe, "s1", &port)?;
    line(started, "s1 restarted", &load.tally());
    let before = load.tally().of("s1");
    let back = load.wait_until(|tally| tally.of("s1") > before).await;
    line(started, "s1 serving again", &back);
    for _ in 0..4 {
        tokio::time::sleep(tick).await;
        line(started, "all three up", &load.tally());
    }

    let tally = load.stop().await;
    line(started, "done", &tally);
    for (code, message) in &tally.errors {
        println!("  failed: {code} {message}");
    }
    Ok(())
}
