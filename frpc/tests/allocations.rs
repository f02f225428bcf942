//! Heap allocations per unary echo (32 and 512 bytes), client side and server side counted
//! apart: the server and the client each run on a current-thread runtime of their own thread,
//! and `allocation-counter`'s global allocator counts per thread. Prints the figures (run with
//! `--nocapture`) and holds them under a ceiling so a change that adds allocations to the hot
//! path fails here.

mod support;

use std::time::Duration;

use frpc::{Client, Concurrency};
use support::*;
use tokio::sync::oneshot;

const WARM_UP: usize = 500;
const CALLS: usize = 5_000;

fn quiet<T>(mut config: T, connection: impl FnOnce(&mut T) -> &mut frpc::ConnectionConfig) -> T {
    let c = connection(&mut config);
    c.ping_interval = Duration::from_secs(3600);
    c.idle_timeout = Duration::from_secs(7200);
    config
}

/// Allocations counted on this thread while `rt` runs `fut`.
fn count_on<F: std::future::Future>(rt: &tokio::runtime::Runtime, fut: F) -> (F::Output, u64) {
    let mut out = None;
    let info = allocation_counter::measure(|| out = Some(rt.block_on(fut)));
    (out.expect("block_on returned"), info.count_total)
}

/// Allocations per call on the client's thread and on the server's, echoing `size` bytes.
fn measure(mode: Concurrency, size: usize) -> (f64, f64) {
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (warm_tx, warm_rx) = oneshot::channel::<()>();
    let (done_tx, done_rx) = oneshot::channel::<()>();
    let server = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        // The server's tasks run only inside `block_on`: first through the warm-up, then
        // through the measured calls, counted apart.
        let running = rt.block_on(start(quiet(config(mode), |c| &mut c.connection)));
        addr_tx.send(running.addr).unwrap();
        rt.block_on(async { warm_rx.await.unwrap() });
        count_on(&rt, async { done_rx.await.unwrap() }).1
    });
    let addr = addr_rx.recv().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let config = quiet(frpc::ClientConfig::default(), |c| &mut c.connection);
    let client = rt.block_on(Client::connect_with(addr, config)).unwrap();
    let payload = "x".repeat(size);
    rt.block_on(async {
        for _ in 0..WARM_UP {
            call(&client, ECHO, &payload).await.unwrap();
        }
    });
    warm_tx.send(()).unwrap();
    let ((), client_allocations) = count_on(&rt, async {
        for _ in 0..CALLS {
            call(&client, ECHO, &payload).await.unwrap();
        }
    });
    done_tx.send(()).unwrap();
    let server_allocations = server.join().unwrap();
    let per_call = |n: u64| n as f64 / CALLS as f64;
    (per_call(client_allocations), per_call(server_allocations))
}

/// Allocations that belong to the messages, not to frpc: on the client the caller's request
/// `Text` and the decoded reply each own a `String`; on the server the decoded request does
/// (the handler hands it back as the reply).
const CLIENT_MESSAGE_FIELDS: f64 = 2.0;
const SERVER_MESSAGE_FIELDS: f64 = 1.0;
/// What frpc itself may allocate per call on each side (issue #13's target; #29: nothing beyond
/// the message). On the client nothing: the encoded request is cut from the thread's chunk of
/// small encodings, and the reply waits in the call's entry of the in-flight table (no oneshot
/// channel). On the server nothing either: the handler's future runs in the connection's slot,
/// in the allocation of the call before it, and the encoded reply is cut from the chunk too. The
/// hundredth is for a chunk replaced now and then (one per 8 KiB of encodings at most). A
/// 512-byte message encodes to a few bytes more, still a small encoding (it took a buffer of
/// its own on each side until the limit went from 512 bytes to 1 KiB).
const CLIENT_CEILING: f64 = 0.01;
const SERVER_CEILING: f64 = 0.01;

#[test]
fn allocations_per_unary_echo() {
    for (mode, size) in [
        (Concurrency::Inline, 32),
        (Concurrency::PerRpc, 32),
        (Concurrency::Inline, 512),
    ] {
        let (client, server) = measure(mode, size);
        let (client_frpc, server_frpc) = (client - CLIENT_MESSAGE_FIELDS, server - SERVER_MESSAGE_FIELDS);
        println!(
            "{mode:?}, {size} B: client {client:.2} allocations per call ({client_frpc:.2} frpc's), \
             server {server:.2} ({server_frpc:.2} frpc's)"
        );
        assert!(
            client_frpc <= CLIENT_CEILING,
            "{mode:?}, {size} B: client {client:.2} allocations per call"
        );
        assert!(
            server_frpc <= SERVER_CEILING,
            "{mode:?}, {size} B: server {server:.2} allocations per call"
        );
    }
}
