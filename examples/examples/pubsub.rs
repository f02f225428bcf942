//! A pub/sub broker on raw operations, beside an ordinary RPC service on the same connections.
//!
//! `cargo run --example pubsub`

use frpc::{Concurrency, Framing};
use frpc_examples::capture::{self, pb};
use frpc_examples::pubsub::{self, Broker};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let broker = Broker::default();
    let server = broker
        .routes(capture::builder(Framing::Frisbee, Concurrency::PerRpc))
        .build()?;
    tokio::spawn(async move { server.serve_listener(listener).await });

    let subscriber = frpc::Client::connect(addr).await?;
    let mut inbox = subscriber.raw_packets(pubsub::MESSAGE)?;
    let mut acks = subscriber.raw_packets(pubsub::SUBSCRIBE)?;
    subscriber
        .send_packet(pubsub::SUBSCRIBE, 1, pubsub::frame("news", b""))
        .await?;
    acks.next_packet().await;

    let publisher = frpc::Client::connect(addr).await?;
    for (i, text) in ["frpc speaks Frisbee", "pub/sub rides beside RPCs"]
        .iter()
        .enumerate()
    {
        publisher
            .send_packet(pubsub::PUBLISH, i as u16, pubsub::frame("news", text.as_bytes()))
            .await?;
    }
    for _ in 0..2 {
        let packet = inbox.next_packet().await.ok_or("connection closed")?;
        let (topic, payload) = pubsub::unframe(&packet.content).ok_or("malformed")?;
        println!("[{topic}] {}", String::from_utf8_lossy(payload));
    }
    let echo = pb::EchoServiceClient::new(subscriber);
    let reply = echo
        .echo(pb::Request {
            message: "and RPCs still work".into(),
            corpus: 0,
        })
        .await?;
    println!("Echo -> {}", reply.message);
    Ok(())
}
