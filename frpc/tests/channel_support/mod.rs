//! Shared by the channel and balance tests: a small service whose replies name the server
//! that answered, and servers that can be stopped and started again on the same port.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use frpc::{Context, Status, StreamSender};
use tokio::sync::{Notify, Semaphore, oneshot};
use tokio::task::JoinHandle;

#[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
pub struct Text {
    pub value: String,
}

impl Text {
    pub fn new(value: impl Into<String>) -> Text {
        Text { value: value.into() }
    }
}

#[frpc::service(package = "chan")]
pub trait Named {
    /// Replies with the server's name.
    async fn whoami(&self, ctx: &Context, request: Text) -> Result<Text, Status>;
    /// Fails with `Unavailable` as long as the server's `flaky` counter is above zero.
    async fn flaky(&self, ctx: &Context, request: Text) -> Result<Text, Status>;
    /// Waits for a permit of the server's gate, then replies with its name.
    async fn hold(&self, ctx: &Context, request: Text) -> Result<Text, Status>;
    /// Replies with the request metadata's `k` and sets response metadata `server`.
    async fn meta(&self, ctx: &Context, request: Text) -> Result<Text, Status>;
    /// Sends the server's name three times.
    async fn names(&self, ctx: &Context, request: Text, out: StreamSender<Text>) -> Result<(), Status>;
}

/// What a server counts, shared with the test.
#[derive(Debug)]
pub struct Stats {
    pub calls: AtomicUsize,
    pub flaky_calls: AtomicUsize,
    /// `flaky` fails while this is above zero (each failure takes one).
    pub flaky_failures: AtomicUsize,
    pub active: AtomicUsize,
    pub max_active: AtomicUsize,
    pub entered: Notify,
    pub gate: Semaphore,
}

impl Default for Stats {
    fn default() -> Stats {
        Stats {
            calls: AtomicUsize::new(0),
            flaky_calls: AtomicUsize::new(0),
            flaky_failures: AtomicUsize::new(0),
            active: AtomicUsize::new(0),
            max_active: AtomicUsize::new(0),
            entered: Notify::new(),
            gate: Semaphore::new(0),
        }
    }
}

impl Stats {
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// Waits until `n` calls are inside `hold` at once.
    pub async fn wait_active(&self, n: usize) {
        loop {
            let entered = self.entered.notified();
            tokio::pin!(entered);
            entered.as_mut().enable();
            if self.active.load(Ordering::SeqCst) >= n {
                return;
            }
            entered.await;
        }
    }
}

#[derive(Clone)]
struct Svc {
    name: String,
    stats: Arc<Stats>,
}

impl Named for Svc {
    async fn whoami(&self, _: &Context, _: Text) -> Result<Text, Status> {
        self.stats.calls.fetch_add(1, Ordering::SeqCst);
        Ok(Text::new(&self.name))
    }

    async fn flaky(&self, _: &Context, _: Text) -> Result<Text, Status> {
        self.stats.flaky_calls.fetch_add(1, Ordering::SeqCst);
        let failing = self
            .stats
            .flaky_failures
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        match failing {
            true => Err(Status::unavailable("not now")),
            false => Ok(Text::new(&self.name)),
        }
    }

    async fn hold(&self, _: &Context, _: Text) -> Result<Text, Status> {
        let active = self.stats.active.fetch_add(1, Ordering::SeqCst) + 1;
        self.stats.max_active.fetch_max(active, Ordering::SeqCst);
        self.stats.entered.notify_waiters();
        let permit = self.stats.gate.acquire().await;
        permit.map_err(|_| Status::internal("gate closed"))?.forget();
        self.stats.active.fetch_sub(1, Ordering::SeqCst);
        Ok(Text::new(&self.name))
    }

    async fn meta(&self, ctx: &Context, _: Text) -> Result<Text, Status> {
        let value = ctx.metadata().get("k").unwrap_or("none").to_owned();
        let mut response = frpc::Metadata::new();
        response.insert("server", self.name.as_str()).unwrap();
        ctx.set_response_metadata(response);
        Ok(Text::new(value))
    }

    async fn names(&self, _: &Context, _: Text, out: StreamSender<Text>) -> Result<(), Status> {
        for _ in 0..3 {
            out.send(Text::new(&self.name)).await?;
        }
        Ok(())
    }
}

/// A running server, with `frpc::health` beside its service.
pub struct TestServer {
    pub name: String,
    pub addr: SocketAddr,
    pub stats: Arc<Stats>,
    pub health: frpc::health::HealthReporter,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), frpc::Error>>>,
}

impl TestServer {
    /// Starts a server called `name` on `addr` (`127.0.0.1:0` for a free port).
    pub async fn start(name: &str, addr: &str) -> TestServer {
        TestServer::start_with(name, addr, Arc::new(Stats::default())).await
    }

    /// Starts a server sharing `stats` (a restart keeps counting).
    pub async fn start_with(name: &str, addr: &str, stats: Arc<Stats>) -> TestServer {
        let svc = Svc {
            name: name.to_owned(),
            stats: stats.clone(),
        };
        let (health, health_service) = frpc::health::service();
        let bound = frpc::Server::builder()
            .add_service(NamedServer::new(svc))
            .add_service(health_service)
            .bind(addr)
            .await
            .unwrap();
        let addr = bound.local_addr();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(bound.serve_with_shutdown(async {
            let _ = stopped.await;
        }));
        TestServer {
            name: name.to_owned(),
            addr,
            stats,
            health,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// Stops the server: its listener and every connection are closed when this returns.
    pub async fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.unwrap().unwrap();
        }
    }

    /// Starts the server again on its port.
    pub async fn restart(&mut self) {
        self.stop().await;
        *self = TestServer::start_with(&self.name, &self.addr.to_string(), self.stats.clone()).await;
    }

    pub fn endpoint(&self) -> frpc::Endpoint {
        frpc::Endpoint::from(self.addr)
    }
}

/// Bounds a test step: a hang fails the test instead of stalling CI.
pub async fn within<T>(what: &str, work: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), work)
        .await
        .unwrap_or_else(|_| panic!("{what}: not within 20 s"))
}
