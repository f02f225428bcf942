use frpc::{Context, Status, StreamSender, Streaming};

#[derive(frpc::Message, Default)]
struct Msg {
    text: String,
}

#[frpc::service]
trait Svc {
    async fn by_value(self, ctx: &Context, request: Msg) -> Result<Msg, Status>;
    async fn two_requests(&self, ctx: &Context, a: Msg, b: Msg) -> Result<Msg, Status>;
    async fn sender_first(&self, ctx: &Context, out: StreamSender<Msg>, i: Streaming<Msg>) -> Result<(), Status>;
    const X: u32;
}

fn main() {}
