//! Balanced channels over real servers: load spread by tower's p2c, endpoints that go down
//! skipped and back in after they reconnect, endpoints inserted and removed at run time, and
//! DNS discovery (with `localhost` and with an injected resolver).
// The services are `#[frpc::service]`s: without the `macros` feature there is nothing to test.
#![cfg(feature = "macros")]

mod channel_support;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use channel_support::*;
use frpc::channel::{Backoff, Change};
use frpc::{Channel, Code, Endpoint, Error};

fn quick(endpoint: Endpoint) -> Endpoint {
    endpoint.backoff(
        Backoff::default()
            .initial(Duration::from_millis(10))
            .max(Duration::from_millis(100)),
    )
}

async fn servers(n: usize) -> Vec<TestServer> {
    let mut servers = Vec::new();
    for i in 0..n {
        servers.push(TestServer::start(&format!("s{i}"), "127.0.0.1:0").await);
    }
    servers
}

/// Makes `calls` calls, `concurrency` at a time, and counts the replies per server.
async fn spread(client: &NamedClient<Channel>, calls: usize, concurrency: usize) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for _ in 0..calls / concurrency {
        let batch = (0..concurrency).map(|_| client.whoami(Text::default()));
        for reply in futures_util::future::join_all(batch).await {
            *counts.entry(reply.unwrap().value).or_default() += 1;
        }
    }
    counts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn balancing_spreads_calls_over_three_servers() {
    let servers = servers(3).await;
    let channel = Channel::balance_list(servers.iter().map(TestServer::endpoint));
    within("connect", channel.connected(3)).await;
    let client = NamedClient::new(channel);
    let counts = spread(&client, 600, 6).await;
    for server in &servers {
        let got = counts.get(&server.name).copied().unwrap_or(0);
        // An even share is 200; p2c over idle servers is close to uniform.
        assert!(got > 60, "{counts:?}");
        assert_eq!(server.stats.calls(), got);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_goes_down_is_skipped_and_rejoins_after_restart() {
    let mut servers = servers(3).await;
    let channel = Channel::balance_list(servers.iter().map(|s| quick(s.endpoint())));
    within("connect", channel.connected(3)).await;
    let client = NamedClient::new(channel.clone());

    servers[1].stop().await;
    within("the channel sees the close", channel.wait_connected(|n| n == 2)).await;
    let before = servers[1].stats.calls();
    let counts = spread(&client, 200, 4).await;
    assert_eq!(counts.get("s1"), None, "{counts:?}");
    assert_eq!(counts.values().sum::<usize>(), 200);
    assert_eq!(servers[1].stats.calls(), before);

    servers[1].restart().await;
    within("rejoin", channel.connected(3)).await;
    let counts = spread(&client, 300, 6).await;
    assert!(counts.get("s1").copied().unwrap_or(0) > 30, "{counts:?}");
}

#[tokio::test]
async fn with_every_server_down_calls_fail_fast() {
    let mut servers = servers(2).await;
    let long = Backoff::default()
        .initial(Duration::from_secs(60))
        .max(Duration::from_secs(60));
    let channel = Channel::balance_list(servers.iter().map(|s| s.endpoint().backoff(long)));
    within("connect", channel.connected(2)).await;
    for server in &mut servers {
        server.stop().await;
    }
    within("the channel sees the closes", channel.wait_connected(|n| n == 0)).await;
    let client = NamedClient::new(channel.with_timeout(Duration::from_secs(30)));
    let started = std::time::Instant::now();
    let err = within("the call", client.whoami(Text::default()))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Unavailable(_)), "{err:?}");
    assert_eq!(err.code(), Code::Unavailable);
    assert!(started.elapsed() < Duration::from_secs(10));
    // The error says why, as tonic's names the transport error: the last attempt's failure.
    let why = err.to_string();
    assert!(
        why.contains("no endpoint is connected (last failure: ") && why.contains("127.0.0.1:"),
        "{why}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_inserted_and_removed_at_run_time() {
    let servers = servers(2).await;
    let (channel, changes) = Channel::balance_channel::<&str>(8);
    changes
        .send(Change::Insert("s0", servers[0].endpoint()))
        .await
        .unwrap();
    within("connect", channel.connected(1)).await;
    let client = NamedClient::new(channel.clone());
    let counts = spread(&client, 50, 5).await;
    assert_eq!(counts.get("s0"), Some(&50), "{counts:?}");

    changes
        .send(Change::Insert("s1", servers[1].endpoint()))
        .await
        .unwrap();
    within("connect", channel.connected(2)).await;
    let counts = spread(&client, 300, 6).await;
    assert!(counts.get("s1").copied().unwrap_or(0) > 30, "{counts:?}");

    changes.send(Change::Remove("s0")).await.unwrap();
    within("removal", channel.wait_connected(|n| n == 1)).await;
    let s0_before = servers[0].stats.calls();
    let counts = spread(&client, 100, 5).await;
    assert_eq!(counts.get("s1"), Some(&100), "{counts:?}");
    assert_eq!(servers[0].stats.calls(), s0_before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_open_on_connected_endpoints_in_turn() {
    let servers = servers(2).await;
    let channel = Channel::balance_list(servers.iter().map(TestServer::endpoint));
    within("connect", channel.connected(2)).await;
    let client = NamedClient::new(channel.clone());
    let mut seen = Vec::new();
    for _ in 0..4 {
        let mut names = client.names(Text::default()).await.unwrap();
        let first = names.message().await.unwrap().unwrap().value;
        // A stream stays on its connection.
        assert_eq!(names.message().await.unwrap().unwrap().value, first);
        seen.push(first);
    }
    seen.sort();
    assert_eq!(seen, ["s0", "s0", "s1", "s1"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dns_discovery_of_localhost() {
    let server = TestServer::start("local", "127.0.0.1:0").await;
    let channel = frpc::discover::dns("localhost", server.addr.port(), Duration::from_secs(60));
    // `localhost` may also name ::1, where nothing listens: 127.0.0.1 is enough.
    within("connect", channel.connected(1)).await;
    let reply = NamedClient::new(channel).whoami(Text::default()).await.unwrap();
    assert_eq!(reply.value, "local");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dns_discovery_follows_the_answers() {
    let servers = servers(2).await;
    let answer: Arc<Mutex<Vec<SocketAddr>>> = Arc::new(Mutex::new(vec![servers[0].addr]));
    let asked = Arc::new(tokio::sync::Notify::new());
    let (resolver_answer, resolver_asked) = (answer.clone(), asked.clone());
    let channel = frpc::discover::Dns::new("cluster.test", 0)
        .interval(Duration::from_millis(20))
        .resolver(move |name, _port| {
            assert_eq!(name, "cluster.test");
            let addrs = resolver_answer.lock().unwrap().clone();
            resolver_asked.notify_waiters();
            async move { Ok(addrs) }
        })
        .channel();
    within("connect", channel.connected(1)).await;
    let client = NamedClient::new(channel.clone());
    assert_eq!(spread(&client, 20, 2).await.get("s0"), Some(&20));

    // The name now resolves to s1 only: s0 goes, s1 comes.
    *answer.lock().unwrap() = vec![servers[1].addr];
    within("the switch", async {
        loop {
            if let Ok(reply) = client.whoami(Text::default()).await
                && reply.value == "s1"
            {
                break;
            }
            asked.notified().await;
        }
    })
    .await;
    within("s0 gone", channel.wait_connected(|n| n == 1)).await;
    assert_eq!(spread(&client, 20, 2).await.get("s1"), Some(&20));

    // A failed resolution keeps what was known.
    let (failing, _) = (frpc::discover::Dns::new("nowhere.test", 0), ());
    let broken = failing
        .resolver(|_, _| async { Err(std::io::Error::other("no DNS today")) })
        .channel();
    let err = NamedClient::new(broken)
        .whoami(Text::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unavailable);
    let why = err.to_string();
    assert!(why.contains("resolving nowhere.test: no DNS today"), "{why}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_right_after_an_insert_waits_for_that_endpoint() {
    let servers = servers(1).await;
    for round in 0..20 {
        let (channel, changes) = Channel::balance_channel::<u8>(4);
        changes
            .send(Change::Insert(0, servers[0].endpoint()))
            .await
            .unwrap();
        let reply = within(
            "the call",
            NamedClient::new(channel.clone()).whoami(Text::default()),
        )
        .await;
        // What the channel knew, should the call fail: its state and why its last connection
        // closed. (It failed twice in hundreds of runs, the channel Ready at the panic: the
        // balancer read its ready and connecting counts one after the other, and saw an
        // endpoint going from one to the other in neither. They are one word now.)
        let reply = reply.unwrap_or_else(|err| {
            panic!(
                "round {round}: {err:?}; the channel is {:?}, its last connection closed: {:?}",
                channel.state(),
                channel.last_close_reason()
            )
        });
        assert_eq!(reply.value, "s0");
    }
    // With nothing inserted (or everything removed) calls fail at once.
    let (channel, changes) = Channel::balance_channel::<u8>(4);
    changes
        .send(Change::Insert(0, servers[0].endpoint()))
        .await
        .unwrap();
    changes.send(Change::Remove(0)).await.unwrap();
    let err = within("the call", NamedClient::new(channel).whoami(Text::default()))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Unavailable(_)), "{err:?}");
}

/// A DNS channel's first calls wait for its first answer instead of failing for want of
/// endpoints; once an answer is in, a channel with none fails fast again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_wait_for_the_first_dns_answer() {
    let servers = servers(1).await;
    let addr = servers[0].addr;
    let (release, gate) = tokio::sync::oneshot::channel::<()>();
    let gate = Arc::new(tokio::sync::Mutex::new(Some(gate)));
    let asked = Arc::new(tokio::sync::Notify::new());
    let (resolver_gate, resolver_asked) = (gate.clone(), asked.clone());
    let asked_once = asked.notified();
    let channel = frpc::discover::Dns::new("slow.test", 0)
        .interval(Duration::from_secs(60))
        .resolver(move |_, _| {
            let (gate, asked) = (resolver_gate.clone(), resolver_asked.clone());
            async move {
                asked.notify_waiters();
                if let Some(gate) = gate.lock().await.take() {
                    let _ = gate.await;
                }
                Ok(vec![addr])
            }
        })
        .channel();
    within("the first question", asked_once).await;
    let call = tokio::spawn(async move { NamedClient::new(channel).whoami(Text::default()).await });
    // The call is under way (or queued) while the resolver holds its answer back.
    tokio::task::yield_now().await;
    assert!(!call.is_finished(), "the call did not wait for the first answer");
    release.send(()).unwrap();
    let reply = within("the call", call).await.unwrap().unwrap();
    assert_eq!(reply.value, "s0");

    // An empty first answer: calls fail fast.
    let empty = frpc::discover::Dns::new("empty.test", 0)
        .resolver(|_, _| async { Ok(Vec::new()) })
        .channel();
    let err = within("the empty call", NamedClient::new(empty).whoami(Text::default()))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unavailable);
}

/// A balanced channel follows its servers' health: no calls go to a server reporting
/// NOT_SERVING, and it gets calls again once it reports SERVING; a server that opted out of
/// health checking is used whatever it reports.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn balancing_follows_health() {
    let servers = servers(3).await;
    let channel = Channel::balance_list(servers.iter().map(TestServer::endpoint));
    within("connect", channel.connected(3)).await;
    let client = NamedClient::new(channel.clone());
    // As before a graceful shutdown: balancers move away first.
    servers[1].health.set_all_not_serving();
    within("s1 out", channel.wait_connected(|n| n == 2)).await;
    let counts = spread(&client, 60, 3).await;
    assert_eq!(counts.get("s1"), None, "{counts:?}");
    assert_eq!(counts.values().sum::<usize>(), 60);
    // Streams too.
    for _ in 0..6 {
        let mut names = client.names(Text::default()).await.unwrap();
        assert_ne!(names.message().await.unwrap().unwrap().value, "s1");
    }
    servers[1].health.set_serving("");
    within("s1 back", channel.connected(3)).await;
    let counts = spread(&client, 300, 3).await;
    assert!(counts.get("s1").copied().unwrap_or(0) > 0, "{counts:?}");

    // Every server NOT_SERVING: calls fail fast with UNAVAILABLE.
    for server in &servers {
        server.health.set_not_serving("");
    }
    within("all out", channel.wait_connected(|n| n == 0)).await;
    assert_eq!(channel.state(), frpc::channel::ChannelState::NotServing);
    let err = within("a call", client.whoami(Text::default()))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unavailable, "{err}");
    assert!(err.to_string().contains("NOT_SERVING"), "{err}");

    // Health checking off: the endpoint is used though it reports NOT_SERVING.
    let unchecked = Channel::balance_list([servers[0].endpoint().health_check(false)]);
    within("connect unchecked", unchecked.connected(1)).await;
    let reply = NamedClient::new(unchecked).whoami(Text::default()).await.unwrap();
    assert_eq!(reply.value, "s0");
}

/// A server without the health service (its `Watch` open is refused as an unknown operation)
/// stays in the balance with health checking on (the default): once the other endpoint reports
/// NOT_SERVING, every call goes to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_health_stays_in_the_balance() {
    let servers = servers(1).await;
    let bare = frpc::Server::builder()
        .add_service(NamedServer::new(Bare))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let bare_addr = bare.local_addr();
    tokio::spawn(bare.serve());
    let channel = Channel::balance_list([servers[0].endpoint(), Endpoint::from(bare_addr)]);
    within("connect", channel.connected(2)).await;
    let client = NamedClient::new(channel.clone());
    servers[0].health.set_not_serving("");
    within("s0 out", channel.wait_connected(|n| n == 1)).await;
    let counts = spread(&client, 45, 3).await;
    assert_eq!(counts.get("bare"), Some(&45), "{counts:?}");
    assert_eq!(channel.connected_endpoints(), 1);
    servers[0].health.set_serving("");
    within("s0 back", channel.connected(2)).await;
}

/// Serves `Bare` and the health service, `layered` by the builder (server-wide layers) and
/// `health` wrapping the health service alone.
async fn serve_bare(
    layered: impl FnOnce(frpc::Builder) -> frpc::Builder,
    health: impl FnOnce(frpc::health::HealthServer) -> frpc::LayeredService,
) -> (SocketAddr, frpc::health::HealthReporter) {
    let (reporter, service) = frpc::health::service();
    let bound = layered(frpc::Server::builder())
        .add_service(NamedServer::new(Bare))
        .add_service(health(service))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    (addr, reporter)
}

/// Waits until `channel` has seen its one server report NOT_SERVING and then SERVING: its
/// health watch is open and followed.
async fn watch_followed(channel: &Channel, reporter: &frpc::health::HealthReporter) {
    within("connect", channel.connected(1)).await;
    reporter.set_not_serving("");
    within("out", channel.wait_connected(|n| n == 0)).await;
    reporter.set_serving("");
    within("back", channel.connected(1)).await;
}

/// Server-wide layers leave the channels' health watches alone: a one-place concurrency limit
/// that sheds still has its place free for a call with two balanced channels connected (each
/// channel's watch held it, so every call was shed and the second channel's watch too, which
/// took its server out), and a 50 ms timeout does not cut the watches (a cut watch took the
/// server out of the balance for good).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_layers_leave_the_health_watches_alone() {
    let (addr, reporter) = serve_bare(
        |builder| {
            builder
                .layer(tower::timeout::TimeoutLayer::new(Duration::from_millis(50)))
                .layer(tower::load_shed::LoadShedLayer::new())
                .layer(tower::limit::ConcurrencyLimitLayer::new(1))
        },
        frpc::LayeredService::new,
    )
    .await;
    let channels = [(); 2].map(|_| Channel::balance_list([Endpoint::from(addr)]));
    for channel in &channels {
        watch_followed(channel, &reporter).await;
    }
    let direct = NamedClient::new(frpc::Client::connect(addr).await.unwrap());
    assert_eq!(direct.whoami(Text::default()).await.unwrap().value, "bare");
    // Past the timeout several times over: the watches are still open, the server still in.
    tokio::time::sleep(Duration::from_millis(300)).await;
    for channel in &channels {
        assert_eq!(channel.connected_endpoints(), 1);
        let reply = NamedClient::new(channel.clone()).whoami(Text::default()).await;
        assert_eq!(reply.unwrap().value, "bare");
    }
}

/// A watch that fails (here a timeout on the health service alone cuts it every 50 ms) says
/// nothing of the server's health: the channel keeps the server in and opens the watch again,
/// so it still follows NOT_SERVING and SERVING.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_health_watch_cut_by_a_layer_opens_again() {
    let (addr, reporter) = serve_bare(
        |builder| builder,
        |health| {
            frpc::LayeredService::new(health)
                .layer(tower::timeout::TimeoutLayer::new(Duration::from_millis(50)))
        },
    )
    .await;
    let channel = Channel::balance_list([quick(Endpoint::from(addr))]);
    watch_followed(&channel, &reporter).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(channel.connected_endpoints(), 1);
    let client = NamedClient::new(channel.clone());
    assert_eq!(client.whoami(Text::default()).await.unwrap().value, "bare");
    watch_followed(&channel, &reporter).await;
}

/// A balanced channel's calls keep their timeouts: a stream waiting for an endpoint that never
/// answers (a black hole: it accepts and says nothing) times out with the channel's timeout,
/// as a unary call does (it waited out the endpoint's connect attempt, then failed with
/// UNAVAILABLE), and an endpoint's own `Endpoint::timeout` bounds the calls that go to it (a
/// balanced channel dropped it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn balanced_calls_keep_their_timeouts() {
    let black_hole = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hole = Channel::balance_list([Endpoint::from(black_hole.local_addr().unwrap())]);
    let client = NamedClient::new(hole.with_timeout(Duration::from_millis(200)));
    let err = within("unary", client.whoami(Text::default())).await.unwrap_err();
    assert_eq!(err.code(), Code::DeadlineExceeded, "{err}");
    let err = within("stream", client.names(Text::default())).await.unwrap_err();
    assert_eq!(err.code(), Code::DeadlineExceeded, "{err}");

    let servers = servers(1).await;
    let endpoint = servers[0].endpoint().timeout(Duration::from_millis(200));
    let channel = Channel::balance_list([endpoint]);
    within("connect", channel.connected(1)).await;
    let held = NamedClient::new(channel.clone());
    let err = within("held", held.hold(Text::default())).await.unwrap_err();
    assert_eq!(err.code(), Code::DeadlineExceeded, "{err}");
    servers[0].stats.gate.add_permits(1);
}

/// A server with no health service: answers with its name.
struct Bare;

impl Named for Bare {
    async fn whoami(&self, _: &frpc::Context, _: Text) -> Result<Text, frpc::Status> {
        Ok(Text::new("bare"))
    }

    async fn flaky(&self, _: &frpc::Context, _: Text) -> Result<Text, frpc::Status> {
        Ok(Text::new("bare"))
    }

    async fn hold(&self, _: &frpc::Context, _: Text) -> Result<Text, frpc::Status> {
        Ok(Text::new("bare"))
    }

    async fn meta(&self, _: &frpc::Context, _: Text) -> Result<Text, frpc::Status> {
        Ok(Text::new("bare"))
    }

    async fn names(
        &self,
        _: &frpc::Context,
        _: Text,
        out: frpc::StreamSender<Text>,
    ) -> Result<(), frpc::Status> {
        out.send(Text::new("bare")).await?;
        Ok(())
    }
}

/// A call an endpoint took runs to its reply when that endpoint stops taking new ones: every
/// endpoint reports NOT_SERVING (the drain before a shutdown the guide recommends), or its
/// endpoint is removed. The call failed with UNAVAILABLE at once while the server still ran it
/// (found by a probe, 2026-11-29), and a retrying layer would have run it twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_in_flight_finishes_when_its_endpoint_stops_taking_calls() {
    for drain in ["not serving", "removed"] {
        let servers = servers(2).await;
        let (channel, changes) = Channel::balance_channel(4);
        for (key, server) in servers.iter().enumerate() {
            changes
                .send(Change::Insert(key, server.endpoint()))
                .await
                .unwrap();
        }
        within("connect", channel.connected(2)).await;
        let client = NamedClient::new(channel.clone());
        let call = tokio::spawn(async move { client.hold(Text::default()).await });
        let busy = within("in flight", async {
            loop {
                if let Some(i) = (0..2).find(|&i| servers[i].stats.active.load(Ordering::SeqCst) > 0) {
                    return i;
                }
                tokio::task::yield_now().await;
            }
        })
        .await;
        match drain {
            "not serving" => servers
                .iter()
                .for_each(|server| server.health.set_all_not_serving()),
            _ => {
                for key in 0..2 {
                    changes.send(Change::Remove(key)).await.unwrap();
                }
            }
        }
        within("no endpoint takes calls", channel.wait_connected(|n| n == 0)).await;
        // Not a wait for readiness: time for a wrong failure of the call to show.
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!call.is_finished(), "{drain}: {:?}", call.await);
        servers[busy].stats.gate.add_permits(1);
        let reply = within("the reply", call).await.unwrap();
        assert!(reply.is_ok(), "{drain}: {reply:?}");
    }
}

/// `state_changes` of a balanced channel reports a change made before `changed()` is called
/// (it waited for the next one), and only changes of the state (it woke with `Ready` when one
/// of two endpoints went down).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn balanced_state_changes_miss_nothing_and_report_only_changes() {
    let mut servers = servers(2).await;
    let slow = |server: &TestServer| {
        let backoff = Duration::from_secs(60);
        server
            .endpoint()
            .backoff(Backoff::default().initial(backoff).max(backoff))
    };
    let channel = Channel::balance_list(servers.iter().map(slow));
    within("connect", channel.connected(2)).await;
    let mut changes = channel.state_changes();
    servers[1].stop().await;
    within("one down", channel.wait_connected(|n| n == 1)).await;
    assert_eq!(channel.state(), frpc::channel::ChannelState::Ready);
    servers[0].stop().await;
    within("both down", channel.wait_connected(|n| n == 0)).await;
    // Both changes happened before this look: it returns the state they led to.
    let state = within("the change", changes.changed()).await;
    assert_ne!(state, frpc::channel::ChannelState::Ready);
    assert_eq!(state, channel.state());
}

/// A balanced channel's endpoints and discovery stop with its last clone, whoever still holds
/// the sender of its changes (they went on dialling, and DNS discovery resolving, for ever).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_balanced_channel_stops_its_discovery() {
    let servers = servers(1).await;
    let (channel, changes) = Channel::balance_channel(4);
    changes
        .send(Change::Insert(0, servers[0].endpoint()))
        .await
        .unwrap();
    within("connect", channel.connected(1)).await;
    drop(channel);
    within("the channel's end closes its changes", changes.closed()).await;

    let addr = servers[0].addr;
    let resolver_alive = Arc::new(());
    let held = resolver_alive.clone();
    let channel = frpc::discover::Dns::new("cluster.test", 0)
        .interval(Duration::from_millis(20))
        .resolver(move |_, _| {
            let _held = &held;
            async move { Ok(vec![addr]) }
        })
        .channel();
    within("connect", channel.connected(1)).await;
    drop(channel);
    within("discovery stops, dropping its resolver", async {
        while Arc::strong_count(&resolver_alive) > 1 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

/// Unary calls under load while one endpoint's key is removed and another key inserted for the
/// same server, again and again (a discovery's answers in a rolling deploy), with a second
/// endpoint connected throughout: no call fails. A call the balancer had just given to the
/// endpoint being removed looked for its connection only once it ran, found the endpoint
/// closed and failed with UNAVAILABLE "the channel is closed" (8 in 14,676 calls, probe33_2).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_an_endpoint_under_load_fails_no_call() {
    let servers = servers(2).await;
    let (channel, changes) = Channel::balance_channel::<usize>(16);
    for (key, server) in servers.iter().enumerate() {
        changes
            .send(Change::Insert(key, server.endpoint()))
            .await
            .unwrap();
    }
    within("connect", channel.connected(2)).await;
    let client = NamedClient::new(channel.with_timeout(Duration::from_secs(5)));
    let stop = tokio_util::sync::CancellationToken::new();
    let callers: Vec<_> = (0..16)
        .map(|_| {
            let (client, stop) = (client.clone(), stop.clone());
            tokio::spawn(async move {
                let (mut ok, mut failed) = (0usize, Vec::new());
                while !stop.is_cancelled() {
                    match client.whoami(Text::default()).await {
                        Ok(_) => ok += 1,
                        Err(err) => failed.push(err.to_string()),
                    }
                }
                (ok, failed)
            })
        })
        .collect();
    for key in 1..200usize {
        changes.send(Change::Remove(key)).await.unwrap();
        changes
            .send(Change::Insert(key + 1, servers[1].endpoint()))
            .await
            .unwrap();
        // Calls between the changes (as many as the changes' pace allows).
        within("calls", client.whoami(Text::default())).await.unwrap();
    }
    stop.cancel();
    let (mut ok, mut failed) = (0, Vec::new());
    for caller in callers {
        let (n, errors) = caller.await.unwrap();
        ok += n;
        failed.extend(errors);
    }
    assert!(
        failed.is_empty(),
        "{} failed of {}: {:?}",
        failed.len(),
        ok + failed.len(),
        &failed[..failed.len().min(5)]
    );
    assert!(ok > 1000, "{ok}");
}

/// A balanced channel used for streams alone (no unary call reads the balancer's changes)
/// keeps applying the changes sent to it: sends no longer blocked for good after twice the
/// channel's capacity, new endpoints were never connected and removed ones kept. And a change
/// whose send returned is in force for the next stream: it opens on the endpoint inserted,
/// never on the one just removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streams_only_channel_applies_every_change() {
    let servers = servers(2).await;
    let (channel, changes) = Channel::balance_channel::<usize>(2);
    let client = NamedClient::new(channel.with_timeout(Duration::from_secs(5)));
    let sent = |change| {
        let changes = changes.clone();
        async move {
            let send = tokio::time::timeout(Duration::from_secs(2), changes.send(change));
            send.await.expect("a send blocked").unwrap();
        }
    };
    for key in 0..12usize {
        let server = &servers[key % 2];
        sent(Change::Insert(key, server.endpoint())).await;
        if key > 0 {
            sent(Change::Remove(key - 1)).await;
        }
        for _ in 0..2 {
            let mut names = within("stream", client.names(Text::default())).await.unwrap();
            let first = within("message", names.message()).await.unwrap().unwrap();
            assert_eq!(first.value, server.name, "change {key}");
        }
    }
    assert_eq!(channel.connected_endpoints(), 1);
    // A unary call at last: the balancer reads the changes left, one per key.
    let reply = within("unary", client.whoami(Text::default())).await.unwrap();
    assert_eq!(reply.value, servers[11 % 2].name);
}

/// A server whose health watch, gated here, holds its first answer: `gate` lets watches
/// through, `opened` counts those waiting or through.
async fn gated_health_server(
    name: &'static str,
    calls: Arc<std::sync::atomic::AtomicUsize>,
) -> (
    SocketAddr,
    frpc::health::HealthReporter,
    Arc<tokio::sync::Semaphore>,
    Arc<std::sync::atomic::AtomicUsize>,
) {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let opened = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (layer_gate, layer_opened) = (gate.clone(), opened.clone());
    let held = tower::layer::layer_fn(move |inner: frpc::middleware::CallService| {
        let inner = Arc::new(tokio::sync::Mutex::new(inner));
        let (gate, opened) = (layer_gate.clone(), layer_opened.clone());
        tower::service_fn(move |call: frpc::CallRequest| {
            let (inner, gate, opened) = (inner.clone(), gate.clone(), opened.clone());
            async move {
                opened.fetch_add(1, Ordering::SeqCst);
                let permit = gate.acquire().await;
                permit
                    .map_err(|_| frpc::Status::internal("gate closed"))?
                    .forget();
                let reply = {
                    let mut inner = inner.lock().await;
                    tower::ServiceExt::ready(&mut *inner).await?;
                    tower::Service::call(&mut *inner, call)
                };
                reply.await
            }
        })
    });
    let (reporter, addr) = serve_counting(name, calls, |health| {
        frpc::LayeredService::new(health).layer(held)
    })
    .await;
    (addr, reporter, gate, opened)
}

/// Serves a `Counted` service called `name` and the health service wrapped by `health`.
async fn serve_counting(
    name: &'static str,
    calls: Arc<std::sync::atomic::AtomicUsize>,
    health: impl FnOnce(frpc::health::HealthServer) -> frpc::LayeredService,
) -> (frpc::health::HealthReporter, SocketAddr) {
    let (reporter, service) = frpc::health::service();
    let bound = frpc::Server::builder()
        .add_service(NamedServer::new(Counted { name, calls }))
        .add_service(health(service))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    (reporter, addr)
}

/// Waits until `count` reaches `n`, yielding between looks.
async fn reaches(count: &std::sync::atomic::AtomicUsize, n: usize) {
    while count.load(Ordering::SeqCst) < n {
        tokio::task::yield_now().await;
    }
}

/// With health checking on, a new connection takes no calls or streams until its server's
/// first health answer says SERVING (gRPC's client-side health checking: CONNECTING until
/// then). A server NOT_SERVING from its start got calls and streams between the connection
/// and that answer (probe33_2: 32 calls and 4 streams over 5 restarts). A server that gives no
/// first answer within the endpoint's connect timeout is used as an unwatched one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_connection_waits_for_its_first_health_answer() {
    let up = servers(1).await;
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (cold, reporter, gate, opened) = gated_health_server("cold", calls.clone()).await;
    reporter.set_not_serving("");
    let channel = Channel::balance_list([up[0].endpoint(), Endpoint::from(cold)]);
    within("up connected", channel.connected(1)).await;
    within("cold's watch open", reaches(&opened, 1)).await;
    let client = NamedClient::new(channel.clone());
    let counts = spread(&client, 40, 4).await;
    assert_eq!(counts.get("s0"), Some(&40), "{counts:?}");
    for _ in 0..4 {
        let mut names = client.names(Text::default()).await.unwrap();
        assert_eq!(names.message().await.unwrap().unwrap().value, "s0");
    }
    // Its first answer, NOT_SERVING: still out.
    gate.add_permits(usize::MAX >> 4);
    let counts = spread(&client, 40, 4).await;
    assert_eq!(counts.get("s0"), Some(&40), "{counts:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    reporter.set_serving("");
    within("cold in", channel.connected(2)).await;
    let counts = spread(&client, 200, 4).await;
    assert!(counts.get("cold").copied().unwrap_or(0) > 0, "{counts:?}");

    // No first answer within the connect timeout: used as unwatched.
    let (silent, _reporter, _gate, opened) = gated_health_server("silent", calls.clone()).await;
    let endpoint = Endpoint::from(silent).connect_timeout(Duration::from_millis(300));
    let channel = Channel::balance_list([endpoint]);
    within("silent's watch open", reaches(&opened, 1)).await;
    assert_eq!(channel.connected_endpoints(), 0);
    within("silent used", channel.connected(1)).await;
    let reply = NamedClient::new(channel).whoami(Text::default()).await.unwrap();
    assert_eq!(reply.value, "silent");
}

/// The health watch does not take the endpoint's call timeout (`Endpoint::timeout`), which
/// bounds a stream's whole life: the watch was cut and opened again every timeout (a 5 ms
/// timeout: 293 opens in 2 s, 8 % of a core).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_health_watch_outlives_the_call_timeout() {
    let watches = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = watches.clone();
    let (_reporter, health) = frpc::health::service();
    let bound = frpc::Server::builder()
        .interceptor(move |call: &frpc::CallRequest| {
            if call.method() == "Watch" {
                counter.fetch_add(1, Ordering::SeqCst);
            }
            Ok(())
        })
        .intercept_health(true)
        .add_service(NamedServer::new(Bare))
        .add_service(health)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    let endpoint = Endpoint::from(addr).timeout(Duration::from_millis(20));
    let channel = Channel::balance_list([endpoint]);
    within("connect", channel.connected(1)).await;
    // Not a wait for readiness: ten call timeouts, for reopened watches to show.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(watches.load(Ordering::SeqCst), 1);
    assert_eq!(channel.connected_endpoints(), 1);
}

/// A server that counts its calls and answers with its name.
struct Counted {
    name: &'static str,
    calls: Arc<std::sync::atomic::AtomicUsize>,
}

impl Named for Counted {
    async fn whoami(&self, _: &frpc::Context, _: Text) -> Result<Text, frpc::Status> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(Text::new(self.name))
    }

    async fn flaky(&self, _: &frpc::Context, _: Text) -> Result<Text, frpc::Status> {
        Ok(Text::new(self.name))
    }

    async fn hold(&self, _: &frpc::Context, _: Text) -> Result<Text, frpc::Status> {
        Ok(Text::new(self.name))
    }

    async fn meta(&self, _: &frpc::Context, _: Text) -> Result<Text, frpc::Status> {
        Ok(Text::new(self.name))
    }

    async fn names(
        &self,
        _: &frpc::Context,
        _: Text,
        out: frpc::StreamSender<Text>,
    ) -> Result<(), frpc::Status> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        out.send(Text::new(self.name)).await?;
        Ok(())
    }
}
