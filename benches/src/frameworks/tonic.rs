//! tonic 0.14: the generated `BenchmarkService` with tonic's defaults plus TCP_NODELAY on both
//! sides, and the generated client on one channel (one HTTP/2 connection) per load client.

use std::net::SocketAddr;

use tonic::transport::{Channel, Endpoint};

use crate::frameworks::{MAX_MESSAGE, echo};
use crate::workload::{self, Body, Caller, Callers, Failure, Limit, Outcome};

/// The tonic service and client, generated from `proto/benchmark.proto` by tonic-prost-build.
#[allow(missing_docs, clippy::all)]
pub mod pb {
    include!(concat!(env!("OUT_DIR"), "/tonic/benchmark.rs"));
}

use pb::benchmark_service_client::BenchmarkServiceClient;
use pb::benchmark_service_server::{BenchmarkService, BenchmarkServiceServer};

#[derive(Debug)]
struct Bench;

#[tonic::async_trait]
impl BenchmarkService for Bench {
    async fn benchmark(
        &self,
        request: tonic::Request<pb::Request>,
    ) -> Result<tonic::Response<pb::Response>, tonic::Status> {
        Ok(tonic::Response::new(pb::Response {
            message: echo(request.into_inner().message),
        }))
    }

    async fn blob(
        &self,
        request: tonic::Request<pb::BlobRequest>,
    ) -> Result<tonic::Response<pb::BlobResponse>, tonic::Status> {
        Ok(tonic::Response::new(pb::BlobResponse {
            data: echo(request.into_inner().data),
        }))
    }
}

/// Serves the benchmark service until an error.
pub async fn serve(
    listener: tokio::net::TcpListener,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let service = BenchmarkServiceServer::new(Bench)
        .max_decoding_message_size(MAX_MESSAGE)
        .max_encoding_message_size(MAX_MESSAGE);
    // `serve_with_incoming` takes the sockets as they are: set TCP_NODELAY on each.
    let incoming = tokio_stream::StreamExt::map(
        tokio_stream::wrappers::TcpListenerStream::new(listener),
        |stream| stream.and_then(|s| s.set_nodelay(true).map(|()| s)),
    );
    tonic::transport::Server::builder()
        .tcp_nodelay(true)
        .add_service(service)
        .serve_with_incoming(incoming)
        .await?;
    Ok(())
}

/// A generated client on its own channel.
#[derive(Debug, Clone)]
pub struct Client(BenchmarkServiceClient<Channel>);

impl Client {
    /// Connects a new channel to `addr`.
    pub async fn connect(addr: SocketAddr) -> Result<Client, String> {
        let channel = Endpoint::from_shared(format!("http://{addr}"))
            .expect("a socket address makes a valid uri")
            .tcp_nodelay(true)
            .connect()
            .await
            .map_err(|e| format!("the tonic client cannot connect to {addr}: {e}"))?;
        Ok(Client(
            BenchmarkServiceClient::new(channel)
                .max_decoding_message_size(MAX_MESSAGE)
                .max_encoding_message_size(MAX_MESSAGE),
        ))
    }

    /// Keeps `inflight` calls outstanding on the one channel, issued as `callers` says.
    pub async fn drive(&mut self, body: &Body, inflight: usize, callers: Callers, limit: Limit) -> Outcome {
        workload::drive(self, body, inflight, callers, limit).await
    }
}

impl Caller<Body> for Client {
    async fn call(&mut self, body: &mut Body) -> Result<(), Failure> {
        match body {
            Body::Text(message) => {
                // The echo is the next call's message: no per-call copy by the load generator.
                let request = pb::Request {
                    message: std::mem::take(message),
                };
                let sent = request.message.len();
                let reply = self.0.benchmark(request).await.expect("tonic call");
                *message = reply.into_inner().message;
                assert_eq!(message.len(), sent, "the echo came back whole");
            }
            Body::Data(data) => {
                let request = pb::BlobRequest { data: data.clone() };
                let reply = self.0.blob(request).await.expect("tonic call");
                assert_eq!(reply.get_ref().data.len(), data.len(), "the echo came back whole");
            }
        }
        Ok(())
    }
}
