//! frpc: the generated `BenchmarkService` served with inline or per-RPC handlers, and the
//! generated `BenchmarkServiceClient` on its own connection per load-generating client (a plain
//! `frpc::Client`, or a reconnecting `frpc::Channel` to one endpoint); what both sides negotiate
//! is a [`Wire`].

use std::net::SocketAddr;

use crate::frameworks::echo;
use crate::workload::{self, Body, Caller, Callers, Failure, Limit, Outcome};

/// The frpc service and client, generated from `proto/benchmark.proto` by frpc-codegen.
#[allow(missing_docs)]
pub mod pb {
    include!(concat!(env!("OUT_DIR"), "/frpc/benchmark.rs"));
}

#[derive(Debug)]
struct Bench;

impl pb::BenchmarkService for Bench {
    async fn benchmark(
        &self,
        _ctx: &frpc::Context,
        request: pb::Request,
    ) -> Result<pb::Response, frpc::Status> {
        Ok(pb::Response {
            message: echo(request.message),
        })
    }

    async fn blob(
        &self,
        _ctx: &frpc::Context,
        request: pb::BlobRequest,
    ) -> Result<pb::BlobResponse, frpc::Status> {
        Ok(pb::BlobResponse {
            data: echo(request.data),
        })
    }
}

/// What the server accepts and the client offers of frpc's extensions (docs/extensions.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// Extensions on, the protobuf one off: messages in polyglot.
    Polyglot,
    /// Every extension on (the defaults): messages in protobuf.
    Protobuf,
    /// No extensions: plain fRPC, as with a Go peer.
    Plain,
}

impl Wire {
    fn extensions(self) -> bool {
        self != Wire::Plain
    }

    fn protobuf(self) -> bool {
        self == Wire::Protobuf
    }
}

/// Serves the benchmark service until an error, with `wire`'s extensions.
pub async fn serve(
    listener: tokio::net::TcpListener,
    framing: frpc::Framing,
    concurrency: frpc::Concurrency,
    wire: Wire,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    serve_with(listener, framing, concurrency, wire, |builder| builder).await
}

/// [`serve`] on a port shared with gRPC clients (`Builder::grpc(true)`): fRPC clients as
/// before, gRPC clients (HTTP/2) to frpc's gRPC face.
pub async fn serve_shared(
    listener: tokio::net::TcpListener,
    framing: frpc::Framing,
    concurrency: frpc::Concurrency,
    wire: Wire,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    serve_with(listener, framing, concurrency, wire, |builder| builder.grpc(true)).await
}

/// [`serve`] with the builder's last touches (layers) from `finish`.
pub async fn serve_with(
    listener: tokio::net::TcpListener,
    framing: frpc::Framing,
    concurrency: frpc::Concurrency,
    wire: Wire,
    finish: impl FnOnce(frpc::Builder) -> frpc::Builder,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let config = frpc::ServerConfig::default()
        .extensions(wire.extensions())
        .protobuf(wire.protobuf());
    let builder = frpc::Server::builder()
        .config(config)
        .framing(framing)
        .concurrency(concurrency)
        .add_service(pb::BenchmarkServiceServer::new(Bench));
    let server = finish(builder).build()?;
    server.serve_listener(listener).await?;
    Ok(())
}

/// A generated client on its own connection (defaults: TCP_NODELAY on), through an
/// `frpc::Client` or an `frpc::Channel`.
#[derive(Debug, Clone)]
pub struct Client<T = frpc::Client>(pb::BenchmarkServiceClient<T>);

impl Client<frpc::Channel> {
    /// Connects a one-endpoint channel to `addr`, offering frpc's extensions.
    pub async fn connect_channel(
        addr: SocketAddr,
        framing: frpc::Framing,
    ) -> Result<Client<frpc::Channel>, String> {
        Client::connect_channel_with(addr, framing, |channel| channel).await
    }

    /// [`Client::connect_channel`], the channel finished (layered) by `finish`.
    pub async fn connect_channel_with(
        addr: SocketAddr,
        framing: frpc::Framing,
        finish: impl FnOnce(frpc::Channel) -> frpc::Channel,
    ) -> Result<Client<frpc::Channel>, String> {
        let channel = frpc::Endpoint::from(addr)
            .framing(framing)
            .connect()
            .await
            .map_err(|e| format!("the frpc channel cannot connect to {addr}: {e}"))?;
        Ok(Client(pb::BenchmarkServiceClient::new(finish(channel))))
    }
}

impl Client {
    /// Connects to `addr`, offering `wire`'s extensions, and waits for the server's answer so
    /// that every measured call uses what was negotiated (a call made before the answer goes
    /// in polyglot). A server that answers otherwise is an error, not a cell measured in a
    /// wire it does not name: a server other than frpc-rs's (Go fRPC's, the raw echo) takes
    /// no extensions, and is called with [`Wire::Plain`].
    pub async fn connect(addr: SocketAddr, framing: frpc::Framing, wire: Wire) -> Result<Client, String> {
        let mut config = frpc::ClientConfig::default();
        config.connection.framing = framing;
        config.extensions = wire.extensions();
        config.protobuf = wire.protobuf();
        let client = frpc::Client::connect_with(addr, config)
            .await
            .map_err(|e| format!("the frpc client cannot connect to {addr}: {e}"))?;
        let accepted = (client.negotiated().await, client.protobuf_accepted());
        if accepted != (wire.extensions(), wire.protobuf()) {
            return Err(format!(
                "the server at {addr} took {}, where the client offered {} ({wire:?}); a \
                 server other than frpc-rs's (Go fRPC's, or the raw echo) takes none: call it \
                 with the frpc-plain client",
                extensions_taken(accepted),
                extensions_taken((wire.extensions(), wire.protobuf())),
            ));
        }
        Ok(Client(pb::BenchmarkServiceClient::new(client)))
    }
}

/// The extensions an offer or its answer names (extensions, protobuf), in words.
fn extensions_taken((extensions, protobuf): (bool, bool)) -> &'static str {
    match (extensions, protobuf) {
        (false, _) => "no extensions",
        (true, false) => "frpc's extensions without protobuf",
        (true, true) => "frpc's extensions with protobuf",
    }
}

impl<T: frpc::Caller> Client<T> {
    /// Keeps `inflight` calls outstanding on the one connection, issued as `callers` says.
    pub async fn drive(&mut self, body: &Body, inflight: usize, callers: Callers, limit: Limit) -> Outcome {
        workload::drive(self, body, inflight, callers, limit).await
    }
}

impl<T: frpc::Caller> Caller<Body> for Client<T> {
    async fn call(&mut self, body: &mut Body) -> Result<(), Failure> {
        match body {
            Body::Text(message) => {
                // The echo is the next call's message: no per-call copy by the load generator.
                let request = pb::Request {
                    message: std::mem::take(message),
                };
                let sent = request.message.len();
                let reply = self.0.benchmark(request).await.expect("frpc call");
                *message = reply.message;
                assert_eq!(message.len(), sent, "the echo came back whole");
            }
            Body::Data(data) => {
                let request = pb::BlobRequest { data: data.clone() };
                let reply = self.0.blob(request).await.expect("frpc call");
                assert_eq!(reply.data.len(), data.len(), "the echo came back whole");
            }
        }
        Ok(())
    }
}
