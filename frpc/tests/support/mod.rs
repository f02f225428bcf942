//! A hand-written service shaped exactly like generated code, so the runtime is tested on its
//! own. Operations: 10 echo, 11 fail, 12 panic, 13 wait for the gate, 14 closing status,
//! 15 server stream (counts to N), 16 client stream (joins), 17 bidi echo, 18 takeover,
//! 19 client stream answered with its first message, before the rest is read.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::{BufMut, Bytes};
use frpc::codegen::{self, BoxFuture, DecodeError, Decoder, Message, MethodDesc, MethodKind, ServerStream};
use frpc::{Context, Status, StreamSender, Streaming};
use tokio::net::TcpListener;
use tokio::sync::{Notify, Semaphore};

/// `message Text { string value = 1; }`
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Text {
    pub value: String,
}

impl Text {
    pub fn new(value: impl Into<String>) -> Text {
        Text { value: value.into() }
    }
}

impl Message for Text {
    fn fields_len(&self) -> usize {
        codegen::encode::bytes_len(self.value.len())
    }
    fn encode_fields(&self, buf: &mut impl BufMut) {
        codegen::encode::put_str(buf, &self.value)
    }
    fn decode_fields(&mut self, dec: &mut Decoder<'_>) -> Result<(), DecodeError> {
        self.value = dec.string()?;
        Ok(())
    }
}

pub const ECHO: u16 = 10;
pub const FAIL: u16 = 11;
pub const PANIC: u16 = 12;
pub const GATED: u16 = 13;
pub const CLOSE: u16 = 14;
pub const COUNT: u16 = 15;
pub const JOIN: u16 = 16;
pub const CHAT: u16 = 17;
pub const UPGRADE: u16 = 18;
pub const FIRST: u16 = 19;

/// Shared state the test can observe and steer.
#[derive(Debug)]
pub struct State {
    /// Calls of GATED that have started.
    pub gated_started: AtomicUsize,
    /// GATED calls running now, and the most that ever ran at once.
    pub gated_running: AtomicUsize,
    pub gated_max_running: AtomicUsize,
    pub started: Notify,
    /// GATED calls wait for a permit here.
    pub gate: Semaphore,
}

impl Default for State {
    fn default() -> Self {
        State {
            gated_started: AtomicUsize::new(0),
            gated_running: AtomicUsize::new(0),
            gated_max_running: AtomicUsize::new(0),
            started: Notify::new(),
            gate: Semaphore::new(0),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct TestService {
    pub state: Arc<State>,
}

static METHODS: &[MethodDesc] = &[
    MethodDesc {
        name: "Echo",
        op: ECHO,
        kind: MethodKind::Unary,
    },
    MethodDesc {
        name: "Fail",
        op: FAIL,
        kind: MethodKind::Unary,
    },
    MethodDesc {
        name: "Panic",
        op: PANIC,
        kind: MethodKind::Unary,
    },
    MethodDesc {
        name: "Gated",
        op: GATED,
        kind: MethodKind::Unary,
    },
    MethodDesc {
        name: "Close",
        op: CLOSE,
        kind: MethodKind::Unary,
    },
    MethodDesc {
        name: "Count",
        op: COUNT,
        kind: MethodKind::ServerStreaming,
    },
    MethodDesc {
        name: "Join",
        op: JOIN,
        kind: MethodKind::ClientStreaming,
    },
    MethodDesc {
        name: "Chat",
        op: CHAT,
        kind: MethodKind::Bidi,
    },
    MethodDesc {
        name: "Upgrade",
        op: UPGRADE,
        kind: MethodKind::Unary,
    },
    MethodDesc {
        name: "First",
        op: FIRST,
        kind: MethodKind::ClientStreaming,
    },
];

impl TestService {
    async fn gated(&self, req: Text) -> Result<Text, Status> {
        let state = &self.state;
        let running = state.gated_running.fetch_add(1, Ordering::SeqCst) + 1;
        state.gated_max_running.fetch_max(running, Ordering::SeqCst);
        state.gated_started.fetch_add(1, Ordering::SeqCst);
        state.started.notify_waiters();
        let permit = state.gate.acquire().await;
        state.gated_running.fetch_sub(1, Ordering::SeqCst);
        permit.map_err(|_| Status::new("gate closed"))?.forget();
        Ok(req)
    }

    async fn count(&self, req: Text, out: StreamSender<Text>) -> Result<(), Status> {
        // Errors that read like something else: a Go error's text passed on ("EOF"), and an
        // error that says OK.
        match req.value.as_str() {
            "eof" => {
                out.send(Text::new("0")).await?;
                return Err(Status::not_found("EOF"));
            }
            "unknown eof" => return Err(Status::new("EOF")),
            "ok" => return Err(Status::with_code(frpc::Code::Ok, "m")),
            _ => {}
        }
        let n: usize = req.value.parse().map_err(|_| Status::new("not a number"))?;
        for i in 0..n {
            out.send(Text::new(i.to_string())).await?;
        }
        if req.value == "3" {
            return Err(Status::new("three is too many"));
        }
        Ok(())
    }

    async fn join(&self, mut inbound: Streaming<Text>) -> Result<Text, Status> {
        let mut parts = Vec::new();
        while let Some(msg) = inbound.message().await? {
            parts.push(msg.value);
        }
        Ok(Text::new(parts.join(",")))
    }

    async fn chat(&self, mut inbound: Streaming<Text>, out: StreamSender<Text>) -> Result<(), Status> {
        while let Some(msg) = inbound.message().await? {
            if msg.value == "fail" {
                return Err(Status::new("chat failed"));
            }
            out.send(msg).await?;
        }
        Ok(())
    }
}

impl codegen::Service for TestService {
    fn name(&self) -> &'static str {
        "test.TestService"
    }
    fn methods(&self) -> &'static [MethodDesc] {
        METHODS
    }
    fn call_unary(&self, op: u16, ctx: Context, request: Bytes) -> BoxFuture<Result<Bytes, Status>> {
        let svc = self.clone();
        match op {
            ECHO => codegen::unary(
                ctx,
                request,
                |_ctx, req: Text| async move { Ok::<_, Status>(req) },
            ),
            FAIL => codegen::unary(ctx, request, |_ctx, req: Text| async move {
                Err::<Text, _>(Status::new(format!("failed: {}", req.value)))
            }),
            PANIC => codegen::unary(ctx, request, |_ctx, _req: Text| async move {
                if true {
                    panic!("boom");
                }
                Ok::<Text, Status>(Text::default())
            }),
            GATED => codegen::unary(ctx, request, move |_ctx, req: Text| async move {
                svc.gated(req).await
            }),
            CLOSE => codegen::unary(ctx, request, |_ctx, _req: Text| async move {
                Err::<Text, _>(Status::closing("bye"))
            }),
            UPGRADE => codegen::unary(ctx, request, |ctx, req: Text| async move {
                let raw = ctx.take_connection()?;
                tokio::spawn(async move {
                    if let Ok((stream, unparsed)) = raw.await {
                        raw_echo(stream, unparsed, req.value).await;
                    }
                });
                Ok(Text::new("upgraded"))
            }),
            _ => codegen::unimplemented_unary(op),
        }
    }
    /// As generated code does for every method (`codegen::unary_in`: the handler's future in
    /// the connection's slot, no allocation per call) for `Echo`, which `allocations.rs`
    /// counts; the other methods run as a hand-written service's do, `call_unary` in the slot.
    fn call_unary_in(&self, op: u16, ctx: Context, request: Bytes, slot: &mut codegen::UnarySlot) {
        if op == ECHO {
            return codegen::unary_in(ctx, request, slot, |_ctx, req: Text| async move {
                Ok::<_, Status>(req)
            });
        }
        let call = self.call_unary(op, ctx, request);
        slot.set(async move { call.await.map(codegen::Encoded::from) });
    }
    fn call_streaming(&self, op: u16, ctx: Context, stream: ServerStream) -> BoxFuture<Result<(), Status>> {
        let svc = self.clone();
        match op {
            COUNT => codegen::server_streaming(ctx, stream, move |_ctx, req: Text, out| async move {
                svc.count(req, out).await
            }),
            JOIN => {
                codegen::client_streaming(ctx, stream, move |_ctx, inbound: Streaming<Text>| async move {
                    svc.join(inbound).await
                })
            }
            FIRST => {
                codegen::client_streaming(ctx, stream, |_ctx, mut inbound: Streaming<Text>| async move {
                    // Replies at once; whatever the client still sends arrives after the stream ended.
                    Ok(inbound.message().await?.unwrap_or_default())
                })
            }
            CHAT => codegen::bidi(
                ctx,
                stream,
                move |_ctx, inbound: Streaming<Text>, out| async move { svc.chat(inbound, out).await },
            ),
            _ => codegen::unimplemented_streaming(op),
        }
    }
}

/// A server on 127.0.0.1:0 running the test service; stops when `shutdown` is notified.
pub struct Running {
    pub addr: std::net::SocketAddr,
    pub service: TestService,
    pub shutdown: Arc<Notify>,
    pub done: tokio::task::JoinHandle<Result<(), frpc::Error>>,
}

/// Waits until `n` GATED handlers have started.
#[allow(dead_code, reason = "each test file uses its part")]
pub async fn gated_started(server: &Running, n: usize) {
    let state = &server.service.state;
    loop {
        let notified = state.started.notified();
        if state.gated_started.load(Ordering::SeqCst) >= n {
            return;
        }
        notified.await;
    }
}

pub async fn start(config: frpc::ServerConfig) -> Running {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = TestService::default();
    let server = frpc::Server::builder()
        .config(config)
        .add_service(service.clone())
        .build()
        .unwrap();
    let shutdown = Arc::new(Notify::new());
    let signal = shutdown.clone();
    let done = tokio::spawn(async move {
        server
            .serve_listener_with_shutdown(listener, async move { signal.notified().await })
            .await
    });
    Running {
        addr,
        service,
        shutdown,
        done,
    }
}

pub async fn call(client: &frpc::Client, op: u16, value: &str) -> Result<Text, frpc::Error> {
    codegen::call_unary::<Text, Text>(client, op, Text::new(value)).await
}

pub fn config(concurrency: frpc::Concurrency) -> frpc::ServerConfig {
    frpc::ServerConfig::default().concurrency(concurrency)
}

/// After a takeover: greet, then echo everything (the bytes frpc had read but not parsed first).
pub async fn raw_echo(mut stream: tokio::net::TcpStream, unparsed: bytes::BytesMut, greeting: String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let _ = stream.write_all(greeting.as_bytes()).await;
    let _ = stream.write_all(&unparsed).await;
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if stream.write_all(&buf[..n]).await.is_err() {
                    break;
                }
            }
        }
    }
}

/// `read`, its first `bytes` bytes taken 64 at a time (yielding in between), so the peer's
/// socket fills and its writes come out partial: those bytes, then the rest of `read`.
pub async fn slow_at_first<R: tokio::io::AsyncRead + Unpin>(
    mut read: R,
    bytes: usize,
) -> tokio::io::Chain<std::io::Cursor<Vec<u8>>, R> {
    use tokio::io::AsyncReadExt;
    let mut head = Vec::new();
    while head.len() < bytes {
        let mut trickle = [0u8; 64];
        let n = read.read(&mut trickle).await.unwrap();
        assert!(n > 0, "closed early");
        head.extend_from_slice(&trickle[..n]);
        tokio::task::yield_now().await;
    }
    std::io::Cursor::new(head).chain(read)
}

/// A server's connection as a raw peer sees it, frpc's extensions offered (the bits `offer`
/// gives, as hex of a whole OFFER packet).
pub struct Raw(pub tokio_util::codec::Framed<tokio::net::TcpStream, frpc::wire::PacketCodec>);

impl Raw {
    pub async fn connect(addr: std::net::SocketAddr, offer: &str) -> Raw {
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let mut raw = Raw(tokio_util::codec::Framed::new(
            stream,
            frpc::wire::PacketCodec::new(frpc::Framing::Frisbee),
        ));
        raw.send_bytes(offer).await;
        raw
    }

    /// Writes `hex` (whole packets) as it is.
    pub async fn send_bytes(&mut self, hex: &str) {
        use tokio::io::AsyncWriteExt;
        let bytes: Vec<u8> = hex
            .split_whitespace()
            .map(|b| u8::from_str_radix(b, 16).unwrap())
            .collect();
        self.0.get_mut().write_all(&bytes).await.unwrap();
    }

    pub async fn call(&mut self, op: u16, id: u16, value: &str) {
        use futures_util::SinkExt;
        let content = frpc::codegen::Message::to_polyglot(&Text::new(value));
        self.0
            .send(frpc::wire::Packet::new(id, op, content))
            .await
            .unwrap();
    }

    /// The next packet but PINGs (answered) and PONGs; `None` once the connection closed.
    pub async fn next(&mut self) -> Option<frpc::wire::Packet> {
        use futures_util::{SinkExt, StreamExt};
        // One deadline for the packet, however many PINGs come before it.
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let next = tokio::time::timeout_at(deadline, self.0.next());
            let packet = next.await.expect("a packet within 20 s")?.unwrap();
            match packet.op {
                frpc::wire::op::PING => self.0.send(frpc::wire::Packet::pong()).await.unwrap(),
                frpc::wire::op::PONG => {}
                _ => return Some(packet),
            }
        }
    }
}
