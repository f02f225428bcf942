//! Serves capture.proto's EchoService with the behaviour the Go captures show.
//!
//! `cargo run --release --example capture-server -- --addr 127.0.0.1:8080 --framing frisbee|legacy
//! --concurrency per-rpc|inline|limited:N`. Prints `LISTENING <addr>` once it accepts.

use frpc::Framing;
use frpc_examples::{args, capture};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr: String = args::flag("--addr", "127.0.0.1:8080".to_owned());
    let framing: Framing = args::flag("--framing", Framing::Frisbee);
    let concurrency = args::concurrency(&args::flag("--concurrency", "per-rpc".to_owned()))?;
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("LISTENING {}", listener.local_addr()?);
    let server = capture::server(framing, concurrency);
    tokio::select! {
        result = server.serve(listener) => result?,
        _ = tokio::signal::ctrl_c() => eprintln!("shutting down"),
    }
    Ok(())
}
