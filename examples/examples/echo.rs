//! The main demo: a capture.proto EchoService server and a client on one machine. Calls each
//! kind of RPC once, then measures unary round trips over one connection.
//!
//! `cargo run --release -p frpc-examples --example echo`

use std::time::Instant;

use frpc::{Concurrency, Framing};
use frpc_examples::capture::{self, pb};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(capture::serve(listener, Framing::Frisbee, Concurrency::PerRpc));
    let client = pb::EchoServiceClient::connect(addr).await?;
    println!("frpc demo: capture.proto EchoService on {addr}\n");

    let reply = client
        .echo(pb::Request {
            message: "hello, fRPC".into(),
            corpus: 1,
        })
        .await?;
    println!(
        "unary Echo            -> {:?} (test: {:?})",
        reply.message, reply.test
    );
    let err = client.testy(pb::SearchResponse::default()).await.unwrap_err();
    println!("unary Testy           -> error {err}");
    let mut results = client.search(pb::SearchResponse::default()).await?;
    let mut got = Vec::new();
    while let Some(r) = results.message().await? {
        got.push(r.message);
    }
    println!("server-streaming      -> {got:?}");
    let mut upload = client.upload().await?;
    for message in ["a", "b", "c"] {
        upload
            .send(pb::Data {
                message: message.into(),
                checker: 0,
            })
            .await?;
    }
    println!(
        "client-streaming      -> {:?}",
        upload.close_and_recv().await?.message
    );
    let mut chat = client.echo_stream().await?;
    chat.send(pb::Request {
        message: "ping".into(),
        corpus: 0,
    })
    .await?;
    println!(
        "bidi                  -> {:?}",
        chat.message().await?.map(|r| r.message)
    );
    chat.close_send().await?;

    for (label, inflight) in [("1 in flight", 1usize), ("64 in flight", 64)] {
        let calls = 20_000;
        let started = Instant::now();
        let workers = (0..inflight).map(|_| {
            let client = client.clone();
            tokio::spawn(async move {
                for _ in 0..calls / inflight {
                    client
                        .echo(pb::Request {
                            message: "x".repeat(32),
                            corpus: 0,
                        })
                        .await?;
                }
                Ok::<_, frpc::Error>(())
            })
        });
        for worker in futures_util::future::join_all(workers).await {
            worker??;
        }
        let secs = started.elapsed().as_secs_f64();
        println!(
            "{calls} unary calls, {label:>12}: {:>9.0} RPC/s",
            calls as f64 / secs
        );
    }
    Ok(())
}
