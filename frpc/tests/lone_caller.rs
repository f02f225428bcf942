//! A call alone on its connection reads its own reply: it polls the connection's read loop
//! itself, in its own task, instead of waiting for the reader task to hand the reply over. Checked
//! against a bare Frisbee peer, in both framings: the reply is read in the caller's task; once
//! the call is over (answered, or its future dropped, also right after its reply came in) the
//! reader task reads again (PINGs are answered, raw packets delivered, later calls answered);
//! and a call that joins a lone one takes the reading back from it, so a caller whose future is
//! no longer polled holds no one up.

mod support;

use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use frpc::codegen::Message;
use frpc::{Client, ClientConfig, Framing};
use frpc_wire::{Packet, PacketCodec, op};
use futures_util::{SinkExt, StreamExt};
use support::*;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio_util::codec::Framed;
use tracing_subscriber::layer::SubscriberExt;

type Peer = Framed<TcpStream, PacketCodec>;

const FRAMINGS: [Framing; 2] = [Framing::Frisbee, Framing::Legacy];

/// The peer's next packet other than the extension offer (a Go server ignores it too); bounded,
/// so a packet that never comes fails the test instead of hanging it.
async fn next_packet(peer: &mut Peer) -> Packet {
    loop {
        let next = tokio::time::timeout(Duration::from_secs(10), peer.next());
        let packet = next
            .await
            .expect("a packet within 10 s")
            .expect("a packet")
            .expect("a valid packet");
        if packet.op != 0xFFFF {
            return packet;
        }
    }
}

/// The next request, PINGs and PONGs skipped.
async fn next_request(peer: &mut Peer) -> Packet {
    loop {
        let packet = next_packet(peer).await;
        if packet.op > op::PONG {
            return packet;
        }
    }
}

async fn connect(framing: Framing) -> (Client, Peer) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut config = ClientConfig::default();
    config.connection.framing = framing;
    // No offer and no heartbeat: the only packets are the test's.
    config.extensions = false;
    config.connection.ping_interval = Duration::from_secs(600);
    config.connection.idle_timeout = Duration::from_secs(1200);
    let (client, accepted) = tokio::join!(
        Client::connect_with(listener.local_addr().unwrap(), config),
        listener.accept()
    );
    (
        client.unwrap(),
        Framed::new(accepted.unwrap().0, PacketCodec::new(framing)),
    )
}

fn reply_to(request: &Packet, value: &str) -> Packet {
    Packet::new(request.id, request.op, Text::new(value).to_polyglot())
}

/// Answers one request with `value`.
async fn answer(peer: &mut Peer, value: &str) {
    let request = next_request(peer).await;
    peer.send(reply_to(&request, value)).await.unwrap();
}

/// Writes `packets` with one write, so the client reads them together.
async fn write_in_one(peer: &mut Peer, framing: Framing, packets: impl IntoIterator<Item = Packet>) {
    let mut bytes = bytes::BytesMut::new();
    for packet in packets {
        tokio_util::codec::Encoder::encode(&mut PacketCodec::new(framing), packet, &mut bytes).unwrap();
    }
    peer.get_mut().write_all_buf(&mut bytes).await.unwrap();
}

/// A new call on the connection gets its reply, and nothing is left in flight.
async fn a_call_still_works(client: &Client, peer: &mut Peer, framing: Framing) {
    let (reply, ()) = tokio::join!(call(client, ECHO, "next"), answer(peer, "next!"));
    assert_eq!(reply.unwrap().value, "next!", "{framing:?}");
    assert_eq!(client.inflight(), 0);
}

/// The peer PINGs and waits for the PONG: someone reads the connection.
async fn ping_pong(peer: &mut Peer) {
    peer.send(Packet::ping()).await.unwrap();
    let pong = next_packet(peer).await;
    assert_eq!(pong.op, op::PONG, "the client answers a PING with a PONG");
}

/// The task that polled the loop when it dropped a reply nobody waits for.
#[derive(Clone, Default)]
struct DroppedReplies(Arc<Mutex<Vec<Option<tokio::task::Id>>>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for DroppedReplies {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        struct Message(String);
        impl tracing::field::Visit for Message {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 = format!("{value:?}");
                }
            }
        }
        let mut message = Message(String::new());
        event.record(&mut message);
        if message.0.contains("dropping a reply nobody waits for") {
            self.0.lock().unwrap().push(tokio::task::try_id());
        }
    }
}

/// One thread, so every task's events reach the thread's subscriber.
#[test]
fn a_lone_callers_reply_is_read_in_its_own_task() {
    let dropped = DroppedReplies::default();
    let subscriber = tracing_subscriber::registry().with(dropped.clone());
    let _guard = tracing::subscriber::set_default(subscriber);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        for framing in FRAMINGS {
            let (client, mut peer) = connect(framing).await;
            let caller = tokio::spawn(async move {
                let reply = call(&client, ECHO, "alone").await.unwrap();
                (reply, tokio::task::id())
            });
            let request = next_request(&mut peer).await;
            // A reply to no call first, in the same write as the call's: whoever reads the
            // one reads the other, and says so.
            let stray = Packet::new(
                request.id.wrapping_add(100),
                ECHO,
                Text::new("stray").to_polyglot(),
            );
            write_in_one(&mut peer, framing, [stray, reply_to(&request, "alone!")]).await;
            let (reply, caller_task) = caller.await.unwrap();
            assert_eq!(reply.value, "alone!", "{framing:?}");
            let readers = std::mem::take(&mut *dropped.0.lock().unwrap());
            assert_eq!(
                readers,
                [Some(caller_task)],
                "{framing:?}: the replies were read in the caller's task"
            );
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_lone_call_the_reader_task_reads_again() {
    for framing in FRAMINGS {
        let (client, mut peer) = connect(framing).await;
        let mut raw = client.raw_packets(900).unwrap();
        for round in 0..3 {
            let (reply, ()) = tokio::join!(call(&client, ECHO, "one"), answer(&mut peer, "one!"));
            assert_eq!(reply.unwrap().value, "one!", "{framing:?}");
            // No call now: the reader task answers, and delivers what is not a reply.
            ping_pong(&mut peer).await;
            peer.send(Packet::new(round, 900, &b"raw"[..])).await.unwrap();
            let packet = tokio::time::timeout(Duration::from_secs(10), raw.next_packet())
                .await
                .expect("the raw packet within 10 s")
                .expect("a packet");
            assert_eq!(
                (packet.id, &packet.content[..]),
                (round, &b"raw"[..]),
                "{framing:?}"
            );
        }
        assert_eq!(client.inflight(), 0);
    }
}

/// A waker that counts its wake-ups and notifies the test.
struct Signal(Notify, std::sync::atomic::AtomicUsize);

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.1.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.0.notify_one();
    }
}

/// Polls `future` once with a waker of its own; the signal fires when it is woken.
fn poll_once<F: Future>(future: std::pin::Pin<&mut F>) -> (Poll<F::Output>, Arc<Signal>) {
    let signal = Arc::new(Signal(Notify::new(), Default::default()));
    let waker = Waker::from(signal.clone());
    (future.poll(&mut Context::from_waker(&waker)), signal)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_caller_dropped_while_waiting_hands_the_reading_back() {
    for framing in FRAMINGS {
        let (client, mut peer) = connect(framing).await;
        {
            let mut call = pin!(call(&client, ECHO, "dropped"));
            assert!(poll_once(call.as_mut()).0.is_pending());
            let request = next_request(&mut peer).await;
            assert_eq!(request.op, ECHO);
            // Dropped unanswered.
        }
        // The reader task reads again: a PING is answered, and a later call works.
        ping_pong(&mut peer).await;
        a_call_still_works(&client, &mut peer, framing).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_caller_dropped_once_its_reply_is_in_hands_the_reading_back() {
    for framing in FRAMINGS {
        let (client, mut peer) = connect(framing).await;
        {
            let mut call = pin!(call(&client, ECHO, "woken"));
            let (poll, signal) = poll_once(call.as_mut());
            assert!(poll.is_pending());
            let request = next_request(&mut peer).await;
            // The reply and a PING in one write: the wake-up goes to the caller, which is
            // never polled again. The reader task must read both.
            write_in_one(
                &mut peer,
                framing,
                [reply_to(&request, "never read"), Packet::ping()],
            )
            .await;
            tokio::time::timeout(Duration::from_secs(10), signal.0.notified())
                .await
                .expect("the caller is woken within 10 s");
        }
        let pong = next_packet(&mut peer).await;
        assert_eq!(
            pong.op,
            op::PONG,
            "{framing:?}: the reader task answered the PING"
        );
        a_call_still_works(&client, &mut peer, framing).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_joining_a_lone_one_gets_its_reply_while_the_first_is_not_polled() {
    for framing in FRAMINGS {
        let (client, mut peer) = connect(framing).await;
        let mut first = pin!(call(&client, ECHO, "first"));
        let (poll, first_woken) = poll_once(first.as_mut());
        assert!(poll.is_pending());
        let first_request = next_request(&mut peer).await;
        // The first call is not polled again until the second has its reply: the second's
        // reply must not wait for it.
        let second = tokio::spawn({
            let client = client.clone();
            async move { call(&client, ECHO, "second").await }
        });
        let second_request = next_request(&mut peer).await;
        peer.send(reply_to(&second_request, "second!")).await.unwrap();
        let second = tokio::time::timeout(Duration::from_secs(10), second)
            .await
            .expect("the second call's reply within 10 s");
        assert_eq!(second.unwrap().unwrap().value, "second!", "{framing:?}");
        // Then the first one's reply, which wakes it.
        peer.send(reply_to(&first_request, "first!")).await.unwrap();
        tokio::time::timeout(Duration::from_secs(10), first_woken.0.notified())
            .await
            .expect("the first call is woken within 10 s");
        assert_eq!(first.await.unwrap().value, "first!", "{framing:?}");
        assert_eq!(client.inflight(), 0);
    }
}

/// Many lone calls in a row from several tasks in turn, on one thread and on two, against a
/// real server: every reply reaches its caller.
#[test]
fn lone_calls_in_turn_on_both_runtimes() {
    for threads in [1, 2] {
        let runtime = match threads {
            1 => tokio::runtime::Builder::new_current_thread().enable_all().build(),
            _ => tokio::runtime::Builder::new_multi_thread()
                .worker_threads(threads)
                .enable_all()
                .build(),
        }
        .unwrap();
        runtime.block_on(async {
            let server = start(config(frpc::Concurrency::Inline)).await;
            let client = Client::connect(server.addr).await.unwrap();
            for round in 0..200 {
                let client = client.clone();
                let value = format!("{threads}/{round}");
                let reply =
                    tokio::spawn(async move { call(&client, ECHO, &value).await.map(|t| (t, value)) });
                let (reply, value) = reply.await.unwrap().unwrap();
                assert_eq!(reply.value, value);
            }
            assert_eq!(client.inflight(), 0);
        });
    }
}
