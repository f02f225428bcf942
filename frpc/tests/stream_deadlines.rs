//! A call's timeout is its deadline for every kind of call, over real TCP in both framings: a
//! server stream that would go on for ever ends with DEADLINE_EXCEEDED at the client's timeout,
//! the server's handler sees the deadline (`ctx.deadline()`) and is dropped there; a send
//! waiting for credit fails at the deadline; a server without extensions (as a Go peer) is
//! bounded by the client alone; a zero timeout is refused.
// The services are `#[frpc::service]`s: without the `macros` feature there is nothing to test.
#![cfg(feature = "macros")]

use std::time::Duration;

use frpc::{ClientConfig, Code, Error, Framing, ServerConfig};
use futures_util::{SinkExt, StreamExt};
use tokio::sync::mpsc;
use tokio_util::codec::Framed;

mod spec_bytes;
use spec_bytes::{Spec, wire_hex};

#[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
pub struct Tick {
    pub n: u64,
}

#[frpc::service(package = "deadlines")]
pub trait Ticks {
    /// Sends a tick every 10 ms, for ever.
    async fn ticks(
        &self,
        ctx: &frpc::Context,
        request: Tick,
        outbound: frpc::StreamSender<Tick>,
    ) -> Result<(), frpc::Status>;
    /// Bidi: reads nothing, answers nothing.
    async fn stall(
        &self,
        ctx: &frpc::Context,
        inbound: frpc::Streaming<Tick>,
        outbound: frpc::StreamSender<Tick>,
    ) -> Result<(), frpc::Status>;
    /// Client streaming: reads nothing, answers nothing.
    async fn ignore(&self, ctx: &frpc::Context, inbound: frpc::Streaming<Tick>)
    -> Result<Tick, frpc::Status>;
    async fn echo(&self, ctx: &frpc::Context, request: Tick) -> Result<Tick, frpc::Status>;
}

/// What the handlers saw: whether they had a deadline, and that they were dropped.
#[derive(Clone)]
struct Svc {
    seen: mpsc::UnboundedSender<Event>,
}

#[derive(Debug, PartialEq)]
enum Event {
    Deadline(bool),
    Dropped,
}

/// Reports its drop: the handler holding it was dropped (or returned).
struct OnDrop(mpsc::UnboundedSender<Event>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        let _ = self.0.send(Event::Dropped);
    }
}

impl Svc {
    fn started(&self, ctx: &frpc::Context) -> OnDrop {
        let _ = self.seen.send(Event::Deadline(ctx.deadline().is_some()));
        OnDrop(self.seen.clone())
    }
}

impl Ticks for Svc {
    async fn ticks(
        &self,
        ctx: &frpc::Context,
        _: Tick,
        outbound: frpc::StreamSender<Tick>,
    ) -> Result<(), frpc::Status> {
        let _alive = self.started(ctx);
        let mut interval = tokio::time::interval(Duration::from_millis(10));
        for n in 0.. {
            interval.tick().await;
            outbound.send(Tick { n }).await?;
        }
        Ok(())
    }

    async fn stall(
        &self,
        ctx: &frpc::Context,
        _inbound: frpc::Streaming<Tick>,
        _outbound: frpc::StreamSender<Tick>,
    ) -> Result<(), frpc::Status> {
        let _alive = self.started(ctx);
        std::future::pending().await
    }

    async fn ignore(
        &self,
        ctx: &frpc::Context,
        _inbound: frpc::Streaming<Tick>,
    ) -> Result<Tick, frpc::Status> {
        let _alive = self.started(ctx);
        std::future::pending().await
    }

    async fn echo(&self, _: &frpc::Context, request: Tick) -> Result<Tick, frpc::Status> {
        Ok(request)
    }
}

const FRAMINGS: [Framing; 2] = [Framing::Frisbee, Framing::Legacy];
const LIMIT: Duration = Duration::from_secs(10);
const TIMEOUT: Duration = Duration::from_millis(300);

async fn bounded<T>(what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: nothing within {LIMIT:?}"))
}

struct Setup {
    client: TicksClient,
    seen: mpsc::UnboundedReceiver<Event>,
}

/// A server (extensions on or off) and a client with windows of 1 message.
async fn setup(framing: Framing, extensions: bool) -> Setup {
    let (seen, events) = mpsc::unbounded_channel();
    let mut server = ServerConfig::default();
    server.connection.framing = framing;
    server.connection.stream_window = 1;
    server.extensions = extensions;
    let bound = frpc::Server::builder()
        .config(server)
        .add_service(TicksServer::new(Svc { seen }))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    let mut config = ClientConfig::default();
    config.connection.framing = framing;
    config.connection.stream_window = 1;
    let client = frpc::Client::connect_with(addr, config).await.unwrap();
    Setup {
        client: TicksClient::new(client).with_timeout(TIMEOUT),
        seen: events,
    }
}

fn assert_deadline_exceeded(err: &Error, what: &str) {
    assert!(
        matches!(err, Error::Timeout(limit) if *limit == TIMEOUT),
        "{what}: {err}"
    );
    assert_eq!(err.code(), Code::DeadlineExceeded, "{what}");
}

/// The handler saw a deadline (or not, without extensions) and was dropped.
async fn handler_saw(seen: &mut mpsc::UnboundedReceiver<Event>, deadline: bool) {
    assert_eq!(
        bounded("start", seen.recv()).await,
        Some(Event::Deadline(deadline))
    );
    assert_eq!(bounded("drop", seen.recv()).await, Some(Event::Dropped));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_stream_ends_at_the_deadline() {
    for framing in FRAMINGS {
        let Setup { client, mut seen } = setup(framing, true).await;
        let mut ticks = bounded("open", client.ticks(Tick::default())).await.unwrap();
        let mut received = 0;
        let err = loop {
            match bounded("tick", ticks.message()).await {
                Ok(Some(_)) => received += 1,
                Ok(None) => panic!("{framing:?}: the stream ended without an error"),
                Err(err) => break err,
            }
        };
        assert!(received > 0, "{framing:?}: ticks arrived before the deadline");
        assert_deadline_exceeded(&err, "server stream");
        assert!(matches!(ticks.message().await, Ok(None)), "{framing:?}: over");
        handler_saw(&mut seen, true).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_waiting_for_credit_fails_at_the_deadline() {
    for framing in FRAMINGS {
        let Setup { client, mut seen } = setup(framing, true).await;
        let (sender, _receiver) = bounded("open", client.stall()).await.unwrap().split();
        let err = bounded("sends", async {
            loop {
                if let Err(err) = sender.send(Tick::default()).await {
                    return err;
                }
            }
        })
        .await;
        assert_deadline_exceeded(&err, "send");
        handler_saw(&mut seen, true).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_stream_response_fails_at_the_deadline() {
    for framing in FRAMINGS {
        let Setup { client, mut seen } = setup(framing, true).await;
        let call = bounded("open", client.ignore()).await.unwrap();
        let err = bounded("response", call.close_and_recv()).await.unwrap_err();
        assert_deadline_exceeded(&err, "client stream");
        handler_saw(&mut seen, true).await;
    }
}

/// A server without extensions (as a Go peer) never hears of the deadline; the client's own
/// bound ends the stream all the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_bounds_a_stream_from_a_plain_server() {
    for framing in FRAMINGS {
        let Setup { client, mut seen } = setup(framing, false).await;
        let mut ticks = bounded("open", client.ticks(Tick::default())).await.unwrap();
        let err = bounded("ticks", async {
            loop {
                if let Err(err) = ticks.message().await {
                    return err;
                }
            }
        })
        .await;
        assert_deadline_exceeded(&err, "plain server stream");
        assert_eq!(bounded("start", seen.recv()).await, Some(Event::Deadline(false)));
        drop(ticks);
    }
}

/// A zero timeout is refused like `ClientConfig`'s: every call fails with `Error::Config`,
/// before anything is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zero_timeout_is_refused() {
    let Setup { client, .. } = setup(Framing::Frisbee, true).await;
    let zero = client.clone().with_timeout(Duration::ZERO);
    let unary = zero.echo(Tick { n: 1 }).await.unwrap_err();
    assert!(
        matches!(unary, Error::Config(ref text) if text.contains("zero")),
        "{unary}"
    );
    let stream = zero.ticks(Tick::default()).await.unwrap_err();
    assert!(matches!(stream, Error::Config(_)), "{stream}");
    let bidi = zero.stall().await.unwrap_err();
    assert!(matches!(bidi, Error::Config(_)), "{bidi}");
    assert_eq!(
        client.echo(Tick { n: 2 }).await.unwrap().n,
        2,
        "the connection is fine"
    );
}

/// A stream opened with a 300 ms timeout carries it in its open header (docs/extensions.md §5),
/// before the OPEN field: what a raw server reads.
#[tokio::test]
async fn the_stream_open_carries_the_timeout() {
    let spec = Spec::load();
    let timeout = spec.bytes(&["fe 01 00 00 00 04 00 00 01 2c 04"]);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let peer = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let mut raw = Framed::new(stream, frpc::wire::PacketCodec::new(Framing::Frisbee));
        let _offer = raw.next().await.unwrap().unwrap();
        let accept = frpc::wire::Packet::new(2, 0xFFFF, bytes::Bytes::from_static(&[1, 0, 0, 0, 0xef]));
        raw.send(accept).await.unwrap();
        let open = loop {
            let packet = raw.next().await.unwrap().unwrap();
            if packet.op == 2 {
                break packet;
            }
        };
        wire_hex(&open)
    });
    let client = TicksClient::new(
        frpc::Client::connect_with(addr, ClientConfig::default())
            .await
            .unwrap(),
    )
    .with_timeout(TIMEOUT);
    let opening = tokio::spawn(async move { client.ticks(Tick::default()).await.map(|_| ()) });
    let open = bounded("open", peer).await.unwrap();
    // Packet header (10 bytes), then the content: the extension header starts with TIMEOUT.
    assert!(open[30..].starts_with(&timeout), "{open}");
    opening.abort();
}
