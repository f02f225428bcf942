//! Senders write their packets themselves while the writer is idle and queue them otherwise;
//! a direct write the socket only partly takes is finished by the writer task. Whatever path a
//! packet takes, the peer reads every packet whole and in the order it was sent.
//! 2,000 packets of 1 to 48 KiB; and two connections of one thread sending in turns.

mod support;

use std::net::SocketAddr;

use frpc::{Client, ClientConfig, Framing};
use frpc_wire::PacketCodec;
use futures_util::StreamExt;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::codec::FramedRead;

const PACKETS: u16 = 2_000;
const OP: u16 = 100;

/// Content of packet `i`: 1 to 48 KiB (small ones batch or go direct, those of 32 KiB and more
/// are written from their own buffer), filled with a byte derived from `i`.
fn content(i: u16) -> Vec<u8> {
    vec![(i % 251) as u8; 1024 + (usize::from(i) * 613) % (47 * 1024)]
}

/// A peer that reads slowly at first (so the socket fills and direct writes come out partial),
/// then checks that packets `0..count` arrive whole and in order.
async fn ordered_peer(framing: Framing, count: u16) -> (SocketAddr, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let peer = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let chained = support::slow_at_first(stream, 256 * 1024).await;
        let mut packets = FramedRead::new(chained, PacketCodec::new(framing));
        let mut next = 0u16;
        while next < count {
            let packet = packets.next().await.expect("a packet").expect("a valid packet");
            // Heartbeats, and the client's extension offer (op 0xFFFF).
            if packet.op <= frpc_wire::op::PONG || packet.op == 0xFFFF {
                continue;
            }
            assert_eq!((packet.op, packet.id), (OP, next), "{framing:?}: out of order");
            assert!(
                packet.content[..] == content(next)[..],
                "{framing:?}: packet {next} differs"
            );
            next += 1;
        }
    });
    (addr, peer)
}

async fn client(addr: SocketAddr, framing: Framing) -> Client {
    let mut config = ClientConfig::default();
    config.connection.framing = framing;
    Client::connect_with(addr, config).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packets_arrive_whole_and_in_order_through_direct_and_queued_writes() {
    for framing in [Framing::Frisbee, Framing::Legacy] {
        let (addr, peer) = ordered_peer(framing, PACKETS).await;
        let client = client(addr, framing).await;
        for i in 0..PACKETS {
            client.send_packet(OP, i, content(i)).await.unwrap();
        }
        peer.await.unwrap();
    }
}

/// Two connections of one thread fill their sockets in turns (their peers read slowly at first,
/// and on a current-thread runtime no writer task runs while the sender goes on): what one's
/// socket does not take of a direct write is finished by its writer task, whole and in order,
/// whatever the other writes meanwhile.
#[tokio::test(flavor = "current_thread")]
async fn two_connections_of_one_thread_keep_their_packets_apart() {
    const EACH: u16 = 500;
    let framing = Framing::Frisbee;
    let ((a_addr, a_peer), (b_addr, b_peer)) = (
        ordered_peer(framing, EACH).await,
        ordered_peer(framing, EACH).await,
    );
    let (a, b) = (client(a_addr, framing).await, client(b_addr, framing).await);
    for i in 0..EACH {
        a.send_packet(OP, i, content(i)).await.unwrap();
        b.send_packet(OP, i, content(i)).await.unwrap();
    }
    a_peer.await.unwrap();
    b_peer.await.unwrap();
}
