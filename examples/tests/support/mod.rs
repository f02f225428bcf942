//! Shared by the hostile-input tests: a capture server, and a well-behaved client that keeps
//! calling Echo and must see no error while others misbehave.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use frpc::{Concurrency, Framing, ServerConfig};
use frpc_examples::capture::{CaptureService, pb};
use tokio::net::TcpListener;

pub struct Running {
    pub addr: std::net::SocketAddr,
    pub server: frpc::Server,
}

pub async fn start(config: ServerConfig) -> Running {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = frpc::Server::builder()
        .config(config)
        .add_service(pb::EchoServiceServer::new(CaptureService))
        .build()
        .unwrap();
    let serving = server.clone();
    tokio::spawn(async move { serving.serve_listener(listener).await });
    Running { addr, server }
}

pub fn config(idle: Duration) -> ServerConfig {
    let mut config = ServerConfig::default().concurrency(Concurrency::PerRpc);
    config.connection.framing = Framing::Frisbee;
    config.connection.idle_timeout = idle;
    config.connection.ping_interval = Duration::from_millis(100);
    config
}

/// Calls Echo in a loop until stopped; counts calls and errors.
pub struct GoodClient {
    stop: Arc<AtomicBool>,
    calls: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<Vec<String>>,
}

impl GoodClient {
    pub async fn start(addr: std::net::SocketAddr) -> GoodClient {
        let client = pb::EchoServiceClient::connect(addr).await.unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let calls = Arc::new(AtomicUsize::new(0));
        let task = tokio::spawn({
            let (stop, calls) = (stop.clone(), calls.clone());
            async move {
                let mut errors = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let n = calls.fetch_add(1, Ordering::Relaxed);
                    let message = format!("good {n}");
                    let call = client.echo(pb::Request {
                        message: message.clone(),
                        corpus: 0,
                    });
                    match tokio::time::timeout(Duration::from_secs(5), call).await {
                        Ok(Ok(reply)) if reply.message == message => {}
                        other => errors.push(format!("{other:?}")),
                    }
                }
                errors
            }
        });
        GoodClient { stop, calls, task }
    }

    /// Stops the loop and asserts it made calls and saw no error.
    pub async fn finish(self) {
        self.stop.store(true, Ordering::Relaxed);
        let errors = self.task.await.unwrap();
        assert!(
            errors.is_empty(),
            "the well-behaved client saw errors: {errors:?}"
        );
        assert!(self.calls.load(Ordering::Relaxed) > 0);
    }
}

/// Polls `condition` every 10 ms for up to `limit` (waiting for cleanup, not for readiness).
pub async fn eventually(limit: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < deadline {
        if condition() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    condition()
}
