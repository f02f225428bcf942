// src/bin/traced.rs: the same call with its spans printed, client and server side
pub mod echo {
    frpc::include_proto!("echo");
}

struct Echo;

impl echo::EchoService for Echo {
    async fn echo(&self, _ctx: &frpc::Context, req: echo::Request) -> Result<echo::Response, frpc::Status> {
        Ok(echo::Response { message: req.message })
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A line as each span closes: `call` (client) and `rpc` or `stream` (server), each with
    // `service`, `method` and `op` fields.
    tracing_subscriber::fmt()
        .with_max_level(tracing_subscriber::filter::LevelFilter::DEBUG)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .init();

    let server = frpc::Server::builder()
        .add_service(echo::EchoServiceServer::new(Echo))
        .bind("127.0.0.1:0")
        .await?;
    let addr = server.local_addr();
    tokio::spawn(server.serve());

    let client = echo::EchoServiceClient::connect(addr).await?;
    client.echo(echo::Request { message: "hi".into() }).await?;
    Ok(())
}
