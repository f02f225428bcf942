//! A connection during a graceful shutdown, as HTTP/2's GOAWAY has it: the server reads on,
//! refusing the calls and streams started after the shutdown began with UNAVAILABLE at once
//! (their clients may try elsewhere), while the calls and streams already running finish,
//! client streams still sending included. Before (found by a probe, 2026-11-29), the reader
//! stopped: a late call waited until the connection closed at the grace, and a client stream
//! whose client was still sending could not finish.

mod support;

use std::time::Duration;

use frpc::{ClientConfig, Code, Framing, ServerConfig};
use support::*;

const LIMIT: Duration = Duration::from_secs(20);

async fn within<T>(what: &str, work: impl Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, work)
        .await
        .unwrap_or_else(|_| panic!("{what}: not within {LIMIT:?}"))
}

/// A server with a long grace whose connection from `client` runs a GATED call, then shuts
/// down; returns once the connection refuses new calls (an ECHO made until one is refused:
/// the calls before the reader saw the shutdown are served), with the refusal.
async fn draining(server: &Running, client: &frpc::Client) -> frpc::Error {
    let running = tokio::spawn({
        let client = client.clone();
        async move { call(&client, GATED, "running").await }
    });
    within("the gated call", gated_started(server, 1)).await;
    server.shutdown.notify_one();
    let refused = within("a refused call", async {
        loop {
            // Each late call is answered at once, served or refused: none waits for the grace.
            match within("a late call", call(client, ECHO, "late")).await {
                Ok(reply) => assert_eq!(reply.value, "late"),
                Err(err) => return err,
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
    server.service.state.gate.add_permits(1);
    let reply = within("the running call", running).await.unwrap();
    assert_eq!(
        reply.unwrap().value,
        "running",
        "the call running at the shutdown answers"
    );
    refused
}

fn long_grace(framing: Framing) -> ServerConfig {
    let mut config = ServerConfig::default().shutdown_grace(Duration::from_secs(60));
    config.connection.framing = framing;
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_and_streams_started_during_the_drain_are_refused_at_once() {
    let server = start(long_grace(Framing::Frisbee)).await;
    let client = frpc::Client::connect(server.addr).await.unwrap();
    assert_eq!(client.negotiation().await, frpc::Negotiated::Extensions);
    let refused = draining(&server, &client).await;
    assert_eq!(refused.code(), Code::Unavailable, "{refused}");
    assert!(refused.to_string().contains("shutting down"), "{refused}");
    let stream = within(
        "a late stream",
        frpc::codegen::call_server_streaming::<Text, Text>(&client, COUNT, &Text::new("3")),
    )
    .await;
    let err = stream.expect_err("a stream opened during the drain is refused");
    assert_eq!(err.code(), Code::Unavailable, "{err}");
    within("the shutdown", server.done).await.unwrap().unwrap();
}

/// A plain peer (a Go client) gets the refusal as an error reply, in both framings: the text
/// says why, where it waited for the connection's end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_peer_gets_the_refusal_as_an_error_reply() {
    for framing in [Framing::Frisbee, Framing::Legacy] {
        let server = start(long_grace(framing)).await;
        let mut config = ClientConfig::default();
        config.extensions = false;
        config.connection.framing = framing;
        let client = frpc::Client::connect_with(server.addr, config).await.unwrap();
        let refused = draining(&server, &client).await;
        assert!(
            refused.to_string().contains("the server is shutting down"),
            "{framing:?}: {refused}"
        );
        within("the shutdown", server.done).await.unwrap().unwrap();
    }
}

/// A client stream open when the shutdown begins takes the requests its client sends after,
/// and its end, and answers: the docs promised it, and it waited for the grace instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_stream_open_at_the_shutdown_finishes() {
    let server = start(long_grace(Framing::Frisbee)).await;
    let client = frpc::Client::connect(server.addr).await.unwrap();
    assert_eq!(client.negotiation().await, frpc::Negotiated::Extensions);
    let mut upload = frpc::codegen::call_client_streaming::<Text, Text>(&client, JOIN)
        .await
        .unwrap();
    upload.send(Text::new("a")).await.unwrap();
    draining(&server, &client).await;
    upload.send(Text::new("b")).await.unwrap();
    let reply = within("the upload's reply", upload.close_and_recv())
        .await
        .unwrap();
    assert_eq!(reply.value, "a,b");
    within("the shutdown", server.done).await.unwrap().unwrap();
}
