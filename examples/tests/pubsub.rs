//! The pub/sub broker: raw operations beside RPCs on the same connections.

use frpc::{Client, Concurrency, Framing};
use frpc_examples::capture::{self, pb};
use frpc_examples::pubsub::{self, Broker};
use tokio::net::TcpListener;

const MESSAGES: usize = 1000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_subscribers_get_every_message_in_order_while_rpcs_keep_working() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let broker = Broker::default();
    let server = broker
        .routes(capture::builder(Framing::Frisbee, Concurrency::PerRpc))
        .build()
        .unwrap();
    tokio::spawn(async move { server.serve_listener(listener).await });

    let mut subscribers = Vec::new();
    for _ in 0..3 {
        let client = Client::connect(addr).await.unwrap();
        let inbox = client.raw_packets(pubsub::MESSAGE).unwrap();
        let mut acks = client.raw_packets(pubsub::SUBSCRIBE).unwrap();
        client
            .send_packet(pubsub::SUBSCRIBE, 1, pubsub::frame("t", b""))
            .await
            .unwrap();
        assert_eq!(
            acks.next_packet().await.unwrap().id,
            1,
            "subscription acknowledged"
        );
        subscribers.push((client, inbox));
    }
    assert_eq!(broker.subscribers("t"), 3);

    let publisher = Client::connect(addr).await.unwrap();
    let publish = {
        let publisher = publisher.clone();
        tokio::spawn(async move {
            for i in 0..MESSAGES {
                let payload = format!("message {i}");
                publisher
                    .send_packet(pubsub::PUBLISH, i as u16, pubsub::frame("t", payload.as_bytes()))
                    .await
                    .unwrap();
            }
        })
    };
    // RPCs on the publisher's and the subscribers' connections while messages flow.
    let rpcs = {
        let clients: Vec<_> = subscribers
            .iter()
            .map(|(c, _)| c.clone())
            .chain([publisher.clone()])
            .collect();
        tokio::spawn(async move {
            for round in 0..50 {
                for client in &clients {
                    let echo = pb::EchoServiceClient::new(client.clone());
                    let message = format!("rpc {round}");
                    let reply = echo
                        .echo(pb::Request {
                            message: message.clone(),
                            corpus: 0,
                        })
                        .await
                        .unwrap();
                    assert_eq!(reply.message, message);
                }
            }
        })
    };
    for (_, inbox) in &mut subscribers {
        for i in 0..MESSAGES {
            let packet = inbox.next_packet().await.expect("a message");
            let (topic, payload) = pubsub::unframe(&packet.content).unwrap();
            assert_eq!(
                (topic, payload),
                ("t", format!("message {i}").as_bytes()),
                "in order"
            );
            assert_eq!(packet.id, i as u16);
        }
    }
    publish.await.unwrap();
    rpcs.await.unwrap();
}

#[tokio::test]
async fn closed_subscribers_are_forgotten() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let broker = Broker::default();
    let server = broker.routes(frpc::Server::builder()).build().unwrap();
    tokio::spawn(async move { server.serve_listener(listener).await });
    let client = Client::connect(addr).await.unwrap();
    let mut acks = client.raw_packets(pubsub::SUBSCRIBE).unwrap();
    client
        .send_packet(pubsub::SUBSCRIBE, 1, pubsub::frame("gone", b""))
        .await
        .unwrap();
    acks.next_packet().await.unwrap();
    assert_eq!(broker.subscribers("gone"), 1);
    drop(acks);
    client.close();
    client.closed().await;
    // The broker notices once the server side of the connection has closed too.
    let publisher = Client::connect(addr).await.unwrap();
    for _ in 0..100 {
        if broker.subscribers("gone") == 0 {
            break;
        }
        publisher
            .send_packet(pubsub::PUBLISH, 0, pubsub::frame("gone", b"x"))
            .await
            .unwrap();
        tokio::task::yield_now().await;
    }
    assert_eq!(broker.subscribers("gone"), 0);
}
