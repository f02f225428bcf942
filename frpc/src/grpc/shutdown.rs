//! A standalone [`GrpcServer`]'s graceful shutdown: it stops accepting, sends every
//! connection a GOAWAY and lets the calls in flight finish within the grace, as a shared-port
//! server does with its gRPC connections.

use std::future::Future;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::task::TaskTracker;

use super::{GrpcServer, Signals};
use crate::status::Error;

impl GrpcServer {
    /// How long calls in flight may go on once a shutdown began
    /// ([`serve_listener_with_shutdown`](Self::serve_listener_with_shutdown)); past it the
    /// connections close. Default: 5 s, as [`crate::ServerConfig::shutdown_grace`].
    pub fn shutdown_grace(mut self, grace: Duration) -> GrpcServer {
        self.grace = grace;
        self
    }

    /// Serves `listener` as [`serve_listener`](Self::serve_listener) does until `signal`
    /// resolves, then shuts down gracefully: no more connections, a GOAWAY on each (no new
    /// calls), the calls in flight finish (streams send no more messages, and
    /// [`crate::Context::shutting_down`] resolves, as on fRPC) within the
    /// [`shutdown_grace`](Self::shutdown_grace); then it returns.
    pub async fn serve_listener_with_shutdown(
        self,
        listener: TcpListener,
        signal: impl Future<Output = ()>,
    ) -> Result<(), Error> {
        let (signals, connections) = (Signals::default(), TaskTracker::new());
        tokio::pin!(signal);
        let result = loop {
            let (io, peer) = tokio::select! {
                _ = &mut signal => break Ok(()),
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(err) => break Err(Error::Io(err)),
                },
            };
            let _ = io.set_nodelay(true);
            connections.spawn(self.serve_io_until(io, peer, signals.clone()));
        };
        drop(listener);
        signals.draining.cancel();
        connections.close();
        if tokio::time::timeout(self.grace, connections.wait())
            .await
            .is_err()
        {
            tracing::warn!("gRPC calls still running after the shutdown grace; closing connections");
            signals.force.cancel();
            connections.wait().await;
        }
        result
    }
}
