//! RED metrics of a server scraped by Prometheus: the capture.proto EchoService behind
//! `frpc::metrics::MetricsLayer`, the metrics served as Prometheus text by
//! `metrics-exporter-prometheus` on its own HTTP listener.

use std::net::SocketAddr;

use frpc::metrics::MetricsLayer;
use frpc::{Concurrency, Framing};
use metrics_exporter_prometheus::{BuildError, PrometheusBuilder};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::capture;

/// Installs the process-wide Prometheus recorder and its HTTP listener on `addr` (bound when
/// this returns, so it can be scraped at once). Call it inside a Tokio runtime, once per
/// process: the recorder is global.
pub fn install_prometheus(addr: SocketAddr) -> Result<(), BuildError> {
    PrometheusBuilder::new().with_http_listener(addr).install()
}

/// The EchoService server with metrics on every call (the layer wraps every service).
pub fn server() -> Result<frpc::Server, frpc::Error> {
    capture::builder(Framing::Frisbee, Concurrency::PerRpc)
        .layer(MetricsLayer::new())
        .build()
}

/// Fetches `http://{addr}/metrics` (HTTP/1.0, so the exporter closes after answering) and
/// returns the body, the Prometheus text.
pub async fn scrape(addr: SocketAddr) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(addr).await?;
    let request = format!("GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    match response.split_once("\r\n\r\n") {
        Some((head, body)) if head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200") => {
            Ok(body.to_owned())
        }
        _ => Err(std::io::Error::other(format!("not a 200 answer: {response:?}"))),
    }
}

/// The samples of a Prometheus text scrape named `metric` and carrying every one of `labels`
/// (`name="value"` pairs), as (line, value).
pub fn samples<'a>(
    scrape: &'a str,
    metric: &'a str,
    labels: &'a [&'a str],
) -> impl Iterator<Item = (&'a str, f64)> + 'a {
    scrape.lines().filter_map(move |line| {
        let (name, rest) = line.split_once('{')?;
        let (labels_text, value) = rest.rsplit_once("} ")?;
        let value = value.trim().parse().ok()?;
        let wanted = name == metric && labels.iter().all(|label| labels_text.contains(label));
        wanted.then_some((line, value))
    })
}
