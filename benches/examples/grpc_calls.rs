//! A fixed number of unary gRPC echo calls over one HTTP/2 connection, tonic's generated client
//! and the server in one process on one thread: a deterministic workload for callgrind that
//! compares frpc's gRPC face (on a `grpc(true)` port, as the `frpc-grpc` bench peer) with tonic's
//! own server of the same proto, under the same client.
//!
//! ```sh
//! cargo build --release -p frpc-bench --example grpc_calls
//! valgrind --tool=callgrind target/release/examples/grpc_calls frpc 5000 32    # gRPC face
//! valgrind --tool=callgrind target/release/examples/grpc_calls tonic 5000 32   # tonic server
//! ```
//!
//! Arguments: the server, the number of calls (default 5,000), the message size in bytes
//! (default 32; a string message). Run each with two call counts: the difference of the totals
//! over the difference of the counts is the cost of one call, client and server together.

use frpc_bench::frameworks::{frpc, tonic};
use frpc_bench::workload::{Body, Caller, Payload};

fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let mut args = std::env::args().skip(1);
    let server = args.next();
    let calls: u64 = args.next().map_or(Ok(5_000), |n| n.parse())?;
    let size: usize = args.next().map_or(Ok(32), |n| n.parse())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        match server.as_deref() {
            Some("frpc") => {
                let (framing, inline) = (::frpc::Framing::Frisbee, ::frpc::Concurrency::Inline);
                tokio::spawn(frpc::serve_shared(
                    listener,
                    framing,
                    inline,
                    frpc::Wire::Polyglot,
                ))
            }
            Some("tonic") => tokio::spawn(tonic::serve(listener)),
            _ => return Err("usage: grpc_calls frpc|tonic [CALLS] [SIZE]".into()),
        };
        let mut client = tonic::Client::connect(addr).await?;
        let mut body = Body::random(Payload::String, size);
        for _ in 0..calls {
            client.call(&mut body).await.expect("call");
        }
        println!(
            "{calls} calls of {size} B to the {} server",
            server.unwrap_or_default()
        );
        Ok(())
    })
}
