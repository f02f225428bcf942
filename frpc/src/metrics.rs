//! RED metrics for servers (feature `metrics`): a [`tower::Layer`] recording, per service and
//! method, every call's outcome and duration through the [`metrics`](::metrics) facade, so any
//! exporter (Prometheus, StatsD, OpenTelemetry) picks them up.
//!
//! Names follow the OpenTelemetry RPC semantic conventions:
//!
//! | metric | kind | what |
//! |---|---|---|
//! | `rpc.server.duration` | histogram, seconds | from the call reaching the layer to its answer (a stream: to its end) |
//! | `rpc.server.requests` | counter | calls answered, errors included |
//!
//! each with the labels `rpc.system="frpc"`, `rpc.service` (the full name, `pkg.Service`),
//! `rpc.method` and `rpc.frpc.status_code`, the status code's number as gRPC numbers it
//! (`"0"` OK, `"5"` NOT_FOUND, ...; OpenTelemetry's `rpc.grpc.status_code`). Errors by code are
//! the calls whose code is not `"0"`. A Prometheus exporter writes the names with underscores
//! (`rpc_server_requests`, `rpc_server_duration_count`, `rpc_service="demo.Greeter"`).
//!
//! Without a recorder installed the facade does nothing, and without the feature this module
//! and its dependency are not compiled at all.
//!
//! ```
//! let server = frpc::Server::builder().layer(frpc::metrics::MetricsLayer::new());
//! # drop(server);
//! ```

use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};
use std::time::Instant;

use tower::{Layer, Service as TowerService};

use crate::middleware::{BoxError, CallRequest, CallResponse, status_from_error};
use crate::status::Code;

/// The histogram of call durations, in seconds.
pub const SERVER_DURATION: &str = "rpc.server.duration";
/// The counter of calls answered.
pub const SERVER_REQUESTS: &str = "rpc.server.requests";

/// A layer recording [`SERVER_DURATION`] and [`SERVER_REQUESTS`] for every call it wraps
/// (`Builder::layer(MetricsLayer::new())`, or on one service with
/// [`LayeredService::layer`](crate::LayeredService::layer)). Put it outermost to count calls
/// that inner layers (interceptors, limits) refuse.
#[derive(Debug, Clone, Copy, Default)]
pub struct MetricsLayer;

impl MetricsLayer {
    /// A metrics layer.
    pub fn new() -> MetricsLayer {
        MetricsLayer
    }
}

impl<S> Layer<S> for MetricsLayer {
    type Service = Metrics<S>;

    fn layer(&self, inner: S) -> Metrics<S> {
        Metrics { inner }
    }
}

/// The service of a [`MetricsLayer`].
#[derive(Debug, Clone)]
pub struct Metrics<S> {
    inner: S,
}

impl<S> TowerService<CallRequest> for Metrics<S>
where
    S: TowerService<CallRequest, Response = CallResponse>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = CallResponse;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<CallResponse, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: CallRequest) -> Self::Future {
        let (service, method) = (request.service(), request.method());
        let started = Instant::now();
        let answer = self.inner.call(request);
        Box::pin(async move {
            let result = answer.await.map_err(|error| status_from_error(error.into()));
            let code = match &result {
                Ok(_) => Code::Ok,
                Err(status) => status.code(),
            };
            record(service, method, code, started.elapsed().as_secs_f64());
            // The status itself, so the layers above and the client see what the handler said.
            result.map_err(|status| Box::new(status) as BoxError)
        })
    }
}

/// Records one answered call.
fn record(service: &'static str, method: &'static str, code: Code, seconds: f64) {
    let labels = [
        ("rpc.system", "frpc".to_owned()),
        ("rpc.service", service.to_owned()),
        ("rpc.method", method.to_owned()),
        ("rpc.frpc.status_code", (code as u8).to_string()),
    ];
    ::metrics::counter!(SERVER_REQUESTS, &labels).increment(1);
    ::metrics::histogram!(SERVER_DURATION, &labels).record(seconds);
}
