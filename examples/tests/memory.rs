//! What hostile bytes can cost a server process, measured on this process (its own test binary,
//! one test, so the memory is the server's): a 5 MiB request of any shape raises the peak by at
//! most 64 MiB, and 400 connections that each announce 5 MiB and send 1 byte cost at most
//! 64 MiB resident and 512 MiB virtual.

mod support;

use std::time::Duration;

use bytes::BytesMut;
use frpc_examples::capture::pb;
use frpc_wire::polyglot::{Kind, encode};
use frpc_wire::{Framing, Header, Packet, PacketCodec};
use futures_util::{SinkExt, StreamExt};
use support::*;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio_util::codec::Framed;

/// A `/proc/self/status` field in bytes (`VmRSS`, `VmHWM`, `VmSize`).
fn status_bytes(field: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<usize>().unwrap() * 1024
}

const MIB: usize = 1024 * 1024;

/// A 5 MiB `Testy` request whose `results` slice announces one element per byte left, each `00`.
fn nil_flood() -> Vec<u8> {
    let len = 5 * MIB;
    let mut buf = vec![0x08, 0x00];
    let count = len - buf.len() - 7; // the slice header takes 7 bytes here
    encode::put_slice_header(&mut buf, Kind::Any, count);
    buf.resize(len, 0x00);
    buf
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_inputs_cost_the_server_bounded_memory() {
    let running = start(config(Duration::from_secs(60))).await;

    // 1. One 5 MiB request shaped to inflate: answered with an error, the peak barely moves.
    let mut framed = Framed::new(
        TcpStream::connect(running.addr).await.unwrap(),
        PacketCodec::new(Framing::Frisbee),
    );
    let peak_before = status_bytes("VmHWM:");
    framed
        .send(Packet::new(1, pb::echo_service::TESTY, nil_flood()))
        .await
        .unwrap();
    let reply = loop {
        let packet = framed.next().await.unwrap().unwrap();
        if packet.op > frpc_wire::op::PONG {
            break packet;
        }
    };
    assert_eq!((reply.id, reply.content[0]), (1, 0x06), "an Error reply");
    let peak_growth = status_bytes("VmHWM:").saturating_sub(peak_before);
    // The request itself is 5 MiB on each side of the loopback (client buffer and server read).
    assert!(peak_growth <= 64 * MIB, "peak grew by {} MiB", peak_growth / MIB);

    // 2. 400 connections each announcing 5 MiB and sending 1 byte of it.
    let (rss, virt) = (status_bytes("VmRSS:"), status_bytes("VmSize:"));
    let mut header = BytesMut::new();
    Header {
        id: 1,
        op: pb::echo_service::ECHO,
        len: 5 * MIB as u32,
    }
    .encode(Framing::Frisbee, &mut header);
    header.extend_from_slice(&[0x08]);
    let mut conns = Vec::new();
    for _ in 0..400 {
        let mut stream = TcpStream::connect(running.addr).await.unwrap();
        stream.write_all(&header).await.unwrap();
        conns.push(stream);
    }
    assert!(eventually(Duration::from_secs(10), || running.server.connections() >= 401).await);
    // A round trip on a fresh connection after them: the server is serving while they wait.
    let client = pb::EchoServiceClient::connect(running.addr).await.unwrap();
    let request = pb::Request {
        message: "still here".into(),
        corpus: 0,
    };
    assert_eq!(client.echo(request).await.unwrap().message, "still here");
    let rss_growth = status_bytes("VmRSS:").saturating_sub(rss);
    let virt_growth = status_bytes("VmSize:").saturating_sub(virt);
    assert!(
        rss_growth <= 64 * MIB,
        "resident grew by {} MiB",
        rss_growth / MIB
    );
    assert!(
        virt_growth <= 512 * MIB,
        "virtual grew by {} MiB",
        virt_growth / MIB
    );
    drop(conns);
}
