//! Rust keywords as proto names (`proto/keywords/keywords.proto`): package `type.async`
//! (included as `frpc::include_proto!("r#type.r#async")`), `service Self` and an
//! `rpc ServiceName`, served and called over loopback TCP.

use frpc::health::{HealthClient, ServingStatus};
use frpc::{Context, Status, StreamSender, Streaming};
use frpc_codegen_tests::r#type::r#async::{Match, Self_, SelfClient, SelfServer, self_};

struct Keywords;

impl Self_ for Keywords {
    async fn r#type(&self, _: &Context, request: Match) -> Result<Match, Status> {
        Ok(Match {
            value: format!("type {}", request.value),
        })
    }

    async fn service_name(&self, _: &Context, request: Match) -> Result<Match, Status> {
        Ok(Match {
            value: format!("service name {}", request.value),
        })
    }

    async fn r#fn(
        &self,
        _: &Context,
        mut inbound: Streaming<Match>,
        outbound: StreamSender<Match>,
    ) -> Result<(), Status> {
        while let Some(request) = inbound.message().await? {
            outbound.send(request).await?;
        }
        Ok(())
    }
}

/// A server with `SelfServer` and health (`self_::SERVICE_NAME` reported serving), and a client
/// connected to it.
async fn serve() -> (SelfClient, frpc::Client) {
    let (reporter, health) = frpc::health::service();
    reporter.set_serving(self_::SERVICE_NAME);
    let bound = frpc::Server::builder()
        .add_service(SelfServer::new(Keywords))
        .add_service(health)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    let client = frpc::Client::connect(addr).await.unwrap();
    (SelfClient::new(client.clone()), client)
}

fn text(value: &str) -> Match {
    Match { value: value.into() }
}

/// `service Self` is the trait `Self_` (prost's `self_` rule) but `SelfServer` and `SelfClient`
/// (they were `Self_Server` and `Self_Client`, which `non_camel_case_types` warned about in the
/// user's crate; `src/lib.rs` denies it around the module).
#[tokio::test]
async fn service_named_self_serves_and_calls() {
    let (client, _) = serve().await;
    assert_eq!(client.r#type(text("a")).await.unwrap().value, "type a");
    let mut chat = client.r#fn().await.unwrap();
    chat.send(text("ping")).await.unwrap();
    assert_eq!(chat.message().await.unwrap().unwrap().value, "ping");
    chat.close_send().await.unwrap();
    assert!(chat.message().await.unwrap().is_none());
}

/// An `rpc ServiceName` leaves the ops module's `SERVICE_NAME` (the service's full name, what
/// health is asked for) in place: its operation number is `SERVICE_NAME_` (it replaced the
/// `&str` with a `u16`).
#[tokio::test]
async fn rpc_service_name_keeps_the_service_name_constant() {
    let name: &str = self_::SERVICE_NAME;
    assert_eq!(name, "type.async.Self");
    assert_eq!((self_::TYPE, self_::SERVICE_NAME_, self_::FN), (10, 11, 12));
    let (client, raw) = serve().await;
    let health = HealthClient::new(raw);
    assert_eq!(health.check(name).await.unwrap(), ServingStatus::Serving);
    let reply = client.service_name(text("b")).await.unwrap();
    assert_eq!(reply.value, "service name b");
}
