//! The Rust client (generated `EchoServiceClient` on `frpc::Client`) calls a real Go frisbee-go
//! server (hand-written fRPC on frisbee-go v0.10.2 or v0.11.0) over loopback, in both framings.

use std::time::Duration;

use frpc::{Error, Framing};
use frpc_examples::capture::pb::{
    Data, EchoServiceClient, Request, Response, SearchResponse, Test, request::Corpus, search_response,
};
use frpc_interop::{GoServer, client_config, other};

/// Bound on every call, so a broken peer fails the test instead of hanging it.
const CALL: Duration = Duration::from_secs(20);

async fn connect(server: &GoServer) -> EchoServiceClient {
    let client = frpc::Client::connect_with(server.addr(), client_config(server.framing()))
        .await
        .expect("connect to the Go server");
    EchoServiceClient::new(client)
}

async fn bounded<T>(what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(CALL, fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {CALL:?}"))
}

fn request(message: impl Into<String>) -> Request {
    Request {
        message: message.into(),
        corpus: Corpus::Web as i32,
    }
}

async fn echo_ok(client: &EchoServiceClient, message: String) {
    let response = bounded("Echo", client.echo(request(message.clone())))
        .await
        .unwrap_or_else(|e| panic!("Echo({:.20?}): {e}", message));
    assert_eq!(
        response.message.len(),
        message.len(),
        "Echo({:.20?}) came back with another length",
        message
    );
    assert!(
        response.message == message,
        "Echo({:.20?}) came back different",
        message
    );
    assert_eq!(
        response.test,
        Some(Data {
            message: "d".into(),
            checker: Test::Monkey as i32
        })
    );
}

async fn next(stream: &mut frpc::Streaming<Response>) -> Result<Option<Response>, Error> {
    bounded("stream message", stream.message()).await
}

fn big(size: usize) -> String {
    (0..size).map(|i| (b'a' + (i % 26) as u8) as char).collect()
}

async fn echo(framing: Framing) {
    let server = GoServer::start(framing).await;
    let client = connect(&server).await;
    for message in ["hi", "", "héllo wörld"] {
        echo_ok(&client, message.to_owned()).await;
    }
}

async fn testy_error_is_status_boom(framing: Framing) {
    let server = GoServer::start(framing).await;
    let client = connect(&server).await;
    let err = bounded(
        "Testy",
        client.testy(SearchResponse {
            results: vec![search_response::Result {
                url: "u".into(),
                ..Default::default()
            }],
            snippets: vec!["a".into()],
            ..Default::default()
        }),
    )
    .await
    .expect_err("Testy must fail");
    match &err {
        Error::Status(status) => assert_eq!(status.message(), "boom"),
        other => panic!("expected Error::Status(\"boom\"), got {other:?}"),
    }
    assert_eq!(err.status().map(|s| s.message()), Some("boom"));
    echo_ok(&client, "after boom".into()).await;
}

async fn search(framing: Framing) {
    let server = GoServer::start(framing).await;
    let client = connect(&server).await;
    let mut stream = bounded("Search", client.search(SearchResponse::default()))
        .await
        .expect("open Search");
    let mut got = Vec::new();
    while let Some(response) = next(&mut stream).await.expect("Search message") {
        got.push(response.message);
        assert!(got.len() <= 2, "too many messages: {got:?}");
    }
    assert_eq!(got, ["r0", "r1"]);
}

async fn search_error_surfaces_as_err(framing: Framing) {
    let server = GoServer::start(framing).await;
    let client = connect(&server).await;
    let mut stream = bounded(
        "Search",
        client.search(SearchResponse {
            snippets: vec!["fail".into()],
            ..Default::default()
        }),
    )
    .await
    .expect("open Search");
    let first = next(&mut stream)
        .await
        .expect("first message")
        .expect("a message before the error");
    assert_eq!(first.message, "partial");
    let err = next(&mut stream).await.expect_err("the handler's error");
    assert_eq!(
        err.status().map(|s| s.message()),
        Some("search failed"),
        "{err:?}"
    );
    echo_ok(&client, "after search failed".into()).await;
}

async fn upload(framing: Framing) {
    let server = GoServer::start(framing).await;
    let client = connect(&server).await;
    let mut call = bounded("Upload", client.upload()).await.expect("open Upload");
    for (i, checker) in [Test::Potato, Test::Monkey, Test::Potato].into_iter().enumerate() {
        bounded(
            "Upload send",
            call.send(Data {
                message: format!("part {i}"),
                checker: checker as i32,
            }),
        )
        .await
        .expect("send Data");
    }
    // The Go server answers "got 3", EOF, EOF (like frpc-go's CloseAndSend then return nil).
    let response = bounded("Upload close_and_recv", call.close_and_recv())
        .await
        .expect("Upload response");
    assert_eq!(response.message, "got 3");
    echo_ok(&client, "after upload".into()).await;
}

async fn echo_stream(framing: Framing) {
    let server = GoServer::start(framing).await;
    let client = connect(&server).await;
    let mut call = bounded("EchoStream", client.echo_stream())
        .await
        .expect("open EchoStream");
    for message in ["x", "y"] {
        bounded("EchoStream send", call.send(request(message)))
            .await
            .expect("send");
        let reply = bounded("EchoStream message", call.message())
            .await
            .expect("reply")
            .expect("a reply, not the end");
        assert_eq!(reply.message, message);
    }
    for i in 0..50 {
        bounded("EchoStream send", call.send(request(format!("burst-{i}"))))
            .await
            .expect("send");
    }
    bounded("EchoStream close_send", call.close_send())
        .await
        .expect("close_send");
    for i in 0..50 {
        let reply = bounded("EchoStream message", call.message())
            .await
            .expect("reply")
            .expect("a reply, not the end");
        assert_eq!(reply.message, format!("burst-{i}"));
    }
    assert!(
        bounded("EchoStream end", call.message())
            .await
            .expect("end")
            .is_none(),
        "the stream ends after the echoes"
    );
}

async fn concurrent_1000_unary(framing: Framing) {
    let server = GoServer::start(framing).await;
    let client = connect(&server).await;
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..1000 {
        let client = client.clone();
        calls.spawn(async move { echo_ok(&client, format!("call-{i}")).await });
    }
    let mut done = 0;
    while let Some(result) = calls.join_next().await {
        result.expect("a concurrent call failed");
        done += 1;
    }
    assert_eq!(done, 1000);
}

async fn big_4_mib_echo(framing: Framing) {
    let server = GoServer::start(framing).await;
    let client = connect(&server).await;
    echo_ok(&client, big(4 << 20)).await;
    echo_ok(&client, "after 4 MiB".into()).await;
}

async fn big_6_mib_refused_locally(framing: Framing) {
    let mut server = GoServer::start(framing).await;
    let client = connect(&server).await;
    let err = bounded("Echo 6 MiB", client.echo(request(big(6 << 20))))
        .await
        .expect_err("6 MiB is over the 5 MiB limit");
    assert!(
        matches!(err, Error::TooLarge { .. }),
        "expected Error::TooLarge, got {err:?}"
    );
    assert!(
        !client.client().is_closed(),
        "refusing locally must not close the connection"
    );
    echo_ok(&client, "after 6 MiB refused".into()).await;
    assert!(server.is_running());
}

/// A Rust client with the other framing: the call fails promptly, it does not hang.
async fn other_framing_is_refused(framing: Framing) {
    let mut server = GoServer::start(framing).await;
    let client = frpc::Client::connect_with(server.addr(), client_config(other(framing)))
        .await
        .map(EchoServiceClient::new)
        .expect("TCP connect succeeds; the framing is only noticed on the first packets");
    let result = tokio::time::timeout(Duration::from_secs(15), client.echo(request("hi")))
        .await
        .expect("a call to a peer with the other framing must fail, not hang");
    let err = result.expect_err("a peer with the other framing cannot answer");
    assert!(
        matches!(
            err,
            Error::ConnectionClosed { .. } | Error::Frame(_) | Error::Io(_)
        ),
        "expected the connection to be dropped, got {err:?}"
    );
    let other_name = format!("{:?}", other(framing));
    assert!(
        err.to_string().contains("other framing") && err.to_string().contains(&other_name),
        "the error should suggest Framing::{other_name}: {err}"
    );
    assert!(
        server.is_running(),
        "the Go server must survive a peer with the other framing"
    );
}

/// A `Channel` to a Go server: `connect` proves the connection works by the Go server's PONG
/// (Go ignores the extension offer), and calls go through, with and without extensions offered.
async fn channel_connects_to_a_go_server(framing: Framing) {
    let server = GoServer::start(framing).await;
    for extensions in [true, false] {
        let mut config = client_config(framing);
        config.extensions = extensions;
        let channel = bounded(
            "Endpoint::connect",
            frpc::Endpoint::from(server.addr())
                .client_config(config)
                .connect(),
        )
        .await
        .expect("a Go server answers a PING");
        let client = EchoServiceClient::new(channel);
        let response = bounded("Echo", client.echo(request("via a channel")))
            .await
            .unwrap();
        assert_eq!(response.message, "via a channel");
    }
}

/// More streams on one connection than there are stream ids: each ends with a Frisbee close
/// (a `STREAM` packet without content), which drops it from the Go server's stream table. Go
/// keeps a stream until it is closed, so the 65,537th stream's open went to the first one's
/// finished handler and hung (session 33's Go interop probe), and every later one.
async fn streams_past_every_id(framing: Framing) {
    const STREAMS: usize = 65_536 + 512;
    const AT_ONCE: usize = 16;
    let server = GoServer::start(framing).await;
    let client = connect(&server).await;
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..AT_ONCE {
        let (client, next) = (client.clone(), next.clone());
        workers.spawn(async move {
            while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < STREAMS {
                let mut stream = bounded("Search", client.search(SearchResponse::default()))
                    .await
                    .expect("open Search");
                let mut got = Vec::new();
                while let Some(response) = next_message(&mut stream).await {
                    got.push(response.message);
                }
                assert_eq!(got, ["r0", "r1"]);
            }
        });
    }
    while let Some(worker) = workers.join_next().await {
        worker.unwrap();
    }
}

async fn next_message(stream: &mut frpc::Streaming<Response>) -> Option<Response> {
    next(stream).await.expect("Search message")
}

frpc_interop::both_framings! {
    streams_past_every_id,
    channel_connects_to_a_go_server,
    echo,
    testy_error_is_status_boom,
    search,
    search_error_surfaces_as_err,
    upload,
    echo_stream,
    concurrent_1000_unary,
    big_4_mib_echo,
    big_6_mib_refused_locally,
    other_framing_is_refused,
}
