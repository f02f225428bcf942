//! How calls that end unusually are booked: a unary handler that panics (INTERNAL, as its
//! client is answered), and a client stream dropped with the server's end among its unread
//! messages (the server's code, not the client's cancel). Its own process: the Prometheus
//! recorder is global.

use std::net::SocketAddr;

use frpc::metrics::{ClientMetricsLayer, MetricsLayer};
use frpc_examples::capture::pb;
use frpc_examples::metrics::{self, samples};

#[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
pub struct Text {
    pub value: String,
}

#[frpc::service(package = "ends")]
pub trait Ends {
    async fn explode(&self, ctx: &frpc::Context, request: Text) -> Result<Text, frpc::Status>;
}

struct Exploding;

impl Ends for Exploding {
    async fn explode(&self, _: &frpc::Context, _: Text) -> Result<Text, frpc::Status> {
        panic!("boom")
    }
}

/// A port free a moment ago: the exporter takes an address, not a listener.
fn free_port() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

/// A Go-like server of capture's `Search` that answers the stream with two messages and its
/// `EOF` in one write (PINGs get their PONG, the extension offer nothing).
async fn search_in_one_write(listener: tokio::net::TcpListener) {
    use frpc::wire::{Packet, PacketCodec, op};
    use futures_util::{SinkExt, StreamExt};
    let (stream, _) = listener.accept().await.unwrap();
    let mut framed = tokio_util::codec::Framed::new(stream, PacketCodec::new(frpc::Framing::Frisbee));
    let mut stream_packets = 0;
    while let Some(packet) = framed.next().await {
        let packet = packet.unwrap();
        match packet.op {
            op::PING => framed.send(Packet::pong()).await.unwrap(),
            op::STREAM => stream_packets += 1,
            _ => {}
        }
        if stream_packets == 2 {
            let reply = |text: &str| {
                let message = pb::Response {
                    message: text.into(),
                    test: None,
                };
                Packet::new(
                    packet.id,
                    op::STREAM,
                    frpc::codegen::Message::to_polyglot(&message),
                )
            };
            let eof = Packet::new(packet.id, op::STREAM, &b"\x06\x05\x0a\x03EOF"[..]);
            let replies = [reply("a"), reply("b"), eof].map(Ok);
            framed
                .send_all(&mut futures_util::stream::iter(replies))
                .await
                .unwrap();
            stream_packets = 0;
        }
    }
}

// One thread: the client's reader routes a whole read (both messages and the end) before the
// stream's consumer runs.
#[tokio::test(flavor = "current_thread")]
async fn panics_and_ends_left_unread_are_booked_as_they_ended() {
    let metrics_addr = free_port();
    metrics::install_prometheus(metrics_addr).unwrap();

    let bound = frpc::Server::builder()
        .add_service(EndsServer::new(Exploding))
        .layer(MetricsLayer::new())
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    let client = EndsClient::connect(addr).await.unwrap();
    let err = client.explode(Text::default()).await.unwrap_err();
    assert_eq!(err.code(), frpc::Code::Internal, "{err}");

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let search_addr = listener.local_addr().unwrap();
    tokio::spawn(search_in_one_write(listener));
    let layer = ClientMetricsLayer::new("capture.EchoService");
    let channel = frpc::Endpoint::from(search_addr)
        .connect()
        .await
        .unwrap()
        .with_metrics(layer);
    let mut search = pb::EchoServiceClient::new(channel)
        .search(pb::SearchResponse::default())
        .await
        .unwrap();
    assert_eq!(search.message().await.unwrap().unwrap().message, "a");
    assert_eq!(search.message().await.unwrap().unwrap().message, "b");
    drop(search); // its EOF arrived with "b", unread

    let text = metrics::scrape(metrics_addr).await.unwrap();
    let count = |metric: &str, method: &str, code: frpc::Code| -> f64 {
        let method = format!("rpc_method=\"{method}\"");
        let code = format!("rpc_frpc_status_code=\"{}\"", code as u8);
        samples(&text, metric, &[&method, &code])
            .map(|(_, value)| value)
            .sum()
    };
    let expected = [
        ("rpc_server_requests", "Explode", frpc::Code::Internal, 1.0),
        ("rpc_server_requests", "Explode", frpc::Code::Cancelled, 0.0),
        ("rpc_client_requests", "Search", frpc::Code::Ok, 1.0),
        ("rpc_client_requests", "Search", frpc::Code::Cancelled, 0.0),
        ("rpc_client_responses_per_rpc_sum", "Search", frpc::Code::Ok, 2.0),
    ];
    for (metric, method, code, value) in expected {
        assert_eq!(
            count(metric, method, code),
            value,
            "{metric} {method} {code}: {text}"
        );
    }
}
