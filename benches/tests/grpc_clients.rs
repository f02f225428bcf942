//! The gRPC face against gRPC clients nobody here wrote: Python grpcio (`.ci/setup-python`)
//! and grpcurl (`.ci/setup-grpcurl`), against one server that serves fRPC and gRPC on one port
//! while an frpc client calls it too.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use frpc_bench::frameworks::frpc::pb as fpb;
use frpc_testdata::tools::{grpcurl as grpcurl_path, python};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

mod unary_svc;

/// One server, both faces, with health: `benchmark.BenchmarkService` reported NOT_SERVING.
async fn start() -> (SocketAddr, mpsc::UnboundedReceiver<String>) {
    let (svc, rx) = unary_svc::Svc::new();
    let (reporter, health) = frpc::health::service();
    reporter.set_not_serving("benchmark.BenchmarkService");
    let bound = frpc::Server::builder()
        .grpc(true)
        .add_service(fpb::BenchmarkServiceServer::new(svc))
        .add_service(health)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    (addr, rx)
}

fn proto_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("proto")
}

/// Runs a test against a Python script within a minute: a script that dies early (or never
/// starts) fails the test instead of leaving it waiting for lines or events forever.
async fn bounded(test: impl Future<Output = ()>) {
    tokio::time::timeout(Duration::from_secs(60), test)
        .await
        .expect("the Python client's test did not finish within 60 s");
}

/// The frpc client's calls go on while the third-party client runs.
async fn frpc_calls(addr: SocketAddr) {
    let client = fpb::BenchmarkServiceClient::connect(addr).await.unwrap();
    for i in 0..10 {
        let text = format!("frpc:{i}");
        let reply = client
            .benchmark(fpb::Request {
                message: text.clone(),
            })
            .await
            .unwrap();
        assert_eq!(reply.message, text);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_grpcio_calls_the_shared_port() {
    bounded(async {
        let python = python();
        let (addr, mut events) = start().await;
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/grpc_clients.py");
        let mut child = tokio::process::Command::new(python)
            .arg(script)
            .arg(addr.to_string())
            .arg(proto_dir())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        frpc_calls(addr).await;

        assert_eq!(events.recv().await.unwrap(), "deadline true");
        assert_eq!(lines.next_line().await.unwrap().unwrap(), "STARTED");
        // grpcio's own timer ends the deadline call and the script starts the next at once: the
        // first handler's cancel and the second's start race.
        let mut seen = [events.recv().await.unwrap(), events.recv().await.unwrap()];
        seen.sort();
        assert_eq!(seen, ["deadline cancelled", "hang false"]);
        stdin.write_all(b"go\n").await.unwrap();
        assert_eq!(events.recv().await.unwrap(), "hang cancelled");
        stdin.write_all(b"go\n").await.unwrap();
        assert_eq!(lines.next_line().await.unwrap().unwrap(), "OK");
        assert!(child.wait().await.unwrap().success());
    })
    .await;
}

/// Runs grpcurl with `args`: its exit status, stdout and stderr.
async fn grpcurl(args: &[&str]) -> (bool, String, String) {
    let out = tokio::process::Command::new(grpcurl_path())
        .args(args)
        .output()
        .await
        .unwrap();
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (out.status.success(), text(out.stdout), text(out.stderr))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpcurl_calls_the_shared_port() {
    let (addr, _events) = start().await;
    let addr_text = addr.to_string();
    let proto = proto_dir();
    let base = [
        "-plaintext",
        "-import-path",
        proto.to_str().unwrap(),
        "-proto",
        "benchmark.proto",
    ];
    let call = |data: &'static str, extra: &'static [&'static str]| {
        let mut args: Vec<&str> = base.to_vec();
        args.extend_from_slice(extra);
        args.extend([
            "-d",
            data,
            addr_text.as_str(),
            "benchmark.BenchmarkService/Benchmark",
        ]);
        let args: Vec<String> = args.into_iter().map(String::from).collect();
        async move { grpcurl(&args.iter().map(String::as_str).collect::<Vec<_>>()).await }
    };
    let (frpc, (ok, out, err)) = tokio::join!(frpc_calls(addr), call(r#"{"Message":"echo:hi"}"#, &[]));
    let () = frpc;
    assert!(ok, "{err}");
    assert!(out.contains(r#""Message": "echo:hi""#), "{out}");

    let (ok, _, err) = call(r#"{"Message":"status:5"}"#, &[]).await;
    assert!(!ok);
    assert!(
        err.contains("Code: NotFound") && err.contains("Message: failed with NOT_FOUND"),
        "{err}"
    );

    let (ok, out, err) = call(r#"{"Message":"meta"}"#, &["-v", "-H", "x-user: ada"]).await;
    assert!(ok, "{err}");
    assert!(out.contains("x-echo-user: ada"), "{out}");

    let (ok, _, err) = call(r#"{"Message":"deadline"}"#, &["-max-time", "0.3"]).await;
    assert!(!ok);
    assert!(err.contains("DeadlineExceeded"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpcurl_lists_and_calls_through_reflection() {
    let (addr, _events) = start().await;
    let addr = addr.to_string();
    let (ok, out, err) = grpcurl(&["-plaintext", &addr, "list"]).await;
    assert!(ok, "{err}");
    assert!(out.lines().any(|l| l == "benchmark.BenchmarkService"), "{out}");
    assert!(
        out.lines().any(|l| l == "grpc.reflection.v1.ServerReflection"),
        "{out}"
    );
    let (ok, out, err) = grpcurl(&["-plaintext", &addr, "describe", "benchmark.BenchmarkService"]).await;
    assert!(ok, "{err}");
    assert!(
        out.contains("rpc Benchmark ( .benchmark.Request ) returns ( .benchmark.Response );"),
        "{out}"
    );
    // No proto files: the call's types come from reflection.
    let data = r#"{"Message":"echo:reflected"}"#;
    let (ok, out, err) = grpcurl(&[
        "-plaintext",
        "-d",
        data,
        &addr,
        "benchmark.BenchmarkService/Benchmark",
    ])
    .await;
    assert!(ok, "{err}");
    assert!(out.contains(r#""Message": "echo:reflected""#), "{out}");

    // Health is reflected under the name the gRPC face serves it by, and callable so.
    let (ok, out, err) = grpcurl(&["-plaintext", &addr, "list"]).await;
    assert!(ok, "{err}");
    assert!(out.lines().any(|l| l == "grpc.health.v1.Health"), "{out}");
    let data = r#"{"service":"benchmark.BenchmarkService"}"#;
    let (ok, out, err) = grpcurl(&["-plaintext", "-d", data, &addr, "grpc.health.v1.Health/Check"]).await;
    assert!(ok, "{err}");
    assert!(out.contains(r#""status": "NOT_SERVING""#), "{out}");
}

mod streams_svc;

use std::time::Duration;

use streams_svc::fpb as spb;

/// One server, both faces, the streaming service and health (`streams.Streams` reported
/// SERVING), messages up to 64 KiB: what the streaming tests run against.
async fn start_streams() -> (
    SocketAddr,
    mpsc::UnboundedReceiver<String>,
    frpc::health::HealthReporter,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let (reporter, health) = frpc::health::service();
    reporter.set_serving("streams.Streams");
    let mut config = frpc::ServerConfig::default();
    config.connection.max_content_length = 64 * 1024;
    let bound = frpc::Server::builder()
        .config(config)
        .grpc(true)
        .add_service(spb::StreamsServer::new(streams_svc::Svc { events: tx }))
        .add_service(health)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    (addr, rx, reporter)
}

/// An frpc client's streams go on while the third-party client runs.
async fn frpc_streams(addr: SocketAddr) {
    let client = spb::StreamsClient::connect(addr).await.unwrap();
    for _ in 0..5 {
        let request = spb::CountRequest {
            n: 20,
            mode: String::new(),
        };
        let mut counts = client.count(request).await.unwrap();
        let mut got = 0;
        while let Some(item) = counts.message().await.unwrap() {
            assert_eq!(item.n, got);
            got += 1;
        }
        assert_eq!(got, 20);
        let mut upload = client.sum().await.unwrap();
        for n in 1..=4 {
            let item = spb::Item {
                n,
                ..Default::default()
            };
            upload.send(item).await.unwrap();
        }
        assert_eq!(upload.close_and_recv().await.unwrap().sum, 10);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_grpcio_streams_on_the_shared_port() {
    bounded(async {
        let python = python();
        let (addr, mut events, reporter) = start_streams().await;
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/grpc_streams.py");
        let mut child = tokio::process::Command::new(python)
            .arg(script)
            .arg(addr.to_string())
            .arg(proto_dir())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let frpc_side = tokio::spawn(frpc_streams(addr));

        assert_eq!(lines.next_line().await.unwrap().unwrap(), "DEADLINE");
        assert_eq!(events.recv().await.unwrap(), "count hang true");
        assert_eq!(events.recv().await.unwrap(), "count cancelled");
        stdin.write_all(b"go\n").await.unwrap();
        assert_eq!(lines.next_line().await.unwrap().unwrap(), "CANCEL");
        assert_eq!(events.recv().await.unwrap(), "chat hang false");
        stdin.write_all(b"go\n").await.unwrap();
        assert_eq!(lines.next_line().await.unwrap().unwrap(), "CANCELLED");
        assert_eq!(events.recv().await.unwrap(), "chat cancelled");
        stdin.write_all(b"go\n").await.unwrap();
        assert_eq!(lines.next_line().await.unwrap().unwrap(), "WATCHING");
        reporter.set_not_serving("streams.Streams");
        stdin.write_all(b"go\n").await.unwrap();
        assert_eq!(lines.next_line().await.unwrap().unwrap(), "OK");
        assert!(child.wait().await.unwrap().success());
        frpc_side.await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpcurl_streams_on_the_shared_port() {
    let (addr, mut events, _reporter) = start_streams().await;
    let addr_text = addr.to_string();
    let proto = proto_dir();
    let call = |method: &str, data: &str, extra: &[&str]| {
        let mut args: Vec<String> = ["-plaintext", "-import-path", proto.to_str().unwrap()]
            .into_iter()
            .chain(["-proto", "streams.proto"])
            .chain(extra.iter().copied())
            .map(String::from)
            .collect();
        args.extend([
            "-d".into(),
            data.into(),
            addr_text.clone(),
            format!("streams.Streams/{method}"),
        ]);
        async move { grpcurl(&args.iter().map(String::as_str).collect::<Vec<_>>()).await }
    };
    let frpc_side = tokio::spawn(frpc_streams(addr));

    // Server streaming: one JSON object per item (proto3 JSON leaves n = 0 out).
    let (ok, out, err) = call("Count", r#"{"n":3}"#, &[]).await;
    assert!(ok, "{err}");
    assert_eq!(out.matches(r#""text": "item "#).count(), 3, "{out}");
    assert!(out.contains(r#""n": 2"#), "{out}");

    // An error after the items.
    let (ok, out, err) = call("Count", r#"{"n":2,"mode":"fail"}"#, &[]).await;
    assert!(!ok);
    assert_eq!(out.matches(r#""text": "item "#).count(), 2, "{out}");
    assert!(
        err.contains("Code: Aborted") && err.contains("Message: failed after 2"),
        "{err}"
    );

    // Client streaming and bidi: several messages in -d.
    let (ok, out, err) = call("Sum", r#"{"n":1} {"n":2} {"n":3}"#, &[]).await;
    assert!(ok, "{err}");
    assert!(
        out.contains(r#""sum": 6"#) && out.contains(r#""count": 3"#),
        "{out}"
    );
    let (ok, out, err) = call("Chat", r#"{"text":"a"} {"text":"b","n":7}"#, &[]).await;
    assert!(ok, "{err}");
    assert!(
        out.contains(r#""text": "echo:a""#) && out.contains(r#""text": "echo:b""#),
        "{out}"
    );
    assert!(out.contains(r#""n": 7"#), "{out}");
    let (ok, _, err) = call("Chat", r#"{"text":"a"} {"text":"fail"}"#, &[]).await;
    assert!(!ok);
    assert!(err.contains("Code: FailedPrecondition"), "{err}");

    // Metadata both ways: headers and trailers.
    let (ok, out, err) = call("Count", r#"{"n":1,"mode":"meta"}"#, &["-v", "-H", "x-user: ada"]).await;
    assert!(ok, "{err}");
    assert!(out.contains("x-echo-user: ada"), "{out}");
    assert!(out.contains("x-done: yes"), "{out}");

    // A deadline on a stream.
    let (ok, _, err) = call("Count", r#"{"n":1,"mode":"hang"}"#, &["-max-time", "0.5"]).await;
    assert!(!ok);
    assert!(err.contains("DeadlineExceeded"), "{err}");
    assert_eq!(events.recv().await.unwrap(), "count hang true");
    let cancelled = tokio::time::timeout(Duration::from_secs(10), events.recv()).await;
    assert_eq!(cancelled.unwrap().unwrap(), "count cancelled");

    // An oversize message (80 KB over a 64 KiB limit).
    let big = format!(r#"{{"data":"{}"}}"#, "A".repeat(80_000 / 3 * 4));
    let (ok, _, err) = call("Sum", &big, &[]).await;
    assert!(!ok);
    assert!(err.contains("ResourceExhausted"), "{err}");
    frpc_side.await.unwrap();
}
