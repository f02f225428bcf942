mod inner {
    #[derive(frpc::Message, Default)]
    pub struct Msg {
        pub text: String,
    }

    #[frpc::service]
    trait Hidden {
        async fn call(&self, ctx: &frpc::Context, request: Msg) -> Result<Msg, frpc::Status>;
    }
}

fn main() {
    let _ = inner::HiddenClient::<frpc::Client>::new;
}
