//! Bind-then-serve: `Builder::bind` and `Server::bind` give the address before serving, so a
//! client connects without waiting for anything.

mod support;

use std::sync::Arc;

use frpc::{Client, Server};
use support::*;
use tokio::sync::Notify;

#[tokio::test]
async fn builder_bind_reports_the_port_and_serves_once_spawned() {
    let bound = Server::builder()
        .add_service(TestService::default())
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    assert_ne!(addr.port(), 0);
    assert!(addr.ip().is_loopback());
    // Connecting before the server runs: the connection waits in the backlog.
    let client = Client::connect(addr).await.unwrap();
    let server = bound.server().clone();
    let serving = tokio::spawn(bound.serve());
    assert_eq!(call(&client, ECHO, "hi").await.unwrap(), Text::new("hi"));
    assert_eq!(server.connections(), 1);
    serving.abort();
}

#[tokio::test]
async fn server_bind_twice_serves_both_listeners_with_graceful_shutdown() {
    let server = Server::builder()
        .add_service(TestService::default())
        .build()
        .unwrap();
    let first = server.bind("127.0.0.1:0").await.unwrap();
    let second = server.bind("127.0.0.1:0").await.unwrap();
    assert_ne!(first.local_addr(), second.local_addr());
    let (a, b) = (first.local_addr(), second.local_addr());
    let stop = Arc::new(Notify::new());
    let signal = stop.clone();
    let one = tokio::spawn(first.serve_with_shutdown(async move { signal.notified().await }));
    let two = tokio::spawn(second.serve());
    let (ca, cb) = (
        Client::connect(a).await.unwrap(),
        Client::connect(b).await.unwrap(),
    );
    assert_eq!(call(&ca, ECHO, "a").await.unwrap(), Text::new("a"));
    assert_eq!(call(&cb, ECHO, "b").await.unwrap(), Text::new("b"));
    stop.notify_one();
    one.await.unwrap().unwrap();
    ca.closed().await;
    assert_eq!(call(&cb, ECHO, "still").await.unwrap(), Text::new("still"));
    two.abort();
}

#[tokio::test]
async fn bind_reports_address_in_use() {
    let taken = Server::builder().bind("127.0.0.1:0").await.unwrap();
    let err = Server::builder().bind(taken.local_addr()).await.unwrap_err();
    // As `serve(addr)` reports it: the address, and why.
    assert!(
        matches!(err, frpc::Error::Bind { addr, .. } if addr == taken.local_addr()),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .starts_with(&format!("cannot bind {}: ", taken.local_addr())),
        "{err}"
    );
}

#[tokio::test]
async fn into_parts_gives_the_listener_back() {
    let bound = Server::builder().bind("127.0.0.1:0").await.unwrap();
    let addr = bound.local_addr();
    let (server, listener) = bound.into_parts();
    assert_eq!(listener.local_addr().unwrap(), addr);
    let serving = tokio::spawn(async move { server.serve_listener(listener).await });
    let client = Client::connect(addr).await.unwrap();
    assert_eq!(client.peer_addr(), addr);
    serving.abort();
}
