//! The capture server with RED metrics (`frpc::metrics::MetricsLayer`), and Prometheus text on
//! an HTTP port: `cargo run -p frpc-examples --example metrics -- 127.0.0.1:8080 127.0.0.1:9100`,
//! then `curl 127.0.0.1:9100/metrics` after a few calls (`frpc call …`).

use frpc::Framing;
use tokio::net::TcpListener;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let rpc = args.next().unwrap_or_else(|| "127.0.0.1:8080".into());
    let http = args.next().unwrap_or_else(|| "127.0.0.1:9100".into());
    let handle = frpc_examples::metrics::install_recorder()?;
    let metrics = TcpListener::bind(&http).await?;
    println!("metrics on http://{}/metrics", metrics.local_addr()?);
    tokio::spawn(frpc_examples::metrics::serve_metrics(metrics, handle));
    let listener = TcpListener::bind(&rpc).await?;
    println!("serving capture.EchoService on {}", listener.local_addr()?);
    frpc_examples::metrics::server(Framing::Frisbee)
        .serve(listener)
        .await?;
    Ok(())
}
