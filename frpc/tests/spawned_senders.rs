//! A handler that hands its `StreamSender` to a task of its own and returns (a tonic user's
//! `tokio::spawn` + `ReceiverStream`): an `Ok` return leaves the stream open until the last
//! clone of the sender goes, so everything the task sends arrives; an `Err` ends it at once,
//! and the task's later sends fail instead of vanishing.
// The services are `#[frpc::service]`s: without the `macros` feature there is nothing to test.
#![cfg(feature = "macros")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use frpc::{Context, Error, Status, StreamSender, Streaming};
use tokio::sync::{mpsc, oneshot};

#[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
pub struct Text {
    pub value: String,
}

fn text(value: impl Into<String>) -> Text {
    Text { value: value.into() }
}

#[frpc::service(package = "spawned")]
pub trait Producer {
    /// Sends `request.value` numbers from a spawned task, after the handler returned `Ok`.
    async fn count(&self, ctx: &Context, request: Text, outbound: StreamSender<Text>) -> Result<(), Status>;
    /// Echoes from a spawned task until the client ends its half.
    async fn echo(
        &self,
        ctx: &Context,
        inbound: Streaming<Text>,
        outbound: StreamSender<Text>,
    ) -> Result<(), Status>;
    /// Returns an error while a spawned task holds the sender; the task then tries to send.
    async fn fail(&self, ctx: &Context, request: Text, outbound: StreamSender<Text>) -> Result<(), Status>;
    /// Parks the sender in a task that never sends nor lets it go.
    async fn park(&self, ctx: &Context, request: Text, outbound: StreamSender<Text>) -> Result<(), Status>;
    /// Forwards events from a spawned task until its client goes (`StreamSender::closed`).
    async fn subscribe(
        &self,
        ctx: &Context,
        request: Text,
        outbound: StreamSender<Text>,
    ) -> Result<(), Status>;
}

/// What the spawned tasks saw, for the tests to check.
#[derive(Clone, Default)]
struct Svc {
    late_sends: Arc<Mutex<Vec<Result<(), String>>>>,
    parked: Arc<Mutex<Vec<StreamSender<Text>>>>,
    park_started: Option<mpsc::UnboundedSender<()>>,
    /// Subscribers' tasks that saw their client go.
    gone: Option<mpsc::UnboundedSender<()>>,
    events: Option<tokio::sync::broadcast::Sender<String>>,
}

/// Resolves once the handler that made `returned` has returned (its sender is dropped then).
fn handler_returned() -> (oneshot::Sender<()>, oneshot::Receiver<()>) {
    oneshot::channel()
}

impl Producer for Svc {
    async fn count(&self, _: &Context, request: Text, outbound: StreamSender<Text>) -> Result<(), Status> {
        let n: u32 = request
            .value
            .parse()
            .map_err(|_| Status::invalid_argument("a number"))?;
        let (_returning, returned) = handler_returned();
        tokio::spawn(async move {
            let _ = returned.await;
            for i in 0..n {
                outbound.send(text(i.to_string())).await.unwrap();
            }
        });
        Ok(())
    }

    async fn echo(
        &self,
        _: &Context,
        mut inbound: Streaming<Text>,
        outbound: StreamSender<Text>,
    ) -> Result<(), Status> {
        let (_returning, returned) = handler_returned();
        tokio::spawn(async move {
            let _ = returned.await;
            while let Ok(Some(message)) = inbound.message().await {
                outbound.send(message).await.unwrap();
            }
        });
        Ok(())
    }

    async fn fail(&self, _: &Context, _: Text, outbound: StreamSender<Text>) -> Result<(), Status> {
        let (_returning, returned) = handler_returned();
        let late_sends = self.late_sends.clone();
        tokio::spawn(async move {
            let _ = returned.await;
            // The handler's error and the end go out before this task sends: wait for them.
            let mut sent = Ok(());
            for _ in 0..1_000 {
                sent = outbound.send(text("late")).await;
                if sent.is_err() {
                    break;
                }
                tokio::task::yield_now().await;
            }
            let sent = sent.map_err(|err: Error| format!("{:?} {}", err.code(), err));
            late_sends.lock().unwrap().push(sent);
        });
        Err(Status::aborted("no"))
    }

    async fn park(&self, _: &Context, _: Text, outbound: StreamSender<Text>) -> Result<(), Status> {
        self.parked.lock().unwrap().push(outbound);
        if let Some(started) = &self.park_started {
            let _ = started.send(());
        }
        Ok(())
    }

    async fn subscribe(&self, _: &Context, _: Text, outbound: StreamSender<Text>) -> Result<(), Status> {
        let mut events = self.events.as_ref().expect("a topic").subscribe();
        let gone = self.gone.clone().expect("a gone channel");
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    event = events.recv() => {
                        let Ok(event) = event else { break };
                        if outbound.send(text(event)).await.is_err() {
                            break;
                        }
                    }
                    () = outbound.closed() => {
                        let _ = gone.send(());
                        break;
                    }
                }
            }
        });
        Ok(())
    }
}

async fn serve(
    svc: Svc,
) -> (
    std::net::SocketAddr,
    oneshot::Sender<()>,
    tokio::task::JoinHandle<()>,
) {
    let (addr, _, stop, serving) = serve_counted(svc).await;
    (addr, stop, serving)
}

/// [`serve`], with the server (for its count of open streams).
async fn serve_counted(
    svc: Svc,
) -> (
    std::net::SocketAddr,
    frpc::Server,
    oneshot::Sender<()>,
    tokio::task::JoinHandle<()>,
) {
    let bound = frpc::Server::builder()
        .shutdown_grace(Duration::from_secs(60))
        .add_service(ProducerServer::new(svc))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let server = bound.server().clone();
    let addr = bound.local_addr();
    let (stop, stopped) = oneshot::channel::<()>();
    let serving = tokio::spawn(async move {
        bound
            .serve_with_shutdown(async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
    });
    (addr, server, stop, serving)
}

/// A hang guard (the test fails rather than waits forever); never a timing assertion.
async fn within<T>(what: &str, work: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), work)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish"))
}

#[tokio::test]
async fn a_server_stream_lasts_until_the_spawned_sender_goes() {
    let (addr, _stop, _serving) = serve(Svc::default()).await;
    let client = ProducerClient::connect(addr).await.unwrap();
    let mut stream = client.count(text("50")).await.unwrap();
    let mut got = Vec::new();
    while let Some(message) = within("the stream", stream.message()).await.unwrap() {
        got.push(message.value);
    }
    let want: Vec<String> = (0..50).map(|i| i.to_string()).collect();
    assert_eq!(got, want);
}

#[tokio::test]
async fn a_bidi_stream_lasts_until_the_spawned_sender_goes() {
    let (addr, _stop, _serving) = serve(Svc::default()).await;
    let client = ProducerClient::connect(addr).await.unwrap();
    let mut call = client.echo().await.unwrap();
    for i in 0..20 {
        call.send(text(i.to_string())).await.unwrap();
        let echoed = within("an echo", call.message()).await.unwrap().unwrap();
        assert_eq!(echoed.value, i.to_string());
    }
    call.close_send().await.unwrap();
    assert!(within("the end", call.message()).await.unwrap().is_none());
}

#[tokio::test]
async fn an_error_ends_the_stream_at_once_and_later_sends_fail() {
    let svc = Svc::default();
    let (addr, _stop, _serving) = serve(svc.clone()).await;
    let client = ProducerClient::connect(addr).await.unwrap();
    // The open fails with the handler's error (it came before the open's acknowledgement).
    let err = client.fail(text("")).await.unwrap_err();
    assert_eq!(err.status().map(|s| s.message()), Some("no"), "{err}");
    // The task's send after the end failed, saying why.
    let late = within("the late send", async {
        loop {
            if let Some(sent) = svc.late_sends.lock().unwrap().first().cloned() {
                break sent;
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
    let why = late.unwrap_err();
    assert!(
        why.starts_with("FailedPrecondition the stream has ended"),
        "{why}"
    );
}

#[tokio::test]
async fn a_parked_sender_does_not_hold_a_graceful_shutdown() {
    let (started, mut parked) = mpsc::unbounded_channel();
    let svc = Svc {
        park_started: Some(started),
        ..Svc::default()
    };
    let (addr, stop, serving) = serve(svc.clone()).await;
    let client = ProducerClient::connect(addr).await.unwrap();
    let mut stream = client.park(text("")).await.unwrap();
    within("the handler", parked.recv()).await.unwrap();
    // The shutdown grace is 60 s: the stream ends as the shutdown begins, not at its grace.
    stop.send(()).unwrap();
    let err = within("the stream's end", stream.message()).await.unwrap_err();
    assert_eq!(err.code(), frpc::Code::Unavailable, "{err}");
    drop(client);
    within("the shutdown", serving).await.unwrap();
    assert_eq!(svc.parked.lock().unwrap().len(), 1, "the sender is still parked");
}

/// Waits until `done` holds, looking again after every yield (a hang guard, not a timing
/// assertion).
async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    within(what, async {
        while !done() {
            tokio::task::yield_now().await;
        }
    })
    .await;
}

/// A sender parked by a task of the handler's does not hold its stream's place once the
/// connection closes: the place goes with the handler's task (a client that opened streams to
/// a pub/sub method and left held every place of a quiet topic).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_sender_gives_its_place_back_when_the_connection_closes() {
    let (started, mut parked) = mpsc::unbounded_channel();
    let svc = Svc {
        park_started: Some(started),
        ..Svc::default()
    };
    let (addr, server, _stop, _serving) = serve_counted(svc.clone()).await;
    let connection = frpc::Client::connect(addr).await.unwrap();
    let client = ProducerClient::new(connection.clone());
    let mut streams = Vec::new();
    for _ in 0..3 {
        streams.push(client.park(text("")).await.unwrap());
        within("the handler", parked.recv()).await.unwrap();
    }
    assert_eq!(server.open_streams(), 3);
    connection.close();
    eventually("the places are given back", || server.open_streams() == 0).await;
    assert_eq!(
        svc.parked.lock().unwrap().len(),
        3,
        "the senders are still parked"
    );
}

/// A subscriber's task that selects on `StreamSender::closed` ends when its client goes, and
/// delivers events until then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_task_sees_its_client_go() {
    let (gone_tx, mut gone) = mpsc::unbounded_channel();
    let (events, _) = tokio::sync::broadcast::channel(16);
    let svc = Svc {
        gone: Some(gone_tx),
        events: Some(events.clone()),
        ..Svc::default()
    };
    let (addr, server, _stop, _serving) = serve_counted(svc).await;
    for round in 0..2 {
        let connection = frpc::Client::connect(addr).await.unwrap();
        let client = ProducerClient::new(connection.clone());
        let mut stream = client.subscribe(text("")).await.unwrap();
        // The task subscribed before the open was acknowledged: the event reaches it.
        events.send(format!("event {round}")).unwrap();
        let got = within("the event", stream.message()).await.unwrap().unwrap();
        assert_eq!(got.value, format!("event {round}"));
        // Round 0: the client drops the stream (a CANCEL); round 1: its connection closes.
        match round {
            0 => drop(stream),
            _ => connection.close(),
        }
        within("the task sees its client go", gone.recv()).await.unwrap();
    }
    eventually("the places are given back", || server.open_streams() == 0).await;
}

/// Opens a `park` stream, again while the connection's place is taken (RESOURCE_EXHAUSTED) or,
/// on a busy machine, the open's deadline passed before its answer.
async fn park_when_admitted(client: &ProducerClient<frpc::Client>) -> frpc::Streaming<Text> {
    within("an admitted open", async {
        loop {
            match client.park(text("")).await {
                Ok(stream) => break stream,
                Err(err) => {
                    let retry = [frpc::Code::ResourceExhausted, frpc::Code::DeadlineExceeded];
                    assert!(retry.contains(&err.code()), "{err}");
                    tokio::task::yield_now().await;
                }
            }
        }
    })
    .await
}

/// A stream whose client went (it dropped the stream, or its deadline passed) gives its place
/// in its connection's `max_streams` back, whatever a task of the handler's still holds: the
/// connection opens another (its place stayed taken while the parked sender lived).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_sender_gives_its_connections_place_back_when_the_client_goes() {
    let (started, mut parked) = mpsc::unbounded_channel();
    let svc = Svc {
        park_started: Some(started),
        ..Svc::default()
    };
    let mut config = frpc::ServerConfig::default();
    config.connection.max_streams = 1;
    let bound = frpc::Server::builder()
        .config(config)
        .add_service(ProducerServer::new(svc.clone()))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    let connection = frpc::Client::connect(addr).await.unwrap();
    assert_eq!(connection.negotiation().await, frpc::Negotiated::Extensions);
    let client = ProducerClient::new(connection.clone());
    // Dropped by its client (a CANCEL), then past its deadline.
    let stream = client.park(text("")).await.unwrap();
    within("the handler", parked.recv()).await.unwrap();
    drop(stream);
    let timed = ProducerClient::new(connection.with_timeout(Duration::from_millis(300)));
    let opened = park_when_admitted(&timed).await;
    within("the handler", parked.recv()).await.unwrap();
    let mut opened = opened;
    let err = within("the deadline", opened.message()).await.unwrap_err();
    assert_eq!(err.code(), frpc::Code::DeadlineExceeded, "{err}");
    // Both senders are still parked; the connection still opens a stream.
    let again = park_when_admitted(&client).await;
    within("the handler", parked.recv()).await.unwrap();
    assert!(
        svc.parked.lock().unwrap().len() >= 3,
        "the senders are still parked"
    );
    drop(again);
}
