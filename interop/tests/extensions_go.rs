//! frpc's extensions (docs/extensions.md) against real Go frisbee-go servers, both framings: the
//! Go server ignores the offer, so everything stays plain fRPC and works; metadata is left out
//! (or refused when strict); errors arrive as `Code::Unknown` with Go's text; a dropped call
//! sends no cancel and leaves the connection usable. The protobuf extension never reaches a Go
//! peer: an frpc client with it on speaks polyglot to a Go server, and a Go client gets
//! polyglot from an frpc server with it on. Streams have neither flow control nor open
//! acknowledgement (a one-message window would stall them if they had: Go never grants credit).

use std::time::Duration;

use frpc::{Code, Error, Framing, Metadata};
use frpc_examples::capture::pb::{Data, EchoServiceClient, Request, SearchResponse, request::Corpus};
use frpc_interop::{GoServer, RustServer, client_config, run_go_client};

const CALL: Duration = Duration::from_secs(20);

async fn bounded<T>(what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(CALL, fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {CALL:?}"))
}

fn request(message: &str) -> Request {
    Request {
        message: message.into(),
        corpus: Corpus::Web as i32,
    }
}

fn metadata() -> Metadata {
    let mut md = Metadata::new();
    md.insert("authorization", "Bearer 42").unwrap();
    md
}

async fn go_server_ignores_the_offer(framing: Framing) {
    let server = GoServer::start(framing).await;
    let config = client_config(framing);
    assert!(config.extensions, "extensions are on by default");
    let client = frpc::Client::connect_with(server.addr(), config).await.unwrap();
    assert!(
        !bounded("negotiation", client.negotiated()).await,
        "a Go server never accepts"
    );
    let echo = EchoServiceClient::new(client.clone());
    let reply = bounded("Echo", echo.echo(request("hi"))).await.unwrap();
    assert_eq!(reply.message, "hi");
    // Go's errors are text only: Unknown.
    let err = bounded("Testy", echo.testy(SearchResponse::default()))
        .await
        .unwrap_err();
    assert_eq!(
        err.status().map(|s| (s.code(), s.message())),
        Some((Code::Unknown, "boom"))
    );
}

async fn metadata_is_left_out_for_a_go_server(framing: Framing) {
    let server = GoServer::start(framing).await;
    // No `negotiated()` first: the call with metadata settles it itself.
    let client = frpc::Client::connect_with(server.addr(), client_config(framing))
        .await
        .unwrap();
    let echo = EchoServiceClient::new(client.with_metadata(metadata()));
    let reply = bounded("Echo", echo.echo(request("with metadata")))
        .await
        .unwrap();
    assert_eq!(reply.message, "with metadata");
    let mut strict = client_config(framing);
    strict.strict_metadata = true;
    let client = frpc::Client::connect_with(server.addr(), strict).await.unwrap();
    let err = bounded(
        "strict Echo",
        EchoServiceClient::new(client.with_metadata(metadata())).echo(request("x")),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, Error::Metadata(_)), "{err}");
    let reply = bounded("Echo", EchoServiceClient::new(client).echo(request("plain")))
        .await
        .unwrap();
    assert_eq!(reply.message, "plain");
}

async fn dropped_calls_and_streams_keep_the_connection(framing: Framing) {
    let server = GoServer::start(framing).await;
    let client = frpc::Client::connect_with(server.addr(), client_config(framing))
        .await
        .unwrap();
    assert!(!bounded("negotiation", client.negotiated()).await);
    let echo = EchoServiceClient::new(client.clone());
    // A call dropped before its reply, and a stream dropped mid-way.
    drop(echo.echo(request("dropped")));
    let call = echo.echo(request("abandoned"));
    let _ = tokio::time::timeout(Duration::from_micros(1), call).await;
    let mut search = bounded("Search", echo.search(SearchResponse::default()))
        .await
        .unwrap();
    let _ = bounded("first result", search.message()).await.unwrap();
    drop(search);
    let reply = bounded("Echo", echo.echo(request("still fine"))).await.unwrap();
    assert_eq!(reply.message, "still fine");
    assert!(!client.is_closed());
}

/// An frpc client with the protobuf extension on (the default) against a Go server: never
/// accepted, so every message goes in polyglot, unary and streaming, and the Go server (which
/// would fail on anything else) answers them all.
async fn protobuf_on_speaks_polyglot_to_a_go_server(framing: Framing) {
    let server = GoServer::start(framing).await;
    let config = client_config(framing);
    assert!(
        config.extensions && config.protobuf,
        "protobuf is offered by default"
    );
    let client = frpc::Client::connect_with(server.addr(), config).await.unwrap();
    assert!(!bounded("negotiation", client.negotiated()).await);
    assert!(!client.protobuf_accepted());
    let echo = EchoServiceClient::new(client.clone());
    let reply = bounded("Echo", echo.echo(request("polyglot"))).await.unwrap();
    assert_eq!(reply.message, "polyglot");
    let mut chat = bounded("EchoStream", echo.echo_stream()).await.unwrap();
    for text in ["a", "b"] {
        bounded("send", chat.send(request(text))).await.unwrap();
        let got = bounded("receive", chat.message()).await.unwrap().unwrap();
        assert_eq!(got.message, text);
    }
    bounded("close", chat.close_send()).await.unwrap();
    assert!(bounded("end", chat.message()).await.unwrap().is_none());
}

/// A Go client against an frpc server with the protobuf extension on (the default): Go never
/// offers, so it gets polyglot replies and stream messages; its scenarios check every value.
async fn go_client_gets_polyglot_from_a_protobuf_server(framing: Framing) {
    let config = frpc::ServerConfig::default();
    assert!(
        config.extensions && config.protobuf,
        "protobuf is accepted by default"
    );
    let server = RustServer::start(framing).await;
    for scenario in ["echo", "search", "echostream", "upload"] {
        let run = run_go_client(framing, server.addr(), scenario, GO_CLIENT).await;
        assert!(run.success, "{scenario}: {}", run.report);
        assert!(run.report.contains(&format!("PASS {scenario}")), "{}", run.report);
    }
}

const GO_CLIENT: Duration = Duration::from_secs(60);

async fn streams_with_a_go_server_stay_plain(framing: Framing) {
    let server = GoServer::start(framing).await;
    let mut config = client_config(framing);
    // The smallest window: had flow control been used, the second send would wait forever.
    config.connection.stream_window = 1;
    let client = frpc::Client::connect_with(server.addr(), config).await.unwrap();
    let echo = EchoServiceClient::new(client.clone());
    // Opened before the answer to the offer: the first stream waits for Go's PONG, then goes
    // plain.
    let mut call = bounded("EchoStream", echo.echo_stream()).await.unwrap();
    assert!(!client.extensions_accepted());
    for i in 0..20 {
        bounded("EchoStream send", call.send(request(&format!("m{i}"))))
            .await
            .unwrap();
    }
    bounded("close_send", call.close_send()).await.unwrap();
    for i in 0..20 {
        let reply = bounded("EchoStream reply", call.message())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(reply.message, format!("m{i}"));
    }
    let mut upload = bounded("Upload", echo.upload()).await.unwrap();
    for i in 0..3 {
        let data = Data {
            message: format!("part {i}"),
            checker: 0,
        };
        bounded("Upload send", upload.send(data)).await.unwrap();
    }
    let reply = bounded("Upload reply", upload.close_and_recv()).await.unwrap();
    assert_eq!(reply.message, "got 3");
    let mut search = bounded("Search", echo.search(SearchResponse::default()))
        .await
        .unwrap();
    let mut got = Vec::new();
    while let Some(response) = bounded("Search message", search.message()).await.unwrap() {
        got.push(response.message);
    }
    assert_eq!(got, ["r0", "r1"]);
}

frpc_interop::both_framings! {
    protobuf_on_speaks_polyglot_to_a_go_server,
    go_client_gets_polyglot_from_a_protobuf_server,
    streams_with_a_go_server_stay_plain,
    go_server_ignores_the_offer,
    metadata_is_left_out_for_a_go_server,
    dropped_calls_and_streams_keep_the_connection,
}
