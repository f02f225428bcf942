//! The `--probe` peers connect and call: the raw client on the frpc-inline server and the frpc
//! client on the raw echo (which once panicked: the echo sent the extension offer back).

use std::time::Duration;

use frpc_bench::frameworks::{self, Client};
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
            let mut peer = Client::connect(client, addr, framing).await;
            let limit = Limit::per_slot(Window::new(Duration::ZERO, Duration::from_secs(60)), 20);
            let body = Body::random(Payload::String, 32);
            let outcome = peer.drive(&body, 4, Callers::Joined, limit).await;
            assert_eq!(outcome.calls, 80, "{name} over {framing:?}");
            serving.abort();
        }
    }
}
