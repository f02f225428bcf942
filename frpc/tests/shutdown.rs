//! Graceful shutdown you can bound, over real TCP: the grace is the server's
//! `shutdown_grace`; from the start of a shutdown streams cannot send
//! (`Error::ShuttingDown`, UNAVAILABLE at the client) and `Context::shutting_down` fires;
//! unary calls still answer; after the grace `Context::cancelled` fires and connections close.
// The services are `#[frpc::service]`s: without the `macros` feature there is nothing to test.
#![cfg(feature = "macros")]

use std::sync::Arc;
use std::time::Duration;

use frpc::{Code, Context, Error, Status, StreamSender};
use tokio::sync::{Notify, oneshot};

#[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
pub struct Tick {
    pub n: u64,
}

#[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
pub struct Blob {
    pub data: String,
}

#[frpc::service(package = "shutdown")]
pub trait Clock {
    /// Ticks forever, never looking at its context: only a failing `send` stops it.
    async fn ticks(&self, ctx: &Context, request: Tick, out: StreamSender<Tick>) -> Result<(), Status>;
    /// Sends 16 KiB messages as fast as they go, never looking at its context; says when a
    /// send has waited 200 ms (its client does not read).
    async fn flood(&self, ctx: &Context, request: Tick, out: StreamSender<Blob>) -> Result<(), Status>;
    /// Waits for its context's cancellation, recording what it saw.
    async fn linger(&self, ctx: &Context, request: Tick) -> Result<Tick, Status>;
    /// Answers once released.
    async fn gated(&self, ctx: &Context, request: Tick) -> Result<Tick, Status>;
}

#[derive(Default)]
struct Events {
    /// Signalled when a handler started.
    started: Notify,
    /// Signalled when `flood` waits on a send.
    blocked: Notify,
    /// Releases `gated`.
    release: Notify,
    /// What `linger` saw, in order.
    seen: std::sync::Mutex<Vec<&'static str>>,
}

struct Svc(Arc<Events>);

impl Clock for Svc {
    async fn ticks(&self, _: &Context, _: Tick, out: StreamSender<Tick>) -> Result<(), Status> {
        self.0.started.notify_one();
        for n in 0.. {
            out.send(Tick { n }).await?;
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        Ok(())
    }

    async fn flood(&self, _: &Context, _: Tick, out: StreamSender<Blob>) -> Result<(), Status> {
        let blob = Blob {
            data: "x".repeat(16 * 1024),
        };
        loop {
            let send = out.send(blob.clone());
            tokio::pin!(send);
            match tokio::time::timeout(Duration::from_millis(200), &mut send).await {
                Ok(sent) => sent?,
                Err(_) => {
                    self.0.blocked.notify_one();
                    send.await?;
                }
            }
        }
    }

    async fn linger(&self, ctx: &Context, _: Tick) -> Result<Tick, Status> {
        self.0.started.notify_one();
        ctx.shutting_down().await;
        self.0.seen.lock().unwrap().push("shutting down");
        if ctx.is_cancelled() {
            self.0.seen.lock().unwrap().push("cancelled already");
        }
        ctx.cancelled().await;
        self.0.seen.lock().unwrap().push("cancelled");
        Ok(Tick { n: 1 })
    }

    async fn gated(&self, _: &Context, _: Tick) -> Result<Tick, Status> {
        self.0.started.notify_one();
        self.0.release.notified().await;
        Ok(Tick { n: 7 })
    }
}

struct Served {
    addr: std::net::SocketAddr,
    events: Arc<Events>,
    stop: oneshot::Sender<()>,
    serving: tokio::task::JoinHandle<Result<(), Error>>,
}

async fn serve(grace: Duration) -> Served {
    let events = Arc::new(Events::default());
    let bound = frpc::Server::builder()
        .shutdown_grace(grace)
        .add_service(ClockServer::new(Svc(events.clone())))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    let (stop, stopped) = oneshot::channel::<()>();
    let serving = tokio::spawn(bound.serve_with_shutdown(async {
        let _ = stopped.await;
    }));
    Served {
        addr,
        events,
        stop,
        serving,
    }
}

/// A streaming handler that ignores its context ends at its next send: the client sees
/// UNAVAILABLE "the server is shutting down" after the messages sent before, and the server
/// stops long before a 60 s grace.
#[tokio::test]
async fn a_stream_that_ignores_its_context_ends_at_shutdown() {
    for extensions in [true, false] {
        let served = serve(Duration::from_secs(60)).await;
        let config = frpc::ClientConfig::default().extensions(extensions);
        let client = ClockClient::new(frpc::Client::connect_with(served.addr, config).await.unwrap());
        let started = served.events.started.notified();
        let mut ticks = client.ticks(Tick::default()).await.unwrap();
        started.await;
        assert_eq!(ticks.message().await.unwrap().unwrap().n, 0);
        served.stop.send(()).unwrap();
        // Every tick arrives in order, then the shutdown error.
        let mut next = 1;
        let err = loop {
            match ticks.message().await {
                Ok(Some(tick)) => {
                    assert_eq!(tick.n, next);
                    next += 1;
                }
                Ok(None) => panic!("the stream ended without the shutdown error"),
                Err(err) => break err,
            }
        };
        assert!(err.to_string().contains("shutting down"), "{err}");
        if extensions {
            assert_eq!(err.code(), Code::Unavailable, "{err}");
        }
        tokio::time::timeout(Duration::from_secs(30), served.serving)
            .await
            .expect("the server stops without waiting out its grace")
            .unwrap()
            .unwrap();
    }
}

/// A stream whose send waits when the shutdown begins (its client reads nothing: for credit
/// with flow control, for room in the write queue without) fails that send at once: it held
/// the shutdown for its whole grace period (session 33's channels probe). The shutdown then
/// ends once the connection's flush gives up on the client (5 s), with no linger after it.
#[tokio::test]
async fn a_stream_waiting_to_send_ends_at_shutdown() {
    for extensions in [true, false] {
        let served = serve(Duration::from_secs(60)).await;
        let config = frpc::ClientConfig::default().extensions(extensions);
        let client = ClockClient::new(frpc::Client::connect_with(served.addr, config).await.unwrap());
        let blocked = served.events.blocked.notified();
        let mut blobs = client.flood(Tick::default()).await.unwrap();
        assert_eq!(blobs.message().await.unwrap().unwrap().data.len(), 16 * 1024);
        blocked.await;
        served.stop.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(30), served.serving)
            .await
            .unwrap_or_else(|_| panic!("the shutdown waited out its grace (extensions: {extensions})"))
            .unwrap()
            .unwrap();
        drop(blobs);
    }
}

/// `shutting_down` fires when the shutdown begins; `cancelled` only once the grace is over,
/// and then the server stops.
#[tokio::test]
async fn handlers_are_cancelled_after_the_grace() {
    let served = serve(Duration::from_millis(300)).await;
    let client = ClockClient::connect(served.addr).await.unwrap();
    let started = served.events.started.notified();
    let call = tokio::spawn(async move { client.linger(Tick::default()).await });
    started.await;
    served.stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), served.serving)
        .await
        .expect("the server stops once the grace is over")
        .unwrap()
        .unwrap();
    assert_eq!(
        *served.events.seen.lock().unwrap(),
        ["shutting down", "cancelled"]
    );
    // The call ends: with the reply its cancelled handler still sent, or with the connection.
    let _ = call.await.unwrap();
}

/// A unary call running when the shutdown begins still answers within the grace.
#[tokio::test]
async fn a_unary_call_finishing_within_the_grace_answers() {
    let served = serve(Duration::from_secs(60)).await;
    let client = ClockClient::connect(served.addr).await.unwrap();
    let started = served.events.started.notified();
    let call = tokio::spawn(async move { client.gated(Tick::default()).await });
    started.await;
    served.stop.send(()).unwrap();
    served.events.release.notify_one();
    assert_eq!(call.await.unwrap().unwrap().n, 7);
    tokio::time::timeout(Duration::from_secs(30), served.serving)
        .await
        .expect("the server stops once the call is answered")
        .unwrap()
        .unwrap();
}

/// A zero grace cancels at once.
#[tokio::test]
async fn a_zero_grace_cancels_at_once() {
    let served = serve(Duration::ZERO).await;
    let client = ClockClient::connect(served.addr).await.unwrap();
    let started = served.events.started.notified();
    let call = tokio::spawn(async move { client.linger(Tick::default()).await });
    started.await;
    served.stop.send(()).unwrap();
    served.serving.await.unwrap().unwrap();
    let _ = call.await.unwrap();
    assert_eq!(served.events.seen.lock().unwrap().last(), Some(&"cancelled"));
}
