use frpc::{Context, Status, StreamSender};

#[derive(frpc::Message, Default)]
struct Msg {
    text: String,
}

#[frpc::service]
trait Svc {
    async fn plain(&self, ctx: &Context, request: Msg) -> Msg;
    async fn nothing(&self, ctx: &Context, request: Msg);
    async fn stream(&self, ctx: &Context, request: Msg, out: StreamSender<Msg>) -> Result<Msg, Status>;
    async fn io(&self, ctx: &Context, request: Msg) -> Result<Msg, std::io::Error>;
}

fn main() {}
