//! A Rust-first `EchoService` (`#[frpc::service]`) server and client talk over loopback TCP
//! for all four RPC kinds and a handler error (mirrors `codegen-tests/tests/service.rs`), and
//! the Rust-first client talks to the server frpc-codegen generated from `capture.proto` and
//! the other way round.

mod common;

use common::{
    Corpus, Data, EchoService, EchoServiceClient, EchoServiceServer, Request, Response, SearchResponse,
    StockPricesWrapper, Test,
};
use frpc::{Context, Status, StreamSender, Streaming};
use frpc_codegen_tests::capture as generated;

struct Echo;

impl EchoService for Echo {
    async fn echo(&self, _: &Context, request: Request) -> Result<Response, Status> {
        Ok(Response {
            message: request.message,
            test: Some(Data {
                message: "d".into(),
                checker: Test::Monkey,
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

async fn serve(server: frpc::Server) -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let serving = tokio::spawn(async move {
        let _ = server.serve_listener(listener).await;
    });
    (addr, serving)
}

#[tokio::test]
async fn rust_first_client_and_server_talk() {
    let server = frpc::Server::builder()
        .add_service(EchoServiceServer::new(Echo))
        .build()
        .unwrap();
    let (addr, serving) = serve(server).await;
    let client = EchoServiceClient::connect(addr).await.unwrap();

    let response = client
        .echo(Request {
            message: "hi".into(),
            corpus: Corpus::Web,
        })
        .await
        .unwrap();
    assert_eq!(response.message, "hi");
    assert_eq!(
        response.test,
        Some(Data {
            message: "d".into(),
            checker: Test::Monkey
        })
    );

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
                checker: Test::Potato,
            })
            .await
            .unwrap();
    }
    assert_eq!(upload.close_and_recv().await.unwrap().message, "got 3");

    let mut chat = client.echo_stream().await.unwrap();
    chat.send(Request {
        message: "ping".into(),
        corpus: Corpus::Universal,
    })
    .await
    .unwrap();
    assert_eq!(chat.message().await.unwrap().unwrap().message, "ping");
    chat.close_send().await.unwrap();
    assert!(chat.message().await.unwrap().is_none());

    serving.abort();
}

struct Generated;

impl generated::EchoService for Generated {
    async fn echo(&self, _: &Context, request: generated::Request) -> Result<generated::Response, Status> {
        Ok(generated::Response {
            message: format!("{} {}", request.message, request.corpus),
            test: Some(generated::Data {
                message: "d".into(),
                checker: generated::Test::Monkey as i32,
            }),
        })
    }
    async fn echo_stream(
        &self,
        _: &Context,
        _: Streaming<generated::Request>,
        _: StreamSender<generated::Response>,
    ) -> Result<(), Status> {
        Ok(())
    }
    async fn testy(
        &self,
        _: &Context,
        _: generated::SearchResponse,
    ) -> Result<generated::StockPricesWrapper, Status> {
        Err(Status::new("boom"))
    }
    async fn search(
        &self,
        _: &Context,
        request: generated::SearchResponse,
        outbound: StreamSender<generated::Response>,
    ) -> Result<(), Status> {
        for snippet in request.snippets {
            outbound
                .send(generated::Response {
                    message: snippet,
                    test: None,
                })
                .await?;
        }
        Ok(())
    }
    async fn upload(
        &self,
        _: &Context,
        mut inbound: Streaming<generated::Data>,
    ) -> Result<generated::Response, Status> {
        let mut checkers = Vec::new();
        while let Some(data) = inbound.message().await? {
            checkers.push(data.checker.to_string());
        }
        Ok(generated::Response {
            message: checkers.join(","),
            test: None,
        })
    }
}

/// Rust-first client → generated server, and generated client → Rust-first server: the same
/// operation numbers and bytes. Rust-first messages read only polyglot: against the generated
/// server (which accepts the protobuf extension) the Rust-first client's calls and streams stay
/// polyglot, and the Rust-first server does not accept the extension, so the generated client
/// sends polyglot too.
#[tokio::test]
async fn interoperates_with_codegen_generated_service() {
    let server = frpc::Server::builder()
        .add_service(generated::EchoServiceServer::new(Generated))
        .build()
        .unwrap();
    let (addr, serving) = serve(server).await;
    let raw = frpc::Client::connect(addr).await.unwrap();
    assert!(raw.negotiated().await);
    assert!(raw.protobuf_accepted(), "a generated server reads protobuf");
    let client = EchoServiceClient::new(raw);
    let response = client
        .echo(Request {
            message: "hi".into(),
            corpus: Corpus::Images,
        })
        .await
        .unwrap();
    assert_eq!(response.message, "hi 2");
    assert_eq!(response.test.unwrap().checker, Test::Monkey);
    assert!(client.testy(SearchResponse::default()).await.is_err());
    let mut results = client
        .search(SearchResponse {
            snippets: vec!["s".into()],
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(results.message().await.unwrap().unwrap().message, "s");
    assert!(results.message().await.unwrap().is_none());
    let mut upload = client.upload().await.unwrap();
    for checker in [Test::Monkey, Test::Potato] {
        upload
            .send(Data {
                message: String::new(),
                checker,
            })
            .await
            .unwrap();
    }
    assert_eq!(upload.close_and_recv().await.unwrap().message, "1,0");
    serving.abort();

    let server = frpc::Server::builder()
        .add_service(EchoServiceServer::new(Echo))
        .build()
        .unwrap();
    let (addr, serving) = serve(server).await;
    let raw = frpc::Client::connect(addr).await.unwrap();
    assert!(raw.negotiated().await);
    assert!(
        !raw.protobuf_accepted(),
        "a Rust-first server reads only polyglot"
    );
    let client = generated::EchoServiceClient::new(raw);
    let response = client
        .echo(generated::Request {
            message: "yo".into(),
            corpus: 1,
        })
        .await
        .unwrap();
    assert_eq!(response.message, "yo");
    assert_eq!(response.test.unwrap().checker, generated::Test::Monkey as i32);
    let mut chat = client.echo_stream().await.unwrap();
    chat.send(generated::Request {
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
