//! The `--probe` peers connect and call: the raw client on the frpc-inline server and the frpc
//! client on the raw echo (which once panicked: the echo sent the extension offer back).

use std::time::Duration;

use frpc_bench::frameworks::{self, Client, Framework};
use frpc_bench::matrix::PROBES;
use frpc_bench::workload::{Body, Callers, Limit, Payload, Window};
use tokio::net::TcpListener;

#[tokio::test]
async fn every_probe_peer_completes_calls_in_both_framings() {
    for framing in [frpc::Framing::Frisbee, frpc::Framing::Legacy] {
        for (name, client, server) in PROBES {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let serving = tokio::spawn(frameworks::serve(server, listener, framing));
            let mut peer = Client::connect(client, addr, framing).await.unwrap();
            let limit = Limit::per_slot(Window::new(Duration::ZERO, Duration::from_secs(60)), 20);
            let body = Body::random(Payload::String, 32);
            let outcome = peer.drive(&body, 4, Callers::Joined, limit).await;
            assert_eq!(outcome.calls, 80, "{name} over {framing:?}");
            serving.abort();
        }
    }
}

/// The decoding echo (`raw-decode`) answers the raw client's calls, string and bytes, in both
/// framings, as the raw echo does.
#[tokio::test]
async fn the_decoding_echo_answers_the_raw_client_in_both_framings() {
    for framing in [frpc::Framing::Frisbee, frpc::Framing::Legacy] {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let serving = tokio::spawn(frameworks::serve(Framework::RawDecode, listener, framing));
        let mut peer = Client::connect(Framework::RawDecode, addr, framing)
            .await
            .unwrap();
        for payload in [Payload::String, Payload::Bytes] {
            let limit = Limit::per_slot(Window::new(Duration::ZERO, Duration::from_secs(60)), 20);
            let body = Body::random(payload, 512);
            let outcome = peer.drive(&body, 4, Callers::Joined, limit).await;
            assert_eq!(outcome.calls, 80, "{payload:?} over {framing:?}");
        }
        serving.abort();
    }
}

/// The frpc client offering extensions to a server that takes none (the raw echo, as Go fRPC)
/// is a clear error naming the client that can call it: once an assertion, which panicked
/// `frpc-bench load --client frpc` against the echo.
#[tokio::test]
async fn a_server_without_extensions_is_an_error_naming_the_plain_client() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let framing = frpc::Framing::Frisbee;
    let serving = tokio::spawn(frameworks::serve(Framework::Raw, listener, framing));
    for client in [Framework::FrpcInline, Framework::FrpcProtobuf] {
        let err = Client::connect(client, addr, framing).await.unwrap_err();
        assert!(err.contains("took no extensions, where"), "{err}");
        assert!(err.contains("frpc-plain"), "{err}");
    }
    // The plain client calls it.
    let mut plain = Client::connect(Framework::FrpcPlain, addr, framing)
        .await
        .unwrap();
    let limit = Limit::per_slot(Window::new(Duration::ZERO, Duration::from_secs(60)), 5);
    let outcome = plain
        .drive(&Body::random(Payload::String, 32), 1, Callers::Tasks, limit)
        .await;
    assert_eq!(outcome.calls, 5);
    serving.abort();
}

/// Every client's connect to a port nobody listens on is an error that names the address.
#[tokio::test]
async fn a_refused_connection_is_an_error_naming_the_address() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    for client in [
        Framework::FrpcInline,
        Framework::FrpcChannel,
        Framework::Tonic,
        Framework::Raw,
    ] {
        let err = Client::connect(client, addr, frpc::Framing::Frisbee)
            .await
            .unwrap_err();
        assert!(err.contains(&addr.to_string()), "{client:?}: {err}");
    }
}
