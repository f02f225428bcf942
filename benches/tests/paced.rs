//! Paced clients (`--rate`) over real sockets: every kind of client starts its calls on the
//! schedule, never ahead of it, whether it runs the load generator's slots (frpc, tonic) or
//! pipelines its own (raw).

use std::time::Duration;

use frpc_bench::frameworks::{self, Client, Framework};
use frpc_bench::workload::{Body, Callers, Limit, Payload, Window};
use tokio::net::TcpListener;
use tokio::time::Instant;

const INTERVAL: Duration = Duration::from_millis(20);

async fn connected(framework: Framework) -> (Client, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let framing = frpc::Framing::Frisbee;
    let serving = tokio::spawn(async move {
        let _ = frameworks::serve(framework, listener, framing).await;
    });
    (Client::connect(framework, addr, framing).await.unwrap(), serving)
}

/// Two slots of six calls each, a start every 20 ms per slot: every call completes, and the
/// last ones cannot start before 100 ms (the raw client's two slots share one schedule of a
/// start every 10 ms, whose twelfth is due at 110 ms).
#[tokio::test]
async fn a_paced_client_makes_its_calls_no_sooner_than_the_schedule() {
    for framework in [Framework::Raw, Framework::FrpcInline, Framework::Tonic] {
        let (mut client, serving) = connected(framework).await;
        let limit = Limit::per_slot(Window::new(Duration::ZERO, Duration::from_secs(60)), 6).paced(INTERVAL);
        let started = Instant::now();
        let outcome = client
            .drive(&Body::random(Payload::String, 32), 2, Callers::Joined, limit)
            .await;
        assert_eq!(outcome.calls, 12, "{framework:?}");
        assert!(
            started.elapsed() >= 5 * INTERVAL,
            "{framework:?}: {:?}",
            started.elapsed()
        );
        serving.abort();
    }
}

/// Within a window of 200 ms, two slots paced at 20 ms start at most 11 calls each, however
/// fast the server answers (closed loops would make thousands). That they complete calls at
/// all is the test above's.
#[tokio::test]
async fn a_paced_window_holds_no_more_calls_than_the_schedule() {
    for framework in [Framework::Raw, Framework::FrpcInline] {
        let (mut client, serving) = connected(framework).await;
        let limit = Limit::window(Window::new(Duration::ZERO, 10 * INTERVAL)).paced(INTERVAL);
        let outcome = client
            .drive(&Body::random(Payload::String, 32), 2, Callers::Tasks, limit)
            .await;
        assert!(outcome.calls <= 22, "{framework:?}: {}", outcome.calls);
        serving.abort();
    }
}
