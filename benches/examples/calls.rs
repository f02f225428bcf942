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
//! valgrind --tool=callgrind target/release/examples/calls shared 20000    # polyglot, on a port
//!                                                                          # shared with gRPC
//! ```
//!
//! `shared` is `on` with the server built with `grpc(true)`: what the fRPC face pays for
//! sharing its port with the gRPC face (the first byte of each connection is peeked).
//!
//! Run each with two call counts: the difference of the totals over the difference of the
//! counts is the cost of one call, start-up excluded.

use frpc_bench::frameworks::frpc::{Client, Wire, serve, serve_shared};
use frpc_bench::workload::{Body, Caller, Payload};

fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let mut args = std::env::args().skip(1);
    let (wire, channel, shared, name) = match args.next().as_deref() {
        Some("on") => (Wire::Polyglot, false, false, "extensions on, polyglot"),
        Some("off") => (Wire::Plain, false, false, "extensions off"),
        Some("protobuf") => (Wire::Protobuf, false, false, "extensions on, protobuf"),
        Some("channel") => (
            Wire::Polyglot,
            true,
            false,
            "extensions on, polyglot, through a Channel",
        ),
        Some("shared") => (
            Wire::Polyglot,
            false,
            true,
            "extensions on, polyglot, port shared with gRPC",
        ),
        _ => return Err("usage: calls on|off|protobuf|channel|shared [CALLS]".into()),
    };
    let calls: u64 = args.next().map_or(Ok(20_000), |n| n.parse())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let framing = frpc::Framing::Frisbee;
        let inline = frpc::Concurrency::Inline;
        match shared {
            false => tokio::spawn(serve(listener, framing, inline, wire)),
            true => tokio::spawn(serve_shared(listener, framing, inline, wire)),
        };
        match channel {
            false => run(Client::connect(addr, framing, wire).await, calls).await,
            true => run(Client::connect_channel(addr, framing).await, calls).await,
        }
        println!("{calls} calls, {name}");
        Ok(())
    })
}

async fn run(mut client: impl Caller, calls: u64) {
    let body = Body::random(Payload::String, 32);
    for _ in 0..calls {
        client.call(&body).await;
    }
}
