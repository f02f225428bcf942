// Arguments are recognized by name; the macro then checks they are frpc's types.
use frpc::Status;

struct Context;

#[derive(frpc::Message, Default)]
struct Msg {
    text: String,
}

#[frpc::service]
trait Svc {
    async fn call(&self, ctx: &Context, request: Msg) -> Result<Msg, Status>;
}

fn main() {}
