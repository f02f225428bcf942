//! The cluster demo as a test: three real server processes (the `cluster` binary) behind one
//! balanced channel under load; one is killed (SIGKILL) and started again on its port. Calls
//! keep succeeding on the other two, the only failures are `UNAVAILABLE` ones of calls on the
//! killed node, and the restarted node gets traffic again within a few seconds.

use std::path::Path;
use std::time::{Duration, Instant};

use frpc::channel::Backoff;
use frpc::{Channel, Code, Endpoint};
use frpc_examples::cluster::{Load, Process};

const WORKERS: usize = 8;

/// Bounds a step: a hang fails the test instead of stalling CI.
async fn within<T>(what: &str, work: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), work)
        .await
        .unwrap_or_else(|_| panic!("{what}: not within 20 s"))
}

async fn spawn(name: &str, addr: &str) -> Process {
    let exe = Path::new(env!("CARGO_BIN_EXE_cluster"));
    let (name, addr) = (name.to_owned(), addr.to_owned());
    tokio::task::spawn_blocking(move || Process::spawn(exe, &name, &addr))
        .await
        .unwrap()
        .expect("the node starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_node_is_skipped_and_rejoins_after_restart() {
    let mut nodes = Vec::new();
    for name in ["s0", "s1", "s2"] {
        nodes.push(spawn(name, "127.0.0.1:0").await);
    }
    let backoff = Backoff::default()
        .initial(Duration::from_millis(20))
        .max(Duration::from_millis(200));
    let channel = Channel::balance_list(nodes.iter().map(|n| Endpoint::from(n.addr).backoff(backoff)))
        .with_timeout(Duration::from_secs(10));
    within("connect", channel.connected(3)).await;

    let load = Load::start(channel.clone(), WORKERS);
    within(
        "traffic on every node",
        load.wait_until(|t| ["s0", "s1", "s2"].iter().all(|n| t.of(n) >= 50)),
    )
    .await;

    nodes[1].kill().unwrap();
    within("the channel sees s1 go", channel.wait_connected(|n| n == 2)).await;
    // Calls in flight on s1 when it went may still end well (their replies were read before
    // the connection's end): the count starts once they are over.
    let at_kill = within("calls in flight end", load.settle()).await;
    // Calls go on, on s0 and s2 only.
    let down = within(
        "calls while s1 is down",
        load.wait_until(|t| t.total() >= at_kill.total() + 600),
    )
    .await;
    assert_eq!(down.of("s1"), at_kill.of("s1"), "{down:?}");
    assert!(down.of("s0") > at_kill.of("s0") + 100, "{down:?}");
    assert!(down.of("s2") > at_kill.of("s2") + 100, "{down:?}");
    // Only calls in flight on s1 when it died failed, each with UNAVAILABLE.
    assert!(down.errors.len() <= 2 * WORKERS, "{:?}", down.errors);
    for (code, message) in &down.errors {
        assert_eq!(*code, Code::Unavailable, "{message}");
    }

    let restarted = Instant::now();
    let port = nodes[1].addr.to_string();
    nodes[1] = spawn("s1", &port).await;
    within("s1 rejoins", channel.connected(3)).await;
    let back = within(
        "traffic on s1 again",
        load.wait_until(|t| t.of("s1") > down.of("s1") + 50),
    )
    .await;
    assert!(
        restarted.elapsed() < Duration::from_secs(5),
        "{:?}",
        restarted.elapsed()
    );

    let end = load.stop().await;
    assert_eq!(
        end.errors.len(),
        down.errors.len(),
        "no failure after the kill: {:?}",
        end.errors
    );
    assert!(back.of("s1") > down.of("s1"));
}
