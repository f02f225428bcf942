// src/bin/rust_first.rs: the same service without a .proto (and without a build.rs)
#[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
pub struct Request {
    pub message: String,
}

#[frpc::service(package = "echo")]
pub trait EchoService {
    async fn echo(&self, ctx: &frpc::Context, request: Request) -> Result<Request, frpc::Status>;
}

struct Echo;

impl EchoService for Echo {
    async fn echo(&self, _ctx: &frpc::Context, request: Request) -> Result<Request, frpc::Status> {
        Ok(request)
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = frpc::Server::builder()
        .add_service(EchoServiceServer::new(Echo))
        .bind("127.0.0.1:0")
        .await?;
    let addr = server.local_addr();
    tokio::spawn(server.serve());

    let client = EchoServiceClient::connect(addr).await?;
    let reply = client.echo(Request { message: "hi".into() }).await?;
    println!("{}", reply.message);
    Ok(())
}
