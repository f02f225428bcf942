use frpc::{Context, Status};

#[derive(frpc::Message, Default)]
struct Msg {
    text: String,
}

#[frpc::service]
trait Svc {
    async fn get_item(&self, ctx: &Context, request: Msg) -> Result<Msg, Status>;
    async fn get_item_(&self, ctx: &Context, request: Msg) -> Result<Msg, Status>;
}

fn main() {}
