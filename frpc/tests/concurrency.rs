//! The concurrency modes' promises: with PerRpc and Limited a slow handler never holds up the
//! quick calls behind it on the same connection (handlers are polled once on the reader and only
//! pending ones get a task), and Limited(n) never runs more than n handlers at once.
// Some tests here use `#[frpc::service]`s or `frpc::health`: without `macros` the file is left out.
#![cfg(feature = "macros")]

mod support;

use std::sync::atomic::Ordering;
use std::time::Duration;

use frpc::{Client, Concurrency};
use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_handler_does_not_delay_quick_calls_on_its_connection() {
    for mode in [Concurrency::PerRpc, Concurrency::Limited(8)] {
        let server = start(config(mode)).await;
        let client = Client::connect(server.addr).await.unwrap();
        let slow = tokio::spawn({
            let client = client.clone();
            async move { call(&client, GATED, "slow").await }
        });
        gated_started(&server, 1).await;
        let quick = (0..1_000).map(|i| {
            let client = client.clone();
            async move { (i, call(&client, ECHO, &i.to_string()).await) }
        });
        for (i, reply) in futures_util::future::join_all(quick).await {
            assert_eq!(reply.unwrap().value, i.to_string(), "{mode:?}");
        }
        assert!(
            !slow.is_finished(),
            "{mode:?}: the slow call is still waiting for its gate"
        );
        server.service.state.gate.add_permits(1);
        assert_eq!(slow.await.unwrap().unwrap().value, "slow", "{mode:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limited_runs_at_most_n_handlers_at_once() {
    const CAP: usize = 4;
    let server = start(config(Concurrency::Limited(CAP))).await;
    let state = server.service.state.clone();
    let clients: Vec<Client> =
        futures_util::future::try_join_all((0..3).map(|_| Client::connect(server.addr)))
            .await
            .unwrap();
    let calls: Vec<_> = (0..12)
        .map(|i| {
            let client = clients[i % clients.len()].clone();
            tokio::spawn(async move { call(&client, GATED, &i.to_string()).await })
        })
        .collect();
    gated_started(&server, CAP).await;
    assert_eq!(state.gated_running.load(Ordering::SeqCst), CAP);
    // Let the calls through one at a time: each finished one makes room for exactly one more.
    for released in 1..=8 {
        state.gate.add_permits(1);
        gated_started(&server, CAP + released).await;
        assert!(state.gated_running.load(Ordering::SeqCst) <= CAP);
    }
    state.gate.add_permits(CAP);
    for call in calls {
        call.await.unwrap().unwrap();
    }
    assert_eq!(state.gated_max_running.load(Ordering::SeqCst), CAP);
}

/// A plain peer's call (no extensions: it cannot cancel) that waits for one of Limited's
/// permits holds its connection's reader (the cap's backpressure), so the peer's PINGs go
/// unread meanwhile: that is not the peer falling silent, and the connection outlives its idle
/// timeout many times over. An frpc peer's waiting call leaves the reader reading. Both calls
/// then succeed, either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_waiting_for_a_limited_permit_keeps_its_connection() {
    for extensions in [false, true] {
        let idle = Duration::from_millis(400);
        let mut server_config = config(Concurrency::Limited(1));
        server_config.connection.idle_timeout = idle;
        server_config.connection.ping_interval = idle / 4;
        let server = start(server_config).await;
        let mut client_config = frpc::ClientConfig::default().extensions(extensions);
        client_config.connection.idle_timeout = idle;
        client_config.connection.ping_interval = idle / 4;
        let client = Client::connect_with(server.addr, client_config).await.unwrap();

        let running = tokio::spawn({
            let client = client.clone();
            async move { call(&client, GATED, "running").await }
        });
        gated_started(&server, 1).await;
        let waiting = tokio::spawn({
            let client = client.clone();
            async move { call(&client, ECHO, "waiting").await }
        });
        // Five idle timeouts pass while the second call waits for the first one's permit.
        tokio::time::sleep(idle * 5).await;
        assert!(!client.is_closed(), "{extensions}: {:?}", client.close_reason());
        server.service.state.gate.add_permits(1);
        assert_eq!(running.await.unwrap().unwrap().value, "running");
        assert_eq!(waiting.await.unwrap().unwrap().value, "waiting");
    }
}

/// With Limited(n) at its cap, a call from an frpc peer waits for its place without holding
/// the reader: the connection's other packets are read meanwhile (a reflection request is
/// answered), a cancelled call leaves the queue and a call whose deadline passed is answered
/// DEADLINE_EXCEEDED, neither ever running, and the call behind them gets the freed place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_waiting_for_a_limited_place_can_be_cancelled_and_time_out() {
    let server = start(config(Concurrency::Limited(1))).await;
    let state = server.service.state.clone();
    let client = Client::connect(server.addr).await.unwrap();
    // Calls made before the server's answer to the offer go plain: no deadline, no CANCEL.
    assert_eq!(client.negotiation().await, frpc::Negotiated::Extensions);
    let running = tokio::spawn({
        let client = client.clone();
        async move { call(&client, GATED, "running").await }
    });
    gated_started(&server, 1).await;

    let cancelled = tokio::spawn({
        let client = client.clone();
        async move { call(&client, GATED, "cancelled").await }
    });
    let timed = client.with_timeout(Duration::from_millis(200));
    let err = call(&timed, GATED, "timed out").await.unwrap_err();
    assert_eq!(err.code(), frpc::Code::DeadlineExceeded, "{err}");
    cancelled.abort();
    assert!(cancelled.await.unwrap_err().is_cancelled());
    // The reader reads on: the CANCEL sent before this request was read before its answer.
    let answer = tokio::time::timeout(Duration::from_secs(10), client.reflect()).await;
    assert!(
        answer
            .expect("the reader is not held by the waiting calls")
            .is_ok()
    );

    let behind = tokio::spawn({
        let client = client.clone();
        async move { call(&client, ECHO, "behind").await }
    });
    state.gate.add_permits(1);
    assert_eq!(running.await.unwrap().unwrap().value, "running");
    assert_eq!(behind.await.unwrap().unwrap().value, "behind");
    assert_eq!(
        state.gated_started.load(Ordering::SeqCst),
        1,
        "neither the cancelled nor the timed-out call ran"
    );
}

/// Tells its test, by being dropped, that a handler holding it was dropped.
struct Dropped(#[allow(dead_code)] tokio::sync::oneshot::Sender<()>);

#[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
pub struct Nothing {}

#[frpc::service(package = "hold")]
pub trait Hold {
    async fn hold(&self, ctx: &frpc::Context, request: Nothing) -> Result<Nothing, frpc::Status>;
}

/// Holds every call forever, with the [`Dropped`] the test left for it.
#[derive(Default)]
struct Holder {
    guard: std::sync::Mutex<Option<Dropped>>,
    started: tokio::sync::Notify,
}

struct HolderService(std::sync::Arc<Holder>);

impl Hold for HolderService {
    async fn hold(&self, _: &frpc::Context, _: Nothing) -> Result<Nothing, frpc::Status> {
        let _guard = self.0.guard.lock().unwrap().take();
        self.0.started.notify_one();
        std::future::pending().await
    }
}

/// A unary handler still running when its connection closes (the client went away) is dropped
/// at once, as a CANCEL drops it, in every concurrency mode and with extensions on or off: no
/// reply could reach anyone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_handler_is_dropped_when_its_connection_closes() {
    for mode in [Concurrency::PerRpc, Concurrency::Limited(4), Concurrency::Inline] {
        for extensions in [true, false] {
            let holder = std::sync::Arc::new(Holder::default());
            let server = frpc::Server::builder()
                .config(config(mode))
                .add_service(HoldServer::new(HolderService(holder.clone())))
                .bind("127.0.0.1:0")
                .await
                .unwrap();
            let addr = server.local_addr();
            let serving = tokio::spawn(server.serve());
            let mut client_config = frpc::ClientConfig::default();
            client_config.extensions = extensions;
            let client = Client::connect_with(addr, client_config).await.unwrap();

            let (dropped_tx, dropped) = tokio::sync::oneshot::channel();
            *holder.guard.lock().unwrap() = Some(Dropped(dropped_tx));
            let call = tokio::spawn({
                let client = HoldClient::new(client.clone());
                async move { client.hold(Nothing {}).await }
            });
            // `notify_one` leaves a permit if the handler got there first.
            let started = tokio::time::timeout(Duration::from_secs(10), holder.started.notified());
            started.await.expect("the handler starts");
            client.close();
            let what = format!("{mode:?}, extensions {extensions}");
            let dropped = tokio::time::timeout(Duration::from_secs(10), dropped).await;
            assert!(
                dropped.expect(&what).is_err(),
                "{what}: the guard was sent, not dropped"
            );
            assert!(call.await.unwrap().is_err(), "{what}");
            serving.abort();
        }
    }
}
