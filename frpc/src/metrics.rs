//! RED metrics for servers (feature `metrics`): [`MetricsLayer`], a tower layer recording every
//! call through the [`metrics`](https://docs.rs/metrics) facade, so any exporter (Prometheus,
//! StatsD, OpenTelemetry) collects them. Names follow the OpenTelemetry RPC semantic
//! conventions:
//!
//! | metric | kind | unit |
//! |---|---|---|
//! | `rpc.server.duration` | histogram | seconds, from the call reaching the layer to its answer (a stream: to its end) |
//! | `rpc.server.requests` | counter | calls |
//!
//! Labels: `rpc.system = "frpc"`, `rpc.service` (full proto name), `rpc.method` (proto name)
//! and `rpc.frpc.status_code` (`OK`, `NOT_FOUND`, … as gRPC names codes). Without a recorder
//! installed the facade does nothing; without the feature nothing is compiled in. Services
//! floor, beside the middleware it plugs into.

use std::task::{Context as TaskContext, Poll};
use std::time::Instant;

use tower::{Layer, Service as TowerService};

use crate::middleware::{CallRequest, CallResponse};
use crate::status::Status;
use crate::types::BoxFuture;

/// Records `rpc.server.duration` and `rpc.server.requests` for every call it wraps: add it with
/// `frpc::Builder::layer(MetricsLayer)` (or to one service with its `layer`).
#[derive(Debug, Clone, Copy, Default)]
pub struct MetricsLayer;

impl<S> Layer<S> for MetricsLayer {
    type Service = Metrics<S>;

    fn layer(&self, inner: S) -> Metrics<S> {
        Metrics { inner }
    }
}

/// The service [`MetricsLayer`] wraps around the rest of the stack.
#[derive(Debug, Clone)]
pub struct Metrics<S> {
    inner: S,
}

impl<S> TowerService<CallRequest> for Metrics<S>
where
    S: TowerService<CallRequest, Response = CallResponse, Error = Status>,
    S::Future: Send + 'static,
{
    type Response = CallResponse;
    type Error = Status;
    type Future = BoxFuture<Result<CallResponse, Status>>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), Status>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: CallRequest) -> Self::Future {
        let (service, method) = (request.service(), request.method());
        let start = Instant::now();
        let call = self.inner.call(request);
        Box::pin(async move {
            let result = call.await;
            record(service, method, &result, start);
            result
        })
    }
}

/// Records one finished call.
fn record(
    service: &'static str,
    method: &'static str,
    result: &Result<CallResponse, Status>,
    start: Instant,
) {
    let code = match result {
        Ok(_) => "OK",
        Err(status) => status.code().as_str(),
    };
    let labels = [
        ("rpc.system", "frpc"),
        ("rpc.service", service),
        ("rpc.method", method),
        ("rpc.frpc.status_code", code),
    ];
    metrics::histogram!("rpc.server.duration", &labels).record(start.elapsed().as_secs_f64());
    metrics::counter!("rpc.server.requests", &labels).increment(1);
}
