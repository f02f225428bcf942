//! A fixed number of unary 32 B echo calls over one connection, frpc client and Inline server in
//! one process on one thread: a deterministic workload for callgrind, whose instruction counts
//! (unlike timings on a shared machine) show what frpc's extensions, and the protobuf encoding,
//! cost per call.
//!
//! ```sh
//! cargo build --release -p frpc-bench --example calls
//! valgrind --tool=callgrind target/release/examples/calls on 20000        # polyglot
//! valgrind --tool=callgrind target/release/examples/calls off 20000       # plain fRPC
//! valgrind --tool=callgrind target/release/examples/calls protobuf 20000  # protobuf
//! valgrind --tool=callgrind target/release/examples/calls channel 20000   # polyglot, through
//!                                                                          # a Channel
//! valgrind --tool=callgrind target/release/examples/calls metrics 20000   # `channel`, with
//!                              # MetricsLayer on the server and Channel::with_metrics, recorded
//!                              # by metrics-exporter-prometheus's recorder
//! valgrind --tool=callgrind target/release/examples/calls metrics-idle 20000  # the same
//!                              # layers, no recorder installed
//! valgrind --tool=callgrind target/release/examples/calls layers 20000   # `channel` with a
//!                              # do-nothing layer on each side: what any layer costs
//! valgrind --tool=callgrind target/release/examples/calls shared 20000    # `on`, on a port
//!                              # shared with gRPC
//! valgrind --tool=callgrind target/release/examples/calls joined 20000    # `on`, ten calls in
//!                              # flight joined on one task (workload B's `joined` callers)
//! valgrind --tool=callgrind target/release/examples/calls raw-joined 20000  # the raw client
//!                              # pipelining ten calls on the same frpc server: the limit
//! valgrind --tool=callgrind target/release/examples/calls echo-joined 20000   # frpc's client
//!                              # (plain) joined on the raw echo server
//! valgrind --tool=callgrind target/release/examples/calls raw-echo-joined 20000  # the raw
//!                              # client on the raw echo: with `echo-joined`, the two clients'
//!                              # difference per call
//! valgrind --tool=callgrind target/release/examples/calls raw-decode-joined 20000  # the raw
//!                              # client on the echo that decodes each request and encodes its
//!                              # response: with `raw-joined`, what frpc's server adds to the
//!                              # message's own work
//! ```
//!
//! `shared` is `on` with the server built with `grpc(true)`: what the fRPC face pays for
//! sharing its port with the gRPC face (the first byte of each connection is peeked).
//!
//! Run each with two call counts: the difference of the totals over the difference of the
//! counts is the cost of one call, start-up excluded.

use frpc::metrics::{ClientMetricsLayer, MetricsLayer};
use frpc_bench::frameworks::frpc::{Client, Wire, serve_with};
use frpc_bench::frameworks::raw;
use frpc_bench::workload::{Body, Caller, Payload};
use frpc_bench::workload::{Callers, Limit, Window, drive};
use std::time::Duration;
use tower::util::MapRequestLayer;

fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let mut args = std::env::args().skip(1);
    use Metrics::{Idle, Layers, Off, Recorded};
    let mode = args.next();
    // The fRPC face on a port shared with gRPC.
    let shared = mode.as_deref() == Some("shared");
    // Ten calls in flight, joined on one task (or pipelined by the raw client).
    let joined = matches!(
        mode.as_deref(),
        Some("joined" | "raw-joined" | "echo-joined" | "raw-echo-joined" | "raw-decode-joined")
    );
    let raw = matches!(
        mode.as_deref(),
        Some("raw-joined" | "raw-echo-joined" | "raw-decode-joined")
    );
    // The raw echo as the server: the difference between the two clients on it is the
    // difference between their per-call costs (the server's share is the same).
    let echo = match mode.as_deref() {
        Some("echo-joined" | "raw-echo-joined") => Some(raw::Echo::Bytes),
        Some("raw-decode-joined") => Some(raw::Echo::Messages),
        _ => None,
    };
    let (wire, channel, metrics, name) = match mode.as_deref() {
        Some("on") => (Wire::Polyglot, false, Off, "extensions on, polyglot"),
        Some("joined") => (Wire::Polyglot, false, Off, "extensions on, polyglot, 10 joined"),
        Some("raw-joined") => (Wire::Plain, false, Off, "the raw client, 10 pipelined"),
        Some("echo-joined") => (Wire::Plain, false, Off, "frpc-plain, 10 joined, on the raw echo"),
        Some("raw-echo-joined") => (
            Wire::Plain,
            false,
            Off,
            "the raw client, 10 pipelined, on the raw echo",
        ),
        Some("raw-decode-joined") => (
            Wire::Plain,
            false,
            Off,
            "the raw client, 10 pipelined, on the decoding echo",
        ),
        Some("off") => (Wire::Plain, false, Off, "extensions off"),
        Some("protobuf") => (Wire::Protobuf, false, Off, "extensions on, protobuf"),
        Some("channel") => (
            Wire::Polyglot,
            true,
            Off,
            "extensions on, polyglot, through a Channel",
        ),
        Some("shared") => (
            Wire::Polyglot,
            false,
            Off,
            "extensions on, polyglot, port shared with gRPC",
        ),
        Some("metrics") => (
            Wire::Polyglot,
            true,
            Recorded,
            "through a Channel, metrics recorded",
        ),
        Some("layers") => (
            Wire::Polyglot,
            true,
            Layers,
            "through a Channel, do-nothing layers",
        ),
        Some("metrics-idle") => (
            Wire::Polyglot,
            true,
            Idle,
            "through a Channel, metrics layers, no recorder",
        ),
        _ => {
            return Err(
                "usage: calls on|off|protobuf|channel|shared|metrics|metrics-idle|layers|joined|\
                 raw-joined|echo-joined|raw-echo-joined|raw-decode-joined [CALLS]"
                    .into(),
            );
        }
    };
    if metrics == Recorded {
        // The exporter's recorder, without its HTTP listener: what a scrape would read.
        metrics_exporter_prometheus::PrometheusBuilder::new().install_recorder()?;
    }

    let calls: u64 = args.next().map_or(Ok(20_000), |n| n.parse())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let framing = frpc::Framing::Frisbee;
        let layers = move |builder: frpc::Builder| match metrics {
            Off if shared => builder.grpc(true),
            Off => builder,
            Layers => builder.layer(MapRequestLayer::new(std::convert::identity::<frpc::CallRequest>)),
            Idle | Recorded => builder.layer(MetricsLayer::new()),
        };
        if let Some(echo) = echo {
            tokio::spawn(raw::serve(listener, framing, echo));
        } else {
            tokio::spawn(serve_with(
                listener,
                framing,
                frpc::Concurrency::Inline,
                wire,
                layers,
            ));
        }
        let client_layers = move |channel: frpc::Channel| match metrics {
            Off => channel,
            Layers => channel.with_layer(MapRequestLayer::new(
                std::convert::identity::<frpc::channel::Request>,
            )),
            Idle | Recorded => channel
                .with_metrics(ClientMetricsLayer::new("benchmark.BenchmarkService").method(10, "Benchmark")),
        };
        match channel {
            false if raw => run_raw(addr, framing, calls).await,
            false if joined => run_joined(Client::connect(addr, framing, wire).await?, calls).await,
            false => run(Client::connect(addr, framing, wire).await?, calls).await,
            true => {
                run(
                    Client::connect_channel_with(addr, framing, client_layers).await?,
                    calls,
                )
                .await
            }
        }
        println!("{calls} calls, {name}");
        Ok(())
    })
}

/// The layers on both sides: none, do-nothing ones, metrics without a recorder, or recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Metrics {
    Off,
    Layers,
    Idle,
    Recorded,
}

async fn run(mut client: impl Caller<Body>, calls: u64) {
    let mut body = Body::random(Payload::String, 32);
    for _ in 0..calls {
        client.call(&mut body).await.expect("call");
    }
}

/// Workload B's `joined` callers on one connection: ten calls in flight, one task.
const IN_FLIGHT: usize = 10;

async fn run_joined(client: impl Caller<Body>, calls: u64) {
    let body = Body::random(Payload::String, 32);
    let limit = Limit::per_slot(
        Window::new(Duration::ZERO, Duration::from_secs(3600)),
        calls / IN_FLIGHT as u64,
    );
    let outcome = drive(&client, &body, IN_FLIGHT, Callers::Joined, limit).await;
    assert_eq!(
        outcome.calls,
        calls / IN_FLIGHT as u64 * IN_FLIGHT as u64,
        "calls made"
    );
}

async fn run_raw(addr: std::net::SocketAddr, framing: frpc::Framing, calls: u64) {
    let body = Body::random(Payload::String, 32);
    let mut client = raw::Client::connect(addr, framing).await.expect("raw connect");
    let limit = Limit::per_slot(
        Window::new(Duration::ZERO, Duration::from_secs(3600)),
        calls / IN_FLIGHT as u64,
    );
    let outcome = client.drive(&body, IN_FLIGHT, limit).await;
    assert_eq!(
        outcome.calls,
        calls / IN_FLIGHT as u64 * IN_FLIGHT as u64,
        "calls made"
    );
}
