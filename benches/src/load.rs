//! Load generators: N clients, each on its own connection, each keeping `inflight` calls
//! outstanding, for a fixed time after a warm-up. Latency goes into an HDR histogram.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use hdrhistogram::Histogram;
use rand::Rng;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

use crate::service::{Framework, MAX_MESSAGE, frpc_pb, tonic_pb};

/// One cell of the matrix.
#[derive(Debug, Clone, Copy)]
pub struct Cell {
    /// Clients, each with its own connection.
    pub clients: usize,
    /// Calls each client keeps outstanding.
    pub inflight: usize,
    /// Message size in bytes.
    pub size: usize,
    /// Measured time.
    pub duration: Duration,
    /// Time run before measuring.
    pub warmup: Duration,
}

/// What one framework did in one cell.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Calls completed in the measured window.
    pub calls: u64,
    /// Latency of those calls, in microseconds.
    pub latency: Histogram<u64>,
}

/// The measured window, shared by every task of a cell.
#[derive(Debug, Clone, Copy)]
struct Window {
    start: Instant,
    end: Instant,
}

impl Window {
    fn new(cell: &Cell) -> Window {
        let start = Instant::now() + cell.warmup;
        Window {
            start,
            end: start + cell.duration,
        }
    }

    /// Records a call that started at `sent` if it completed inside the window.
    fn record(&self, sent: Instant, outcome: &mut Outcome) {
        let now = Instant::now();
        if now >= self.start && now <= self.end {
            outcome.calls += 1;
            let _ = outcome.latency.record((now - sent).as_micros().max(1) as u64);
        }
    }
}

fn new_outcome() -> Outcome {
    Outcome {
        calls: 0,
        latency: Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid bounds"),
    }
}

fn merge(outcomes: impl IntoIterator<Item = Outcome>) -> Outcome {
    let mut total = new_outcome();
    for outcome in outcomes {
        total.calls += outcome.calls;
        total.latency.add(&outcome.latency).expect("same bounds");
    }
    total
}

/// A random printable message of `size` bytes, made once per cell.
pub fn message(size: usize) -> String {
    let mut rng = rand::rng();
    (0..size).map(|_| rng.random_range(b'a'..=b'z') as char).collect()
}

/// Runs one cell against `framework` at `addr`.
pub async fn run(framework: Framework, addr: SocketAddr, cell: Cell, framing: frpc::Framing) -> Outcome {
    let message = message(cell.size);
    let window = Window::new(&cell);
    let clients: Vec<_> = (0..cell.clients)
        .map(|_| {
            let message = message.clone();
            tokio::spawn(async move {
                match framework {
                    Framework::FrpcInline | Framework::FrpcPerRpc => {
                        frpc_client(addr, framing, message, cell.inflight, window).await
                    }
                    Framework::Tonic => tonic_client(addr, message, cell.inflight, window).await,
                    Framework::Raw => raw_client(addr, framing, message, cell.inflight, window).await,
                }
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    for client in clients {
        outcomes.push(client.await.expect("client task"));
    }
    merge(outcomes)
}

async fn frpc_client(
    addr: SocketAddr,
    framing: frpc::Framing,
    message: String,
    inflight: usize,
    window: Window,
) -> Outcome {
    let mut config = frpc::ClientConfig::default();
    config.connection.framing = framing;
    let client = frpc::Client::connect_with(addr, config).await.expect("connect");
    let client = frpc_pb::BenchmarkServiceClient::new(client);
    let tasks: Vec<_> = (0..inflight)
        .map(|_| {
            let (client, message) = (client.clone(), message.clone());
            tokio::spawn(async move {
                let mut outcome = new_outcome();
                while Instant::now() < window.end {
                    let sent = Instant::now();
                    let request = frpc_pb::Request {
                        message: message.clone(),
                    };
                    let reply = client.benchmark(request).await.expect("frpc call");
                    debug_assert_eq!(reply.message.len(), message.len());
                    window.record(sent, &mut outcome);
                }
                outcome
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(task.await.expect("frpc task"));
    }
    merge(outcomes)
}

async fn tonic_client(addr: SocketAddr, message: String, inflight: usize, window: Window) -> Outcome {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .expect("valid uri")
        .tcp_nodelay(true)
        .connect()
        .await
        .expect("connect");
    let client = tonic_pb::benchmark_service_client::BenchmarkServiceClient::new(channel)
        .max_decoding_message_size(MAX_MESSAGE)
        .max_encoding_message_size(MAX_MESSAGE);
    let tasks: Vec<_> = (0..inflight)
        .map(|_| {
            let (mut client, message) = (client.clone(), message.clone());
            tokio::spawn(async move {
                let mut outcome = new_outcome();
                while Instant::now() < window.end {
                    let sent = Instant::now();
                    let request = tonic_pb::Request {
                        message: message.clone(),
                    };
                    let reply = client.benchmark(request).await.expect("tonic call");
                    debug_assert_eq!(reply.get_ref().message.len(), message.len());
                    window.record(sent, &mut outcome);
                }
                outcome
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(task.await.expect("tonic task"));
    }
    merge(outcomes)
}

/// Keeps `inflight` packets outstanding on one socket: the server echoes in order, so a FIFO of
/// send times gives each reply's latency. No RPC layer at all.
async fn raw_client(
    addr: SocketAddr,
    framing: frpc::Framing,
    message: String,
    inflight: usize,
    window: Window,
) -> Outcome {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let mut packet = BytesMut::new();
    frpc_wire::Header {
        id: 1,
        op: 10,
        len: message.len() as u32,
    }
    .encode(framing, &mut packet);
    packet.put_slice(message.as_bytes());
    let packet = packet.freeze();
    let mut outcome = new_outcome();
    let mut sent = VecDeque::with_capacity(inflight);
    let mut buf = vec![0u8; packet.len()];
    let (mut reader, mut writer) = stream.split();
    for _ in 0..inflight {
        writer.write_all(&packet).await.expect("write");
        sent.push_back(Instant::now());
    }
    while let Some(started) = sent.pop_front() {
        reader.read_exact(&mut buf).await.expect("read");
        window.record(started, &mut outcome);
        if Instant::now() < window.end {
            writer.write_all(&packet).await.expect("write");
            sent.push_back(Instant::now());
        }
    }
    outcome
}
