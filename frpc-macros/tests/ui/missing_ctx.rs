use frpc::Status;

#[derive(frpc::Message, Default)]
struct Msg {
    text: String,
}

#[frpc::service]
trait Svc {
    async fn call(&self, request: Msg) -> Result<Msg, Status>;
}

fn main() {}
