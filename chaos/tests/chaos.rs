//! The chaos suite (issue 28): frpc clients and servers through Toxiproxy. For each toxic, both
//! framings and extensions on and off, it drives unary calls and all three streaming kinds through
//! a `Channel`, then removes the toxic and checks the channel recovers; a balanced channel over
//! three servers has one of them black-holed. It prints a table and asserts: no wrong result, no
//! silent loss, no call beyond its deadline + 200 ms, recovery, and no leak at the end.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use frpc::{ClientConfig, Context, Endpoint, Framing, ServerConfig, Status, StreamSender, Streaming};
use frpc_chaos::{Proxy, Toxiproxy};
use serde_json::json;

#[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
pub struct Blob {
    pub data: Vec<u8>,
}

#[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
pub struct Num {
    pub n: u64,
}

/// What the client stream's handler saw: how many messages, and whether they came as 0, 1, 2, …
#[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
pub struct Seen {
    pub count: u64,
    pub ordered: bool,
}

#[frpc::service(package = "chaos")]
pub trait Chaos {
    /// Echoes the bytes.
    async fn echo(&self, ctx: &Context, request: Blob) -> Result<Blob, Status>;
    /// Sends 0, 1, … up to the request's number.
    async fn count(&self, ctx: &Context, request: Num, out: StreamSender<Num>) -> Result<(), Status>;
    /// Counts the messages and checks their order.
    async fn collect(&self, ctx: &Context, inbound: Streaming<Num>) -> Result<Seen, Status>;
    /// Sends `count` messages of `size` bytes, counting each completed send in the server's
    /// `sent` (the flow control check reads it).
    async fn produce(&self, ctx: &Context, request: Seen, out: StreamSender<Blob>) -> Result<(), Status>;
    /// Echoes every message.
    async fn chat(
        &self,
        ctx: &Context,
        inbound: Streaming<Num>,
        out: StreamSender<Num>,
    ) -> Result<(), Status>;
}

#[derive(Clone, Default)]
struct Svc {
    sent: Arc<AtomicU64>,
}

impl Chaos for Svc {
    async fn echo(&self, _: &Context, request: Blob) -> Result<Blob, Status> {
        Ok(request)
    }

    async fn count(&self, _: &Context, request: Num, out: StreamSender<Num>) -> Result<(), Status> {
        for n in 0..request.n {
            out.send(Num { n }).await?;
        }
        Ok(())
    }

    async fn collect(&self, _: &Context, mut inbound: Streaming<Num>) -> Result<Seen, Status> {
        let mut seen = Seen {
            count: 0,
            ordered: true,
        };
        while let Some(msg) = inbound.message().await? {
            seen.ordered &= msg.n == seen.count;
            seen.count += 1;
        }
        Ok(seen)
    }

    async fn produce(&self, _: &Context, request: Seen, out: StreamSender<Blob>) -> Result<(), Status> {
        let size = if request.ordered { 1024 } else { 16 };
        for n in 0..request.count {
            out.send(Blob {
                data: payload(n, size),
            })
            .await?;
            self.sent.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    }

    async fn chat(
        &self,
        _: &Context,
        mut inbound: Streaming<Num>,
        out: StreamSender<Num>,
    ) -> Result<(), Status> {
        while let Some(msg) = inbound.message().await? {
            out.send(msg).await?;
        }
        Ok(())
    }
}

/// Each call's deadline (the channel's timeout).
const DEADLINE: Duration = Duration::from_secs(2);
/// The clients' heartbeat: a PING every `PING`, the connection dead after `IDLE` of silence.
const PING: Duration = Duration::from_millis(250);
const IDLE: Duration = Duration::from_secs(1);
/// Messages per stream.
const STREAM_LEN: u64 = 20;
const BIDI_LEN: u64 = 5;
/// The most reconnections one scenario's channel may make.
const MAX_RECONNECTS: u64 = 100;
/// Rounds of the four call kinds while a toxic is on.
const ROUNDS: usize = 3;

/// One framing and extensions setting.
#[derive(Debug, Clone, Copy)]
struct Mode {
    framing: Framing,
    extensions: bool,
}

impl Mode {
    fn label(&self) -> String {
        let framing = match self.framing {
            Framing::Frisbee => "frisbee",
            _ => "legacy",
        };
        format!("{framing}/{}", if self.extensions { "ext" } else { "plain" })
    }

    fn client(&self) -> ClientConfig {
        let mut config = ClientConfig::default();
        config.connection.framing = self.framing;
        config.connection.ping_interval = PING;
        config.connection.idle_timeout = IDLE;
        config.extensions = self.extensions;
        config.timeout = Some(DEADLINE);
        config.connect_timeout = DEADLINE;
        config
    }

    fn endpoint(&self, addr: SocketAddr) -> Endpoint {
        Endpoint::from(addr).client_config(self.client())
    }
}

const MODES: [Mode; 4] = [
    Mode {
        framing: Framing::Frisbee,
        extensions: true,
    },
    Mode {
        framing: Framing::Frisbee,
        extensions: false,
    },
    Mode {
        framing: Framing::Legacy,
        extensions: true,
    },
    Mode {
        framing: Framing::Legacy,
        extensions: false,
    },
];

/// A server of one mode, with its handle for counting connections.
struct Running {
    addr: SocketAddr,
    server: frpc::Server,
    /// Messages the server's `produce` has sent.
    sent: Arc<AtomicU64>,
}

async fn serve(mode: Mode) -> Running {
    let svc = Svc::default();
    let mut config = ServerConfig::default();
    config.connection.framing = mode.framing;
    config.extensions = mode.extensions;
    let bound = frpc::Server::builder()
        .config(config)
        .add_service(ChaosServer::new(svc.clone()))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    let server = bound.server().clone();
    tokio::spawn(bound.serve());
    Running {
        addr,
        server,
        sent: svc.sent,
    }
}

/// One scenario's counts: a row of the table.
#[derive(Debug, Default)]
struct Tally {
    name: String,
    calls: usize,
    ok: usize,
    codes: BTreeMap<String, usize>,
    wrong: usize,
    lost: u64,
    duplicated: u64,
    /// The longest time a call took beyond its deadline (0 when none did).
    over: Duration,
    /// Calls still running at deadline + 2 s (abandoned).
    hung: usize,
    /// How long after the toxic was removed the first call succeeded again.
    recovered: Option<Duration>,
    /// Reconnections of the scenario's channel (`Channel::reconnects`).
    reconnects: Option<u64>,
    /// Calls that failed after recovery (must be 0).
    failed_after_recovery: usize,
    note: String,
}

/// What one call found when it completed.
#[derive(Debug, Default)]
struct Found {
    wrong: bool,
    lost: u64,
    duplicated: u64,
}

impl Tally {
    fn new(name: String) -> Tally {
        Tally {
            name,
            ..Tally::default()
        }
    }

    /// Runs one call, checking its deadline and recording its outcome; true when it succeeded.
    async fn run(&mut self, call: impl Future<Output = Result<Found, frpc::Error>>) -> bool {
        self.run_within(DEADLINE, call).await
    }

    /// [`Tally::run`] with another deadline.
    async fn run_within(
        &mut self,
        deadline: Duration,
        call: impl Future<Output = Result<Found, frpc::Error>>,
    ) -> bool {
        self.calls += 1;
        let start = Instant::now();
        let outcome = tokio::time::timeout(deadline + Duration::from_secs(2), call).await;
        self.over = self.over.max(start.elapsed().saturating_sub(deadline));
        match outcome {
            Err(_) => {
                self.hung += 1;
                false
            }
            Ok(Ok(found)) => {
                self.wrong += found.wrong as usize;
                self.lost += found.lost;
                self.duplicated += found.duplicated;
                let good = !found.wrong && found.lost == 0 && found.duplicated == 0;
                self.ok += good as usize;
                good
            }
            Ok(Err(err)) => {
                *self.codes.entry(format!("{:?}", err.code())).or_default() += 1;
                false
            }
        }
    }

    fn codes(&self) -> String {
        let codes: Vec<String> = self.codes.iter().map(|(code, n)| format!("{code} {n}")).collect();
        if codes.is_empty() {
            "-".into()
        } else {
            codes.join(", ")
        }
    }
}

fn payload(seed: u64, len: usize) -> Vec<u8> {
    (0..len).map(|i| (seed as usize * 31 + i * 7) as u8).collect()
}

/// A unary echo of `len` bytes, checked byte for byte.
async fn unary(client: &ChaosClient<frpc::Channel>, seed: u64, len: usize) -> Result<Found, frpc::Error> {
    let data = payload(seed, len);
    let reply = client.echo(Blob { data: data.clone() }).await?;
    Ok(Found {
        wrong: reply.data != data,
        ..Found::default()
    })
}

/// Checks a sequence 0, 1, …: gaps are lost messages, repeats duplicates; a clean end before
/// `len` messages is silent loss.
#[derive(Default)]
struct Sequence {
    next: u64,
    found: Found,
}

impl Sequence {
    fn push(&mut self, n: u64) {
        match n.cmp(&self.next) {
            std::cmp::Ordering::Less => self.found.duplicated += 1,
            std::cmp::Ordering::Greater => {
                self.found.lost += n - self.next;
                self.next = n + 1;
            }
            std::cmp::Ordering::Equal => self.next += 1,
        }
    }

    fn end_cleanly(mut self, len: u64) -> Found {
        self.found.lost += len.saturating_sub(self.next);
        self.found
    }
}

async fn server_stream(client: &ChaosClient<frpc::Channel>) -> Result<Found, frpc::Error> {
    let mut stream = client.count(Num { n: STREAM_LEN }).await?;
    let mut seq = Sequence::default();
    // An error ends the call: the messages before it are a prefix, checked as they came.
    while let Some(msg) = stream.message().await? {
        seq.push(msg.n);
    }
    Ok(seq.end_cleanly(STREAM_LEN))
}

async fn client_stream(client: &ChaosClient<frpc::Channel>) -> Result<Found, frpc::Error> {
    let mut call = client.collect().await?;
    for n in 0..STREAM_LEN {
        call.send(Num { n }).await?;
    }
    let seen = call.close_and_recv().await?;
    Ok(Found {
        wrong: !seen.ordered,
        lost: STREAM_LEN.saturating_sub(seen.count),
        duplicated: seen.count.saturating_sub(STREAM_LEN),
    })
}

async fn bidi(client: &ChaosClient<frpc::Channel>) -> Result<Found, frpc::Error> {
    let mut call = client.chat().await?;
    let mut seq = Sequence::default();
    for n in 0..BIDI_LEN {
        call.send(Num { n }).await?;
        match call.message().await? {
            Some(msg) => seq.push(msg.n),
            None => return Ok(seq.end_cleanly(BIDI_LEN)),
        }
    }
    call.close_send().await?;
    while let Some(msg) = call.message().await? {
        seq.push(msg.n);
    }
    Ok(seq.end_cleanly(BIDI_LEN))
}

/// One round: the four call kinds, one after the other.
async fn round(tally: &mut Tally, client: &ChaosClient<frpc::Channel>, seed: u64) {
    tally.run(unary(client, seed, 1024)).await;
    tally.run(server_stream(client)).await;
    tally.run(client_stream(client)).await;
    tally.run(bidi(client)).await;
}

/// Once the toxic is gone: calls until one succeeds (at most 10 s), then 8 more that must.
async fn recover(tally: &mut Tally, client: &ChaosClient<frpc::Channel>, since: Instant) {
    let mut calls = 0;
    loop {
        let mut probe = Tally::default();
        if probe.run(unary(client, 7, 64)).await {
            tally.recovered = Some(since.elapsed());
            break;
        }
        calls += 1;
        if since.elapsed() > Duration::from_secs(10) {
            tally.note = format!("no recovery after {calls} calls");
            return;
        }
        // A call that fails fast (UNAVAILABLE) never yields: pace the retries, as a client would,
        // or this loop holds a worker thread and starves the channel's reconnection.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for seed in 0..2 {
        let before = tally.ok;
        round(tally, client, seed).await;
        tally.failed_after_recovery += 4 - (tally.ok - before);
    }
}

/// The toxics, as (name, how to add them).
const TOXICS: [&str; 7] = [
    "latency",
    "bandwidth",
    "slicer",
    "reset_peer",
    "timeout",
    "slow_close",
    "limit_data",
];

async fn add_toxic(proxy: &Proxy, toxic: &str) {
    match toxic {
        "latency" => {
            proxy
                .add_both("t", "latency", json!({"latency": 50, "jitter": 25}))
                .await
        }
        "bandwidth" => proxy.add_both("t", "bandwidth", json!({"rate": 64})).await,
        "slicer" => {
            proxy
                .add_both(
                    "t",
                    "slicer",
                    json!({"average_size": 8, "size_variation": 7, "delay": 50}),
                )
                .await
        }
        "reset_peer" => {
            proxy
                .add("t", "reset_peer", "downstream", json!({"timeout": 300}))
                .await
        }
        "timeout" => proxy.add_both("t", "timeout", json!({"timeout": 0})).await,
        "slow_close" => {
            proxy
                .add("t", "slow_close", "downstream", json!({"delay": 3000}))
                .await
        }
        "limit_data" => {
            proxy
                .add("t", "limit_data", "downstream", json!({"bytes": 4096}))
                .await
        }
        other => unreachable!("no toxic {other}"),
    }
}

/// One toxic in one mode: a connected channel, the toxic, rounds of calls, the toxic removed,
/// recovery. For the black hole, also how long a call without deadline takes to fail.
async fn scenario(toxiproxy: Arc<Toxiproxy>, mode: Mode, upstream: SocketAddr, toxic: &'static str) -> Tally {
    let name = format!("{toxic} {}", mode.label());
    let proxy = toxiproxy.proxy(&name.replace(['/', ' '], "-"), upstream).await;
    let mut tally = Tally::new(name);
    let channel = mode
        .endpoint(proxy.listen)
        .connect()
        .await
        .expect("connects through a clean proxy");
    let client = ChaosClient::new(channel.clone());
    round(&mut tally, &client, 1).await;
    // A plain client (no channel to reconnect it) for the heartbeat check of the black hole.
    let single = frpc::Client::connect_with(proxy.listen, mode.client())
        .await
        .unwrap();
    add_toxic(&proxy, toxic).await;
    if toxic == "timeout" {
        // No deadline: only the heartbeat can end this call.
        let start = Instant::now();
        let unbounded = ChaosClient::new(single.with_timeout(Duration::from_secs(3600)));
        let ended = tokio::time::timeout(IDLE * 5, unbounded.echo(Blob::default())).await;
        tally.note = match ended {
            Ok(Ok(_)) => "a call through a black hole succeeded".into(),
            Ok(Err(err)) if start.elapsed() <= IDLE + PING + Duration::from_millis(200) => {
                format!(
                    "dead peer found in {} ms ({:?})",
                    start.elapsed().as_millis(),
                    err.code()
                )
            }
            Ok(Err(_)) => {
                tally.hung += 1;
                format!("dead peer found late: {} ms", start.elapsed().as_millis())
            }
            Err(_) => {
                tally.hung += 1;
                "dead peer NOT found by heartbeats".into()
            }
        };
    }
    for seed in 0..ROUNDS as u64 {
        round(&mut tally, &client, seed).await;
    }
    if toxic == "slow_close" {
        // A peer whose close is slow must not hold the client: a fresh channel closes at once.
        let start = Instant::now();
        let other = mode.endpoint(proxy.listen).connect().await;
        drop(other);
        let took = start.elapsed();
        tally.over = tally.over.max(took.saturating_sub(DEADLINE));
    }
    proxy.clear().await;
    recover(&mut tally, &client, Instant::now()).await;
    tally.reconnects = Some(channel.reconnects());
    drop((client, channel, single));
    proxy.delete().await;
    tally
}

/// A balanced channel over three servers, one of them black-holed: calls move to the other two.
/// Returns the tally and the p99 latency of the calls that succeeded.
async fn balanced(toxiproxy: Arc<Toxiproxy>, mode: Mode, servers: Vec<SocketAddr>) -> (Tally, Duration) {
    let label = format!("balanced 3, 1 black hole {}", mode.label());
    let mut proxies = Vec::new();
    for (i, addr) in servers.iter().enumerate() {
        proxies.push(
            toxiproxy
                .proxy(&format!("bal-{}-{i}", label.replace(['/', ' ', ','], "-")), *addr)
                .await,
        );
    }
    let channel = frpc::Channel::balance_list(proxies.iter().map(|p| mode.endpoint(p.listen)));
    channel.connected(3).await;
    let client = ChaosClient::new(channel.clone());
    let mut tally = Tally::new(label);
    proxies[0].add_both("t", "timeout", json!({"timeout": 0})).await;
    let start = Instant::now();
    let mut latencies = Vec::new();
    let mut late_failures = 0;
    for seed in 0..60u64 {
        let began = Instant::now();
        let ok = tally.run(unary(&client, seed, 256)).await;
        if ok {
            latencies.push(began.elapsed());
        } else if began.duration_since(start) > IDLE * 2 {
            // The heartbeat has had time to drop the dead server: calls must go elsewhere.
            late_failures += 1;
        }
    }
    tally.note = format!("{late_failures} failures after 2x idle timeout");
    tally.failed_after_recovery = late_failures;
    proxies[0].clear().await;
    let since = Instant::now();
    channel.connected(3).await;
    tally.recovered = Some(since.elapsed());
    tally.reconnects = Some(channel.reconnects());
    latencies.sort();
    let p99 = latencies
        .get(latencies.len() * 99 / 100)
        .copied()
        .unwrap_or_default();
    drop(client);
    drop(channel);
    for proxy in &proxies {
        proxy.delete().await;
    }
    (tally, p99)
}

/// 1 MiB, the "large message" of the split and slow data checks.
const LARGE: usize = 1 << 20;
/// The deadline of a large call: 1 MiB at 64 KiB/s takes 16 s.
const LARGE_DEADLINE: Duration = Duration::from_secs(30);

/// Large data through `slicer` (1–16 byte segments) or `bandwidth` (64 KiB/s, towards the
/// client): a 1 MiB unary echo, byte for byte, with the default heartbeat and idle timeout (the
/// transfer is slow, not silent), and 1 MiB through a taken-over connection.
async fn large(toxiproxy: Arc<Toxiproxy>, mode: Mode, upstream: SocketAddr, toxic: &'static str) -> Tally {
    let name = format!("{toxic} 1 MiB {}", mode.label());
    let proxy = toxiproxy.proxy(&name.replace(['/', ' '], "-"), upstream).await;
    let mut tally = Tally::new(name);
    let mut config = mode.client();
    config.connection = frpc::ConnectionConfig::default().framing(mode.framing);
    config.timeout = Some(LARGE_DEADLINE);
    let channel = Endpoint::from(proxy.listen)
        .client_config(config)
        .connect()
        .await
        .unwrap();
    let client = ChaosClient::new(channel.clone());
    match toxic {
        "slicer" => {
            proxy
                .add_both(
                    "t",
                    "slicer",
                    json!({"average_size": 8, "size_variation": 7, "delay": 0}),
                )
                .await
        }
        _ => {
            proxy
                .add("t", "bandwidth", "downstream", json!({"rate": 64}))
                .await
        }
    }
    let start = Instant::now();
    let ok = tally.run_within(LARGE_DEADLINE, unary(&client, 3, LARGE)).await;
    tally.note = format!(
        "echo {} in {} ms",
        if ok { "ok" } else { "FAILED" },
        start.elapsed().as_millis()
    );
    drop((client, channel));
    proxy.delete().await;
    tally
}

/// 1 MiB of lines through a connection taken over after an RPC, behind `toxic`.
async fn takeover(toxiproxy: Arc<Toxiproxy>, mode: Mode, toxic: &'static str) -> Tally {
    let name = format!("{toxic} takeover 1 MiB {}", mode.label());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstream = listener.local_addr().unwrap();
    let server = tokio::spawn(frpc_examples::takeover::serve(listener));
    let proxy = toxiproxy.proxy(&name.replace(['/', ' '], "-"), upstream).await;
    match toxic {
        "slicer" => {
            proxy
                .add_both(
                    "t",
                    "slicer",
                    json!({"average_size": 8, "size_variation": 7, "delay": 0}),
                )
                .await
        }
        _ => proxy.add_both("t", "bandwidth", json!({"rate": 64})).await,
    }
    let lines: Vec<u8> = (0..LARGE)
        .map(|i| {
            if i % 64 == 63 {
                b'\n'
            } else {
                b'a' + (i % 26) as u8
            }
        })
        .collect();
    let mut tally = Tally::new(name);
    let mut config = ClientConfig::default();
    config.connection.framing = mode.framing;
    config.extensions = mode.extensions;
    let start = Instant::now();
    let call = async {
        let (stream, unparsed) = frpc_examples::takeover::connect(proxy.listen, config).await?;
        let echoed = talk(stream, unparsed, &lines).await.map_err(frpc::Error::from)?;
        let want = lines.to_ascii_uppercase();
        Ok(Found {
            wrong: echoed != want,
            ..Found::default()
        })
    };
    let ok = tally.run_within(LARGE_DEADLINE, call).await;
    tally.note = format!(
        "takeover {} in {} ms",
        if ok { "ok" } else { "FAILED" },
        start.elapsed().as_millis()
    );
    proxy.delete().await;
    server.abort();
    tally
}

/// The receive window of the flow control check, in messages.
const WINDOW: u32 = 8;
/// Messages of the flow control check.
const PRODUCED: u64 = 200;

/// Flow control through `toxic` (extensions on): a server stream of 200 × 1 KiB to a client
/// whose window is 8 messages. Whenever the client reads a message, the server must have sent
/// no more than what the client has read plus the window, however much the link buffers.
/// `upstream` and `sent` are a server of its own (`sent` counts only this scenario's messages).
async fn window(
    toxiproxy: Arc<Toxiproxy>,
    mode: Mode,
    (upstream, sent): (SocketAddr, Arc<AtomicU64>),
    toxic: &'static str,
) -> Tally {
    let name = format!("{toxic} window {WINDOW} {}", mode.label());
    let proxy = toxiproxy.proxy(&name.replace(['/', ' '], "-"), upstream).await;
    match toxic {
        "slicer" => {
            proxy
                .add_both(
                    "t",
                    "slicer",
                    json!({"average_size": 8, "size_variation": 7, "delay": 0}),
                )
                .await
        }
        _ => proxy.add_both("t", "bandwidth", json!({"rate": 64})).await,
    }
    let mut config = mode.client();
    config.connection.stream_window = WINDOW;
    config.timeout = Some(LARGE_DEADLINE);
    let client = frpc::Client::connect_with(proxy.listen, config).await.unwrap();
    let flow = ChaosClient::new(client.clone());
    let mut tally = Tally::new(name);
    let mut ahead = 0;
    let call = async {
        let mut stream = flow
            .produce(Seen {
                count: PRODUCED,
                ordered: true,
            })
            .await?;
        let mut seq = Sequence::default();
        let mut read = 0;
        while let Some(msg) = stream.message().await? {
            read += 1;
            ahead = ahead.max(sent.load(Ordering::SeqCst).saturating_sub(read));
            let n = seq.next;
            seq.push(n);
            seq.found.wrong |= msg.data != payload(n, 1024);
        }
        let mut found = seq.end_cleanly(PRODUCED);
        found.lost += PRODUCED - read.min(PRODUCED);
        Ok(found)
    };
    tally.run_within(LARGE_DEADLINE, call).await;
    tally.note = format!("server at most {ahead} messages ahead of the reader");
    if ahead > u64::from(WINDOW) {
        tally.wrong += 1;
    }
    drop((flow, client));
    proxy.delete().await;
    tally
}

/// Sends `lines` over a taken-over stream and reads as many bytes back (after the greeting).
/// It does not half-close: Toxiproxy closes both directions when one side shuts down its writes.
async fn talk(
    mut stream: tokio::net::TcpStream,
    mut unparsed: bytes::BytesMut,
    lines: &[u8],
) -> std::io::Result<Vec<u8>> {
    use frpc_examples::takeover::{GREETING, read_exact_after};
    use tokio::io::AsyncWriteExt;
    let mut greeting = vec![0u8; GREETING.len()];
    read_exact_after(&mut stream, &mut unparsed, &mut greeting).await?;
    let (mut reader, mut writer) = stream.split();
    let mut echoed = vec![0u8; lines.len()];
    let send = writer.write_all(lines);
    let receive = read_exact_after(&mut reader, &mut unparsed, &mut echoed);
    tokio::try_join!(send, receive)?;
    Ok(echoed)
}

/// Open file descriptors, tasks alive and resident memory of this process.
fn usage() -> (usize, usize, u64) {
    let fds = std::fs::read_dir("/proc/self/fd").map(|d| d.count()).unwrap_or(0);
    let tasks = tokio::runtime::Handle::current().metrics().num_alive_tasks();
    let rss = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|p| p.parse::<u64>().ok()))
        .unwrap_or(0)
        * 4096;
    (fds, tasks, rss)
}

fn print_table(rows: &[Tally]) {
    println!(
        "\n| scenario | calls | ok | errors by code | wrong | lost/dup msgs | longest beyond deadline | recovered in | reconnects | notes |"
    );
    println!("|---|---:|---:|---|---:|---:|---:|---:|---:|---|");
    for t in rows {
        let recovered = t
            .recovered
            .map(|d| format!("{} ms", d.as_millis()))
            .unwrap_or("-".into());
        println!(
            "| {} | {} | {} | {} | {} | {}/{} | {} ms | {} | {} | {} |",
            t.name,
            t.calls,
            t.ok,
            t.codes(),
            t.wrong,
            t.lost,
            t.duplicated,
            t.over.as_millis(),
            recovered,
            t.reconnects.map(|n| n.to_string()).unwrap_or("-".into()),
            t.note
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_suite() {
    let toxiproxy = Arc::new(Toxiproxy::start().await);
    let mut servers = Vec::new();
    for mode in MODES {
        servers.push((mode, serve(mode).await));
    }
    let mut balanced_servers = Vec::new();
    for mode in [MODES[0], MODES[3]] {
        let mut three = Vec::new();
        for _ in 0..3 {
            three.push(serve(mode).await);
        }
        balanced_servers.push((mode, three));
    }
    let mut window_servers = Vec::new();
    for mode in [MODES[0], MODES[2]] {
        for toxic in ["slicer", "bandwidth"] {
            window_servers.push((mode, toxic, serve(mode).await));
        }
    }
    let before = usage();
    let suite = Instant::now();

    let mut tasks = tokio::task::JoinSet::new();
    for (mode, running) in &servers {
        for toxic in TOXICS {
            let (toxiproxy, mode, addr) = (toxiproxy.clone(), *mode, running.addr);
            tasks.spawn(async move { (scenario(toxiproxy, mode, addr, toxic).await, None) });
        }
    }
    for (mode, running) in [&servers[0], &servers[3]] {
        for toxic in ["slicer", "bandwidth"] {
            let (proxies, mode, addr) = (toxiproxy.clone(), *mode, running.addr);
            tasks.spawn(async move { (large(proxies, mode, addr, toxic).await, None) });
        }
    }
    for (mode, toxic, running) in &window_servers {
        let (proxies, mode, toxic) = (toxiproxy.clone(), *mode, *toxic);
        let server = (running.addr, running.sent.clone());
        tasks.spawn(async move { (window(proxies, mode, server, toxic).await, None) });
    }
    // The takeover example's server speaks Frisbee framing.
    for mode in [MODES[0], MODES[1]] {
        for toxic in ["slicer", "bandwidth"] {
            let proxies = toxiproxy.clone();
            tasks.spawn(async move { (takeover(proxies, mode, toxic).await, None) });
        }
    }
    for (mode, three) in &balanced_servers {
        let (toxiproxy, mode) = (toxiproxy.clone(), *mode);
        let addrs = three.iter().map(|r| r.addr).collect();
        tasks.spawn(async move {
            let (tally, p99) = balanced(toxiproxy, mode, addrs).await;
            (tally, Some(p99))
        });
    }
    let mut rows = Vec::new();
    let mut p99s = Vec::new();
    while let Some(done) = tasks.join_next().await {
        let (tally, p99) = done.unwrap();
        if let Some(p99) = p99 {
            p99s.push((tally.name.clone(), p99));
        }
        rows.push(tally);
    }
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    print_table(&rows);
    for (name, p99) in &p99s {
        println!("{name}: p99 of the calls that succeeded {} ms", p99.as_millis());
    }
    println!("suite ran in {:.1} s", suite.elapsed().as_secs_f64());

    // Every proxy is gone, so every connection to the servers closed: they must see it.
    let all: Vec<&frpc::Server> = servers
        .iter()
        .map(|(_, r)| &r.server)
        .chain(
            balanced_servers
                .iter()
                .flat_map(|(_, t)| t.iter().map(|r| &r.server)),
        )
        .collect();
    let drained = async {
        while all.iter().any(|s| s.connections() > 0 || s.open_streams() > 0) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let drained = tokio::time::timeout(Duration::from_secs(10), drained)
        .await
        .is_ok();
    let after = usage();
    println!(
        "leak check: fds {} -> {}, tasks {} -> {}, rss {} -> {} MiB",
        before.0,
        after.0,
        before.1,
        after.1,
        before.2 >> 20,
        after.2 >> 20
    );

    let mut failures = Vec::new();
    for t in &rows {
        let mut fail = |what: String| failures.push(format!("{}: {what}", t.name));
        if t.wrong > 0 || t.lost > 0 || t.duplicated > 0 {
            fail(format!(
                "{} wrong, {} lost, {} duplicated",
                t.wrong, t.lost, t.duplicated
            ));
        }
        if t.hung > 0 || t.over > Duration::from_millis(200) {
            fail(format!(
                "{} hung, {} ms beyond the deadline",
                t.hung,
                t.over.as_millis()
            ));
        }
        // With backoff a few seconds of resets or black hole cost tens of reconnections; a
        // reconnect loop without backoff costs thousands.
        if t.reconnects.is_some_and(|n| n > MAX_RECONNECTS) {
            fail(format!(
                "{} reconnections (a reconnect loop?)",
                t.reconnects.unwrap_or(0)
            ));
        }
        let one_off = t.name.contains("1 MiB") || t.name.contains("window");
        if t.ok < t.calls && one_off {
            fail(format!("large data failed: {}, {}", t.codes(), t.note));
        }
        let recovery_checked = !one_off;
        if recovery_checked && (t.recovered.is_none() || t.failed_after_recovery > 0) {
            fail(format!(
                "recovery: {:?}, {} failed after ({})",
                t.recovered, t.failed_after_recovery, t.note
            ));
        }
    }
    for (name, p99) in &p99s {
        if *p99 > DEADLINE / 2 {
            failures.push(format!(
                "{name}: p99 {} ms of the healthy servers",
                p99.as_millis()
            ));
        }
    }
    if !drained {
        failures.push("servers still hold connections or streams 10 s after every proxy closed".into());
    }
    if after.0 > before.0 + 8 || after.1 > before.1 + 8 || after.2 > before.2 + (64 << 20) {
        failures.push(format!(
            "leak: before {before:?}, after {after:?} (fds, tasks, rss)"
        ));
    }
    assert!(
        failures.is_empty(),
        "chaos suite failures:\n{}",
        failures.join("\n")
    );
}
