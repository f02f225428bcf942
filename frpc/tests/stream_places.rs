//! A stream's place in the limits (`ConnectionConfig::max_streams`,
//! `ServerConfig::max_open_streams`) lasts as long as its handler: a peer that closes its
//! streams (an empty `STREAM` packet) or its connection cannot leave handlers running that no
//! limit counts. Found by a hostile peer (2026-11-29): 50,000 handlers on one connection, each
//! opened, then closed with an empty packet and its id reused; 20,000 more left running by
//! connections that had closed.
// The services are `#[frpc::service]`s: without the `macros` feature there is nothing to test.
#![cfg(feature = "macros")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use frpc::{Context, Status, StreamSender};
use futures_util::{SinkExt, StreamExt};

#[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
pub struct Text {
    pub value: String,
}

#[frpc::service(package = "places")]
pub trait Hold {
    /// Sends nothing and never returns (a subscription waiting for its first event).
    async fn hold(&self, ctx: &Context, request: Text, outbound: StreamSender<Text>) -> Result<(), Status>;
    /// Sends `first` messages of 2 MiB after `small` small ones, then small ones for ever.
    async fn flood(&self, ctx: &Context, request: Text, outbound: StreamSender<Text>) -> Result<(), Status>;
}

/// Counts the handlers running now.
#[derive(Clone, Default)]
struct Svc {
    live: Arc<AtomicUsize>,
}

struct Live(Arc<AtomicUsize>);

impl Drop for Live {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Hold for Svc {
    async fn hold(&self, _: &Context, _: Text, _outbound: StreamSender<Text>) -> Result<(), Status> {
        self.live.fetch_add(1, Ordering::SeqCst);
        let _live = Live(self.live.clone());
        std::future::pending().await
    }

    async fn flood(&self, _: &Context, request: Text, outbound: StreamSender<Text>) -> Result<(), Status> {
        self.live.fetch_add(1, Ordering::SeqCst);
        let _live = Live(self.live.clone());
        let small = request.value.parse::<usize>().unwrap();
        for _ in 0..small {
            outbound.send(Text::default()).await?;
        }
        // Within the server's limit (5 MiB), over the client's (1 MiB, below).
        let _ = outbound
            .send(Text {
                value: "x".repeat(2 << 20),
            })
            .await;
        loop {
            outbound.send(Text::default()).await?;
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}

async fn serve(svc: Svc) -> (std::net::SocketAddr, frpc::Server) {
    serve_with(svc, frpc::ServerConfig::default()).await
}

async fn serve_with(svc: Svc, config: frpc::ServerConfig) -> (std::net::SocketAddr, frpc::Server) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = frpc::Server::builder()
        .config(config)
        .add_service(HoldServer::new(svc))
        .build()
        .unwrap();
    let serving = server.clone();
    tokio::spawn(async move { serving.serve_listener(listener).await });
    (addr, server)
}

/// Waits until `done` holds, looking again after every yield; a hang guard, not a timing
/// assertion: the test fails if it never does.
async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let wait = async {
        while !done() {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), wait)
        .await
        .unwrap_or_else(|_| panic!("{what}"));
}

fn request() -> bytes::Bytes {
    frpc::codegen::Message::to_polyglot(&Text::default())
}

/// A plain (Go-like) peer opens a stream, sends its request and closes it with an empty
/// packet, again and again on the same id: each handler is cancelled, and none outlives its
/// place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_the_peer_closes_cancels_its_handler() {
    let svc = Svc::default();
    let (addr, server) = serve(svc.clone()).await;
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut peer =
        tokio_util::codec::Framed::new(stream, frpc::wire::PacketCodec::new(frpc::Framing::Frisbee));
    let stream_op = frpc::wire::op::STREAM;
    for _ in 0..2_000 {
        let open = bytes::Bytes::from(vec![0x09, hold::HOLD as u8]);
        peer.feed(frpc::wire::Packet::new(1, stream_op, open))
            .await
            .unwrap();
        peer.feed(frpc::wire::Packet::new(1, stream_op, request()))
            .await
            .unwrap();
        peer.feed(frpc::wire::Packet::new(1, stream_op, bytes::Bytes::new()))
            .await
            .unwrap();
    }
    // A PING's PONG: the server has read everything before it.
    peer.send(frpc::wire::Packet::ping()).await.unwrap();
    loop {
        let packet = peer.next().await.expect("the connection stays open").unwrap();
        if packet.op == frpc::wire::op::PONG {
            break;
        }
    }
    eventually("the closed streams' handlers are dropped", || {
        svc.live.load(Ordering::SeqCst) == 0
    })
    .await;
    eventually("their places are free", || server.open_streams() == 0).await;
}

/// Streams whose connection closes: their handlers are dropped with it (a handler that neither
/// sends nor waits on its context ran on, holding its place and its connection's slot).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_connection_drops_its_stream_handlers() {
    let svc = Svc::default();
    let (addr, server) = serve(svc.clone()).await;
    let connection = frpc::Client::connect(addr).await.unwrap();
    let client = HoldClient::new(connection.clone());
    let mut streams = Vec::new();
    for _ in 0..50 {
        streams.push(client.hold(Text::default()).await.unwrap());
    }
    eventually("every handler started", || svc.live.load(Ordering::SeqCst) == 50).await;
    assert_eq!(server.open_streams(), 50);
    // Closed under the open streams: no CANCEL goes out for them.
    connection.close();
    eventually("the handlers are dropped with their connection", || {
        svc.live.load(Ordering::SeqCst) == 0
    })
    .await;
    eventually("their places are free", || server.open_streams() == 0).await;
    drop(streams);
}

/// A stream message over the client's limit (`max_content_length`, lowered as a tonic user
/// lowers `max_decoding_message_size`) fails the client's stream with `TooLarge`, and the
/// server is told with CANCEL: its handler is dropped and the stream's place freed, whether
/// the message was the first (the call fails) or came later (a receive fails). The client
/// answered with an error and `EOF`, which a server-streaming handler never reads: it ran on,
/// waiting for credit, holding the connection's only place (found by a probe, 2026-11-29).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_over_the_clients_limit_cancels_the_servers_handler() {
    let svc = Svc::default();
    let mut config = frpc::ServerConfig::default();
    config.connection.max_streams = 1;
    let (addr, server) = serve_with(svc.clone(), config).await;
    let mut client_config = frpc::ClientConfig::default();
    client_config.connection.max_content_length = 1 << 20;
    let connection = frpc::Client::connect_with(addr, client_config).await.unwrap();
    assert_eq!(connection.negotiation().await, frpc::Negotiated::Extensions);
    let client = HoldClient::new(connection);
    for small in [0, 3] {
        let failed = async {
            let mut stream = client
                .flood(Text {
                    value: small.to_string(),
                })
                .await?;
            loop {
                stream.message().await?;
            }
        };
        let result: Result<(), frpc::Error> = tokio::time::timeout(Duration::from_secs(20), failed)
            .await
            .unwrap();
        let err = result.unwrap_err();
        assert!(
            matches!(err, frpc::Error::TooLarge { .. }),
            "{small} small first: {err}"
        );
        // The place goes with the handler's task, a moment after the handler.
        eventually("the server's handler is dropped and its place freed", || {
            svc.live.load(Ordering::SeqCst) == 0 && server.open_streams() == 0
        })
        .await;
    }
    // The connection's one stream place is free again.
    let mut stream = client.flood(Text { value: "1".into() }).await.unwrap();
    assert_eq!(stream.message().await.unwrap(), Some(Text::default()));
}
