#![deny(deprecated)]

use frpc::{Context, Status};

#[derive(frpc::Message, Default)]
struct Msg {
    text: String,
}

#[frpc::service]
trait Svc {
    #[deprecated(note = "call `current`")]
    async fn old(&self, ctx: &Context, request: Msg) -> Result<Msg, Status>;
    async fn current(&self, ctx: &Context, request: Msg) -> Result<Msg, Status>;
}

// Implementing the deprecated method is not a warning; calling it through the client is.
struct Impl;

impl Svc for Impl {
    async fn old(&self, _: &Context, request: Msg) -> Result<Msg, Status> {
        Ok(request)
    }
    async fn current(&self, _: &Context, request: Msg) -> Result<Msg, Status> {
        Ok(request)
    }
}

async fn call(client: SvcClient) {
    let _ = client.current(Msg::default()).await;
    let _ = client.old(Msg::default()).await;
}

fn main() {
    let _ = (call, SvcServer::new(Impl));
}
