//! The metrics example's pieces: the capture server with [`frpc::metrics::MetricsLayer`], and a
//! minimal HTTP endpoint serving what a Prometheus recorder rendered (any path, any method:
//! a scrape target needs no more).

use frpc::Framing;
use frpc::metrics::MetricsLayer;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Installs the process-wide Prometheus recorder (once per process) and returns its handle.
///
/// # Errors
/// When another recorder is already installed.
pub fn install_recorder() -> Result<PrometheusHandle, metrics_exporter_prometheus::BuildError> {
    PrometheusBuilder::new().install_recorder()
}

/// The capture server, every call recorded by [`MetricsLayer`].
pub fn server(framing: Framing) -> frpc::Server {
    crate::capture::builder(framing, frpc::Concurrency::PerRpc)
        .layer(MetricsLayer)
        .build()
        .expect("the capture service has no conflicting routes")
}

/// Answers every HTTP request on `listener` with the rendered metrics, until the task is
/// dropped. Requests are read up to their blank line; a connection serves one request.
pub async fn serve_metrics(listener: TcpListener, handle: PrometheusHandle) {
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            continue;
        };
        let handle = handle.clone();
        tokio::spawn(async move {
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            // Read the request head; its content does not matter.
            while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < 64 * 1024 {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            let body = handle.render();
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(body.as_bytes()).await;
        });
    }
}
