//! The generated `EchoService` trait, server and client talk to each other over loopback,
//! for all four RPC kinds and a handler error.

use frpc::{Context, Status, StreamSender, Streaming};
use frpc_codegen_tests::capture::{
    Data, EchoService, EchoServiceClient, EchoServiceServer, Request, Response, SearchResponse,
    StockPricesWrapper,
};

struct Echo;

impl EchoService for Echo {
    async fn echo(&self, _: &Context, request: Request) -> Result<Response, Status> {
        Ok(Response {
            message: request.message,
            test: Some(Data {
                message: "d".into(),
                checker: 1,
            }),
        })
    }

    async fn echo_stream(
        &self,
        _: &Context,
        mut inbound: Streaming<Request>,
        outbound: StreamSender<Response>,
    ) -> Result<(), Status> {
        while let Some(request) = inbound.message().await? {
            outbound
                .send(Response {
                    message: request.message,
                    test: None,
                })
                .await?;
        }
        Ok(())
    }

    async fn testy(&self, _: &Context, _: SearchResponse) -> Result<StockPricesWrapper, Status> {
        Err(Status::new("boom"))
    }

    async fn search(
        &self,
        _: &Context,
        request: SearchResponse,
        outbound: StreamSender<Response>,
    ) -> Result<(), Status> {
        for snippet in request.snippets {
            outbound
                .send(Response {
                    message: snippet,
                    test: None,
                })
                .await?;
        }
        Ok(())
    }

    async fn upload(&self, _: &Context, mut inbound: Streaming<Data>) -> Result<Response, Status> {
        let mut count = 0;
        while inbound.message().await?.is_some() {
            count += 1;
        }
        Ok(Response {
            message: format!("got {count}"),
            test: None,
        })
    }
}

#[tokio::test]
async fn generated_client_and_server_talk() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = frpc::Server::builder()
        .add_service(EchoServiceServer::new(Echo))
        .build()
        .unwrap();
    let serving = tokio::spawn(async move { server.serve_listener(listener).await });

    let client = EchoServiceClient::connect(addr).await.unwrap();

    let response = client
        .echo(Request {
            message: "hi".into(),
            corpus: 1,
        })
        .await
        .unwrap();
    assert_eq!(response.message, "hi");
    assert_eq!(response.test.unwrap().message, "d");

    let err = client.testy(SearchResponse::default()).await.unwrap_err();
    assert!(err.to_string().contains("boom"), "{err}");

    let mut results = client
        .search(SearchResponse {
            snippets: vec!["a".into(), "b".into()],
            ..Default::default()
        })
        .await
        .unwrap();
    let mut seen = Vec::new();
    while let Some(r) = results.message().await.unwrap() {
        seen.push(r.message);
    }
    assert_eq!(seen, ["a", "b"]);

    let mut upload = client.upload().await.unwrap();
    for m in ["x", "y", "z"] {
        upload
            .send(Data {
                message: m.into(),
                checker: 0,
            })
            .await
            .unwrap();
    }
    assert_eq!(upload.close_and_recv().await.unwrap().message, "got 3");

    let mut chat = client.echo_stream().await.unwrap();
    chat.send(Request {
        message: "ping".into(),
        corpus: 0,
    })
    .await
    .unwrap();
    assert_eq!(chat.message().await.unwrap().unwrap().message, "ping");
    chat.close_send().await.unwrap();
    assert!(chat.message().await.unwrap().is_none());

    serving.abort();
}
