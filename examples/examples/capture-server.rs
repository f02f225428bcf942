//! Serves capture.proto's EchoService with the behaviour the Go captures show.
//!
//! `cargo run --release --example capture-server -- --addr 127.0.0.1:8080 --framing frisbee|legacy
//! --concurrency per-rpc|inline|limited:N [--grpc]` (`--help` lists them). Prints `LISTENING <addr>` once
//! it accepts. With `--grpc` the same port also serves gRPC clients (grpcurl, say).

use clap::Parser;
use frpc_examples::args::ServerArgs;
use frpc_examples::capture;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = ServerArgs::parse();
    let listener = tokio::net::TcpListener::bind(&args.addr).await?;
    println!("LISTENING {}", listener.local_addr()?);
    let server = capture::builder(args.framing, args.concurrency)
        .grpc(args.grpc)
        .build()?;
    tokio::select! {
        result = server.serve_listener(listener) => result?,
        _ = tokio::signal::ctrl_c() => eprintln!("shutting down"),
    }
    Ok(())
}
