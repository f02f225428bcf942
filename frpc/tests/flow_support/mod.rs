//! The flow-control tests' service and helpers (`flow.rs`, `flow_budgets.rs`): a service whose
//! handlers produce and consume at the pace a test sets, a server and clients configured with
//! small windows, a raw peer's packet helpers, and the process's memory for the budget tests.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use frpc::{ClientConfig, Framing, ServerConfig, Status};
use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio::sync::{Notify, Semaphore, broadcast};
use tokio_util::codec::Framed;

#[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
pub struct Text {
    pub value: String,
}

pub fn text(value: &str) -> Text {
    Text { value: value.into() }
}

/// Operations: echo 10, produce 11, count 12, pipe 13, sink 14, watch 15, put 16, drain 17,
/// blobs 18.
#[frpc::service(package = "flow")]
pub trait Flow {
    /// Echoes the request.
    async fn echo(&self, ctx: &frpc::Context, request: Text) -> Result<Text, frpc::Status>;
    /// Sends `0`, `1`, … up to the number the request holds, counting each completed send.
    async fn produce(
        &self,
        ctx: &frpc::Context,
        request: Text,
        outbound: frpc::StreamSender<Text>,
    ) -> Result<(), frpc::Status>;
    /// Sends `0`, `1`, … up to the number the request holds (counts nothing).
    async fn count(
        &self,
        ctx: &frpc::Context,
        request: Text,
        outbound: frpc::StreamSender<Text>,
    ) -> Result<(), frpc::Status>;
    /// Bidi: reads one message per permit of the gate, echoes it.
    async fn pipe(
        &self,
        ctx: &frpc::Context,
        inbound: frpc::Streaming<Text>,
        outbound: frpc::StreamSender<Text>,
    ) -> Result<(), frpc::Status>;
    /// Client streaming: reads one message per permit of the gate; joins them with `,`.
    async fn sink(&self, ctx: &frpc::Context, inbound: frpc::Streaming<Text>) -> Result<Text, frpc::Status>;
    /// Subscribes to puts, then forwards as many as the request's number.
    async fn watch(
        &self,
        ctx: &frpc::Context,
        request: Text,
        outbound: frpc::StreamSender<Text>,
    ) -> Result<(), frpc::Status>;
    /// Publishes the request to the watchers.
    async fn put(&self, ctx: &frpc::Context, request: Text) -> Result<Text, frpc::Status>;
    /// Bidi: reads one message (a number), drops its inbound stream, sends that many messages.
    async fn drain(
        &self,
        ctx: &frpc::Context,
        inbound: frpc::Streaming<Text>,
        outbound: frpc::StreamSender<Text>,
    ) -> Result<(), frpc::Status>;
    /// Sends `count` messages of `size` bytes (the request is `count,size`), counting each
    /// completed send.
    async fn blobs(
        &self,
        ctx: &frpc::Context,
        request: Text,
        outbound: frpc::StreamSender<Text>,
    ) -> Result<(), frpc::Status>;
}

pub const SINK: u16 = 14;

pub struct State {
    pub produced: AtomicUsize,
    pub progress: Notify,
    pub gate: Semaphore,
    pub puts: broadcast::Sender<String>,
}

#[derive(Clone)]
pub struct Svc(pub Arc<State>);

pub fn number(request: &Text) -> Result<usize, Status> {
    request
        .value
        .parse()
        .map_err(|_| Status::invalid_argument("not a number"))
}

impl Flow for Svc {
    async fn echo(&self, _: &frpc::Context, request: Text) -> Result<Text, Status> {
        Ok(request)
    }

    async fn produce(
        &self,
        _: &frpc::Context,
        request: Text,
        out: frpc::StreamSender<Text>,
    ) -> Result<(), Status> {
        for n in 0..number(&request)? {
            out.send(text(&n.to_string())).await?;
            self.0.produced.fetch_add(1, Ordering::SeqCst);
            self.0.progress.notify_waiters();
        }
        Ok(())
    }

    async fn count(
        &self,
        _: &frpc::Context,
        request: Text,
        out: frpc::StreamSender<Text>,
    ) -> Result<(), Status> {
        for n in 0..number(&request)? {
            out.send(text(&n.to_string())).await?;
        }
        Ok(())
    }

    async fn pipe(
        &self,
        _: &frpc::Context,
        mut inbound: frpc::Streaming<Text>,
        out: frpc::StreamSender<Text>,
    ) -> Result<(), Status> {
        loop {
            self.0.gate.acquire().await.unwrap().forget();
            match inbound.message().await? {
                Some(message) => out.send(message).await?,
                None => return Ok(()),
            }
        }
    }

    async fn sink(&self, _: &frpc::Context, mut inbound: frpc::Streaming<Text>) -> Result<Text, Status> {
        let mut parts = Vec::new();
        loop {
            self.0.gate.acquire().await.unwrap().forget();
            match inbound.message().await? {
                Some(message) => parts.push(message.value),
                None => return Ok(text(&parts.join(","))),
            }
        }
    }

    async fn watch(
        &self,
        _: &frpc::Context,
        request: Text,
        out: frpc::StreamSender<Text>,
    ) -> Result<(), Status> {
        // Subscribed before the handler's first wait: the open acknowledgement follows it.
        let mut puts = self.0.puts.subscribe();
        for _ in 0..number(&request)? {
            let value = puts
                .recv()
                .await
                .map_err(|err| Status::internal(err.to_string()))?;
            out.send(text(&value)).await?;
        }
        Ok(())
    }

    async fn put(&self, _: &frpc::Context, request: Text) -> Result<Text, Status> {
        let _ = self.0.puts.send(request.value.clone());
        Ok(request)
    }

    async fn drain(
        &self,
        _: &frpc::Context,
        mut inbound: frpc::Streaming<Text>,
        out: frpc::StreamSender<Text>,
    ) -> Result<(), Status> {
        let first = inbound.message().await?.unwrap_or_default();
        drop(inbound);
        for n in 0..number(&first)? {
            out.send(text(&n.to_string())).await?;
        }
        Ok(())
    }

    async fn blobs(
        &self,
        _: &frpc::Context,
        request: Text,
        out: frpc::StreamSender<Text>,
    ) -> Result<(), Status> {
        let (count, size) = request.value.split_once(',').unwrap_or_default();
        let (count, size) = (number(&text(count))?, number(&text(size))?);
        for _ in 0..count {
            out.send(blob(size)).await?;
            self.0.produced.fetch_add(1, Ordering::SeqCst);
            self.0.progress.notify_waiters();
        }
        Ok(())
    }
}

pub const FRAMINGS: [Framing; 2] = [Framing::Frisbee, Framing::Legacy];
pub const LIMIT: Duration = Duration::from_secs(10);

pub async fn bounded<T>(what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: nothing within {LIMIT:?}"))
}

pub struct Running {
    pub addr: std::net::SocketAddr,
    pub state: Arc<State>,
}

impl Running {
    /// Waits until the producer completed `n` sends.
    pub async fn produced(&self, n: usize) {
        bounded("producer progress", async {
            loop {
                let notified = self.state.progress.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if self.state.produced.load(Ordering::SeqCst) >= n {
                    return;
                }
                notified.await;
            }
        })
        .await
    }
}

pub async fn serve(config: ServerConfig) -> Running {
    let state = Arc::new(State {
        produced: AtomicUsize::new(0),
        progress: Notify::new(),
        gate: Semaphore::new(0),
        puts: broadcast::channel(64).0,
    });
    let bound = frpc::Server::builder()
        .config(config)
        .add_service(FlowServer::new(Svc(state.clone())))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    Running { addr, state }
}

pub fn server_config(framing: Framing, window: u32) -> ServerConfig {
    let mut config = ServerConfig::default();
    config.connection.framing = framing;
    config.connection.stream_window = window;
    config
}

pub fn client_config(framing: Framing, window: u32) -> ClientConfig {
    let mut config = ClientConfig::default();
    config.connection.framing = framing;
    config.connection.stream_window = window;
    config
}

pub async fn connect(running: &Running, config: ClientConfig) -> FlowClient {
    FlowClient::new(frpc::Client::connect_with(running.addr, config).await.unwrap())
}

/// Unary calls and another stream complete on `flow`'s connection.
pub async fn the_connection_flows(flow: &FlowClient) {
    for i in 0..20 {
        let reply = bounded("echo", flow.echo(text(&i.to_string()))).await.unwrap();
        assert_eq!(reply.value, i.to_string());
    }
    let mut other = bounded("count", flow.count(text("30"))).await.unwrap();
    for i in 0..30 {
        let got = bounded("count message", other.message()).await.unwrap().unwrap();
        assert_eq!(got.value, i.to_string());
    }
    assert!(other.message().await.unwrap().is_none());
}

pub type Raw = Framed<TcpStream, frpc::wire::PacketCodec>;

/// The next packet that is not a heartbeat.
pub async fn next(raw: &mut Raw) -> frpc::wire::Packet {
    loop {
        let packet = bounded("a packet", raw.next())
            .await
            .expect("the connection stays open")
            .unwrap();
        if packet.op > frpc::wire::op::PONG {
            return packet;
        }
    }
}

pub async fn send(raw: &mut Raw, id: u16, op: u16, content: &[u8]) {
    let packet = frpc::wire::Packet::new(id, op, Bytes::copy_from_slice(content));
    raw.send(packet).await.unwrap();
}

pub fn encoded(value: &str) -> Vec<u8> {
    frpc::codegen::Message::to_polyglot(&text(value)).to_vec()
}

pub const EOF: &[u8] = b"\x06\x05\x0a\x03EOF";

/// A client that sends past the credit the server granted gets its stream failed with
/// RESOURCE_EXHAUSTED (and `EOF`); the server keeps nothing more and the connection stays up.
pub const DRAIN: u16 = 17;

/// A message of `size` bytes of text.
pub fn blob(size: usize) -> Text {
    text(&"b".repeat(size))
}

/// Memory tests of one test binary run one at a time: each measures the whole process (which
/// hosts the server).
pub static MEMORY: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Resets the process's peak resident memory to what it holds now (writing 5 to
/// `/proc/self/clear_refs`, Linux ≥ 4.0) and returns that: the baseline of [`peak_memory`].
pub fn reset_peak() -> usize {
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    memory_status("VmRSS:")
}

/// The process's peak resident memory since the last [`reset_peak`].
pub fn peak_memory() -> usize {
    memory_status("VmHWM:")
}

fn memory_status(field: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<usize>().unwrap() * 1024
}
