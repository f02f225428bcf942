//! 2,000 connections opened and closed in a loop: file descriptors and connection counts return
//! to baseline. Its own test binary, so the process's descriptors are this test's alone.

mod support;

use std::time::Duration;

use frpc_examples::capture::pb;
use support::*;

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_connections_come_and_go_without_leaking() {
    let running = start(config(Duration::from_secs(5))).await;
    let good = GoodClient::start(running.addr).await;
    // `connect` returns once TCP connects; the server may accept (and open its end) later.
    // The baseline counts both ends of the good client's connection.
    assert!(eventually(Duration::from_secs(5), || running.server.connections() == 1).await);
    let baseline = open_fds();
    for i in 0..2000 {
        let client = pb::EchoServiceClient::connect(running.addr).await.unwrap();
        if i % 10 == 0 {
            client
                .echo(pb::Request {
                    message: "hi".into(),
                    corpus: 0,
                })
                .await
                .unwrap();
        }
        drop(client);
    }
    assert!(
        eventually(Duration::from_secs(5), || running.server.connections() == 1).await,
        "connections left: {}",
        running.server.connections()
    );
    assert!(
        eventually(Duration::from_secs(5), || open_fds() <= baseline).await,
        "fds: {} now, {baseline} before",
        open_fds()
    );
    good.finish().await;
}
