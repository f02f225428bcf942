//! A peer that sends 200,000 requests and never reads: the server's memory for it stays bounded
//! (backpressure through the bounded write queue and in-flight limit), and others are unaffected.
//! Its own test binary, so the process's memory is this test's alone.

mod support;

use std::time::Duration;

use bytes::BytesMut;
use frpc_examples::capture::pb;
use frpc_wire::polyglot::Message;
use frpc_wire::{Framing, Packet, PacketCodec};
use support::*;
use tokio::io::AsyncWriteExt;
use tokio_util::codec::Encoder;

fn rss_bytes() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<usize>().unwrap() * 1024
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_never_reads_gets_backpressure_not_memory() {
    let running = start(config(Duration::from_secs(30))).await;
    let good = GoodClient::start(running.addr).await;
    let baseline = rss_bytes();

    // 200,000 Echo requests of 1 KiB each: unbounded, their replies alone would be ~200 MiB.
    let mut codec = PacketCodec::new(Framing::Frisbee);
    let request = pb::Request {
        message: "x".repeat(1024),
        corpus: 0,
    }
    .to_polyglot();
    let mut batch = BytesMut::new();
    for id in 0..1000u16 {
        codec
            .encode(Packet::new(id, 10, request.clone()), &mut batch)
            .unwrap();
    }
    let mut flooder = tokio::net::TcpStream::connect(running.addr).await.unwrap();
    let flood = async {
        for _ in 0..200 {
            flooder.write_all(&batch).await.unwrap();
        }
    };
    let finished = tokio::time::timeout(Duration::from_secs(5), flood).await.is_ok();
    assert!(
        !finished,
        "the server kept reading a peer that never reads: no backpressure"
    );

    let growth = rss_bytes().saturating_sub(baseline);
    assert!(growth < 96 * 1024 * 1024, "memory grew by {} MiB", growth >> 20);
    good.finish().await;
    drop(flooder);
    // Both clients are gone (the good one closed its connection in `finish`): the flooder's
    // connection is cleaned up too. (This used to wait for 1, which only held while the flooder's
    // connection outlived the good one's.)
    assert!(eventually(Duration::from_secs(10), || running.server.connections() == 0).await);
}
