//! The example programs' command lines (clap derive: each has `--help`).

use clap::Parser;
use frpc::{Concurrency, Framing};

/// `capture-server`: serves capture.proto's EchoService with the behaviour the Go captures show.
#[derive(Debug, Clone, PartialEq, Parser)]
#[command(
    name = "capture-server",
    about = "Serves capture.proto's EchoService with the behaviour the Go captures show",
    long_about = "Serves capture.proto's EchoService with the behaviour the Go captures show. \
                  Prints `LISTENING <addr>` once it accepts; Ctrl-C stops it."
)]
pub struct ServerArgs {
    /// Address to listen on (port 0: any free port, printed on start).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub addr: String,
    /// Packet framing: `frisbee` (frisbee-go ≥ v0.11) or `legacy` (≤ v0.10.2).
    #[arg(long, default_value = "frisbee")]
    pub framing: Framing,
    /// How handlers are scheduled: `per-rpc`, `inline` or `limited:N`.
    #[arg(long, default_value = "per-rpc", value_parser = concurrency)]
    pub concurrency: Concurrency,
    /// Also serve gRPC clients (grpcurl, grpcio, tonic) on the same `--addr`.
    #[arg(long)]
    pub grpc: bool,
}

/// `capture-client`: calls every method of capture.proto's EchoService once.
#[derive(Debug, Clone, PartialEq, Parser)]
#[command(
    name = "capture-client",
    about = "Calls every method of capture.proto's EchoService once and prints the replies"
)]
pub struct ClientArgs {
    /// Address of the server (`capture-server`, or a Go fRPC server of the same proto).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub addr: String,
    /// Packet framing: `frisbee` (frisbee-go ≥ v0.11) or `legacy` (≤ v0.10.2).
    #[arg(long, default_value = "frisbee")]
    pub framing: Framing,
}

/// Parses a concurrency mode: `per-rpc`, `inline` or `limited:N`.
pub fn concurrency(raw: &str) -> Result<Concurrency, String> {
    match raw {
        "per-rpc" => Ok(Concurrency::PerRpc),
        "inline" => Ok(Concurrency::Inline),
        other => match other.strip_prefix("limited:").map(str::parse) {
            Some(Ok(n)) => Ok(Concurrency::Limited(n)),
            _ => Err(format!(
                "unknown concurrency {other:?} (per-rpc, inline or limited:N)"
            )),
        },
    }
}
