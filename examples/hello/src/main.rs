// src/main.rs
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
    let server = frpc::Server::builder()
        .concurrency(frpc::Concurrency::PerRpc) // the default; or Inline, or Limited(n)
        .add_service(echo::EchoServiceServer::new(Echo))
        .bind("127.0.0.1:0") // port 0: the system picks a free port
        .await?;
    let addr = server.local_addr();
    tokio::spawn(server.serve());

    let client = echo::EchoServiceClient::connect(addr).await?;
    let reply = client.echo(echo::Request { message: "hi".into() }).await?;
    println!("{}", reply.message);
    Ok(())
}
