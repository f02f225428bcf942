//! Calls that end while they wait, booked over TCP and read back from a Prometheus scrape: on
//! a server, calls queued behind an inner `ConcurrencyLimitLayer` until their deadline or
//! their client's cancel, and a call an inner layer refuses by its readiness; on a client,
//! a call failed by tower's timeout below the `ClientMetricsLayer`. One test: the recorder is
//! global to the process.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use frpc::metrics::{ClientMetricsLayer, MetricsLayer};
use frpc::{CallRequest, CallResponse, Code, Context, Status};
use frpc_examples::metrics::{self, samples};
use tokio::sync::{Notify, mpsc};

#[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
pub struct Num {
    pub value: u64,
}

#[frpc::service(package = "waits")]
pub trait Waits {
    /// Signals it has started, then answers once the test lets it.
    async fn held(&self, ctx: &Context, request: Num) -> Result<Num, Status>;
    /// Answers at once (when the limit lets it run).
    async fn queued(&self, ctx: &Context, request: Num) -> Result<Num, Status>;
}

struct Holder {
    started: mpsc::UnboundedSender<()>,
    release: Arc<Notify>,
}

impl Waits for Holder {
    async fn held(&self, _: &Context, request: Num) -> Result<Num, Status> {
        let released = self.release.notified();
        let _ = self.started.send(());
        released.await;
        Ok(request)
    }

    async fn queued(&self, _: &Context, request: Num) -> Result<Num, Status> {
        Ok(request)
    }
}

/// A layer whose service says it cannot take calls (UNAVAILABLE) while `refusing` is set.
#[derive(Clone)]
struct RefuseLayer {
    refusing: Arc<AtomicBool>,
}

impl<S> tower::Layer<S> for RefuseLayer {
    type Service = Refuse<S>;

    fn layer(&self, inner: S) -> Refuse<S> {
        Refuse {
            inner,
            refusing: self.refusing.clone(),
        }
    }
}

struct Refuse<S> {
    inner: S,
    refusing: Arc<AtomicBool>,
}

impl<S: tower::Service<CallRequest, Response = CallResponse, Error = Status>> tower::Service<CallRequest>
    for Refuse<S>
{
    type Response = CallResponse;
    type Error = Status;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), Status>> {
        match self.refusing.load(Ordering::SeqCst) {
            true => Poll::Ready(Err(Status::unavailable("refusing calls"))),
            false => self.inner.poll_ready(cx),
        }
    }

    fn call(&mut self, request: CallRequest) -> S::Future {
        self.inner.call(request)
    }
}

/// A port free a moment ago: the exporter takes an address, not a listener.
fn free_port() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

/// The server's client, and what its test drives the server with.
struct Driver {
    client: WaitsClient,
    /// A message each time `Held` starts.
    has_started: mpsc::UnboundedReceiver<()>,
    /// Lets `Held` answer.
    release: Arc<Notify>,
    /// Makes the server's `RefuseLayer` refuse calls.
    refusing: Arc<AtomicBool>,
    /// The Prometheus exporter's address.
    metrics: SocketAddr,
}

/// The samples of `metric` for `method` with status `code`, summed.
fn count(text: &str, metric: &str, method: &str, code: Code) -> f64 {
    let method = format!("rpc_method=\"{method}\"");
    let code = format!("rpc_frpc_status_code=\"{}\"", code as u8);
    samples(text, metric, &["rpc_service=\"waits.Waits\"", &method, &code])
        .map(|(_, value)| value)
        .sum()
}

/// Scrapes until `done` says every call is in (the server books a dropped call when its
/// future is dropped, which may be after its client gave up), for at most 10 s.
async fn scrape_until(addr: SocketAddr, done: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = metrics::scrape(addr).await.unwrap();
        if done(&text) || Instant::now() > deadline {
            return text;
        }
        tokio::task::yield_now().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_that_end_while_they_wait_are_booked() {
    let metrics_addr = free_port();
    metrics::install_prometheus(metrics_addr).unwrap();
    let (started, has_started) = mpsc::unbounded_channel();
    let release = Arc::new(Notify::new());
    let refusing = Arc::new(AtomicBool::new(false));
    let service = WaitsServer::new(Holder {
        started,
        release: release.clone(),
    });
    let bound = frpc::Server::builder()
        .layer(MetricsLayer::new())
        .interceptor(|_: &CallRequest| Ok(()))
        .layer(RefuseLayer {
            refusing: refusing.clone(),
        })
        .layer(tower::limit::ConcurrencyLimitLayer::new(1))
        .add_service(service)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    let client = WaitsClient::connect(addr).await.unwrap();

    let mut waits = Driver {
        client,
        has_started,
        release,
        refusing,
        metrics: metrics_addr,
    };
    server_books_calls_dropped_or_refused_while_waiting(&mut waits).await;
    client_books_a_layer_timeout_as_its_caller_sees_it(addr, metrics_addr).await;
}

/// Calls waiting behind the limit (one call holds it) until their deadline (DEADLINE_EXCEEDED,
/// or CANCELLED where the client's cancel wins the race, see the guide) or their client's
/// drop (CANCELLED), and one refused by readiness (UNAVAILABLE), were never booked: the
/// metrics layer waited for the stack's readiness before it saw them.
async fn server_books_calls_dropped_or_refused_while_waiting(waits: &mut Driver) {
    let client = &waits.client;
    let holder = tokio::spawn({
        let client = client.clone();
        async move { client.held(Num { value: 1 }).await }
    });
    waits.has_started.recv().await.unwrap();
    let short = client.with_timeout(Duration::from_millis(50));
    let mut queued = Vec::new();
    for value in 0..3 {
        let short = short.clone();
        queued.push(tokio::spawn(async move { short.queued(Num { value }).await }));
    }
    for call in queued {
        let err = call.await.unwrap().unwrap_err();
        assert_eq!(err.code(), Code::DeadlineExceeded, "{err}");
    }
    // No deadline: the client gives up and cancels it.
    let dropped = tokio::time::timeout(Duration::from_millis(50), client.queued(Num::default())).await;
    assert!(dropped.is_err(), "the queued call ran: {dropped:?}");
    // Released once the server has dropped it, or it would run before its cancel arrives.
    let server = |text: &str, code| count(text, "rpc_server_requests", "Queued", code);
    let unanswered = |text: &str| server(text, Code::DeadlineExceeded) + server(text, Code::Cancelled);
    let text = scrape_until(waits.metrics, |text| unanswered(text) == 4.0).await;
    assert_eq!(unanswered(&text), 4.0, "{text}");
    waits.release.notify_one();
    assert_eq!(holder.await.unwrap().unwrap(), Num { value: 1 });
    waits.refusing.store(true, Ordering::SeqCst);
    let err = client.queued(Num::default()).await.unwrap_err();
    waits.refusing.store(false, Ordering::SeqCst);
    assert_eq!(err.code(), Code::Unavailable, "{err}");

    let text = scrape_until(waits.metrics, |text| server(text, Code::Unavailable) == 1.0).await;
    assert_eq!(server(&text, Code::Unavailable), 1.0, "{text}");
    assert!(server(&text, Code::DeadlineExceeded) >= 1.0, "{text}");
    assert!(server(&text, Code::Cancelled) >= 1.0, "{text}");
    assert_eq!(unanswered(&text), 4.0, "{text}");
    assert_eq!(server(&text, Code::Ok), 0.0, "{text}");
    assert_eq!(
        count(&text, "rpc_server_requests", "Held", Code::Ok),
        1.0,
        "{text}"
    );
}

/// tower's timeout below the client's metrics layer fails the call with `Elapsed`, whose
/// caller gets DEADLINE_EXCEEDED: it was booked UNKNOWN.
async fn client_books_a_layer_timeout_as_its_caller_sees_it(addr: SocketAddr, metrics_addr: SocketAddr) {
    let layers = tower::ServiceBuilder::new()
        .layer(ClientMetricsLayer::new("waits.Waits"))
        .timeout(Duration::from_millis(30));
    let channel = frpc::Endpoint::from(addr)
        .connect()
        .await
        .unwrap()
        .with_layer(layers);
    let err = WaitsClient::new(channel).held(Num::default()).await.unwrap_err();
    assert_eq!(err.code(), Code::DeadlineExceeded, "{err}");

    // Booked before the caller got its error: no wait.
    let text = metrics::scrape(metrics_addr).await.unwrap();
    let client = |code| count(&text, "rpc_client_requests", "Held", code);
    assert_eq!(client(Code::DeadlineExceeded), 1.0, "{text}");
    assert_eq!(client(Code::Unknown), 0.0, "{text}");
}
