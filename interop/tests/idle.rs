//! Idle connections are kept up by heartbeats alone: a Go peer drops a connection that receives
//! nothing for 5 s, and frpc drops one after 5 s of silence too. Each check stays idle 12 s; all
//! four (Go client → Rust server and Rust client → Go server, in both framings) run at once.

use std::time::{Duration, Instant};

use frpc::Framing;
use frpc_examples::capture::pb::{EchoServiceClient, Request};
use frpc_interop::{GoServer, RustServer, client_config, frisbee_version, run_go_client};

const IDLE: Duration = Duration::from_secs(12);

async fn go_client_idle(framing: Framing) {
    let server = RustServer::start(framing).await;
    let run = run_go_client(framing, server.addr(), "idle", Duration::from_secs(60)).await;
    assert!(run.success && run.report.contains("PASS idle"), "{}", run.report);
}

async fn rust_client_idle(framing: Framing) {
    let mut server = GoServer::start(framing).await;
    let client = frpc::Client::connect_with(server.addr(), client_config(framing))
        .await
        .map(EchoServiceClient::new)
        .expect("connect");
    let call = |message: &'static str| {
        let client = client.clone();
        async move {
            tokio::time::timeout(
                Duration::from_secs(10),
                client.echo(Request {
                    message: message.into(),
                    ..Default::default()
                }),
            )
            .await
            .unwrap_or_else(|_| panic!("Echo {message:?} hung"))
            .unwrap_or_else(|e| panic!("Echo {message:?} (frisbee-go {}): {e}", frisbee_version(framing)))
        }
    };
    assert_eq!(call("before idle").await.message, "before idle");
    let start = Instant::now();
    tokio::time::sleep(IDLE).await; // the subject of the test
    assert!(start.elapsed() >= IDLE);
    assert!(!client.client().is_closed(), "the connection dropped while idle");
    assert_eq!(call("after 12 s idle").await.message, "after 12 s idle");
    assert!(server.is_running());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_12s_kept_up_by_heartbeats_both_directions_both_framings() {
    let start = Instant::now();
    tokio::join!(
        go_client_idle(Framing::Legacy),
        go_client_idle(Framing::Frisbee),
        rust_client_idle(Framing::Legacy),
        rust_client_idle(Framing::Frisbee),
    );
    assert!(start.elapsed() >= IDLE);
}
