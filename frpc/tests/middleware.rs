//! Server middleware over real TCP: tower's own layers (concurrency limit, load shedding, rate
//! limit, timeout) unchanged, a user's own auth layer, interceptors, the order of stacked
//! layers, what a layer sees of unary and streaming calls, and statuses reaching the client.
// The services are `#[frpc::service]`s: without the `macros` feature there is nothing to test.
#![cfg(feature = "macros")]

use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use frpc::middleware::BoxError;
use frpc::{CallRequest, CallResponse, ClientConfig, Code, Concurrency, Metadata, MethodKind, Status};
use tokio::sync::{Semaphore, mpsc};
use tower::limit::{ConcurrencyLimitLayer, RateLimitLayer};
use tower::load_shed::LoadShedLayer;
use tower::timeout::TimeoutLayer;
use tower::{Layer, Service};

#[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
pub struct Text {
    pub value: String,
}

fn text(value: &str) -> Text {
    Text { value: value.into() }
}

/// Operations: echo 10, gated 11, count 12.
#[frpc::service(package = "mw")]
pub trait Probe {
    /// Echoes the request.
    async fn echo(&self, ctx: &frpc::Context, request: Text) -> Result<Text, frpc::Status>;
    /// Reports that it started, then waits for a permit of the test's gate.
    async fn gated(&self, ctx: &frpc::Context, request: Text) -> Result<Text, frpc::Status>;
    /// Streams the numbers 0 to the request's value, exclusive.
    async fn count(
        &self,
        ctx: &frpc::Context,
        request: Text,
        outbound: frpc::StreamSender<Text>,
    ) -> Result<(), frpc::Status>;
}

struct Svc {
    started: mpsc::UnboundedSender<String>,
    gate: Arc<Semaphore>,
}

impl Probe for Svc {
    async fn echo(&self, ctx: &frpc::Context, request: Text) -> Result<Text, frpc::Status> {
        // `whoami`: the user a layer put in the call's extensions.
        if request.value == "whoami" {
            let user = ctx.extensions().get::<User>();
            return Ok(text(user.map_or("stranger", |user| &user.0)));
        }
        Ok(request)
    }

    async fn gated(&self, _ctx: &frpc::Context, request: Text) -> Result<Text, frpc::Status> {
        let _ = self.started.send(request.value.clone());
        // The guard reports a drop before the gate opens (a timeout dropped the handler).
        struct Dropped(mpsc::UnboundedSender<String>, bool);
        impl Drop for Dropped {
            fn drop(&mut self) {
                if !self.1 {
                    let _ = self.0.send("dropped".into());
                }
            }
        }
        let mut guard = Dropped(self.started.clone(), false);
        let permit = self
            .gate
            .acquire()
            .await
            .map_err(|_| Status::internal("gate closed"))?;
        permit.forget();
        guard.1 = true;
        Ok(request)
    }

    async fn count(
        &self,
        _ctx: &frpc::Context,
        request: Text,
        outbound: frpc::StreamSender<Text>,
    ) -> Result<(), frpc::Status> {
        let n: u32 = request
            .value
            .parse()
            .map_err(|_| Status::invalid_argument("not a number"))?;
        for i in 0..n {
            outbound.send(text(&i.to_string())).await?;
        }
        Ok(())
    }
}

/// A test's server: its address, the handlers' start reports and the gate of `gated`.
struct Harness {
    addr: std::net::SocketAddr,
    started: mpsc::UnboundedReceiver<String>,
    gate: Arc<Semaphore>,
}

async fn serve(configure: impl FnOnce(frpc::Builder) -> frpc::Builder) -> Harness {
    let (tx, started) = mpsc::unbounded_channel();
    let gate = Arc::new(Semaphore::new(0));
    let svc = Svc {
        started: tx,
        gate: gate.clone(),
    };
    let builder = configure(frpc::Server::builder().add_service(ProbeServer::new(svc)));
    let bound = builder.bind("127.0.0.1:0").await.unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    Harness { addr, started, gate }
}

async fn client(addr: std::net::SocketAddr) -> ProbeClient {
    ProbeClient::connect(addr).await.unwrap()
}

/// The code of a failed call.
fn code<T: std::fmt::Debug>(result: Result<T, frpc::Error>) -> Code {
    result.expect_err("the call should fail").code()
}

#[tokio::test]
async fn concurrency_limit_is_server_wide_and_waits() {
    let mut h = serve(|b| b.layer(ConcurrencyLimitLayer::new(1))).await;
    // Two connections: the limit spans them.
    let (a, b) = (client(h.addr).await, client(h.addr).await);
    let first = tokio::spawn(async move { a.gated(text("first")).await });
    assert_eq!(h.started.recv().await.unwrap(), "first");
    let second = tokio::spawn(async move { b.gated(text("second")).await });
    // The second call waits for the first's permit: its handler does not start meanwhile.
    let early = tokio::time::timeout(Duration::from_millis(150), h.started.recv()).await;
    assert!(
        early.is_err(),
        "the second handler ran beside the first: {early:?}"
    );
    h.gate.add_permits(1);
    assert_eq!(first.await.unwrap().unwrap().value, "first");
    assert_eq!(h.started.recv().await.unwrap(), "second");
    h.gate.add_permits(1);
    assert_eq!(second.await.unwrap().unwrap().value, "second");
}

#[tokio::test]
async fn load_shed_answers_unavailable_while_the_limit_is_full() {
    let mut h = serve(|b| b.layer(LoadShedLayer::new()).layer(ConcurrencyLimitLayer::new(1))).await;
    let c = client(h.addr).await;
    let held = c.clone();
    let first = tokio::spawn(async move { held.gated(text("first")).await });
    assert_eq!(h.started.recv().await.unwrap(), "first");
    // Shed at once, with Unavailable, from another connection and from this one.
    assert_eq!(code(c.echo(text("shed")).await), Code::Unavailable);
    let other = client(h.addr).await;
    let err = other.echo(text("shed")).await.unwrap_err();
    assert_eq!(err.code(), Code::Unavailable);
    assert!(err.to_string().contains("overloaded"), "{err}");
    h.gate.add_permits(1);
    assert_eq!(first.await.unwrap().unwrap().value, "first");
    // The permit is back: calls go through again.
    assert_eq!(c.echo(text("again")).await.unwrap().value, "again");
}

#[tokio::test]
async fn rate_limit_spaces_calls_across_connections() {
    let period = Duration::from_millis(150);
    let h = serve(|b| b.layer(RateLimitLayer::new(1, period))).await;
    let (a, b) = (client(h.addr).await, client(h.addr).await);
    let start = Instant::now();
    assert_eq!(a.echo(text("1")).await.unwrap().value, "1");
    assert_eq!(b.echo(text("2")).await.unwrap().value, "2");
    assert_eq!(a.echo(text("3")).await.unwrap().value, "3");
    // One call per period, server-wide: the third waits two periods.
    let elapsed = start.elapsed();
    assert!(elapsed >= period * 2, "three calls in {elapsed:?}");
}

#[tokio::test]
async fn timeout_layer_answers_deadline_exceeded_and_drops_the_handler() {
    let mut h = serve(|b| b.layer(TimeoutLayer::new(Duration::from_millis(50)))).await;
    let c = client(h.addr).await;
    let err = c.gated(text("slow")).await.unwrap_err();
    assert_eq!(err.code(), Code::DeadlineExceeded, "{err}");
    assert_eq!(h.started.recv().await.unwrap(), "slow");
    assert_eq!(h.started.recv().await.unwrap(), "dropped");
    assert_eq!(c.echo(text("fast")).await.unwrap().value, "fast");
}

/// A user's own auth layer, written against tower's traits only.
#[derive(Clone)]
struct RequireToken(&'static str);

impl<S> Layer<S> for RequireToken {
    type Service = TokenCheck<S>;
    fn layer(&self, inner: S) -> TokenCheck<S> {
        TokenCheck { inner, token: self.0 }
    }
}

struct TokenCheck<S> {
    inner: S,
    token: &'static str,
}

impl<S> Service<CallRequest> for TokenCheck<S>
where
    S: Service<CallRequest, Response = CallResponse, Error = Status>,
    S::Future: Send + 'static,
{
    type Response = CallResponse;
    type Error = Status;
    type Future = std::pin::Pin<Box<dyn Future<Output = Result<CallResponse, Status>> + Send>>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), Status>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: CallRequest) -> Self::Future {
        if request.metadata().get("token") != Some(self.token) {
            return Box::pin(std::future::ready(Err(Status::permission_denied("bad token"))));
        }
        Box::pin(self.inner.call(request))
    }
}

fn with_token(client: &ProbeClient, token: &str) -> ProbeClient {
    let mut metadata = Metadata::new();
    metadata.insert("token", token).unwrap();
    ProbeClient::new(client.client().with_metadata(metadata))
}

#[tokio::test]
async fn a_users_auth_layer_accepts_and_rejects() {
    let h = serve(|b| b.layer(RequireToken("open sesame"))).await;
    let c = client(h.addr).await;
    let good = with_token(&c, "open sesame");
    assert_eq!(good.echo(text("in")).await.unwrap().value, "in");
    let bad = with_token(&c, "guess");
    let err = bad.echo(text("out")).await.unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied);
    assert!(err.to_string().contains("bad token"), "{err}");
    assert_eq!(code(c.echo(text("none")).await), Code::PermissionDenied);
    // Streams are checked when they open.
    let mut stream = good.count(text("2")).await.unwrap();
    assert_eq!(stream.message().await.unwrap().unwrap().value, "0");
    assert_eq!(stream.message().await.unwrap().unwrap().value, "1");
    assert!(stream.message().await.unwrap().is_none());
    // Between frpc peers the open is acknowledged: a refused stream fails the call itself.
    let err = bad.count(text("2")).await.unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied, "{err}");
}

#[tokio::test]
async fn interceptor_checks_token_method_and_peer() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let h = serve(move |b| {
        b.interceptor(move |call: &CallRequest| {
            log.lock()
                .unwrap()
                .push((call.method(), call.peer_addr().ip().to_string()));
            match call.metadata().get("authorization") {
                Some("Bearer 42") => Ok(()),
                Some(_) => Err(Status::unauthenticated("wrong token")),
                None => Err(Status::unauthenticated("no token")),
            }
        })
    })
    .await;
    let c = client(h.addr).await;
    let mut metadata = Metadata::new();
    metadata.insert("authorization", "Bearer 42").unwrap();
    let ok = ProbeClient::new(c.client().with_metadata(metadata));
    assert_eq!(ok.echo(text("hi")).await.unwrap().value, "hi");
    let err = c.echo(text("hi")).await.unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated);
    assert!(err.to_string().contains("no token"), "{err}");
    assert_eq!(
        code(with_authorization(&c, "Bearer 7").echo(text("hi")).await),
        Code::Unauthenticated
    );
    // The acknowledged open fails with the interceptor's status.
    assert_eq!(code(c.count(text("3")).await), Code::Unauthenticated);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 4);
    assert_eq!(seen[0], ("Echo", "127.0.0.1".to_string()));
    assert_eq!(seen[3].0, "Count");
}

fn with_authorization(client: &ProbeClient, value: &str) -> ProbeClient {
    let mut metadata = Metadata::new();
    metadata.insert("authorization", value).unwrap();
    ProbeClient::new(client.client().with_metadata(metadata))
}

#[tokio::test]
async fn a_plain_frpc_client_sees_the_rejection_as_an_error() {
    let h = serve(|b| b.interceptor(|_: &CallRequest| Err(Status::unauthenticated("go away")))).await;
    let config = ClientConfig::default().extensions(false);
    let plain = ProbeClient::new(frpc::Client::connect_with(h.addr, config).await.unwrap());
    let err = plain.echo(text("hi")).await.unwrap_err();
    // Without extensions no code travels, only the text (as with Go).
    assert_eq!(err.code(), Code::Unknown);
    assert!(err.to_string().contains("go away"), "{err}");
}

/// What a recording layer saw of a call.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    layer: &'static str,
    service: &'static str,
    method: &'static str,
    op: u16,
    kind: MethodKind,
    request: Vec<u8>,
    response: Option<Vec<u8>>,
}

/// A layer recording each call and its response into a shared log.
#[derive(Clone)]
struct Record(&'static str, Arc<Mutex<Vec<Seen>>>);

impl<S> Layer<S> for Record {
    type Service = Recorder<S>;
    fn layer(&self, inner: S) -> Recorder<S> {
        Recorder(self.clone(), inner)
    }
}

struct Recorder<S>(Record, S);

impl<S> Service<CallRequest> for Recorder<S>
where
    S: Service<CallRequest, Response = CallResponse>,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
{
    type Response = CallResponse;
    type Error = BoxError;
    type Future = std::pin::Pin<Box<dyn Future<Output = Result<CallResponse, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), BoxError>> {
        self.1.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: CallRequest) -> Self::Future {
        let Record(layer, log) = self.0.clone();
        let mut seen = Seen {
            layer,
            service: request.service(),
            method: request.method(),
            op: request.op(),
            kind: request.kind(),
            request: request.body().to_vec(),
            response: None,
        };
        log.lock().unwrap().push(seen.clone());
        let call = self.1.call(request);
        Box::pin(async move {
            let response = call.await.map_err(Into::into)?;
            seen.response = response.body().map(|body| body.to_vec());
            log.lock().unwrap().push(seen);
            Ok(response)
        })
    }
}

#[tokio::test]
async fn stacked_layers_run_in_order_and_see_the_call() {
    use frpc::codegen::Message as _;
    let log = Arc::new(Mutex::new(Vec::new()));
    let (a, b) = (Record("a", log.clone()), Record("b", log.clone()));
    let h = serve(move |builder| builder.layer(a).layer(b)).await;
    let c = client(h.addr).await;
    assert_eq!(c.echo(text("bytes")).await.unwrap().value, "bytes");
    let encoded = text("bytes").to_polyglot().to_vec();
    let log = log.lock().unwrap().clone();
    let layers: Vec<_> = log
        .iter()
        .map(|seen| (seen.layer, seen.response.is_some()))
        .collect();
    // `a` was added first: it sees the call first and the response last.
    assert_eq!(layers, [("a", false), ("b", false), ("b", true), ("a", true)]);
    let seen = &log[3];
    assert_eq!(
        (seen.service, seen.method, seen.op, seen.kind),
        ("mw.Probe", "Echo", 10, MethodKind::Unary)
    );
    assert_eq!(seen.request, encoded);
    // An echo's reply is its request.
    assert_eq!(seen.response.as_deref(), Some(&encoded[..]));
}

#[tokio::test]
async fn a_stream_goes_through_the_layers_when_it_opens() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let record = Record("s", log.clone());
    let h = serve(move |b| b.layer(record)).await;
    let c = client(h.addr).await;
    let mut stream = c.count(text("2")).await.unwrap();
    let mut values = Vec::new();
    while let Some(message) = stream.message().await.unwrap() {
        values.push(message.value);
    }
    assert_eq!(values, ["0", "1"]);
    // The response (a finished stream) is recorded before the stream's end reaches the client.
    let log = log.lock().unwrap().clone();
    assert_eq!(log.len(), 2, "{log:?}");
    assert_eq!(
        (log[0].method, log[0].op, log[0].kind),
        ("Count", 12, MethodKind::ServerStreaming)
    );
    assert!(log[0].request.is_empty());
    assert_eq!(log[1].response, None);
}

#[tokio::test]
async fn layers_work_under_every_concurrency_mode() {
    for concurrency in [Concurrency::Inline, Concurrency::PerRpc, Concurrency::Limited(2)] {
        let h = serve(|b| {
            b.concurrency(concurrency)
                .layer(LoadShedLayer::new())
                .interceptor(|call: &CallRequest| match call.body().len() {
                    0..=16 => Ok(()),
                    _ => Err(Status::invalid_argument("too long")),
                })
        })
        .await;
        let c = client(h.addr).await;
        assert_eq!(
            c.echo(text("short")).await.unwrap().value,
            "short",
            "{concurrency:?}"
        );
        let err = c
            .echo(text("a request longer than sixteen bytes"))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{concurrency:?}");
    }
}

#[tokio::test]
async fn a_call_waiting_for_readiness_ends_at_its_deadline_and_leaks_nothing() {
    let mut h = serve(|b| b.layer(ConcurrencyLimitLayer::new(1))).await;
    let c = client(h.addr).await;
    let held = c.clone();
    let first = tokio::spawn(async move { held.gated(text("first")).await });
    assert_eq!(h.started.recv().await.unwrap(), "first");
    // Waits for the permit past its 100 ms deadline: the client gets its timeout, and the
    // server drops the waiting call (its deadline travels with it).
    let short = ProbeClient::new(c.client().with_timeout(Duration::from_millis(100)));
    let err = short.echo(text("waits")).await.unwrap_err();
    assert_eq!(err.code(), Code::DeadlineExceeded, "{err}");
    h.gate.add_permits(1);
    assert_eq!(first.await.unwrap().unwrap().value, "first");
    // Neither the stack's lock nor a permit was kept by the dropped call.
    for i in 0..3 {
        assert_eq!(c.echo(text(&i.to_string())).await.unwrap().value, i.to_string());
    }
}

/// A layer whose readiness fails once, then recovers.
struct FailOnce<S>(S, bool);

impl<S> Service<CallRequest> for FailOnce<S>
where
    S: Service<CallRequest, Response = CallResponse, Error = Status>,
{
    type Response = CallResponse;
    type Error = Status;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), Status>> {
        if !self.1 {
            self.1 = true;
            return Poll::Ready(Err(Status::unavailable("not ready yet")));
        }
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: CallRequest) -> S::Future {
        self.0.call(request)
    }
}

#[tokio::test]
async fn a_readiness_error_answers_that_call_only() {
    let h = serve(|b| b.layer(tower::layer::layer_fn(|inner| FailOnce(inner, false)))).await;
    let c = client(h.addr).await;
    let err = c.echo(text("1")).await.unwrap_err();
    assert_eq!(err.code(), Code::Unavailable);
    assert!(err.to_string().contains("not ready yet"), "{err}");
    assert_eq!(c.echo(text("2")).await.unwrap().value, "2");
}

#[test]
fn a_builder_with_layers_stays_send_and_sync() {
    fn check<T: Send + Sync>(_: &T) {}
    let builder = frpc::Server::builder()
        .layer(ConcurrencyLimitLayer::new(1))
        .interceptor(|_: &CallRequest| Ok(()));
    check(&builder);
    check(&builder.build().unwrap());
}

#[tokio::test]
async fn a_panicking_layer_fails_its_call_and_the_server_goes_on() {
    let h = serve(|b| {
        b.interceptor(|call: &CallRequest| {
            if call.body().len() > 8 {
                panic!("the interceptor gave up");
            }
            Ok(())
        })
    })
    .await;
    let c = client(h.addr).await;
    let err = c.echo(text("far too long")).await.unwrap_err();
    // INTERNAL without the panic's message (logged on the server).
    assert_eq!(err.to_string(), "INTERNAL: handler panicked");
    // The stack's lock was released by the unwinding call.
    assert_eq!(c.echo(text("ok")).await.unwrap().value, "ok");
}

/// Who a layer found the caller to be, for the handler (`CallRequest::extensions_mut`).
#[derive(Clone)]
struct User(String);

/// A layer hands a value to the handler through the call's extensions, as a tonic interceptor
/// does with `Request::extensions_mut`: tower's `FilterLayer` refuses calls without a token and
/// puts the user in the others, which the handler reads from `ctx.extensions()`.
#[tokio::test]
async fn a_layer_hands_the_handler_values_through_the_extensions() {
    let auth = tower::filter::FilterLayer::new(|mut call: CallRequest| {
        let user = match call.metadata().get("token") {
            Some(token) => token.to_owned(),
            None => return Err(Status::unauthenticated("no token")),
        };
        assert!(
            call.extensions().get::<User>().is_none(),
            "nothing before this layer"
        );
        call.extensions_mut().insert(User(user));
        Ok(call)
    });
    let h = serve(|b| b.layer(auth)).await;
    let c = client(h.addr).await;
    assert_eq!(
        with_token(&c, "ana").echo(text("whoami")).await.unwrap().value,
        "ana"
    );
    let err = c.echo(text("whoami")).await.unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated, "{err}");
    // Without layers, a handler's extensions are empty.
    let plain = serve(|b| b).await;
    let c = client(plain.addr).await;
    assert_eq!(c.echo(text("whoami")).await.unwrap().value, "stranger");
}
