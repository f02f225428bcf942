//! Transports beyond TCP: any `AsyncRead + AsyncWrite` stream (an in-memory duplex pipe) and
//! Unix domain sockets, for unary calls and streams, with graceful shutdown.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};

use frpc::codegen;
use frpc::{Client, ClientConfig, Server};
use support::*;

fn server() -> Server {
    Server::builder()
        .add_service(TestService::default())
        .build()
        .unwrap()
}

#[tokio::test]
async fn in_memory_duplex_pipe_carries_calls_and_streams() {
    let server = server();
    let (client_end, server_end) = tokio::io::duplex(16 * 1024);
    let serving = tokio::spawn(server.serve_io(server_end));
    let client = Client::from_io(client_end, ClientConfig::default()).unwrap();
    assert_eq!(client.peer_addr(), "0.0.0.0:0".parse().unwrap());
    assert_eq!(call(&client, ECHO, "pipe").await.unwrap(), Text::new("pipe"));
    assert_eq!(server.connections(), 1);
    // Larger than the pipe's buffer: written in pieces.
    let big = "x".repeat(100_000);
    assert_eq!(call(&client, ECHO, &big).await.unwrap().value.len(), big.len());
    let err = call(&client, FAIL, "no").await.unwrap_err();
    assert_eq!(err.status().unwrap().message(), "failed: no");
    let mut count = codegen::call_server_streaming::<Text, Text>(&client, COUNT, &Text::new("4"))
        .await
        .unwrap();
    let mut got = Vec::new();
    while let Some(item) = count.message().await.unwrap() {
        got.push(item.value);
    }
    assert_eq!(got, ["0", "1", "2", "3"]);
    let mut chat = codegen::call_bidi::<Text, Text>(&client, CHAT).await.unwrap();
    chat.send(Text::new("a")).await.unwrap();
    assert_eq!(chat.message().await.unwrap(), Some(Text::new("a")));
    chat.close_send().await.unwrap();
    assert_eq!(chat.message().await.unwrap(), None);
    // The client closing ends the server's side.
    client.close();
    serving.await.unwrap();
    assert_eq!(server.connections(), 0);
}

/// Takeover is TCP only, and a stream that is not refuses it up front: a handler's
/// `take_connection` fails (the call gets the error) and the connection goes on, where it once
/// returned `Ok` and then closed the connection; `into_raw` says why. An invalid configuration
/// is refused as `connect` refuses it (a zero ping interval made the heartbeat panic).
#[tokio::test]
async fn takeover_and_bad_configs_are_refused_on_other_streams() {
    let server = server();
    let (client_end, server_end) = tokio::io::duplex(16 * 1024);
    tokio::spawn(server.serve_io(server_end));
    let client = Client::from_io(client_end, ClientConfig::default()).unwrap();
    let err = call(&client, UPGRADE, "raw").await.unwrap_err();
    assert!(err.to_string().contains("takeover is TCP only"), "{err}");
    assert_eq!(
        call(&client, ECHO, "still here").await.unwrap(),
        Text::new("still here")
    );
    let err = client.into_raw().await.unwrap_err();
    assert!(err.to_string().contains("takeover is TCP only"), "{err}");

    let mut bad = ClientConfig::default();
    bad.connection.ping_interval = std::time::Duration::ZERO;
    let (client_end, _server_end) = tokio::io::duplex(1024);
    let err = Client::from_io(client_end, bad.clone()).unwrap_err();
    assert!(err.to_string().contains("ping_interval"), "{err}");
    #[cfg(unix)]
    {
        let err = Client::connect_unix(socket_path(), bad).await.unwrap_err();
        assert!(err.to_string().contains("ping_interval"), "{err}");
    }
}

#[tokio::test]
async fn a_dropped_serve_io_future_is_no_longer_counted() {
    let server = server();
    let (_client_end, server_end) = tokio::io::duplex(1024);
    let mut serving = Box::pin(server.serve_io(server_end));
    assert_eq!(server.connections(), 0, "counted from its first poll");
    std::future::poll_fn(|cx| {
        assert!(serving.as_mut().poll(cx).is_pending());
        std::task::Poll::Ready(())
    })
    .await;
    assert_eq!(server.connections(), 1);
    drop(serving);
    assert_eq!(server.connections(), 0);
}

#[cfg(unix)]
fn socket_path() -> std::path::PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("frpc-test-{}-{n}.sock", std::process::id()))
}

#[cfg(unix)]
#[tokio::test]
async fn unix_socket_serves_many_clients_and_shuts_down_gracefully() {
    let path = socket_path();
    let _ = std::fs::remove_file(&path);
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    let server = server();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = {
        let server = server.clone();
        tokio::spawn(async move {
            server
                .serve_unix_with_shutdown(listener, async {
                    let _ = stopped.await;
                })
                .await
        })
    };
    let mut clients = Vec::new();
    for i in 0..3 {
        let client = Client::connect_unix(&path, ClientConfig::default())
            .await
            .unwrap();
        let value = format!("unix {i}");
        assert_eq!(call(&client, ECHO, &value).await.unwrap(), Text::new(value));
        clients.push(client);
    }
    assert_eq!(server.connections(), 3);
    let mut join = codegen::call_client_streaming::<Text, Text>(&clients[0], JOIN)
        .await
        .unwrap();
    for part in ["a", "b"] {
        join.send(Text::new(part)).await.unwrap();
    }
    assert_eq!(join.close_and_recv().await.unwrap(), Text::new("a,b"));

    stop.send(()).unwrap();
    serving.await.unwrap().unwrap();
    for client in &clients {
        client.closed().await;
    }
    assert_eq!(server.connections(), 0);
    std::fs::remove_file(&path).unwrap();
}

#[cfg(unix)]
#[tokio::test]
async fn connect_unix_to_a_missing_socket_fails() {
    let err = Client::connect_unix(socket_path(), ClientConfig::default())
        .await
        .unwrap_err();
    assert!(matches!(err, frpc::Error::Io(_)), "{err:?}");
}
