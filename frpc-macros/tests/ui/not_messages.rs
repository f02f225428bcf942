// Request and response types that are never messages are refused at the type.
use frpc::{Context, Status, StreamSender};

#[derive(frpc::Message, Default)]
struct Msg {
    text: String,
}

#[frpc::service]
trait Svc {
    async fn by_ref(&self, ctx: &Context, request: &Msg) -> Result<Msg, Status>;
    async fn list(&self, ctx: &Context, request: Msg) -> Result<Vec<Msg>, Status>;
    async fn text(&self, ctx: &Context, request: String, out: StreamSender<std::string::String>) -> Result<(), Status>;
    async fn pair(&self, ctx: &Context, request: (Msg, Msg)) -> Result<Msg, Status>;
}

fn main() {}
