use frpc::{Context, Status};

#[derive(frpc::Message, Default)]
struct Msg {
    text: String,
}

#[frpc::service]
trait Svc {
    async fn call<T>(&self, ctx: &Context, request: Msg) -> Result<Msg, Status>;
}

fn main() {}
