//! Per-service interceptors and layers over real TCP (`FooServer::new(svc).with_interceptor(..)`,
//! `.layer(..)`, `frpc::LayeredService`), and health checks beside server-wide interceptors:
//! exempt by default, covered on request.
// The services are `#[frpc::service]`s: without the `macros` feature there is nothing to test.
#![cfg(feature = "macros")]

use std::sync::{Arc, Mutex};

use frpc::health::{HealthClient, ServingStatus};
use frpc::{CallRequest, Code, LayeredService, Metadata, Status};

#[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
pub struct Text {
    pub value: String,
}

fn text(value: &str) -> Text {
    Text { value: value.into() }
}

/// The guarded service: a unary and a server-streaming method.
#[frpc::service(package = "layers")]
pub trait Vault {
    /// Echoes the request.
    async fn open(&self, ctx: &frpc::Context, request: Text) -> Result<Text, frpc::Status>;
    /// Streams the request back twice.
    async fn list(
        &self,
        ctx: &frpc::Context,
        request: Text,
        outbound: frpc::StreamSender<Text>,
    ) -> Result<(), frpc::Status>;
}

/// The open service beside it (operations from 20: the vault's are 10 and 11).
#[frpc::service(package = "layers", first_op = 20)]
pub trait Lobby {
    /// Echoes the request.
    async fn greet(&self, ctx: &frpc::Context, request: Text) -> Result<Text, frpc::Status>;
}

struct Svc;

impl Vault for Svc {
    async fn open(&self, _: &frpc::Context, request: Text) -> Result<Text, frpc::Status> {
        Ok(request)
    }

    async fn list(
        &self,
        _: &frpc::Context,
        request: Text,
        outbound: frpc::StreamSender<Text>,
    ) -> Result<(), frpc::Status> {
        outbound.send(request.clone()).await?;
        outbound.send(request).await?;
        Ok(())
    }
}

impl Lobby for Svc {
    async fn greet(&self, _: &frpc::Context, request: Text) -> Result<Text, frpc::Status> {
        Ok(request)
    }
}

/// Lets through calls carrying `authorization: Bearer secret`.
fn auth(call: &CallRequest) -> Result<(), Status> {
    match call.metadata().get("authorization") {
        Some("Bearer secret") => Ok(()),
        _ => Err(Status::unauthenticated("no valid token")),
    }
}

fn token() -> Metadata {
    let mut metadata = Metadata::new();
    metadata.insert("authorization", "Bearer secret").unwrap();
    metadata
}

/// Serves `builder` with the health service added; its address.
async fn serve(builder: frpc::Builder) -> std::net::SocketAddr {
    let (_reporter, health) = frpc::health::service();
    let bound = builder.add_service(health).bind("127.0.0.1:0").await.unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    addr
}

#[tokio::test]
async fn a_service_interceptor_guards_that_service_only() {
    let builder = frpc::Server::builder()
        .add_service(VaultServer::new(Svc).with_interceptor(auth))
        .add_service(LobbyServer::new(Svc));
    let addr = serve(builder).await;
    let client = frpc::Client::connect(addr).await.unwrap();

    let vault = VaultClient::new(client.clone());
    let err = vault.open(text("x")).await.unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated, "{err}");
    assert!(err.to_string().contains("no valid token"), "{err}");
    // A stream of the guarded service is refused when it opens.
    let err = vault.list(text("x")).await.unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated, "{err}");
    // The other service and health answer without a token.
    let lobby = LobbyClient::new(client.clone());
    assert_eq!(lobby.greet(text("hi")).await.unwrap(), text("hi"));
    let health = HealthClient::new(client.clone());
    assert_eq!(health.check("").await.unwrap(), ServingStatus::Serving);
    // With the token the guarded service answers, streams included.
    let vault = VaultClient::new(client.with_metadata(token()));
    assert_eq!(vault.open(text("in")).await.unwrap(), text("in"));
    let mut list = vault.list(text("a")).await.unwrap();
    assert_eq!(list.message().await.unwrap(), Some(text("a")));
    assert_eq!(list.message().await.unwrap(), Some(text("a")));
    assert_eq!(list.message().await.unwrap(), None);
}

#[tokio::test]
async fn a_server_wide_interceptor_lets_health_checks_through_by_default() {
    let builder = frpc::Server::builder()
        .interceptor(auth)
        .add_service(LobbyServer::new(Svc));
    let addr = serve(builder).await;
    let client = frpc::Client::connect(addr).await.unwrap();
    let err = LobbyClient::new(client.clone())
        .greet(text("x"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated, "{err}");
    let health = HealthClient::new(client);
    assert_eq!(health.check("").await.unwrap(), ServingStatus::Serving);
    let mut watch = health.watch("").await.unwrap();
    assert_eq!(watch.message().await.unwrap().unwrap(), ServingStatus::Serving);
}

#[tokio::test]
async fn intercept_health_makes_server_wide_interceptors_cover_health() {
    let builder = frpc::Server::builder()
        .interceptor(auth)
        .intercept_health(true)
        .add_service(LobbyServer::new(Svc));
    let addr = serve(builder).await;
    let client = frpc::Client::connect(addr).await.unwrap();
    let health = HealthClient::new(client.clone());
    let err = health.check("").await.unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated, "{err}");
    let err = health.watch("").await.unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated, "{err}");
    let health = HealthClient::new(client.with_metadata(token()));
    assert_eq!(health.check("").await.unwrap(), ServingStatus::Serving);
}

#[tokio::test]
async fn service_layers_run_inside_server_wide_ones_in_order() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = |name: &'static str| {
        let seen = seen.clone();
        move |call: &CallRequest| {
            seen.lock().unwrap().push(format!("{name} {}", call.method()));
            Ok(())
        }
    };
    let vault = VaultServer::new(Svc)
        .with_interceptor(record("service first"))
        .layer(frpc::middleware::InterceptorLayer::new(record("service second")));
    let builder = frpc::Server::builder()
        .interceptor(record("server"))
        .add_service(vault)
        .add_service(LobbyServer::new(Svc));
    let addr = serve(builder).await;
    let client = frpc::Client::connect(addr).await.unwrap();
    VaultClient::new(client.clone()).open(text("x")).await.unwrap();
    LobbyClient::new(client).greet(text("y")).await.unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "server Open",
            "service first Open",
            "service second Open",
            "server Greet"
        ]
    );
}

#[tokio::test]
async fn the_health_service_itself_can_be_guarded() {
    let (_reporter, health) = frpc::health::service();
    let bound = frpc::Server::builder()
        .add_service(LayeredService::new(health).with_interceptor(auth))
        .add_service(LobbyServer::new(Svc))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    let client = frpc::Client::connect(addr).await.unwrap();
    let err = HealthClient::new(client.clone()).check("").await.unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated, "{err}");
    assert_eq!(
        LobbyClient::new(client).greet(text("y")).await.unwrap(),
        text("y")
    );
}
