//! Calls over a limit, booked over TCP and read back from a Prometheus scrape: on a server, a
//! `LoadShedLayer` above the metrics layer still sheds what the limit below cannot take, and
//! one right below it turns the wait into a refusal the layer counts; on a client, a call
//! failed by tower's timeout below the `ClientMetricsLayer`. One test: the recorder is global
//! to the process.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use frpc::metrics::{ClientMetricsLayer, MetricsLayer};
use frpc::{Code, Context, Status};
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

/// A port free a moment ago: the exporter takes an address, not a listener.
fn free_port() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

/// The samples of `metric` for `method` with status `code`, summed.
fn count(text: &str, metric: &str, method: &str, code: Code) -> f64 {
    let method = format!("rpc_method=\"{method}\"");
    let code = format!("rpc_frpc_status_code=\"{}\"", code as u8);
    samples(text, metric, &["rpc_service=\"waits.Waits\"", &method, &code])
        .map(|(_, value)| value)
        .sum()
}

/// A server whose stack is `layers` over a limit of one call at a time, and a client of it;
/// the receiver gets a message each time `Held` starts, the `Notify` lets it answer.
async fn serve(
    shed_above_metrics: bool,
) -> (WaitsClient, SocketAddr, mpsc::UnboundedReceiver<()>, Arc<Notify>) {
    let (started, has_started) = mpsc::unbounded_channel();
    let release = Arc::new(Notify::new());
    let service = WaitsServer::new(Holder {
        started,
        release: release.clone(),
    });
    let builder = match shed_above_metrics {
        true => frpc::Server::builder()
            .layer(tower::load_shed::LoadShedLayer::new())
            .layer(MetricsLayer::new()),
        false => frpc::Server::builder()
            .layer(MetricsLayer::new())
            .layer(tower::load_shed::LoadShedLayer::new()),
    };
    let bound = builder
        .layer(tower::limit::ConcurrencyLimitLayer::new(1))
        .add_service(service)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    let client = WaitsClient::connect(addr).await.unwrap();
    (client, addr, has_started, release)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_over_a_limit_are_shed_and_booked() {
    let metrics_addr = free_port();
    metrics::install_prometheus(metrics_addr).unwrap();
    for shed_above_metrics in [true, false] {
        a_call_over_the_limit_is_shed(shed_above_metrics, metrics_addr).await;
    }
    let (_, addr, _, _) = serve(false).await;
    client_books_a_layer_timeout_as_its_caller_sees_it(addr, metrics_addr).await;
}

/// One call holds the limit; the next is shed (UNAVAILABLE) whether the `LoadShedLayer` is
/// above the metrics layer or below it. Above it, nothing was shed while the metrics layer
/// said it was always ready: calls over the limit waited in line (session 33's re-probe).
/// Below it, the shed call is counted.
async fn a_call_over_the_limit_is_shed(shed_above_metrics: bool, metrics_addr: SocketAddr) {
    let (client, _, mut has_started, release) = serve(shed_above_metrics).await;
    let holder = tokio::spawn({
        let client = client.clone();
        async move { client.held(Num { value: 1 }).await }
    });
    has_started.recv().await.unwrap();
    let before = metrics::scrape(metrics_addr).await.unwrap();
    let shed = |text: &str| count(text, "rpc_server_requests", "Queued", Code::Unavailable);
    let limited = client.with_timeout(Duration::from_secs(10));
    let err = limited.queued(Num::default()).await.unwrap_err();
    assert_eq!(
        err.code(),
        Code::Unavailable,
        "shed above metrics {shed_above_metrics}: {err}"
    );
    release.notify_one();
    assert_eq!(holder.await.unwrap().unwrap(), Num { value: 1 });
    // The metrics layer books a call before its client gets the reply: no wait.
    let text = metrics::scrape(metrics_addr).await.unwrap();
    let counted = shed(&text) - shed(&before);
    assert_eq!(counted, f64::from(u8::from(!shed_above_metrics)), "{text}");
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
