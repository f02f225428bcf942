//! A real Go frisbee-go client against a Rust server with middleware and the health service:
//! every capture scenario passes through the layers unchanged (the same bytes as without
//! them), the health service's operations sit beside the Go-numbered methods, and a call an
//! interceptor rejects reaches the Go client as an fRPC error.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use frpc::Framing;
use frpc_interop::{RustServer, run_go_client};

const TIMEOUT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_scenario_passes_through_layers_and_beside_health() {
    for framing in [Framing::Legacy, Framing::Frisbee] {
        let seen = Arc::new(AtomicUsize::new(0));
        let count = seen.clone();
        let server = RustServer::start_with(framing, move |builder| {
            let (_reporter, health) = frpc::health::service();
            builder
                .interceptor(move |call: &frpc::CallRequest| {
                    assert_eq!(call.service(), "capture.EchoService");
                    count.fetch_add(1, Ordering::Relaxed);
                    Ok(())
                })
                .layer(tower::limit::ConcurrencyLimitLayer::new(64))
                .add_service(health)
        })
        .await;
        let run = run_go_client(framing, server.addr(), "all", TIMEOUT).await;
        assert!(run.success, "{}", run.report);
        for step in [
            "echo",
            "testy",
            "search",
            "search-fail",
            "upload",
            "echostream",
            "concurrent",
            "big4",
        ] {
            assert!(
                run.report.contains(&format!("ok {step} (")),
                "{step} missing:\n{}",
                run.report
            );
        }
        // 1,000 concurrent calls and more, each through the interceptor.
        assert!(
            seen.load(Ordering::Relaxed) > 1000,
            "{}",
            seen.load(Ordering::Relaxed)
        );
        assert!(server.is_running());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_call_reaches_the_go_client_as_an_error() {
    let server = RustServer::start_with(Framing::Frisbee, |builder| {
        builder.interceptor(|_: &frpc::CallRequest| Err(frpc::Status::unauthenticated("no entry")))
    })
    .await;
    let run = run_go_client(Framing::Frisbee, server.addr(), "echo", TIMEOUT).await;
    assert!(
        !run.success,
        "the Go client's echo passed a rejecting server:\n{}",
        run.report
    );
    assert!(run.report.contains("no entry"), "{}", run.report);
    assert!(server.is_running());
}
