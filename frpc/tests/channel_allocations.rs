//! A call through a one-endpoint `Channel` allocates no more than the same call through a plain
//! `Client` (the channel reads the current connection and calls it directly: no boxed future,
//! no task hop). Client-side heap allocations per unary 32-byte echo, counted on the client's
//! own current-thread runtime with `allocation-counter`.

mod support;

use std::time::Duration;

use frpc::{Caller, Channel, Client, Concurrency, Endpoint};
use support::*;

const WARM_UP: usize = 500;
const CALLS: usize = 5_000;

fn quiet(mut config: frpc::ClientConfig) -> frpc::ClientConfig {
    config.connection.ping_interval = Duration::from_secs(3600);
    config.connection.idle_timeout = Duration::from_secs(7200);
    config
}

/// Allocations per call on this thread for `CALLS` echoes through `caller`.
fn per_call(rt: &tokio::runtime::Runtime, caller: &impl Caller) -> f64 {
    let payload = "x".repeat(32);
    let echo =
        || async { frpc::codegen::call_unary::<Text, Text>(caller, ECHO, Text::new(payload.as_str())).await };
    rt.block_on(async {
        for _ in 0..WARM_UP {
            echo().await.unwrap();
        }
    });
    let info = allocation_counter::measure(|| {
        rt.block_on(async {
            for _ in 0..CALLS {
                echo().await.unwrap();
            }
        })
    });
    info.count_total as f64 / CALLS as f64
}

#[test]
fn a_channel_call_allocates_no_more_than_a_client_call() {
    // The server on a runtime of its own thread, outside the count.
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut server_config = config(Concurrency::Inline);
            server_config.connection.ping_interval = Duration::from_secs(3600);
            let running = start(server_config).await;
            addr_tx.send(running.addr).unwrap();
            std::future::pending::<()>().await
        })
    });
    let addr = addr_rx.recv().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = rt
        .block_on(Client::connect_with(addr, quiet(frpc::ClientConfig::default())))
        .unwrap();
    let channel: Channel = rt
        .block_on(
            Endpoint::from(addr)
                .client_config(quiet(frpc::ClientConfig::default()))
                .connect(),
        )
        .unwrap();
    let by_client = per_call(&rt, &client);
    let by_channel = per_call(&rt, &channel);
    println!("allocations per call: client {by_client:.3}, channel {by_channel:.3}");
    assert!(
        by_channel <= by_client + 0.01,
        "client {by_client:.3}, channel {by_channel:.3}"
    );
}
