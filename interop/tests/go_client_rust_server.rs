//! A real Go frisbee-go client (hand-written fRPC on frisbee-go v0.10.2 or v0.11.0) calls the
//! Rust capture server over loopback, one scenario per test, in both framings.

use std::time::Duration;

use frpc::Framing;
use frpc_examples::capture::pb;
use frpc_interop::{InteropService, RustServer, frisbee_version, other, run_go_client};
use tokio::sync::{mpsc, oneshot};

const TIMEOUT: Duration = Duration::from_secs(60);

async fn go_client_scenario(framing: Framing, scenario: &str) -> String {
    let server = RustServer::start(framing).await;
    let run = run_go_client(framing, server.addr(), scenario, TIMEOUT).await;
    assert!(run.success, "{}", run.report);
    assert!(run.report.contains(&format!("PASS {scenario}")), "{}", run.report);
    assert!(server.is_running(), "the Rust server stopped during {scenario}");
    println!("{}", run.report);
    run.report
}

macro_rules! scenarios {
    ($($name:ident => $scenario:literal),* $(,)?) => {
        mod legacy_v0_10 {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    go_client_scenario(Framing::Legacy, $scenario).await;
                }
            )*
        }
        mod frisbee_v0_11 {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    go_client_scenario(Framing::Frisbee, $scenario).await;
                }
            )*
        }
    };
}

scenarios! {
    echo => "echo",
    testy_error_boom => "testy",
    search => "search",
    search_error_then_eof => "search-fail",
    upload => "upload",
    upload_burst_of_5000_small_messages => "upload-burst",
    echo_stream => "echostream",
    concurrent_1000_unary => "concurrent",
    big_4_mib_echo => "big4",
    late_messages_after_an_early_upload_reply_are_dropped => "upload-early",
}

/// frisbee-go v0.11 refuses the 6 MiB packet itself (ContentLengthExceeded), before sending.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_6_mib_is_refused_by_go_v0_11_before_sending() {
    let report = go_client_scenario(Framing::Frisbee, "big6").await;
    assert!(!report.contains("was answered with an error"), "{report}");
}

/// frisbee-go v0.10 has no size limit and sends the 6 MiB packet: the Rust server (5 MiB limit)
/// skips its content and answers with an error naming the limit; the same connection then
/// serves the next call (the scenario checks both).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_6_mib_from_go_v0_10_is_answered_with_an_error_naming_the_limit() {
    let report = go_client_scenario(Framing::Legacy, "big6").await;
    assert!(report.contains("was answered with an error"), "{report}");
}

/// A Go client with one framing against a Rust server with the other: the call fails (the
/// connection is dropped), it does not succeed and does not hang.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_framing_is_refused() {
    for go_framing in [Framing::Legacy, Framing::Frisbee] {
        let server = RustServer::start(other(go_framing)).await;
        let run = run_go_client(go_framing, server.addr(), "mismatch", TIMEOUT).await;
        assert!(
            run.success && run.report.contains("refused as expected"),
            "Go {} client vs Rust {:?} server:\n{}",
            frisbee_version(go_framing),
            other(go_framing),
            run.report
        );
        assert!(server.is_running());
        println!("{}", run.report);
    }
}

/// Every scenario in sequence (each on its own connection) against one server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_scenarios_on_one_server() {
    for framing in [Framing::Legacy, Framing::Frisbee] {
        let report = go_client_scenario(framing, "all").await;
        for step in [
            "echo",
            "testy",
            "search",
            "search-fail",
            "upload",
            "echostream",
            "concurrent",
            "big4",
            "big6",
        ] {
            assert!(
                report.contains(&format!("ok {step} (")),
                "{step} missing:\n{report}"
            );
        }
    }
}

/// A graceful shutdown while a Go client's calls run (five `slow-*` echoes, 300 ms each): every
/// reply reaches it. The server once closed right behind its last replies, and frisbee-go's
/// client, which waits for a reply and for the connection's end at once, lost most of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_shutdown_delivers_the_replies_of_running_calls() {
    for framing in [Framing::Legacy, Framing::Frisbee] {
        let (entered, mut calls) = mpsc::unbounded_channel();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = frpc::Server::builder()
            .framing(framing)
            .interceptor(move |_: &frpc::CallRequest| {
                let _ = entered.send(());
                Ok(())
            })
            .add_service(pb::EchoServiceServer::new(InteropService))
            .build()
            .unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let serving = tokio::spawn(async move {
            let signal = async {
                let _ = stopped.await;
            };
            server.serve_listener_with_shutdown(listener, signal).await
        });
        let go = tokio::spawn(run_go_client(framing, addr, "shutdown-slow", TIMEOUT));
        for _ in 0..5 {
            calls.recv().await.expect("the server lives");
        }
        stop.send(()).unwrap();
        let run = go.await.unwrap();
        assert!(run.success, "{framing:?}: {}", run.report);
        assert!(run.report.contains("PASS shutdown-slow"), "{}", run.report);
        serving.await.unwrap().unwrap();
    }
}
