//! The `frpc` binary run as a user runs it, against a live frpc server (the interop crate's
//! capture service, which reflects) and live Go fRPC servers (both framings, no reflection).

use std::process::{Command, Output};

use frpc::Framing;
use frpc_interop::{GoServer, RustServer};

const CAPTURE_PROTO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../proto/capture.proto");

/// Runs `frpc args…` (standard input: `stdin`) off the runtime, so the server keeps serving.
async fn frpc(args: Vec<String>, stdin: Option<&'static str>) -> Output {
    tokio::task::spawn_blocking(move || {
        use std::io::Write as _;
        let mut child = Command::new(env!("CARGO_BIN_EXE_frpc"))
            .args(&args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run frpc");
        let mut input = child.stdin.take().unwrap();
        input.write_all(stdin.unwrap_or_default().as_bytes()).unwrap();
        drop(input);
        child.wait_with_output().expect("frpc finishes")
    })
    .await
    .unwrap()
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "frpc failed ({:?}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_str(stdout(out).trim()).expect("one JSON object")
}

fn framing_arg(framing: Framing) -> &'static str {
    match framing {
        Framing::Frisbee => "frisbee",
        Framing::Legacy => "legacy",
    }
}

/// Echo answers the request's message and a fixed `Data`, the enum by name.
fn assert_echo(reply: &serde_json::Value, message: &str) {
    assert_eq!(reply["Message"], message, "{reply}");
    assert_eq!(reply["Test"]["Message"], "d", "{reply}");
    assert_eq!(reply["Test"]["Checker"], "Monkey", "{reply}");
}

#[tokio::test(flavor = "multi_thread")]
async fn call_list_describe_through_reflection() {
    let server = RustServer::start(Framing::Frisbee).await;
    let addr = server.addr().to_string();

    let out = frpc(
        args(&[
            "call",
            &addr,
            "capture.EchoService/Echo",
            r#"{"Message":"hi","corpus":"WEB"}"#,
        ]),
        None,
    )
    .await;
    assert_echo(&json(&out), "hi");

    // The request from standard input, with a timeout and metadata.
    let call = [
        "call",
        &addr,
        "capture.EchoService/Echo",
        "--timeout",
        "5",
        "-H",
        "user:ann",
    ];
    let out = frpc(args(&call), Some(r#"{"Message":"from stdin"}"#)).await;
    assert_echo(&json(&out), "from stdin");

    let out = frpc(args(&["list", &addr]), None).await;
    assert_eq!(stdout(&out).trim(), "capture.EchoService");

    let out = frpc(args(&["describe", &addr, "capture.EchoService"]), None).await;
    let text = stdout(&out);
    assert!(
        text.contains("rpc Echo(capture.Request) returns (capture.Response); // operation 10, unary"),
        "{text}"
    );
    assert!(
        text.contains(
            "rpc Upload(stream capture.Data) returns (capture.Response); // operation 14, client streaming"
        ),
        "{text}"
    );
    let out = frpc(args(&["describe", &addr, "capture.Request"]), None).await;
    let text = stdout(&out);
    assert!(
        text.contains("  string Message = 1;\n  capture.Request.Corpus corpus = 4;\n"),
        "{text}"
    );
    let out = frpc(args(&["describe", &addr, "capture.StockPrices"]), None).await;
    assert!(stdout(&out).contains("  map<string, double> prices = 1;\n"));
}

#[tokio::test(flavor = "multi_thread")]
async fn errors_print_the_code_and_set_the_exit_status() {
    let server = RustServer::start(Framing::Frisbee).await;
    let addr = server.addr().to_string();
    let out = frpc(args(&["call", &addr, "capture.EchoService/Testy", "{}"]), None).await;
    assert_eq!(out.status.code(), Some(64 + 2), "UNKNOWN is 2");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("UNKNOWN") && err.contains("boom"), "{err}");

    let out = frpc(args(&["call", &addr, "capture.EchoService/Nope", "{}"]), None).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("has no method `Nope`"));

    let out = frpc(
        args(&["call", &addr, "capture.EchoService/Echo", r#"{"Message":3}"#]),
        None,
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a valid `capture.Request`"));

    // Plain fRPC: no reflection, so the schema must come from --proto.
    let out = frpc(args(&["list", &addr, "--no-extensions"]), None).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--proto"));
}

async fn go_peer(framing: Framing) {
    let server = GoServer::start(framing).await;
    let addr = server.addr().to_string();
    let framing = framing_arg(framing);
    let call = [
        "call",
        &addr,
        "capture.EchoService/Echo",
        "--framing",
        framing,
        "--proto",
        CAPTURE_PROTO,
    ];
    let mut with_request = args(&call);
    with_request.push(r#"{"Message":"héllo go","corpus":"IMAGES"}"#.into());
    assert_echo(&json(&frpc(with_request, None).await), "héllo go");

    // Go sends errors as text only: the code is UNKNOWN.
    let testy = [
        "call",
        &addr,
        "capture.EchoService/Testy",
        "{}",
        "--framing",
        framing,
        "--proto",
        CAPTURE_PROTO,
    ];
    let out = frpc(args(&testy), None).await;
    assert_eq!(
        out.status.code(),
        Some(66),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out = frpc(args(&["list", &addr, "--framing", framing]), None).await;
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("does not offer reflection") && err.contains("--proto"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn go_peer_frisbee() {
    go_peer(Framing::Frisbee).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn go_peer_legacy() {
    go_peer(Framing::Legacy).await;
}
