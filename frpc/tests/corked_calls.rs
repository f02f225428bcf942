//! Calls made while others are in flight are corked: they wait in the write side's cork and the
//! first of them writes them all at once after letting its task run the others. Checked against
//! a bare Frisbee peer: every request arrives whole, in the order the calls were made, in both
//! framings; a caller dropped while its cork waits still gets the cork written; a packet sent
//! after corked calls leaves after them; replies answered in any order reach their callers.

mod support;

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Waker};

use frpc::codegen::{self, Message};
use frpc::{Client, ClientConfig, Framing};
use frpc_wire::{Packet, PacketCodec};
use futures_util::{SinkExt, StreamExt};
use support::*;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::codec::Framed;

const JOINED: u16 = 10;

/// A bare peer's next request (skipping heartbeats and the extension offer, op 0xFFFF, which a
/// Go server ignores too).
async fn next_request(peer: &mut Framed<TcpStream, PacketCodec>) -> Packet {
    loop {
        // Bounded, so a packet that never leaves fails the test instead of hanging it.
        let next = tokio::time::timeout(std::time::Duration::from_secs(10), peer.next());
        let packet = next
            .await
            .expect("a request within 10 s")
            .expect("a packet")
            .expect("a valid packet");
        if packet.op > frpc_wire::op::PONG && packet.op != 0xFFFF {
            return packet;
        }
    }
}

async fn connect(framing: Framing) -> (Client, Framed<TcpStream, PacketCodec>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut config = ClientConfig::default();
    config.connection.framing = framing;
    // Nothing queued behind the calls' backs: no extension offer, and no heartbeat during the
    // test (a PING would flush a stuck cork and hide it).
    config.extensions = false;
    config.connection.ping_interval = std::time::Duration::from_secs(600);
    config.connection.idle_timeout = std::time::Duration::from_secs(1200);
    let (client, accepted) = tokio::join!(
        Client::connect_with(listener.local_addr().unwrap(), config),
        listener.accept()
    );
    let peer = Framed::new(accepted.unwrap().0, PacketCodec::new(framing));
    (client.unwrap(), peer)
}

fn request(value: &str) -> bytes::Bytes {
    Text::new(value).to_polyglot()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joined_calls_arrive_whole_and_in_order_and_replies_find_their_callers() {
    for framing in [Framing::Frisbee, Framing::Legacy] {
        let (client, mut peer) = connect(framing).await;
        for round in 0..3u16 {
            let calls = (0..JOINED).map(|i| {
                let client = client.clone();
                async move { call(&client, ECHO, &format!("{round}-{i}")).await }
            });
            let answer = async {
                let mut requests = Vec::new();
                for i in 0..JOINED {
                    let packet = next_request(&mut peer).await;
                    // Ids count up per method across rounds (Go's counter, first id 1).
                    let id = round * JOINED + i + 1;
                    assert_eq!((packet.op, packet.id), (ECHO, id), "{framing:?}: out of order");
                    assert_eq!(packet.content, request(&format!("{round}-{i}")), "{framing:?}");
                    requests.push(packet);
                }
                // Answered last first: each reply must still reach its own caller.
                for packet in requests.into_iter().rev() {
                    let reply = Text::new(format!("re {}", decode(&packet.content)));
                    peer.send(Packet::new(packet.id, packet.op, reply.to_polyglot()))
                        .await
                        .unwrap();
                }
            };
            let (results, ()) = tokio::join!(futures_util::future::join_all(calls), answer);
            for (i, result) in results.into_iter().enumerate() {
                assert_eq!(result.unwrap().value, format!("re {round}-{i}"), "{framing:?}");
            }
        }
        assert_eq!(client.inflight(), 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cork_is_written_when_its_caller_is_dropped_and_leaves_before_later_packets() {
    for (framing, later) in [Framing::Frisbee, Framing::Legacy]
        .into_iter()
        .flat_map(|f| [(f, false), (f, true)])
    {
        let (client, mut peer) = connect(framing).await;
        {
            // The first call is alone and written at once; the second finds it in flight,
            // corks, and yields to let others join: polled once, it is waiting in the cork.
            let both =
                futures_util::future::join(call(&client, ECHO, "first"), call(&client, ECHO, "second"));
            let mut both = pin!(both);
            let mut cx = Context::from_waker(Waker::noop());
            assert!(both.as_mut().poll(&mut cx).is_pending());
            if later {
                // Sent after the corked call, so it must leave after it (in the same write).
                client.send_packet(900, 7, &b"after"[..]).await.unwrap();
            }
            // Dropped here, before the corked caller resumed to write.
        }
        let first = next_request(&mut peer).await;
        assert_eq!(
            (first.id, first.content.clone()),
            (1, request("first")),
            "{framing:?}"
        );
        let second = next_request(&mut peer).await;
        assert_eq!(
            (second.id, second.content.clone()),
            (2, request("second")),
            "{framing:?}"
        );
        if later {
            let after = next_request(&mut peer).await;
            assert_eq!(
                (after.op, after.id, &after.content[..]),
                (900, 7, &b"after"[..]),
                "{framing:?}"
            );
        }
        // The connection still works: a new call and its reply.
        let (reply, ()) = tokio::join!(call(&client, ECHO, "again"), async {
            let packet = next_request(&mut peer).await;
            assert_eq!(packet.content, request("again"));
            let reply = Packet::new(packet.id, packet.op, Text::new("again!").to_polyglot());
            peer.send(reply).await.unwrap();
        });
        assert_eq!(reply.unwrap().value, "again!");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corked_calls_against_a_real_server_in_every_mode() {
    for mode in [frpc::Concurrency::Inline, frpc::Concurrency::PerRpc] {
        let server = start(config(mode)).await;
        let client = Client::connect(server.addr).await.unwrap();
        for round in 0..50 {
            let calls = (0..JOINED).map(|i| {
                let client = &client;
                async move { call(client, ECHO, &format!("{round}/{i}")).await }
            });
            let results = futures_util::future::join_all(calls).await;
            for (i, result) in results.into_iter().enumerate() {
                assert_eq!(result.unwrap().value, format!("{round}/{i}"), "{mode:?}");
            }
        }
        assert_eq!(client.inflight(), 0);
        // Alone again: a single call still goes out (and back) on its own.
        assert_eq!(call(&client, ECHO, "solo").await.unwrap().value, "solo");
    }
}

fn decode(content: &bytes::Bytes) -> String {
    match codegen::decode_envelope::<Text>(&mut codegen::Decoder::from_bytes(content)) {
        Ok(codegen::Envelope::Message(text)) => text.value,
        other => panic!("not a Text: {other:?}"),
    }
}
