//! Connecting when the network misbehaves: a name whose first address drops SYNs, addresses
//! that all fail, a reconnect backoff with odd settings, a DNS lookup that fails once.
//!
//! The black hole is a loopback listener whose accept queue is full (`listen(0)` and a
//! connection never accepted): Linux drops further SYNs, so a connect there gets no answer, as
//! with a host that is down, without any external network.
// The services are `#[frpc::service]`s: without the `macros` feature there is nothing to test.
#![cfg(feature = "macros")]

mod channel_support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use channel_support::*;
use frpc::channel::Backoff;
use frpc::{Client, ClientConfig, Code, Endpoint, Error};
use tokio::net::{TcpListener, TcpSocket, TcpStream};

/// A loopback address where connects get no answer: the listener and the connection filling
/// its accept queue must live as long as the hole is used.
struct BlackHole {
    addr: SocketAddr,
    _listener: TcpListener,
    _queued: Vec<TcpStream>,
}

/// Fills a `listen(0)` listener's queue until a connect goes unanswered, which proves the
/// hole (a kernel that answered regardless would fail here rather than pass a test vacuously).
async fn black_hole() -> BlackHole {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(0).unwrap();
    let addr = listener.local_addr().unwrap();
    let mut queued = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_millis(200), TcpStream::connect(addr)).await {
            Ok(stream) => queued.push(stream.unwrap()),
            Err(_) => break,
        }
        assert!(
            queued.len() < 8,
            "the accept queue never fills: no black hole on this kernel"
        );
    }
    BlackHole {
        addr,
        _listener: listener,
        _queued: queued,
    }
}

/// An address nobody listens on (connects are refused at once).
fn refused() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

fn connect_timeout(limit: Duration) -> ClientConfig {
    ClientConfig::default().connect_timeout(limit)
}

/// A name resolving to [black hole, live server] connects to the live one well within the
/// connect timeout: the silent first address does not take the whole timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_first_address_leaves_time_for_the_next() {
    let hole = black_hole().await;
    let server = TestServer::start("live", "127.0.0.1:0").await;
    let addrs = [hole.addr, server.addr];
    let started = Instant::now();
    let client = within(
        "connect",
        Client::connect_with(&addrs[..], connect_timeout(Duration::from_secs(3))),
    )
    .await
    .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(client.peer_addr(), server.addr);
    let reply = NamedClient::new(client).whoami(Text::default()).await.unwrap();
    assert_eq!(reply.value, "live");
}

/// With a connect timeout too short for 250 ms per silent address, every address still gets
/// its turn: three addresses in 600 ms, the third tried 400 ms in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_timeout_is_shared_by_the_addresses() {
    let holes = [black_hole().await, black_hole().await];
    let server = TestServer::start("live", "127.0.0.1:0").await;
    let addrs = [holes[0].addr, holes[1].addr, server.addr];
    let config = connect_timeout(Duration::from_millis(600));
    let client = within("connect", Client::connect_with(&addrs[..], config))
        .await
        .unwrap();
    assert_eq!(client.peer_addr(), server.addr);
}

/// When no address connects, the error names every one and why it failed; a timeout is of
/// kind `TimedOut` and comes after one connect timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_every_address_fails_the_error_names_them_all() {
    let (first, second) = (refused(), refused());
    let err = within("refused", Client::connect(&[first, second][..]))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Connect { addr, .. } if *addr == second),
        "{err:?}"
    );
    assert_eq!(err.code(), Code::Unavailable);
    let text = err.to_string();
    assert!(
        text.contains(&first.to_string()) && text.contains(&second.to_string()),
        "{text}"
    );

    let hole = black_hole().await;
    let gone = refused();
    let started = Instant::now();
    let config = connect_timeout(Duration::from_millis(500));
    let err = within("silent", Client::connect_with(&[hole.addr, gone][..], config))
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let Error::Connect { addr, source } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(
        (*addr, source.kind()),
        (hole.addr, std::io::ErrorKind::TimedOut),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("no answer within 500ms") && text.contains(&gone.to_string()),
        "{text}"
    );
}

/// A NaN jitter (which `f64::clamp` keeps) is no jitter: the reconnect task does not panic, so
/// calls on a channel whose server left fail with `Unavailable` instead of hanging, and the
/// channel gets its server back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nan_jitter_does_not_stop_reconnecting() {
    let mut server = TestServer::start("a", "127.0.0.1:0").await;
    let backoff = Backoff::default()
        .initial(Duration::from_millis(20))
        .jitter(f64::NAN);
    let channel = server.endpoint().backoff(backoff).connect().await.unwrap();
    let client = NamedClient::new(channel.clone());
    client.whoami(Text::default()).await.unwrap();
    server.stop().await;
    let call = tokio::time::timeout(Duration::from_secs(5), client.whoami(Text::default()));
    let err = call
        .await
        .expect("the call hangs: the reconnect task died")
        .unwrap_err();
    assert_eq!(err.code(), Code::Unavailable, "{err:?}");
    server.restart().await;
    within("reconnect", channel.connected(1)).await;
    assert_eq!(client.whoami(Text::default()).await.unwrap().value, "a");
}

/// A listener that accepts and closes each connection at once, counting them; the count
/// notifies `each`.
async fn closing_listener() -> (SocketAddr, Arc<AtomicUsize>, Arc<tokio::sync::Notify>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let each = Arc::new(tokio::sync::Notify::new());
    let (count, notify) = (accepted.clone(), each.clone());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            drop(stream);
            count.fetch_add(1, Ordering::SeqCst);
            notify.notify_one();
        }
    });
    (addr, accepted, each)
}

/// A zero `initial` or `max` is raised to `Backoff::FLOOR`: a server that accepts and closes
/// at once is redialled at most once per floor, not in a tight loop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zero_backoff_is_raised_to_the_floor() {
    const RECONNECTS: u32 = 15;
    for backoff in [
        Backoff::default().initial(Duration::ZERO).jitter(0.0),
        Backoff::default().initial(Duration::ZERO).max(Duration::ZERO),
    ] {
        let (addr, accepted, each) = closing_listener().await;
        let channel = Endpoint::from(addr).backoff(backoff).connect_lazy();
        let _ = NamedClient::new(channel.clone()).whoami(Text::default()).await;
        let wait_for = |n: usize| {
            let (accepted, each) = (accepted.clone(), each.clone());
            async move {
                while accepted.load(Ordering::SeqCst) < n {
                    each.notified().await;
                }
            }
        };
        within("a first connection", wait_for(1)).await;
        let started = Instant::now();
        within("reconnects", wait_for(1 + RECONNECTS as usize)).await;
        // Each redial waited at least the floor (sleeps never end early).
        let elapsed = started.elapsed();
        assert!(
            elapsed >= Backoff::FLOOR * (RECONNECTS - 1),
            "{backoff:?}: {RECONNECTS} in {elapsed:?}"
        );
        drop(channel);
    }
}

/// A DNS lookup that fails (a name not registered yet) is retried after a short backoff, not
/// after the whole 30 s interval: the channel finds its server within a second or so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_lookup_is_retried_before_the_interval() {
    let server = TestServer::start("found", "127.0.0.1:0").await;
    let addr = server.addr;
    let lookups = Arc::new(AtomicUsize::new(0));
    let counted = lookups.clone();
    let channel = frpc::discover::Dns::new("svc.test", addr.port())
        .interval(Duration::from_secs(30))
        .resolver(move |_, _| {
            let n = counted.fetch_add(1, Ordering::SeqCst);
            async move {
                match n {
                    0 => Err(std::io::Error::other("NXDOMAIN (not registered yet)")),
                    _ => Ok(vec![addr]),
                }
            }
        })
        .channel();
    let client = NamedClient::new(channel.clone());
    let err = client.whoami(Text::default()).await.unwrap_err();
    assert!(err.to_string().contains("NXDOMAIN"), "{err}");
    tokio::time::timeout(Duration::from_secs(5), channel.connected(1))
        .await
        .expect("no second lookup within 5 s");
    assert_eq!(client.whoami(Text::default()).await.unwrap().value, "found");
    assert_eq!(lookups.load(Ordering::SeqCst), 2);
}
