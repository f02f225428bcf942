//! A fixed number of 32 B messages on one server stream, frpc client and Inline server in one
//! process on one thread: a deterministic workload for callgrind, whose instruction counts show
//! what a streamed message costs with flow control (extensions on) and without (off).
//!
//! ```sh
//! cargo build --release -p frpc-rs --example stream_messages
//! valgrind --tool=callgrind target/release/examples/stream_messages on 20000
//! valgrind --tool=callgrind target/release/examples/stream_messages off 20000
//! ```
//!
//! Run each with two message counts: the difference of the totals over the difference of the
//! counts is the cost of one message, start-up excluded.

/// A message of 32 bytes of text.
#[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
pub struct Chunk {
    /// The payload.
    pub text: String,
}

/// Server streaming: `count` sends as many chunks as the request's length.
#[frpc::service(package = "perf")]
pub trait Chunks {
    /// Sends as many 32 B chunks as the number the request's text holds.
    async fn count(
        &self,
        ctx: &frpc::Context,
        request: Chunk,
        outbound: frpc::StreamSender<Chunk>,
    ) -> Result<(), frpc::Status>;
}

struct Svc;

impl Chunks for Svc {
    async fn count(
        &self,
        _: &frpc::Context,
        request: Chunk,
        outbound: frpc::StreamSender<Chunk>,
    ) -> Result<(), frpc::Status> {
        let n: u64 = request.text.parse().unwrap_or(0);
        let chunk = Chunk { text: "x".repeat(32) };
        for _ in 0..n {
            outbound.send_ref(&chunk).await?;
        }
        Ok(())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let extensions = match args.next().as_deref() {
        Some("on") => true,
        Some("off") => false,
        _ => return Err("usage: stream_messages on|off [MESSAGES]".into()),
    };
    let messages: u64 = args.next().map_or(Ok(20_000), |n| n.parse())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let server_config = frpc::ServerConfig::default()
            .extensions(extensions)
            .concurrency(frpc::Concurrency::Inline);
        let server = frpc::Server::builder()
            .config(server_config)
            .add_service(ChunksServer::new(Svc))
            .bind("127.0.0.1:0")
            .await?;
        let addr = server.local_addr();
        tokio::spawn(server.serve());
        let client_config = frpc::ClientConfig::default().extensions(extensions);
        let client = ChunksClient::new(frpc::Client::connect_with(addr, client_config).await?);
        let request = Chunk {
            text: messages.to_string(),
        };
        let mut stream = client.count(request).await?;
        let mut got = 0u64;
        while stream.message().await?.is_some() {
            got += 1;
        }
        assert_eq!(got, messages);
        println!(
            "{messages} messages, extensions {}",
            if extensions { "on" } else { "off" }
        );
        Ok(())
    })
}
