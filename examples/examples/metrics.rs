//! RED metrics scraped by Prometheus: serves the capture.proto EchoService with
//! `frpc::metrics::MetricsLayer`, exports the metrics as Prometheus text on their own HTTP
//! listener, makes a few calls and prints the scrape's frpc lines.
//!
//! `cargo run -p frpc-examples --example metrics [-- 127.0.0.1:9464]`

use std::net::SocketAddr;

use frpc_examples::capture::pb;
use frpc_examples::metrics;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let metrics_addr: SocketAddr = match std::env::args().nth(1) {
        Some(addr) => addr.parse()?,
        None => "127.0.0.1:9464".parse()?,
    };
    metrics::install_prometheus(metrics_addr)?;
    let bound = metrics::server()?.bind("127.0.0.1:0").await?;
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());

    let client = pb::EchoServiceClient::connect(addr).await?;
    for message in ["a", "b", "c"] {
        let request = pb::Request {
            message: message.into(),
            corpus: 0,
        };
        client.echo(request).await?;
    }
    // Testy answers with an error: counted under its status code.
    let _ = client.testy(pb::SearchResponse::default()).await;

    println!("frpc on {addr}, Prometheus text on http://{metrics_addr}/metrics:\n");
    for line in metrics::scrape(metrics_addr).await?.lines() {
        if line.starts_with("rpc_server_requests") || line.starts_with("rpc_server_duration_count") {
            println!("{line}");
        }
    }
    Ok(())
}
