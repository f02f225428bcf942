// src/bin/metadata.rs: request metadata (a client default and a per-call key) and response metadata
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
    async fn echo(&self, ctx: &frpc::Context, request: Request) -> Result<Request, frpc::Status> {
        if ctx.metadata().get("authorization") != Some("Bearer 42") {
            return Err(frpc::Status::unauthenticated("no valid token"));
        }
        let trace = ctx.metadata().get_bin("trace-bin").unwrap_or_default();
        let mut response = frpc::Metadata::new();
        response.insert("request-id", &format!("r-{}", trace.len()))?;
        ctx.set_response_metadata(response);
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

    // Default metadata for every call of this client.
    let mut defaults = frpc::Metadata::new();
    defaults.insert("authorization", "Bearer 42")?;
    let client = EchoServiceClient::connect(addr).await?.with_metadata(defaults);

    // One call's own metadata, and where its response metadata goes.
    let mut this_call = frpc::Metadata::new();
    this_call.insert_bin("trace-bin", vec![1, 2, 3])?;
    let response = frpc::MetadataSlot::new();
    let reply = client
        .clone()
        .with_metadata(this_call)
        .with_response_metadata(&response)
        .echo(Request { message: "hi".into() })
        .await?;
    let id = response
        .take()
        .and_then(|md| md.get("request-id").map(str::to_owned));
    println!("{} {}", reply.message, id.unwrap_or_default()); // hi r-3

    let anonymous = EchoServiceClient::connect(addr).await?;
    let err = anonymous
        .echo(Request { message: "hi".into() })
        .await
        .unwrap_err();
    println!("{}", err.code()); // UNAUTHENTICATED
    Ok(())
}
