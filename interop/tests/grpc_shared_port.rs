//! One `grpc(true)` port, three kinds of client at once: the real Go fRPC peer (frisbee-go,
//! both framings) running its scenarios, grpcurl (a gRPC client nobody here wrote, through
//! server reflection, no proto file) calling every kind of method, and an frpc-rs client. Each
//! gets its own protocol's answers from the one server instance, and the Go peer sees fRPC's
//! bytes as on a plain port.

use std::net::SocketAddr;
use std::time::Duration;

use frpc::Framing;
use frpc_examples::capture::pb;
use frpc_interop::{RustServer, both_framings, client_config, run_go_client};
use frpc_testdata::tools::grpcurl;

const TIMEOUT: Duration = Duration::from_secs(60);

/// The Go peer's scenarios run together (one client process each): unary, server-streaming,
/// client-streaming, bidi, an error status, and a thousand concurrent unary calls.
const GO_SCENARIOS: [&str; 6] = ["echo", "testy", "search", "upload", "echostream", "concurrent"];

async fn go_frpc_grpcurl_and_frpc_share_one_port(framing: Framing) {
    let server = RustServer::start_with(framing, |builder| builder.grpc(true)).await;
    let addr = server.addr();
    let go = join_spawned(GO_SCENARIOS.map(|scenario| go_scenario(framing, addr, scenario)));
    let ((), (), ()) = tokio::join!(go, grpcurl_calls(addr), frpc_calls(framing, addr));
    assert!(server.is_running(), "the shared-port server stopped");
}

both_framings!(go_frpc_grpcurl_and_frpc_share_one_port);

/// Runs the futures at once, each on its own task, and waits for all.
async fn join_spawned<const N: usize>(futures: [impl Future<Output = ()> + Send + 'static; N]) {
    let tasks = futures.map(tokio::spawn);
    for task in tasks {
        task.await.expect("a Go scenario panicked");
    }
}

async fn go_scenario(framing: Framing, addr: SocketAddr, scenario: &'static str) {
    let run = run_go_client(framing, addr, scenario, TIMEOUT).await;
    assert!(run.success, "{}", run.report);
    assert!(run.report.contains(&format!("PASS {scenario}")), "{}", run.report);
}

/// grpcurl against the same port: reflection, then each kind of method and an error.
async fn grpcurl_calls(addr: SocketAddr) {
    let listed = run_grpcurl(addr, &["list"], None).await.expect("grpcurl list");
    assert!(
        listed.lines().any(|line| line == "capture.EchoService"),
        "{listed}"
    );

    let echo = run_grpcurl(
        addr,
        &["capture.EchoService/Echo"],
        Some(r#"{"Message":"hello"}"#),
    )
    .await;
    let echo = json_lines(&echo.expect("Echo"));
    assert_eq!(echo.len(), 1);
    assert_eq!(echo[0]["Message"], "hello");
    assert_eq!(echo[0]["Test"]["Checker"], "Monkey");

    let search = run_grpcurl(addr, &["capture.EchoService/Search"], Some("{}")).await;
    let messages: Vec<_> = json_lines(&search.expect("Search"))
        .iter()
        .map(|m| m["Message"].clone())
        .collect();
    assert_eq!(messages, ["r0", "r1"]);

    let upload = r#"{"Message":"a"} {"Message":"b"} {"Message":"c"}"#;
    let upload = json_lines(
        &run_grpcurl(addr, &["capture.EchoService/Upload"], Some(upload))
            .await
            .expect("Upload"),
    );
    assert_eq!(upload[0]["Message"], "got 3");

    let stream = r#"{"Message":"x"} {"Message":"y"}"#;
    let stream = run_grpcurl(addr, &["capture.EchoService/EchoStream"], Some(stream)).await;
    let messages: Vec<_> = json_lines(&stream.expect("EchoStream"))
        .iter()
        .map(|m| m["Message"].clone())
        .collect();
    assert_eq!(messages, ["x", "y"]);

    let failed = run_grpcurl(addr, &["capture.EchoService/Testy"], Some("{}")).await;
    let err = failed.expect_err("Testy fails");
    assert!(err.contains("Code: Unknown") && err.contains("boom"), "{err}");
}

/// Runs grpcurl in cleartext against `addr` (through reflection), with `data` as the request
/// JSON: its stdout, or its stdout and stderr when it failed.
async fn run_grpcurl(addr: SocketAddr, args: &[&str], data: Option<&str>) -> Result<String, String> {
    let mut command = tokio::process::Command::new(grpcurl());
    command.arg("-plaintext");
    if let Some(data) = data {
        command.args(["-d", data]);
    }
    command.arg(addr.to_string()).args(args).kill_on_drop(true);
    let output = tokio::time::timeout(TIMEOUT, command.output())
        .await
        .expect("grpcurl finishes")
        .expect("grpcurl runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    match output.status.success() {
        true => Ok(stdout),
        false => Err(format!("{stdout}{}", String::from_utf8_lossy(&output.stderr))),
    }
}

/// grpcurl's output: JSON objects, one after another.
fn json_lines(text: &str) -> Vec<serde_json::Value> {
    serde_json::Deserializer::from_str(text)
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|err| panic!("grpcurl printed something else than JSON ({err}): {text}"))
}

/// An frpc-rs client with the server's framing: unary calls and a server stream.
async fn frpc_calls(framing: Framing, addr: SocketAddr) {
    let client = frpc::Client::connect_with(addr, client_config(framing))
        .await
        .expect("connect");
    let client = pb::EchoServiceClient::new(client);
    for i in 0..50 {
        let request = pb::Request {
            message: format!("frpc {i}"),
            ..Default::default()
        };
        assert_eq!(
            client.echo(request).await.expect("echo").message,
            format!("frpc {i}")
        );
    }
    let mut replies = client
        .search(pb::SearchResponse::default())
        .await
        .expect("search");
    let mut messages = Vec::new();
    while let Some(reply) = replies.message().await.expect("a reply") {
        messages.push(reply.message);
    }
    assert_eq!(messages, ["r0", "r1"]);
}
