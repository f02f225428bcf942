//! The adopters configuration from another crate: the include file's module tree, a message
//! holding the hand-written extern `Money`, the server's extra derive and the clients left.
use frpc_codegen_tests::adopters::{kitchen, shop, twosvc};
use frpc_codegen_tests::money::Money;

#[derive(Default)]
struct Nothing;

impl twosvc::A for Nothing {
    async fn a1(&self, _: &frpc::Context, r: kitchen::Inner) -> Result<kitchen::Inner, frpc::Status> {
        Ok(r)
    }
    async fn a2(&self, _: &frpc::Context, _: frpc::Streaming<kitchen::Inner>) -> Result<(), frpc::Status> {
        Ok(())
    }
}

fn main() {
    let order = shop::Order { price: Some(Money { units: 1, currency: "EUR".into() }), ..Default::default() };
    assert_eq!(order.price.unwrap().units, 1);
    let _ = kitchen::other::Color::Green;
    let _server: twosvc::AServer<Nothing> = Default::default();
    let _client: fn(frpc::Client) -> twosvc::AClient = twosvc::AClient::new;
}
