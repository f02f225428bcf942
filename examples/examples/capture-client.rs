//! Calls every method of capture.proto's EchoService once and prints what comes back: run it
//! against `capture-server` (or a Go fRPC server generated from the same proto).
//!
//! `cargo run --example capture-client -- --addr 127.0.0.1:8080 --framing frisbee|legacy` (`--help`)

use clap::Parser;
use frpc::ClientConfig;
use frpc_examples::args::ClientArgs;
use frpc_examples::capture::pb;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = ClientArgs::parse();
    let mut config = ClientConfig::default();
    config.connection.framing = args.framing;
    let client = pb::EchoServiceClient::new(frpc::Client::connect_with(&args.addr, config).await?);

    let request = pb::Request {
        message: "hi".into(),
        corpus: pb::request::Corpus::Web as i32,
    };
    println!("Echo       -> {:?}", client.echo(request).await?);
    println!(
        "Testy      -> {:?}",
        client.testy(pb::SearchResponse::default()).await.map(|_| ())
    );

    let mut results = client.search(pb::SearchResponse::default()).await?;
    while let Some(response) = results.message().await? {
        println!("Search     -> {:?}", response.message);
    }

    let mut upload = client.upload().await?;
    for message in ["a", "b"] {
        upload
            .send(pb::Data {
                message: message.into(),
                checker: 0,
            })
            .await?;
    }
    println!("Upload     -> {:?}", upload.close_and_recv().await?.message);

    let mut chat = client.echo_stream().await?;
    for message in ["x", "y"] {
        chat.send(pb::Request {
            message: message.into(),
            corpus: 0,
        })
        .await?;
        println!("EchoStream -> {:?}", chat.message().await?.map(|r| r.message));
    }
    chat.close_send().await?;
    Ok(())
}
