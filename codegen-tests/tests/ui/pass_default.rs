//! The default configuration: implement a service outside the generated crate, serve it, and
//! hold a client.
use frpc_codegen_tests::default::capture as pb;

struct Svc;

impl pb::EchoService for Svc {
    async fn echo(&self, _: &frpc::Context, request: pb::Request) -> Result<pb::Response, frpc::Status> {
        Ok(pb::Response { message: request.message, test: None })
    }
    async fn echo_stream(
        &self,
        _: &frpc::Context,
        _: frpc::Streaming<pb::Request>,
        _: frpc::StreamSender<pb::Response>,
    ) -> Result<(), frpc::Status> {
        Ok(())
    }
    async fn testy(&self, _: &frpc::Context, _: pb::SearchResponse) -> Result<pb::StockPricesWrapper, frpc::Status> {
        Err(frpc::Status::new("boom"))
    }
    async fn search(
        &self,
        _: &frpc::Context,
        _: pb::SearchResponse,
        _: frpc::StreamSender<pb::Response>,
    ) -> Result<(), frpc::Status> {
        Ok(())
    }
    async fn upload(&self, _: &frpc::Context, _: frpc::Streaming<pb::Data>) -> Result<pb::Response, frpc::Status> {
        Ok(pb::Response::default())
    }
}

fn main() {
    let server = frpc::Server::builder().add_service(pb::EchoServiceServer::new(Svc)).build();
    assert!(server.is_ok());
    let _client: fn(frpc::Client) -> pb::EchoServiceClient = pb::EchoServiceClient::new;
    let edge = frpc_codegen_tests::default::kitchen::Edge { blob: vec![1, 2], ..Default::default() };
    assert_eq!(edge.blob, vec![1, 2]);
    assert_eq!(pb::echo_service::ECHO, 10);
}
