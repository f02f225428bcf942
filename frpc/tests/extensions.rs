//! frpc's extensions beyond fRPC (docs/extensions.md) between frpc peers over real TCP, both
//! framings: negotiation, status codes, cancellation proven on the server side, deadlines,
//! metadata, and hostile extension bytes.
// The services are `#[frpc::service]`s: without the `macros` feature there is nothing to test.
#![cfg(feature = "macros")]

use std::time::{Duration, Instant};

use bytes::Bytes;
use frpc::{ClientConfig, Code, Concurrency, Error, Framing, Metadata, MetadataSlot, ServerConfig, Status};
use futures_util::{SinkExt, StreamExt};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_util::codec::Framed;

mod spec_bytes;
use spec_bytes::{Spec, unhex, wire_hex};

#[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
pub struct Text {
    pub value: String,
}

fn text(value: &str) -> Text {
    Text { value: value.into() }
}

/// Operations: echo 10, fail 11, hang 12, events 13, chat 14, tally 15.
#[frpc::service(package = "ext")]
pub trait Probe {
    /// Echoes the request; the reply lists the request metadata (`key=value;` in order) and
    /// the response metadata says `echoed: yes`.
    async fn echo(&self, ctx: &frpc::Context, request: Text) -> Result<Text, frpc::Status>;
    /// Fails with the code whose number the request holds.
    async fn fail(&self, ctx: &frpc::Context, request: Text) -> Result<Text, frpc::Status>;
    /// Reports that it started, then never finishes.
    async fn hang(&self, ctx: &frpc::Context, request: Text) -> Result<Text, frpc::Status>;
    /// Sends an event every 10 ms until stopped; fails with `NOT_FOUND` for request `fail`.
    async fn events(
        &self,
        ctx: &frpc::Context,
        request: Text,
        outbound: frpc::StreamSender<Text>,
    ) -> Result<(), frpc::Status>;
    /// Bidi: echoes each message; reports when it starts and when it is dropped.
    async fn chat(
        &self,
        ctx: &frpc::Context,
        inbound: frpc::Streaming<Text>,
        outbound: frpc::StreamSender<Text>,
    ) -> Result<(), frpc::Status>;
    /// Bidi: echoes each message and returns at the end of the request stream, reporting
    /// `InputEnded` then; reports when it starts and when it is dropped.
    async fn tally(
        &self,
        ctx: &frpc::Context,
        inbound: frpc::Streaming<Text>,
        outbound: frpc::StreamSender<Text>,
    ) -> Result<(), frpc::Status>;
}

/// What the handlers report to the test.
#[derive(Debug)]
enum Event {
    Started {
        deadline: Option<Instant>,
        metadata: Metadata,
    },
    /// The handler's future was dropped.
    Dropped,
    /// A task the handler spawned saw `ctx.cancelled()` fire.
    CtxCancelled,
    /// A task the handler spawned got this error from `send` on the stream.
    SendFailed(Error),
    /// The handler read the end of its request stream.
    InputEnded,
}

struct Svc {
    events: mpsc::UnboundedSender<Event>,
}

/// Reports `Dropped` when the handler's future is dropped.
struct DropGuard(mpsc::UnboundedSender<Event>);

impl Drop for DropGuard {
    fn drop(&mut self) {
        let _ = self.0.send(Event::Dropped);
    }
}

impl Probe for Svc {
    async fn echo(&self, ctx: &frpc::Context, request: Text) -> Result<Text, frpc::Status> {
        let mut seen = String::new();
        for (key, value) in ctx.metadata().iter() {
            seen.push_str(&format!("{key}={};", String::from_utf8_lossy(value)));
        }
        let mut response = Metadata::new();
        response.insert("echoed", "yes").unwrap();
        ctx.set_response_metadata(response);
        Ok(text(&format!("{}|{seen}", request.value)))
    }

    async fn fail(&self, ctx: &frpc::Context, request: Text) -> Result<Text, frpc::Status> {
        let mut response = Metadata::new();
        response.insert("failed", "yes").unwrap();
        ctx.set_response_metadata(response);
        let code = Code::from_u8(request.value.parse().unwrap()).unwrap();
        Err(Status::with_code(code, format!("failed with {code}")))
    }

    async fn hang(&self, ctx: &frpc::Context, _request: Text) -> Result<Text, frpc::Status> {
        let _guard = DropGuard(self.events.clone());
        let watcher = ctx.clone();
        let events = self.events.clone();
        tokio::spawn(async move {
            watcher.cancelled().await;
            let _ = events.send(Event::CtxCancelled);
        });
        let _ = self.events.send(Event::Started {
            deadline: ctx.deadline(),
            metadata: ctx.metadata().clone(),
        });
        std::future::pending().await
    }

    async fn events(
        &self,
        ctx: &frpc::Context,
        request: Text,
        outbound: frpc::StreamSender<Text>,
    ) -> Result<(), frpc::Status> {
        if request.value == "fail" {
            outbound.send(text("partial")).await?;
            return Err(Status::not_found("nothing more"));
        }
        let _guard = DropGuard(self.events.clone());
        // A clone sending from a task of its own: its next send after the cancel fails.
        let sender = outbound.clone();
        let events = self.events.clone();
        tokio::spawn(async move {
            loop {
                if let Err(err) = sender.send(text("side")).await {
                    let _ = events.send(Event::SendFailed(err));
                    return;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        });
        let _ = self.events.send(Event::Started {
            deadline: ctx.deadline(),
            metadata: ctx.metadata().clone(),
        });
        for n in 0u64.. {
            outbound.send(text(&n.to_string())).await?;
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(())
    }

    async fn chat(
        &self,
        ctx: &frpc::Context,
        mut inbound: frpc::Streaming<Text>,
        outbound: frpc::StreamSender<Text>,
    ) -> Result<(), frpc::Status> {
        let _guard = DropGuard(self.events.clone());
        let watcher = ctx.clone();
        let events = self.events.clone();
        tokio::spawn(async move {
            watcher.cancelled().await;
            let _ = events.send(Event::CtxCancelled);
        });
        let _ = self.events.send(Event::Started {
            deadline: ctx.deadline(),
            metadata: ctx.metadata().clone(),
        });
        while let Some(message) = inbound.message().await? {
            outbound.send(message).await?;
        }
        // The client ended its side: wait for more work that never comes.
        std::future::pending().await
    }

    async fn tally(
        &self,
        ctx: &frpc::Context,
        mut inbound: frpc::Streaming<Text>,
        outbound: frpc::StreamSender<Text>,
    ) -> Result<(), frpc::Status> {
        let _guard = DropGuard(self.events.clone());
        let _ = self.events.send(Event::Started {
            deadline: ctx.deadline(),
            metadata: ctx.metadata().clone(),
        });
        while let Some(message) = inbound.message().await? {
            outbound.send(message).await?;
        }
        let _ = self.events.send(Event::InputEnded);
        Ok(())
    }
}

struct Running {
    addr: std::net::SocketAddr,
    events: mpsc::UnboundedReceiver<Event>,
}

impl Running {
    async fn next(&mut self) -> Event {
        tokio::time::timeout(Duration::from_secs(5), self.events.recv())
            .await
            .expect("an event within 5 s")
            .expect("the server lives")
    }

    /// Waits for `Dropped` and `CtxCancelled` (in any order), skipping `SendFailed`.
    async fn dropped_and_cancelled(&mut self) {
        let (mut dropped, mut cancelled) = (false, false);
        while !(dropped && cancelled) {
            match self.next().await {
                Event::Dropped => dropped = true,
                Event::CtxCancelled => cancelled = true,
                Event::SendFailed(_) => {}
                other => panic!("unexpected {other:?}"),
            }
        }
    }
}

async fn serve(framing: Framing, concurrency: Concurrency, extensions: bool) -> Running {
    let mut config = ServerConfig::default();
    config.connection.framing = framing;
    config.concurrency = concurrency;
    config.extensions = extensions;
    serve_with(config).await
}

async fn serve_with(config: ServerConfig) -> Running {
    let (tx, events) = mpsc::unbounded_channel();
    let bound = frpc::Server::builder()
        .config(config)
        .add_service(ProbeServer::new(Svc { events: tx }))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    Running { addr, events }
}

fn client_config(framing: Framing) -> ClientConfig {
    let mut config = ClientConfig::default();
    config.connection.framing = framing;
    config
}

async fn connect(running: &Running, framing: Framing) -> frpc::Client {
    frpc::Client::connect_with(running.addr, client_config(framing))
        .await
        .unwrap()
}

const FRAMINGS: [Framing; 2] = [Framing::Frisbee, Framing::Legacy];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn negotiation_needs_both_sides() {
    for framing in FRAMINGS {
        for (client_on, server_on) in [(true, true), (true, false), (false, true), (false, false)] {
            let running = serve(framing, Concurrency::PerRpc, server_on).await;
            let mut config = client_config(framing);
            config.extensions = client_on;
            let client = frpc::Client::connect_with(running.addr, config).await.unwrap();
            let what = format!("{framing:?}, client {client_on}, server {server_on}");
            assert_eq!(client.negotiated().await, client_on && server_on, "{what}");
            let reply = ProbeClient::new(client.clone()).echo(text("hi")).await.unwrap();
            assert_eq!(reply.value, "hi|", "{what}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_codes_travel_between_frpc_peers_only() {
    for framing in FRAMINGS {
        for server_on in [true, false] {
            let running = serve(framing, Concurrency::PerRpc, server_on).await;
            let client = connect(&running, framing).await;
            client.negotiated().await;
            let probe = ProbeClient::new(client);
            let mut stream = probe.events(text("fail")).await.unwrap();
            assert_eq!(stream.message().await.unwrap().unwrap().value, "partial");
            let err = stream.message().await.unwrap_err();
            assert_eq!(err.status().unwrap().message(), "nothing more");
            let expected = if server_on { Code::NotFound } else { Code::Unknown };
            assert_eq!(err.code(), expected, "{framing:?}: a stream's error");
            for code in 1..=16u8 {
                let code = Code::from_u8(code).unwrap();
                let err = probe.fail(text(&(code as u8).to_string())).await.unwrap_err();
                let status = err.status().expect("a remote status");
                // The text is exactly what a Go peer gets; the code only with extensions.
                assert_eq!(status.message(), format!("failed with {code}"));
                let expected = if server_on { code } else { Code::Unknown };
                assert_eq!(status.code(), expected, "{framing:?} {code}");
                assert_eq!(err.code(), expected);
            }
        }
    }
}

#[test]
fn client_errors_map_to_codes() {
    assert_eq!(
        Error::Timeout(Duration::from_secs(1)).code(),
        Code::DeadlineExceeded
    );
    assert_eq!(Error::ConnectionClosed { reason: None }.code(), Code::Unavailable);
    assert_eq!(Error::TooLarge { len: 2, max: 1 }.code(), Code::ResourceExhausted);
    assert_eq!(Error::Cancelled.code(), Code::Cancelled);
    assert_eq!(Error::UnknownOperation(99).code(), Code::Unimplemented);
    let status = Status::from(Error::Timeout(Duration::from_secs(1)));
    assert_eq!(status.code(), Code::DeadlineExceeded);
    assert_eq!(Status::new("x").code(), Code::Unknown);
    assert_eq!(Status::closing("x").code(), Code::Unknown);
    assert_eq!(Status::permission_denied("x").code(), Code::PermissionDenied);
    assert_eq!(Code::DeadlineExceeded.to_string(), "DEADLINE_EXCEEDED");
    assert_eq!(Code::from_u8(17), None);
}

#[tokio::test]
async fn operation_ffff_is_refused_to_services_and_routes() {
    let err = frpc::Server::builder()
        .route(0xFFFF, |_, _| async { None })
        .build()
        .unwrap_err();
    assert!(
        matches!(&err, Error::Config(text) if text.contains("65535") && text.contains("extension")),
        "{err}"
    );
    let running = serve(Framing::Frisbee, Concurrency::PerRpc, true).await;
    let client = connect(&running, Framing::Frisbee).await;
    assert!(matches!(client.raw_packets(0xFFFF), Err(Error::Config(_))));
    assert!(matches!(
        client
            .send_packet(0xFFFF, 3, Bytes::from_static(b"\0\x0a\0\x01"))
            .await,
        Err(Error::Config(_))
    ));
}

/// Dropping a unary call's future drops the server's handler and fires its `ctx.cancelled()`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_unary_call_cancels_its_handler() {
    for framing in FRAMINGS {
        for concurrency in [Concurrency::PerRpc, Concurrency::Limited(4)] {
            let mut running = serve(framing, concurrency, true).await;
            let client = connect(&running, framing).await;
            assert!(client.negotiated().await);
            let probe = ProbeClient::new(client.clone());
            let call = tokio::spawn(async move { probe.hang(text("x")).await });
            assert!(matches!(
                running.next().await,
                Event::Started { deadline: None, .. }
            ));
            call.abort();
            running.dropped_and_cancelled().await;
            // The connection is fine, and cancelling a finished call is harmless.
            let probe = ProbeClient::new(client.clone());
            assert_eq!(probe.echo(text("after")).await.unwrap().value, "after|");
            assert_eq!(client.inflight(), 0);
        }
    }
}

/// A call's timeout travels as its deadline: the handler sees it, and when the client gives up
/// the handler is dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_travels_and_cancels_the_handler() {
    for framing in FRAMINGS {
        for concurrency in [Concurrency::PerRpc, Concurrency::Inline] {
            let mut running = serve(framing, concurrency, true).await;
            let client = connect(&running, framing).await;
            assert!(client.negotiated().await);
            let timeout = Duration::from_millis(300);
            let sent = Instant::now();
            let probe = ProbeClient::new(client.with_timeout(timeout));
            let call = tokio::spawn(async move { probe.hang(text("x")).await });
            let Event::Started { deadline, .. } = running.next().await else {
                panic!("expected Started")
            };
            let deadline = deadline.expect("the handler sees a deadline");
            assert!(
                deadline <= sent + timeout + Duration::from_millis(50),
                "{framing:?}"
            );
            assert!(
                deadline > Instant::now(),
                "{framing:?}: the deadline is still ahead"
            );
            // The client's own timeout, or (in a photo finish) the server's DEADLINE_EXCEEDED.
            let err = call.await.unwrap().unwrap_err();
            assert!(
                matches!(&err, Error::Timeout(_))
                    || err.status().is_some_and(|s| s.code() == Code::DeadlineExceeded),
                "{err}"
            );
            assert_eq!(err.code(), Code::DeadlineExceeded);
            running.dropped_and_cancelled().await;
            let probe = ProbeClient::new(client);
            assert_eq!(probe.echo(text("after")).await.unwrap().value, "after|");
        }
    }
}

/// The first call of a fresh connection, made before the server answered the extension
/// offer, waits for the answer: its timeout travels (the handler saw no deadline: the call went
/// out in plain fRPC, as most first calls did), and against a Go-like peer the wait is the
/// PONG to one PING. Its timeout covers the wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_call_of_a_connection_carries_its_deadline() {
    for framing in FRAMINGS {
        let mut running = serve(framing, Concurrency::PerRpc, true).await;
        let client = connect(&running, framing).await;
        let probe = ProbeClient::new(client.with_timeout(Duration::from_millis(300)));
        let call = tokio::spawn(async move { probe.hang(text("x")).await });
        let Event::Started { deadline, .. } = running.next().await else {
            panic!("expected Started")
        };
        assert!(
            deadline.is_some(),
            "{framing:?}: the first call's deadline travelled"
        );
        assert_eq!(call.await.unwrap().unwrap_err().code(), Code::DeadlineExceeded);
    }
    // A server that never answers (it reads, and sends nothing): the first call's timeout
    // still ends it while it waits for the answer.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut silent, _) = listener.accept().await.unwrap();
        let mut sink = Vec::new();
        let _ = tokio::io::AsyncReadExt::read_to_end(&mut silent, &mut sink).await;
    });
    let client = frpc::Client::connect(addr).await.unwrap();
    let probe = ProbeClient::new(client.with_timeout(Duration::from_millis(200)));
    let err = tokio::time::timeout(Duration::from_secs(10), probe.echo(text("x")))
        .await
        .expect("the call's timeout ends it")
        .unwrap_err();
    assert!(matches!(err, Error::Timeout(_)), "{err}");
}

/// Dropping a server stream stops its handler within 100 ms, and a clone of its sender gets
/// `Error::Cancelled`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_server_stream_stops_its_handler_within_100_ms() {
    for framing in FRAMINGS {
        let mut running = serve(framing, Concurrency::PerRpc, true).await;
        let client = connect(&running, framing).await;
        assert!(client.negotiated().await);
        let probe = ProbeClient::new(client.clone());
        let mut events = probe.events(text("go")).await.unwrap();
        assert!(matches!(running.next().await, Event::Started { .. }));
        for _ in 0..3 {
            events.message().await.unwrap().unwrap();
        }
        drop(events);
        let dropped_at = Instant::now();
        let (mut dropped, mut send_failed) = (false, false);
        while !(dropped && send_failed) {
            match running.next().await {
                Event::Dropped => {
                    dropped = true;
                    let took = dropped_at.elapsed();
                    assert!(
                        took < Duration::from_millis(100),
                        "{framing:?}: stopped after {took:?}"
                    );
                }
                Event::SendFailed(err) => {
                    send_failed = true;
                    assert!(matches!(err, Error::Cancelled), "{framing:?}: {err}");
                    assert_eq!(err.code(), Code::Cancelled);
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(probe.echo(text("after")).await.unwrap().value, "after|");
    }
}

/// Dropping a whole bidi call cancels it: the server's handler is dropped without reading the
/// end of its request stream (an `EOF` ahead of the `CANCEL` let it finish as if the client
/// were done, and the server's metrics booked the call OK). A split sender dropped alone, or
/// a call to a server without extensions, still ends the request stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_bidi_call_cancels_rather_than_ends_its_requests() {
    for framing in FRAMINGS {
        for extensions in [true, false] {
            let mut running = serve(framing, Concurrency::PerRpc, extensions).await;
            let probe = ProbeClient::new(connect(&running, framing).await);
            let case = format!("{framing:?}, extensions {extensions}");

            let mut call = probe.tally().await.unwrap();
            call.send(text("one")).await.unwrap();
            assert_eq!(call.message().await.unwrap().unwrap().value, "one");
            assert!(matches!(running.next().await, Event::Started { .. }));
            drop(call);
            let ended = matches!(running.next().await, Event::InputEnded);
            assert_eq!(ended, !extensions, "{case}: dropping the whole call");
            if ended {
                assert!(matches!(running.next().await, Event::Dropped), "{case}");
            }

            let (sender, mut responses) = probe.tally().await.unwrap().split();
            assert!(matches!(running.next().await, Event::Started { .. }));
            drop(sender);
            assert!(responses.message().await.unwrap().is_none(), "{case}");
            assert!(matches!(running.next().await, Event::InputEnded), "{case}: split");
            assert!(matches!(running.next().await, Event::Dropped), "{case}");
        }
    }
}

/// The bytes behind the test above: a dropped bidi call puts a `CANCEL` on the wire right
/// after its last request, with no `EOF` ahead of it (which a server may act on first).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_bidi_call_sends_cancel_and_no_eof() {
    let spec = Spec::load();
    let offer = spec.bytes(&["00 0f 00 01 ff ff 00 00 00 05 01 00 00 07 ff"]);
    let accept = spec.bytes(&["00 0f 00 02 ff ff 00 00 00 05 01 00 00 00 0f"]);
    let cancel_stream = spec.bytes(&["00 0f 00 03 ff ff 00 00 00 04 00 02 00 01"]);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let peer = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let mut raw = Framed::new(stream, frpc::wire::PacketCodec::new(Framing::Frisbee));
        assert_eq!(wire_hex(&next(&mut raw).await), offer);
        raw.get_mut().write_all(&unhex(&accept)).await.unwrap();
        let _open = next(&mut raw).await;
        let request = next(&mut raw).await;
        assert_eq!(request.id, 1);
        assert_eq!(wire_hex(&next(&mut raw).await), cancel_stream);
    });
    let client = frpc::Client::connect_with(addr, client_config(Framing::Frisbee))
        .await
        .unwrap();
    assert!(client.negotiated().await);
    let mut call = ProbeClient::new(client.clone()).tally().await.unwrap();
    call.send(text("one")).await.unwrap();
    drop(call);
    peer.await.unwrap();
}

/// A client that sends past its credit gets its stream failed (RESOURCE_EXHAUSTED, `EOF`), and
/// that is the stream's end: the handler, stuck sending for credit the client never grants,
/// gets an error instead of sending on (beyond the client's window, after the `EOF`), no
/// second error and `EOF` follow once it returns, and what it reads of its buffer after that
/// gives no credit back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_failed_for_excess_credit_sends_nothing_more() {
    for framing in FRAMINGS {
        let mut config = ServerConfig::default();
        config.connection.framing = framing;
        config.connection.stream_window = 8;
        let mut running = serve_with(config).await;
        let mut raw = raw_connect(running.addr, framing).await;
        // Cancellation, status codes, flow control and open acknowledgement.
        send(&mut raw, 1, 0xFFFF, &[1, 0, 0, 0, 0x65]).await;
        assert_eq!(next(&mut raw).await.id, 2, "{framing:?}: ACCEPT");
        // Open tally (operation 15) with a window of 1 for the server's messages.
        let open = [0xfe, 0x04, 0, 0, 0, 4, 0, 0, 0, 1, 0x00, 0x09, 15];
        send(&mut raw, 1, 2, &open).await;
        // Far past the server's window of 8 (the handler reads two at most: its second echo
        // waits for credit).
        for n in 0..20 {
            send(&mut raw, 1, 2, &encoded(&n.to_string())).await;
        }
        let mut on_stream = Vec::new();
        loop {
            let packet = next(&mut raw).await;
            if packet.id == 1 && packet.op == 2 {
                let eof = packet.content[..] == *b"\x06\x05\x0a\x03EOF";
                on_stream.push(packet.content);
                if eof {
                    break;
                }
            }
        }
        let failure = &on_stream[on_stream.len() - 2];
        assert_eq!(failure[..9], [0xfe, 0x03, 0, 0, 0, 1, 8, 0, 0x06], "{framing:?}");
        assert!(matches!(running.next().await, Event::Started { .. }));
        assert!(matches!(running.next().await, Event::Dropped), "{framing:?}");
        // The handler is gone; a round trip behind it shows what it sent last.
        send(&mut raw, 7, 10, &encoded("after")).await;
        loop {
            let packet = next(&mut raw).await;
            if packet.id == 7 && packet.op == 10 {
                break;
            }
            assert_ne!(
                (packet.id, packet.op),
                (1, 2),
                "{framing:?}: sent on the failed stream: {:02x?}",
                &packet.content[..]
            );
            let credit_for_it = (packet.id, packet.op) == (4, 0xFFFF) && packet.content[..2] == [0, 1];
            assert!(!credit_for_it, "{framing:?}: credit for the failed stream");
        }
    }
}

/// `max_inflight` bounds waiting unary handlers across the server: at the limit (2 here) a
/// third connection whose call waits too is not read until one of the two ends (its handler,
/// polled once on the reader, holds the reader's one place), while calls that finish at once
/// are answered on any other connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_calls_across_the_server_stop_at_max_inflight() {
    let mut config = ServerConfig::default();
    config.max_inflight = 2;
    let mut running = serve_with(config).await;
    let mut hanging = Vec::new();
    for _ in 0..3 {
        let client = connect(&running, Framing::Frisbee).await;
        assert!(client.negotiated().await, "a cancel ends a hanging call");
        let probe = ProbeClient::new(client);
        let call = probe.clone();
        hanging.push((probe, tokio::spawn(async move { call.hang(text("")).await })));
        assert!(matches!(running.next().await, Event::Started { .. }));
    }
    let quick = ProbeClient::new(connect(&running, Framing::Frisbee).await);
    assert!(
        quick
            .echo(text("quick"))
            .await
            .unwrap()
            .value
            .starts_with("quick")
    );
    let third = hanging[2].0.clone();
    let mut behind = tokio::spawn(async move { third.echo(text("behind")).await });
    let waited = tokio::time::timeout(Duration::from_millis(300), &mut behind).await;
    assert!(waited.is_err(), "the third connection is not read ({waited:?})");
    hanging[0].1.abort();
    let reply = tokio::time::timeout(Duration::from_secs(5), behind).await;
    assert!(reply.unwrap().unwrap().unwrap().value.starts_with("behind"));
    for (_, call) in hanging {
        call.abort();
    }
}

/// Without extensions (a server that does not take them) a dropped stream is not cancelled:
/// its Frisbee close (as Go's streams end) makes the handler's next send fail, and it ends
/// then. It ran for ever, sending to nobody (session 33's churn probe).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_extensions_a_dropped_stream_ends_at_its_next_send() {
    let mut running = serve(Framing::Frisbee, Concurrency::PerRpc, false).await;
    let client = connect(&running, Framing::Frisbee).await;
    assert!(!client.negotiated().await);
    let mut events = ProbeClient::new(client.clone()).events(text("go")).await.unwrap();
    assert!(matches!(running.next().await, Event::Started { .. }));
    events.message().await.unwrap().unwrap();
    drop(events);
    let (mut dropped, mut send_failed) = (false, false);
    while !(dropped && send_failed) {
        match running.next().await {
            Event::Dropped => dropped = true,
            // The peer's close, or the stream's end once the handler's own send failed.
            Event::SendFailed(err) => {
                send_failed = true;
                let closed = err.to_string().contains("closed the stream");
                assert!(closed || matches!(err, Error::StreamEnded), "{err}");
            }
            other => panic!("not cancelled, ended: {other:?}"),
        }
    }
}

/// Without extensions, a bidi call whose `close_send` failed at its deadline (no `EOF` went)
/// and that is then dropped still ends its server handler, which waits on its request stream:
/// the stream's Frisbee close ends that stream. The handler waited for ever, and 60 s later
/// the next stream under its id was routed to it (session 33's churn probe).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_extensions_a_stream_that_failed_to_end_still_ends_its_handler() {
    let mut running = serve(Framing::Frisbee, Concurrency::PerRpc, false).await;
    let client = connect(&running, Framing::Frisbee).await;
    assert!(!client.negotiated().await);
    let probe = ProbeClient::new(client.with_timeout(Duration::from_millis(100)));
    let mut call = probe.tally().await.unwrap();
    call.send(text("one")).await.unwrap();
    assert_eq!(call.message().await.unwrap().unwrap().value, "one");
    assert!(matches!(running.next().await, Event::Started { .. }));
    // Past the call's deadline: the end of the request stream fails, and no EOF goes.
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(matches!(call.close_send().await, Err(Error::Timeout(_))));
    drop(call);
    assert!(
        matches!(running.next().await, Event::Dropped),
        "the handler ended without reading an end of its requests"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_travels_both_ways() {
    for framing in FRAMINGS {
        let mut running = serve(framing, Concurrency::PerRpc, true).await;
        // No `negotiated()` first: a call with metadata waits for the answer itself.
        let client = connect(&running, framing).await;
        let mut defaults = Metadata::new();
        defaults.insert("tenant", "acme").unwrap();
        defaults.insert("user", "ann").unwrap();
        let client = client.with_metadata(defaults);
        let mut per_call = Metadata::new();
        per_call.insert("user", "bob").unwrap();
        per_call.insert_bin("trace-bin", vec![0u8, 0xff]).unwrap();
        let response = MetadataSlot::new();
        let probe = ProbeClient::new(client.with_metadata(per_call).with_response_metadata(&response));
        let reply = probe.echo(text("hi")).await.unwrap();
        assert_eq!(
            reply.value, "hi|tenant=acme;user=bob;trace-bin=\u{0}\u{fffd};",
            "{framing:?}"
        );
        assert_eq!(response.take().unwrap().get("echoed"), Some("yes"));
        // Response metadata comes with errors too.
        let err = probe.fail(text("5")).await.unwrap_err();
        assert_eq!(err.code(), Code::NotFound);
        assert_eq!(response.take().unwrap().get("failed"), Some("yes"));
        // Streams carry request metadata.
        let streams = ProbeClient::new(client.clone());
        let events = streams.events(text("go")).await.unwrap();
        let Event::Started { metadata, .. } = running.next().await else {
            panic!("expected Started")
        };
        assert_eq!(metadata.get("tenant"), Some("acme"));
        assert_eq!(metadata.get("user"), Some("ann"));
        drop(events);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_to_a_server_without_extensions() {
    for framing in FRAMINGS {
        let running = serve(framing, Concurrency::PerRpc, false).await;
        let mut md = Metadata::new();
        md.insert("user", "ann").unwrap();
        // Not strict: sent without its metadata.
        let client = connect(&running, framing).await.with_metadata(md.clone());
        let reply = ProbeClient::new(client).echo(text("hi")).await.unwrap();
        assert_eq!(reply.value, "hi|", "{framing:?}");
        // Strict: refused.
        let mut config = client_config(framing);
        config.strict_metadata = true;
        let client = frpc::Client::connect_with(running.addr, config).await.unwrap();
        let err = ProbeClient::new(client.with_metadata(md.clone()))
            .echo(text("hi"))
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Metadata(_)), "{err}");
        // Without metadata a strict client calls as usual.
        assert_eq!(
            ProbeClient::new(client).echo(text("x")).await.unwrap().value,
            "x|"
        );
    }
}

// ---- The bytes, and hostile ones, from a raw peer -------------------------------------------

type Raw = Framed<TcpStream, frpc::wire::PacketCodec>;

async fn raw_connect(addr: std::net::SocketAddr, framing: Framing) -> Raw {
    let stream = TcpStream::connect(addr).await.unwrap();
    Framed::new(stream, frpc::wire::PacketCodec::new(framing))
}

/// The next packet that is not a heartbeat.
async fn next(raw: &mut Raw) -> frpc::wire::Packet {
    loop {
        let packet = tokio::time::timeout(Duration::from_secs(5), raw.next())
            .await
            .expect("a packet within 5 s")
            .expect("the connection stays open")
            .unwrap();
        if packet.op > frpc::wire::op::PONG {
            return packet;
        }
    }
}

async fn send(raw: &mut Raw, id: u16, op: u16, content: &[u8]) {
    let packet = frpc::wire::Packet::new(id, op, Bytes::copy_from_slice(content));
    raw.send(packet).await.unwrap();
}

/// `Text { value }` as fRPC encodes it.
fn encoded(value: &str) -> Vec<u8> {
    frpc::codegen::Message::to_polyglot(&text(value)).to_vec()
}

#[tokio::test]
async fn a_server_answers_the_offer_and_reads_headers_byte_for_byte() {
    for framing in FRAMINGS {
        let mut running = serve(framing, Concurrency::PerRpc, true).await;
        let mut raw = raw_connect(running.addr, framing).await;
        send(&mut raw, 1, 0xFFFF, &[1, 0, 0, 0, 0x0f]).await;
        let accept = next(&mut raw).await;
        assert_eq!(
            (accept.id, accept.op, &accept.content[..]),
            (2, 0xFFFF, &[1u8, 0, 0, 0, 0x0f][..])
        );
        // A request with a 50 ms timeout: the handler hangs, the server replies
        // DEADLINE_EXCEEDED (code 4) with Go's error text behind the header.
        let mut request = vec![0xfe, 0x01, 0, 0, 0, 4, 0, 0, 0, 50, 0x00];
        request.extend(encoded("x"));
        send(&mut raw, 1, 12, &request).await;
        let reply = next(&mut raw).await;
        let mut expected = vec![0xfe, 0x03, 0, 0, 0, 1, 4, 0x00];
        expected.extend(frpc::wire::polyglot::error_to_bytes("deadline exceeded"));
        assert_eq!((reply.id, reply.op), (1, 12));
        assert_eq!(hex(&reply.content), hex(&expected), "{framing:?}");
        assert!(matches!(
            running.next().await,
            Event::Started {
                deadline: Some(_),
                ..
            }
        ));
        running.dropped_and_cancelled().await;
        // A CANCEL for a call that finished, for one that never was, and for a stream nobody
        // opened: ignored.
        send(&mut raw, 3, 0xFFFF, &[0, 12, 0, 1]).await;
        send(&mut raw, 3, 0xFFFF, &[0, 10, 0, 99]).await;
        send(&mut raw, 3, 0xFFFF, &[0, 2, 0, 7]).await;
        send(&mut raw, 2, 10, &encoded("ok")).await;
        let reply = next(&mut raw).await;
        assert_eq!((reply.id, reply.op), (2, 10));
        // Response metadata travels in a header in front of the reply.
        let mut expected = vec![0xfe, 0x02, 0, 0, 0, 14, 6];
        expected.extend(b"echoed");
        expected.extend([0, 0, 0, 3]);
        expected.extend(b"yes");
        expected.push(0);
        expected.extend(encoded("ok|"));
        assert_eq!(hex(&reply.content), hex(&expected), "{framing:?}");
    }
}

#[tokio::test]
async fn hostile_extension_packets_get_errors_not_panics() {
    for framing in FRAMINGS {
        let running = serve(framing, Concurrency::PerRpc, true).await;
        let mut raw = raw_connect(running.addr, framing).await;
        // Before any offer, a request starting with the header byte is just a bad request.
        let mut prefixed = vec![0xfe, 0x00];
        prefixed.extend(encoded("x"));
        send(&mut raw, 1, 10, &prefixed).await;
        let reply = next(&mut raw).await;
        assert_eq!((reply.id, reply.content[0]), (1, 0x06), "an error reply");
        // Truncated and malformed extension packets: ignored.
        for (id, content) in [
            (1u16, &[][..]),
            (1, &[1, 0, 0]),
            (1, &[0, 0, 0, 0, 15]),
            (3, &[0, 10]),
            (9, &[1, 2, 3]),
        ] {
            send(&mut raw, id, 0xFFFF, content).await;
        }
        // A real offer is still answered (the malformed ones did not count) ...
        send(&mut raw, 1, 0xFFFF, &[1, 0, 0, 0, 0x0f, 0xaa]).await;
        let accept = next(&mut raw).await;
        assert_eq!((accept.id, &accept.content[..]), (2, &[1u8, 0, 0, 0, 0x0f][..]));
        // ... once.
        send(&mut raw, 1, 0xFFFF, &[1, 0, 0, 0, 0x0f]).await;
        // Truncated headers on requests and stream opens: an INVALID_ARGUMENT error reply.
        for (id, bad) in [
            (2u16, &[0xfe][..]),
            (3, &[0xfe, 0x01, 0, 0]),
            (4, &[0xfe, 0x02, 0xff, 0xff, 0xff, 0xff, 0]),
            (5, &[0xfe, 0x02, 0, 0, 0, 2, 9, b'k', 0]),
            (6, &[0xfe, 0x01, 0, 0, 0, 2, 0, 1, 0]),
        ] {
            send(&mut raw, id, 10, bad).await;
            let reply = next(&mut raw).await;
            assert_eq!((reply.id, reply.op), (id, 10), "{framing:?}");
            assert_eq!(
                reply.content[..8],
                [0xfe, 0x03, 0, 0, 0, 1, 3, 0],
                "{framing:?} {id}"
            );
        }
        send(&mut raw, 9, 2, &[0xfe, 0x07]).await;
        let refused = next(&mut raw).await;
        // INVALID_ARGUMENT (status codes were accepted), then the error.
        assert_eq!(
            (refused.id, refused.op, &refused.content[..9]),
            (9, 2, &[0xfe, 0x03, 0, 0, 0, 1, 3, 0, 0x06][..]),
            "{framing:?}"
        );
        let eof = next(&mut raw).await;
        assert_eq!(
            (eof.id, &eof.content[..]),
            (9, frpc::wire::polyglot::EOF_MESSAGE),
            "{framing:?}"
        );
        // Unknown header fields are skipped.
        let mut request = vec![0xfe, 0x7f, 0, 0, 0, 2, 1, 2, 0x00];
        request.extend(encoded("fine"));
        send(&mut raw, 7, 10, &request).await;
        let reply = next(&mut raw).await;
        assert_eq!(reply.id, 7);
        assert!(
            hex(&reply.content).ends_with(&hex(&encoded("fine|"))),
            "{framing:?}"
        );
        // And a plain request still works.
        send(&mut raw, 8, 10, &encoded("plain")).await;
        assert_eq!(next(&mut raw).await.id, 8);
    }
}

/// A hostile server: answers the offer, then sends a reply whose header is truncated. The
/// call fails with an error; nothing panics and the connection keeps working.
#[tokio::test]
async fn a_hostile_reply_header_fails_only_its_call() {
    for framing in FRAMINGS {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let peer = tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let mut raw = Framed::new(stream, frpc::wire::PacketCodec::new(framing));
            let offer = next(&mut raw).await;
            assert_eq!((offer.id, offer.op), (1, 0xFFFF));
            send(&mut raw, 2, 0xFFFF, &[1, 0, 0, 0, 0x0f]).await;
            let first = next(&mut raw).await;
            send(&mut raw, first.id, first.op, &[0xfe, 0x03, 0, 0]).await;
            let second = next(&mut raw).await;
            send(&mut raw, second.id, second.op, &encoded("fine")).await;
            // Wait for the client to go.
            while let Some(Ok(_)) = raw.next().await {}
        });
        let client = frpc::Client::connect_with(addr, client_config(framing))
            .await
            .unwrap();
        assert!(client.negotiated().await);
        let probe = ProbeClient::new(client.clone());
        let err = probe.echo(text("a")).await.unwrap_err();
        assert!(err.to_string().contains("extension header"), "{err}");
        assert_eq!(err.code(), Code::Internal);
        assert_eq!(probe.echo(text("b")).await.unwrap().value, "fine");
        drop((probe, client));
        peer.await.unwrap();
    }
}

/// Under `Inline` a hanging handler holds up the reader, so the client's cancel is read only
/// later; its deadline still ends it and the next call is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inline_handlers_end_at_their_deadline() {
    for framing in FRAMINGS {
        let mut running = serve(framing, Concurrency::Inline, true).await;
        let client = connect(&running, framing).await;
        assert!(client.negotiated().await);
        let err = ProbeClient::new(client.with_timeout(Duration::from_millis(100)))
            .hang(text("x"))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::DeadlineExceeded);
        assert!(matches!(
            running.next().await,
            Event::Started {
                deadline: Some(_),
                ..
            }
        ));
        running.dropped_and_cancelled().await;
        let reply = ProbeClient::new(client).echo(text("next")).await.unwrap();
        assert_eq!(reply.value, "next|");
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Response metadata slots are per handle: a handle without one leaves others alone. The
/// calls carry no request metadata, so the server makes their state only when the handler
/// sets its response metadata, in every concurrency mode (the reader answers Inline and PerRpc
/// calls at once, Limited ones after its permit).
#[tokio::test]
async fn a_slot_gets_only_its_handles_calls() {
    for mode in [Concurrency::PerRpc, Concurrency::Inline, Concurrency::Limited(4)] {
        let running = serve(Framing::Frisbee, mode, true).await;
        let client = connect(&running, Framing::Frisbee).await;
        assert!(client.negotiated().await);
        let slot = MetadataSlot::new();
        let with = ProbeClient::new(client.with_response_metadata(&slot));
        let without = ProbeClient::new(client.clone());
        without.echo(text("a")).await.unwrap();
        assert!(slot.get().is_none(), "{mode:?}");
        with.echo(text("b")).await.unwrap();
        assert_eq!(slot.get().unwrap().get("echoed"), Some("yes"), "{mode:?}");
    }
}

/// Every example of docs/extensions.md is what frpc writes (or reads, for the server's bytes).
#[tokio::test]
async fn the_spec_examples_are_the_bytes() {
    let spec = Spec::load();
    let in_doc = |fragments: &[&str]| spec.bytes(fragments);
    let offer = in_doc(&["00 0f 00 01 ff ff 00 00 00 05 01 00 00 07 ff"]);
    let accept = in_doc(&["00 0f 00 02 ff ff 00 00 00 05 01 00 00 00 0f"]);
    let request = in_doc(&[
        "00 0f 00 01 00 0a 00 00 00 23",
        "fe",
        "01 00 00 00 04 00 00 00 fa",
        "02 00 00 00 0c",
        "04 75 73 65 72 00 00 00 03 61 6e 6e",
        "00",
        "08 00 05 0a 02 68 69",
    ]);
    let error = in_doc(&[
        "00 0f 00 01 00 0a 00 00 00 18",
        "fe 03 00 00 00 01 05 00",
        "06 05 0a 0c 6e 6f 20 73 75 63 68 20 75 73 65 72",
    ]);
    let cancel_call = in_doc(&["00 0f 00 03 ff ff 00 00 00 04 00 0a 00 02"]);
    let cancel_stream = in_doc(&["00 0f 00 03 ff ff 00 00 00 04 00 02 00 01"]);

    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (got_request, request_read) = tokio::sync::oneshot::channel();
    let peer = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let mut raw = Framed::new(stream, frpc::wire::PacketCodec::new(Framing::Frisbee));
        assert_eq!(wire_hex(&next(&mut raw).await), offer);
        raw.get_mut().write_all(&unhex(&accept)).await.unwrap();
        assert_eq!(wire_hex(&next(&mut raw).await), request);
        raw.get_mut().write_all(&unhex(&error)).await.unwrap();
        let _abandoned = next(&mut raw).await;
        got_request.send(()).unwrap();
        assert_eq!(wire_hex(&next(&mut raw).await), cancel_call);
        let _open = next(&mut raw).await;
        let _request = next(&mut raw).await;
        assert_eq!(wire_hex(&next(&mut raw).await), cancel_stream);
    });
    let client = frpc::Client::connect_with(addr, client_config(Framing::Frisbee))
        .await
        .unwrap();
    assert!(client.negotiated().await);
    let mut md = Metadata::new();
    md.insert("user", "ann").unwrap();
    let probe = ProbeClient::new(client.with_metadata(md).with_timeout(Duration::from_millis(250)));
    let err = probe.echo(text("hi")).await.unwrap_err();
    assert_eq!(err.status(), Some(&Status::not_found("no such user")));
    // Abandoned once the request is out: the cancel follows it.
    let plain = ProbeClient::new(client.clone());
    let abandoned = tokio::spawn({
        let plain = plain.clone();
        async move { plain.echo(text("x")).await }
    });
    request_read.await.unwrap();
    abandoned.abort();
    assert!(abandoned.await.unwrap_err().is_cancelled());
    let events = plain.events(text("go")).await.unwrap();
    drop(events);
    peer.await.unwrap();
}

/// Dropping a bidi call (without `close_send`) or a client-streaming-like handle mid-way
/// cancels the server's handler too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_bidi_call_cancels_its_handler() {
    for framing in FRAMINGS {
        for close_first in [false, true] {
            let mut running = serve(framing, Concurrency::PerRpc, true).await;
            let client = connect(&running, framing).await;
            assert!(client.negotiated().await);
            let probe = ProbeClient::new(client.clone());
            let mut chat = probe.chat().await.unwrap();
            chat.send(text("a")).await.unwrap();
            assert_eq!(chat.message().await.unwrap().unwrap().value, "a");
            assert!(matches!(running.next().await, Event::Started { .. }));
            if close_first {
                // The handler outlives the client's EOF (it waits for nothing); the drop still
                // cancels it.
                chat.close_send().await.unwrap();
            }
            drop(chat);
            running.dropped_and_cancelled().await;
            assert_eq!(probe.echo(text("after")).await.unwrap().value, "after|");
        }
    }
}

/// A METADATA header field holding `entries` (key, value) pairs, in front of `content`.
fn with_metadata_field(entries: impl Iterator<Item = (String, Vec<u8>)>, content: &[u8]) -> Vec<u8> {
    let mut field = Vec::new();
    for (key, value) in entries {
        field.push(key.len() as u8);
        field.extend_from_slice(key.as_bytes());
        field.extend_from_slice(&(value.len() as u32).to_be_bytes());
        field.extend_from_slice(&value);
    }
    let mut request = vec![0xfe, 0x02];
    request.extend_from_slice(&(field.len() as u32).to_be_bytes());
    request.extend_from_slice(&field);
    request.push(0x00);
    request.extend_from_slice(content);
    request
}

/// The metadata limit counts 32 bytes per entry beyond its key and value, as HTTP/2 does: 936
/// empty entries in 6.5 KB (under the default 8 KiB on the wire, some 90 KB once parsed) are
/// refused with RESOURCE_EXHAUSTED, and 100 such entries are read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_entries_count_32_bytes_each() {
    let running = serve(Framing::Frisbee, Concurrency::PerRpc, true).await;
    let mut raw = raw_connect(running.addr, Framing::Frisbee).await;
    send(&mut raw, 1, 0xFFFF, &[1, 0, 0, 0, 0x0f]).await;
    assert_eq!(next(&mut raw).await.id, 2, "ACCEPT");
    let entries =
        |count: usize| (0..count).map(|i| (format!("{:02x}", i % 256) + &"k".repeat(i / 256), Vec::new()));
    let many = with_metadata_field(entries(936), &encoded("many"));
    assert!(many.len() < 8192, "{} bytes", many.len());
    send(&mut raw, 3, 10, &many).await;
    let reply = next(&mut raw).await;
    assert_eq!((reply.id, reply.op), (3, 10));
    assert_eq!(reply.content[..8], [0xfe, 0x03, 0, 0, 0, 1, 8, 0]);
    let error = String::from_utf8_lossy(&reply.content);
    assert!(
        error.contains("32 per entry") && error.contains("max_metadata_size"),
        "{error}"
    );
    send(
        &mut raw,
        4,
        10,
        &with_metadata_field(entries(100), &encoded("some")),
    )
    .await;
    let reply = next(&mut raw).await;
    assert_eq!(reply.id, 4);
    let seen = String::from_utf8_lossy(&reply.content);
    assert!(seen.contains("some|") && seen.contains("63="), "{seen}");
}

/// Metadata is bounded and read in linear time: a 4 MiB block is refused with
/// RESOURCE_EXHAUSTED naming `max_metadata_size` (and a good client on another connection is
/// served meanwhile), and with the limit raised, 100,000 distinct keys (1 MiB: quadratic
/// parsing took seconds of CPU) are read and answered at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_is_bounded_and_read_in_linear_time() {
    for framing in FRAMINGS {
        let running = serve(framing, Concurrency::PerRpc, true).await;
        let good = connect(&running, framing).await;
        let mut raw = raw_connect(running.addr, framing).await;
        send(&mut raw, 1, 0xFFFF, &[1, 0, 0, 0, 0x0f]).await;
        assert_eq!(next(&mut raw).await.id, 2, "ACCEPT");
        let huge = (0..4).map(|i| (format!("k{i}-bin"), vec![0u8; 1 << 20]));
        send(&mut raw, 3, 10, &with_metadata_field(huge, &encoded("x"))).await;
        let reply = next(&mut raw).await;
        assert_eq!((reply.id, reply.op), (3, 10));
        // STATUS RESOURCE_EXHAUSTED (8), then the error text naming the limit.
        assert_eq!(reply.content[..8], [0xfe, 0x03, 0, 0, 0, 1, 8, 0], "{framing:?}");
        let error = String::from_utf8_lossy(&reply.content);
        assert!(
            error.contains("max_metadata_size") && error.contains("8192"),
            "{error}"
        );
        // The good client on its own connection is answered, and so is the attacker's next call.
        let probe = ProbeClient::new(good);
        assert!(
            probe
                .echo(text("still here"))
                .await
                .unwrap()
                .value
                .starts_with("still here")
        );
        send(&mut raw, 4, 10, &encoded("after")).await;
        assert_eq!(next(&mut raw).await.id, 4);
    }
    // 100,000 distinct keys in about 1 MiB, under a raised limit (they count 3.8 MB: 32 bytes
    // per entry beyond its key and value).
    let mut config = ServerConfig::default();
    config.connection.max_metadata_size = 4 << 20;
    let running = serve_with(config).await;
    let mut raw = raw_connect(running.addr, Framing::Frisbee).await;
    send(&mut raw, 1, 0xFFFF, &[1, 0, 0, 0, 0x0f]).await;
    assert_eq!(next(&mut raw).await.id, 2, "ACCEPT");
    let many = (0..100_000).map(|i| (format!("k{i}"), Vec::new()));
    send(&mut raw, 3, 10, &with_metadata_field(many, &encoded("many"))).await;
    let reply = next(&mut raw).await;
    assert_eq!(reply.id, 3);
    let seen = String::from_utf8_lossy(&reply.content);
    assert!(seen.contains("k99999="), "the handler saw every key");
}
