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
//! ```
//!
//! Run each with two call counts: the difference of the totals over the difference of the
//! counts is the cost of one call, start-up excluded.

use frpc_bench::frameworks::frpc::{Client, Wire, serve};
use frpc_bench::workload::{Body, Caller, Payload};

fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let mut args = std::env::args().skip(1);
    let (wire, channel, name) = match args.next().as_deref() {
        Some("on") => (Wire::Polyglot, false, "extensions on, polyglot"),
        Some("off") => (Wire::Plain, false, "extensions off"),
        Some("protobuf") => (Wire::Protobuf, false, "extensions on, protobuf"),
        Some("channel") => (Wire::Polyglot, true, "extensions on, polyglot, through a Channel"),
        _ => return Err("usage: calls on|off|protobuf|channel [CALLS]".into()),
    };
    let calls: u64 = args.next().map_or(Ok(20_000), |n| n.parse())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let framing = frpc::Framing::Frisbee;
        tokio::spawn(serve(listener, framing, frpc::Concurrency::Inline, wire));
        match channel {
            false => run(Client::connect(addr, framing, wire).await, calls).await,
            true => run(Client::connect_channel(addr, framing).await, calls).await,
        }
        println!("{calls} calls, {name}");
        Ok(())
    })
}

async fn run(mut client: impl Caller<Body>, calls: u64) {
    let body = Body::random(Payload::String, 32);
    for _ in 0..calls {
        client.call(&body).await.expect("call");
    }
}
