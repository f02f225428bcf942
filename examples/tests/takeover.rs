//! Connection takeover: authenticate with an RPC, then a raw protocol on the same socket.

use std::time::Duration;

use frpc_examples::takeover;
use tokio::net::TcpListener;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_byte_is_lost_at_the_switch_in_either_direction() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(takeover::serve(listener));
    for round in 0..20 {
        let mut config = frpc::ClientConfig::default();
        // A heartbeat crossing the switch would be raw bytes to the other side (as in Go).
        config.connection.ping_interval = Duration::from_secs(3600);
        let (stream, unparsed) = takeover::connect(addr, config).await.unwrap();
        let lines: Vec<u8> = (0..20_000)
            .flat_map(|i| format!("line {round}-{i}\n").into_bytes())
            .collect();
        let echoed = takeover::talk(stream, unparsed, &lines).await.unwrap();
        assert!(
            echoed == lines.to_ascii_uppercase(),
            "round {round}: echo differs"
        );
    }
}

#[tokio::test]
async fn a_bad_token_keeps_the_connection_in_frpc() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(takeover::serve(listener));
    let gate = takeover::pb::GateClient::connect(addr).await.unwrap();
    let err = gate
        .authenticate(takeover::pb::Credentials { token: "nope".into() })
        .await
        .unwrap_err();
    assert_eq!(err.status().map(|s| s.message()), Some("bad token"));
    let ok = gate
        .authenticate(takeover::pb::Credentials {
            token: takeover::TOKEN.into(),
        })
        .await
        .unwrap();
    assert!(ok.accepted);
}
