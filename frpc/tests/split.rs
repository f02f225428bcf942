//! Splitting client calls, over real TCP in both framings: a bidi call's sender in one task and
//! its receiver in another, with windows small enough that each side waits for the other's
//! credit (no deadlock, nothing lost, order kept); a client-streaming call's sender dropped to
//! end it while another task awaits the response; `message()` cancelled over and over in a
//! `select!` loses nothing. Every type involved is named from the crate root.
// The services are `#[frpc::service]`s: without the `macros` feature there is nothing to test.
#![cfg(feature = "macros")]

use std::time::Duration;

use frpc::{ClientConfig, Framing, ServerConfig};

#[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
pub struct Number {
    pub n: u64,
}

#[frpc::service(package = "split")]
pub trait Numbers {
    /// Bidi: echoes every number.
    async fn echo(
        &self,
        ctx: &frpc::Context,
        inbound: frpc::Streaming<Number>,
        outbound: frpc::StreamSender<Number>,
    ) -> Result<(), frpc::Status>;
    /// Client streaming: the sum of the numbers.
    async fn sum(
        &self,
        ctx: &frpc::Context,
        inbound: frpc::Streaming<Number>,
    ) -> Result<Number, frpc::Status>;
}

struct Svc;

impl Numbers for Svc {
    async fn echo(
        &self,
        _: &frpc::Context,
        mut inbound: frpc::Streaming<Number>,
        outbound: frpc::StreamSender<Number>,
    ) -> Result<(), frpc::Status> {
        while let Some(number) = inbound.message().await? {
            outbound.send(number).await?;
        }
        Ok(())
    }

    async fn sum(
        &self,
        _: &frpc::Context,
        mut inbound: frpc::Streaming<Number>,
    ) -> Result<Number, frpc::Status> {
        let mut total = 0;
        while let Some(number) = inbound.message().await? {
            total += number.n;
        }
        Ok(Number { n: total })
    }
}

const FRAMINGS: [Framing; 2] = [Framing::Frisbee, Framing::Legacy];
const LIMIT: Duration = Duration::from_secs(10);
const COUNT: u64 = 500;

async fn bounded<T>(what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: nothing within {LIMIT:?}"))
}

/// A server and a client whose streams have windows of 4 messages each way.
async fn pair(framing: Framing) -> NumbersClient {
    let mut server = ServerConfig::default();
    server.connection.framing = framing;
    server.connection.stream_window = 4;
    let bound = frpc::Server::builder()
        .config(server)
        .add_service(NumbersServer::new(Svc))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    let mut client = ClientConfig::default();
    client.connection.framing = framing;
    client.connection.stream_window = 4;
    NumbersClient::new(frpc::Client::connect_with(addr, client).await.unwrap())
}

/// The sender sends 500 numbers from its own task while the caller reads the echoes: with
/// windows of 4, each side keeps waiting for the other's credit, and everything arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_split_bidi_call_sends_and_receives_at_once() {
    for framing in FRAMINGS {
        let client = pair(framing).await;
        let call: frpc::BidiCall<Number, Number> = bounded("open", client.echo()).await.unwrap();
        let (mut sender, mut receiver): (frpc::RequestSender<Number>, frpc::Streaming<Number>) = call.split();
        let sending = tokio::spawn(async move {
            for n in 0..COUNT {
                sender.send(Number { n }).await.unwrap();
            }
            sender.close().await.unwrap();
        });
        for n in 0..COUNT {
            let echoed = bounded("echo", receiver.message()).await.unwrap();
            assert_eq!(echoed, Some(Number { n }), "{framing:?}");
        }
        assert_eq!(receiver.message().await.unwrap(), None, "{framing:?}");
        bounded("sender", sending).await.unwrap();
    }
}

/// A client-streaming call split: the sender's task ends the request stream by dropping it,
/// and the response arrives where it is awaited.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_split_client_stream_answers_once_the_sender_is_dropped() {
    for framing in FRAMINGS {
        let client = pair(framing).await;
        let call: frpc::ClientStreamingCall<Number, Number> = bounded("open", client.sum()).await.unwrap();
        let (sender, response): (_, frpc::ClientStreamingResponse<Number>) = call.split();
        tokio::spawn(async move {
            for n in 1..=COUNT {
                sender.send(Number { n }).await.unwrap();
            }
            // Dropped here: the request stream ends.
        });
        let total = bounded("response", response.recv()).await.unwrap();
        assert_eq!(total.n, COUNT * (COUNT + 1) / 2, "{framing:?}");
    }
}

/// `message()` in a `select!` loop beside a branch that is always ready: every other poll
/// drops the pending receive, and no message is lost or repeated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_is_cancel_safe_in_select() {
    for framing in FRAMINGS {
        let client = pair(framing).await;
        let (sender, mut receiver) = bounded("open", client.echo()).await.unwrap().split();
        tokio::spawn(async move {
            for n in 0..COUNT {
                sender.send(Number { n }).await.unwrap();
            }
        });
        let (mut next, mut dropped) = (0, 0u64);
        while next < COUNT {
            tokio::select! {
                echoed = receiver.message() => {
                    assert_eq!(echoed.unwrap(), Some(Number { n: next }), "{framing:?}");
                    next += 1;
                }
                () = std::future::ready(()) => dropped += 1,
            }
        }
        assert!(dropped > 0, "{framing:?}: the other branch never won");
    }
}

/// An unsplit bidi call's `message()` keeps working in a `select!` loop too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsplit_bidi_call_is_cancel_safe_too() {
    let client = pair(Framing::Frisbee).await;
    let mut call = bounded("open", client.echo()).await.unwrap();
    let mut received = Vec::new();
    for n in 0..3 {
        call.send(Number { n }).await.unwrap();
        loop {
            tokio::select! {
                echoed = call.message() => {
                    received.push(echoed.unwrap().unwrap().n);
                    break;
                }
                () = std::future::ready(()) => {}
            }
        }
    }
    call.close_send().await.unwrap();
    assert_eq!(call.message().await.unwrap(), None);
    assert_eq!(received, [0, 1, 2]);
}
