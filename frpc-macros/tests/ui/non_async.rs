use frpc::{Context, Status};

#[derive(frpc::Message, Default)]
struct Msg {
    text: String,
}

#[frpc::service]
trait Svc {
    fn call(&self, ctx: &Context, request: Msg) -> Result<Msg, Status>;
}

fn main() {}
