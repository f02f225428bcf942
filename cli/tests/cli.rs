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

    // Seconds out of range are a bad argument (a panic once), not a call.
    for secs in ["1e20", "1e-12", "0", "NaN"] {
        let call = ["call", &addr, "capture.EchoService/Echo", "{}", "--timeout", secs];
        let out = frpc(args(&call), None).await;
        assert_eq!(out.status.code(), Some(1), "--timeout {secs}: {out:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("give seconds above 0"));
    }

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

#[tokio::test(flavor = "multi_thread")]
async fn health_check_and_watch() {
    let (reporter, health) = frpc::health::service();
    reporter.set_serving("capture.EchoService");
    reporter.set_not_serving("down.Service");
    let server = RustServer::start_with(Framing::Frisbee, |builder| builder.add_service(health)).await;
    let addr = server.addr().to_string();

    let out = frpc(args(&["health", &addr]), None).await;
    assert_eq!(stdout(&out).trim(), "SERVING");
    let out = frpc(args(&["health", &addr, "capture.EchoService"]), None).await;
    assert_eq!(stdout(&out).trim(), "SERVING");
    let out = frpc(args(&["health", &addr, "down.Service"]), None).await;
    assert_eq!(
        (out.status.code(), String::from_utf8_lossy(&out.stdout).trim()),
        (Some(4), "NOT_SERVING")
    );
    let out = frpc(args(&["health", &addr, "nobody.Here"]), None).await;
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "SERVICE_UNKNOWN");

    // Health is in the reflection answer beside the server's own service, and callable by
    // name through it (its operation numbers, 0xFF00 and 0xFF01, come with the answer).
    let out = frpc(args(&["list", &addr]), None).await;
    assert_eq!(stdout(&out).trim(), "capture.EchoService\nfrpc.health.v1.Health");
    let check = ["call", &addr, "frpc.health.v1.Health/Check"];
    let out = frpc(args(&check), Some(r#"{"service":"down.Service"}"#)).await;
    assert_eq!(json(&out)["status"], "NOT_SERVING", "{}", stdout(&out));
    let out = frpc(args(&["describe", &addr, "frpc.health.v1.Health"]), None).await;
    let text = stdout(&out);
    assert!(text.contains("// operation 65281, server streaming"), "{text}");

    // --watch prints the status, then each change, as it happens.
    let mut child = Command::new(env!("CARGO_BIN_EXE_frpc"))
        .args(["health", &addr, "capture.EchoService", "--watch"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
    let next_line = move || tokio::task::spawn_blocking(move || (lines.next().unwrap().unwrap(), lines));
    let (first, lines) = next_line().await.unwrap();
    assert_eq!(first, "SERVING");
    reporter.set_not_serving("capture.EchoService");
    let next_line = move || tokio::task::spawn_blocking(move || lines.into_iter().next().unwrap().unwrap());
    assert_eq!(next_line().await.unwrap(), "NOT_SERVING");
    child.kill().unwrap();
    child.wait().unwrap();
}

/// `--watch` across a graceful shutdown: the NOT_SERVING set just before it is printed and
/// the command exits 4; a watch the server ends while SERVING exits 78 (UNAVAILABLE), never 0.
#[tokio::test(flavor = "multi_thread")]
async fn a_health_watch_ends_with_the_server_not_in_success() {
    for announce in [true, false] {
        let (reporter, health) = frpc::health::service();
        let bound = frpc::Server::builder()
            .add_service(health)
            .bind("127.0.0.1:0")
            .await
            .unwrap();
        let addr = bound.local_addr().to_string();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = tokio::spawn(bound.serve_with_shutdown(async {
            let _ = stopped.await;
        }));
        let mut child = Command::new(env!("CARGO_BIN_EXE_frpc"))
            .args(["health", &addr, "--watch"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
        let (first, mut lines) = tokio::task::spawn_blocking(move || (lines.next().unwrap().unwrap(), lines))
            .await
            .unwrap();
        assert_eq!(first, "SERVING");
        if announce {
            reporter.set_all_not_serving();
        }
        stop.send(()).unwrap();
        let (rest, status) = tokio::task::spawn_blocking(move || {
            let rest: Vec<String> = lines.by_ref().map(Result::unwrap).collect();
            (rest, child.wait().unwrap())
        })
        .await
        .unwrap();
        serving.await.unwrap().unwrap();
        match announce {
            true => assert_eq!((rest, status.code()), (vec!["NOT_SERVING".to_string()], Some(4))),
            false => assert_eq!((rest.len(), status.code()), (0, Some(64 + 14))),
        }
    }
}

/// The `Message` of each JSON line of `out`.
fn messages(out: &Output) -> Vec<String> {
    stdout(out)
        .lines()
        .map(|line| {
            let reply: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            reply["Message"].as_str().expect("Message").to_string()
        })
        .collect()
}

/// Every streaming kind against a server at `addr` speaking `framing`, with the schema from
/// `schema` (reflection when empty): Search (server stream), Upload (client stream) and
/// EchoStream (bidi), and a stream that fails half-way.
async fn streams(addr: &str, framing: Framing, schema: &[&str]) {
    let call = |method: &str, request: Option<&str>| {
        let mut line = args(&["call", addr, method, "--framing", framing_arg(framing)]);
        line.extend(args(schema));
        line.extend(request.map(str::to_string));
        line
    };
    let out = frpc(call("capture.EchoService/Search", Some("{}")), None).await;
    assert_eq!(messages(&out), ["r0", "r1"]);

    // A server stream that fails: the replies before the error are printed, then the error.
    let out = frpc(
        call("capture.EchoService/Search", Some(r#"{"snippets":["fail"]}"#)),
        None,
    )
    .await;
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1, "partial");
    assert!(String::from_utf8_lossy(&out.stdout).contains("partial"));
    assert_eq!(out.status.code(), Some(66), "UNKNOWN");
    assert!(String::from_utf8_lossy(&out.stderr).contains("search failed"));

    // A server stream takes one request, and says so.
    let out = frpc(call("capture.EchoService/Search", Some("{} {}")), None).await;
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("takes one request, not 2"), "{err}");

    // Client and bidi streams: each JSON value of standard input (blank lines skipped, a value
    // over several lines, several on a line), or of the argument.
    let stdin = "{\"Message\":\"a\"}\n\n{\"Message\":\"b\"}\n{}\n";
    let out = frpc(call("capture.EchoService/Upload", None), Some(stdin)).await;
    assert_eq!(messages(&out), ["got 3"]);
    let pretty = "{\n  \"Message\": \"a\"\n}\n{} {}\n";
    let out = frpc(call("capture.EchoService/Upload", None), Some(pretty)).await;
    assert_eq!(messages(&out), ["got 3"]);
    let out = frpc(call("capture.EchoService/Upload", None), Some("{\"Message\":")).await;
    assert!(String::from_utf8_lossy(&out.stderr).contains("ends inside a JSON value"));
    let out = frpc(call("capture.EchoService/Upload", Some(r#"{} {}"#)), None).await;
    assert_eq!(messages(&out), ["got 2"]);
    let out = frpc(call("capture.EchoService/EchoStream", None), Some(stdin)).await;
    assert_eq!(messages(&out), ["a", "b", ""]);
    let out = frpc(call("capture.EchoService/EchoStream", None), Some("")).await;
    assert_eq!(messages(&out), Vec::<String>::new());

    let out = frpc(
        call("capture.EchoService/Upload", None),
        Some("{\"Message\":1}\n"),
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a valid `capture.Data`"));

    // Bad input half-way through a bidi stream: the replies to the requests before it are
    // printed, then the error.
    let input = "{\"Message\":\"a\"}\nnot json\n";
    let out = frpc(call("capture.EchoService/EchoStream", None), Some(input)).await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("not JSON values"), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1, "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn streaming_calls_to_frpc() {
    for framing in [Framing::Frisbee, Framing::Legacy] {
        let server = RustServer::start(framing).await;
        streams(&server.addr().to_string(), framing, &[]).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn streaming_calls_to_go() {
    for framing in [Framing::Frisbee, Framing::Legacy] {
        let server = GoServer::start(framing).await;
        streams(&server.addr().to_string(), framing, &["--proto", CAPTURE_PROTO]).await;
    }
}

/// A bidi stream is interactive: each reply is printed as soon as its request's line is read,
/// while standard input stays open.
#[tokio::test(flavor = "multi_thread")]
async fn bidi_replies_while_the_input_is_open() {
    use std::io::{BufRead as _, Write as _};
    let server = RustServer::start(Framing::Frisbee).await;
    let addr = server.addr().to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_frpc"))
        .args(["call", &addr, "capture.EchoService/EchoStream"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let talk = tokio::task::spawn_blocking(move || {
        let mut heard = Vec::new();
        for word in ["one", "two"] {
            writeln!(input, "{{\"Message\":\"{word}\"}}").unwrap();
            input.flush().unwrap();
            heard.push(lines.next().unwrap().unwrap());
        }
        drop(input);
        (heard, child.wait().unwrap())
    });
    let (heard, status) = talk.await.unwrap();
    assert!(
        heard[0].contains("\"one\"") && heard[1].contains("\"two\""),
        "{heard:?}"
    );
    assert!(status.success());
}

/// Without the health service: an frpc server answers UNIMPLEMENTED at once; a Go server stays
/// silent, and the first answer's timeout ends the command.
#[tokio::test(flavor = "multi_thread")]
async fn health_of_servers_without_the_service() {
    let server = RustServer::start(Framing::Frisbee).await;
    for watch in [&[][..], &["--watch"]] {
        let mut line = args(&["health", &server.addr().to_string()]);
        line.extend(args(watch));
        let out = frpc(line, None).await;
        assert_eq!(out.status.code(), Some(64 + 12), "UNIMPLEMENTED");
    }
    let go = GoServer::start(Framing::Frisbee).await;
    for watch in [&[][..], &["--watch"]] {
        let mut line = args(&["health", &go.addr().to_string(), "--timeout", "0.3"]);
        line.extend(args(watch));
        let out = frpc(line, None).await;
        assert_eq!(out.status.code(), Some(64 + 4), "DEADLINE_EXCEEDED");
        assert!(String::from_utf8_lossy(&out.stderr).contains("health service"));
    }
}

/// `--ca` (and `--tls`): calls over TLS to a server whose certificate the file vouches for;
/// without the file the system's roots refuse the self-signed certificate.
#[tokio::test(flavor = "multi_thread")]
async fn calls_over_tls() {
    use frpc::tls::rustls;
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let ca = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("frpc-cli-tls-ca.pem");
    std::fs::write(&ca, cert.cert.pem()).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::try_from(cert.signing_key.serialize_der()).unwrap();
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.cert.der().clone()], key)
        .unwrap();
    let config = std::sync::Arc::new(config);
    let server = RustServer::start_with(Framing::Frisbee, move |builder| builder.tls(config)).await;
    let addr = server.addr().to_string();
    let ca = ca.to_str().unwrap();

    let echo = [
        "call",
        &addr,
        "capture.EchoService/Echo",
        r#"{"Message":"sealed"}"#,
    ];
    let mut line = args(&echo);
    line.extend(args(&["--ca", ca, "--server-name", "localhost"]));
    assert_echo(&json(&frpc(line, None).await), "sealed");
    let mut line = args(&["call", &addr, "capture.EchoService/Search", "{}", "--tls"]);
    line.extend(args(&["--ca", ca, "--server-name", "localhost"]));
    assert_eq!(messages(&frpc(line, None).await), ["r0", "r1"]);

    // The certificate names localhost, not the address.
    let mut line = args(&echo);
    line.extend(args(&["--ca", ca]));
    let out = frpc(line, None).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("certificate"),
        "{out:?}"
    );
    // The system's roots do not know the self-signed certificate.
    let mut line = args(&echo);
    line.extend(args(&["--tls", "--server-name", "localhost"]));
    let out = frpc(line, None).await;
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("certificate") || err.contains("root"), "{err}");
    // Plain TCP to a TLS port fails rather than hangs.
    let mut line = args(&echo);
    line.extend(args(&["--timeout", "2"]));
    assert_ne!(frpc(line, None).await.status.code(), Some(0));
}

/// `frpc bench` against a server at `addr`: exactly `-n` calls, errors counted by code, and a
/// `--duration` run.
async fn bench(addr: &str, framing: Framing, schema: &[&str]) {
    let run = |method: &str, load: &[&str]| {
        let mut line = args(&[
            "bench",
            addr,
            method,
            "{}",
            "--json",
            "--framing",
            framing_arg(framing),
        ]);
        line.extend(args(schema));
        line.extend(args(load));
        line
    };
    let out = json(
        &frpc(
            run(
                "capture.EchoService/Echo",
                &["-c", "8", "-n", "301", "--connections", "2"],
            ),
            None,
        )
        .await,
    );
    assert_eq!(
        (out["count"].as_u64(), out["ok"].as_u64()),
        (Some(301), Some(301)),
        "{out}"
    );
    assert_eq!(out["codes"], serde_json::json!({"OK": 301}));
    let latency = &out["latency_us"];
    assert!(latency["p50"].as_u64() <= latency["p99"].as_u64(), "{latency}");
    assert!(latency["p99"].as_u64() <= latency["max"].as_u64() && latency["max"].as_u64() > Some(0));
    assert!(out["rps"].as_f64() > Some(0.0));

    let out = json(&frpc(run("capture.EchoService/Testy", &["-c", "3", "-n", "20"]), None).await);
    // Both servers' Testy fails with text only: UNKNOWN.
    assert_eq!(out["errors"], serde_json::json!({"UNKNOWN": 20}), "{out}");
    assert_eq!(out["ok"].as_u64(), Some(0));

    let out = json(&frpc(run("capture.EchoService/Echo", &["--duration", "0.3"]), None).await);
    assert!(
        out["count"].as_u64() > Some(0) && out["total_secs"].as_f64() >= Some(0.3),
        "{out}"
    );
    assert_eq!(out["errors"], serde_json::json!({}));

    // At 100 calls/s, 2 in flight: each starts a call every 20 ms, so the tenth of each
    // cannot start before 180 ms (closed loops take a few milliseconds for all 20).
    let out = json(
        &frpc(
            run(
                "capture.EchoService/Echo",
                &["-c", "2", "-n", "20", "--rps", "100"],
            ),
            None,
        )
        .await,
    );
    assert_eq!(out["ok"].as_u64(), Some(20), "{out}");
    assert!(out["total_secs"].as_f64() >= Some(0.18), "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn bench_frpc_and_go() {
    for framing in [Framing::Frisbee, Framing::Legacy] {
        let server = RustServer::start(framing).await;
        bench(&server.addr().to_string(), framing, &[]).await;
        let go = GoServer::start(framing).await;
        bench(&go.addr().to_string(), framing, &["--proto", CAPTURE_PROTO]).await;
    }
    // The text summary, and a streaming method refused.
    let server = RustServer::start(Framing::Frisbee).await;
    let addr = server.addr().to_string();
    let out = frpc(
        args(&["bench", &addr, "capture.EchoService/Echo", "{}", "-n", "10"]),
        None,
    )
    .await;
    let text = stdout(&out);
    assert!(
        text.contains("Count:        10\n") && text.contains("p99:") && text.contains("[OK] 10"),
        "{text}"
    );
    let out = frpc(args(&["bench", &addr, "capture.EchoService/Search", "{}"]), None).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unary methods"));
    // A rate that is no rate is refused before any call.
    for rps in ["0", "-5", "NaN"] {
        let rate = format!("--rps={rps}");
        let line = args(&["bench", &addr, "capture.EchoService/Echo", "{}", &rate]);
        let out = frpc(line, None).await;
        assert_eq!(out.status.code(), Some(1), "--rps {rps}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--rps"),
            "--rps {rps}"
        );
    }
}

/// `split`'s two services, numbered across their package's two files
/// (`OperationNumbering::PerPackage`): Orders' `Place` and `Cancel` are 10 and 11, Billing's
/// `Charge` 12 (13 for `Refund`). Charging doubles the amount, placing keeps it.
struct Split;

impl frpc_codegen_tests::per_package::split::Orders for Split {
    async fn place(&self, _: &frpc::Context, t: Ticket) -> Result<Ticket, frpc::Status> {
        Ok(t)
    }
    async fn cancel(&self, _: &frpc::Context, t: Ticket) -> Result<Ticket, frpc::Status> {
        Ok(Ticket { amount: 0, ..t })
    }
}

impl frpc_codegen_tests::per_package::split::Billing for Split {
    async fn charge(&self, _: &frpc::Context, t: Ticket) -> Result<Ticket, frpc::Status> {
        Ok(Ticket {
            amount: t.amount * 2,
            ..t
        })
    }
    async fn refund(
        &self,
        _: &frpc::Context,
        t: Ticket,
        out: frpc::StreamSender<Ticket>,
    ) -> Result<(), frpc::Status> {
        out.send(t).await?;
        Ok(())
    }
}

use frpc_codegen_tests::per_package::split::Ticket;

/// A server numbering across files is called on its own numbers: the reflection answer
/// carries them (a method's place in its file would say 10 for `Charge`, which is `Place`
/// there).
#[tokio::test(flavor = "multi_thread")]
async fn calls_reach_servers_that_number_across_files() {
    use frpc_codegen_tests::per_package::split::{BillingServer, OrdersServer};
    let server = frpc::Server::builder()
        .add_service(OrdersServer::new(Split))
        .add_service(BillingServer::new(Split))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = server.local_addr().to_string();
    tokio::spawn(server.serve());

    let charge = args(&[
        "call",
        &addr,
        "split.Billing/Charge",
        r#"{"id":"t","amount":"21"}"#,
    ]);
    assert_eq!(json(&frpc(charge, None).await)["amount"], "42");
    let place = args(&["call", &addr, "split.Orders/Place", r#"{"id":"t","amount":"21"}"#]);
    assert_eq!(json(&frpc(place, None).await)["amount"], "21");
    let refund = args(&[
        "call",
        &addr,
        "split.Billing/Refund",
        r#"{"id":"r","amount":"5"}"#,
    ]);
    assert_eq!(json(&frpc(refund, None).await)["id"], "r");
    let out = frpc(args(&["describe", &addr, "split.Billing"]), None).await;
    let text = stdout(&out);
    assert!(text.contains("// operation 12, unary"), "{text}");
    assert!(text.contains("// operation 13, server streaming"), "{text}");
}

/// Serves `twosvc.A` (kitchen.proto's messages come with its reflection): nothing is called.
struct Quiet;

impl frpc_codegen_tests::default::twosvc::A for Quiet {
    async fn a1(
        &self,
        _: &frpc::Context,
        request: frpc_codegen_tests::kitchen::Inner,
    ) -> Result<frpc_codegen_tests::kitchen::Inner, frpc::Status> {
        Ok(request)
    }
    async fn a2(
        &self,
        _: &frpc::Context,
        _: frpc::Streaming<frpc_codegen_tests::kitchen::Inner>,
    ) -> Result<(), frpc::Status> {
        Ok(())
    }
}

/// `describe` shows a message's oneofs and `optional`s as declared, an enum's values and one
/// method.
#[tokio::test(flavor = "multi_thread")]
async fn describe_messages_enums_and_methods() {
    let server = frpc::Server::builder()
        .add_service(frpc_codegen_tests::default::twosvc::AServer::new(Quiet))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = server.local_addr().to_string();
    tokio::spawn(server.serve());
    let describe = |name: &str| frpc(args(&["describe", &addr, name]), None);

    let text = stdout(&describe("kitchen.Extras").await);
    assert!(text.contains("  optional int32 maybe_int = 1;\n"), "{text}");
    assert!(
        text.contains("  oneof pick {\n    kitchen.Inner p_inner = 10;\n    int64 p_int = 11;\n"),
        "{text}"
    );
    let text = stdout(&describe("kitchen.Sparse").await);
    assert_eq!(
        text.trim(),
        "enum kitchen.Sparse {\n  ZERO = 0;\n  FIVE = 5;\n  TWO = 2;\n}"
    );
    let text = stdout(&describe("twosvc.A/A1").await);
    assert_eq!(
        text.trim(),
        "rpc A1(kitchen.Inner) returns (kitchen.Inner); // operation 10, unary"
    );
    let out = describe("kitchen.Nope").await;
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no service, method, message or enum"));
}

/// A server whose services have no descriptors (Rust-first ones, or health alone) reflects an
/// empty set: the CLI asks for the schema instead of listing nothing and exiting 0.
#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_describes_nothing_asks_for_the_proto() {
    let (_reporter, health) = frpc::health::service();
    let server = frpc::Server::builder()
        .add_service(health)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = server.local_addr().to_string();
    tokio::spawn(server.serve());
    for command in [vec!["list", &addr], vec!["describe", &addr, "demo.Demo"]] {
        let out = frpc(args(&command), None).await;
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{command:?}: {err}");
        assert!(
            err.contains("describes no service") && err.contains("--proto"),
            "{command:?}: {err}"
        );
    }
}

/// A server that closes each connection at once (one at its `max_connections`) fails the
/// connection, as grpcurl's dial does: exit 1, before any call (it exited 78, UNAVAILABLE, as a
/// call that lost its connection).
#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_closes_at_accept_fails_the_connection() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            drop(stream);
        }
    });
    let call = [
        "call",
        &addr,
        "capture.EchoService/Echo",
        "{}",
        "--proto",
        CAPTURE_PROTO,
    ];
    for command in [&call[..], &["list", &addr][..]] {
        let out = frpc(args(command), None).await;
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{command:?}: {err}");
        assert!(
            err.contains("closed the connection before answering"),
            "{command:?}: {err}"
        );
    }
}

/// A reflecting server's files may describe services it does not serve (a package's other
/// files come along): `list` shows only what it serves, and calling or describing another
/// method fails (exit 1) instead of counting its operation from the files: that named a served
/// method's operation, `split.Billing/Charge` reaching `Orders.Place` with exit 0.
#[tokio::test(flavor = "multi_thread")]
async fn methods_the_server_does_not_serve_are_refused() {
    let server = frpc::Server::builder()
        .add_service(frpc_codegen_tests::per_package::split::OrdersServer::new(Split))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = server.local_addr().to_string();
    tokio::spawn(server.serve());
    let out = frpc(args(&["list", &addr]), None).await;
    assert_eq!(stdout(&out).trim(), "split.Orders");
    let charge = [
        "call",
        &addr,
        "split.Billing/Charge",
        r#"{"id":"t","amount":"21"}"#,
    ];
    for command in [&charge[..], &["describe", &addr, "split.Billing"][..]] {
        let out = frpc(args(command), None).await;
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{command:?}: {err}");
        assert!(
            err.contains("does not serve `split.Billing.Charge`") && err.contains("served: split.Orders"),
            "{command:?}: {err}"
        );
    }
    let place = ["call", &addr, "split.Orders/Place", r#"{"id":"t","amount":"21"}"#];
    assert_eq!(json(&frpc(args(&place), None).await)["amount"], "21");
}

/// `health --timeout` bounds connecting too, as the docs say: a listener that never answers
/// fails the check within it (it waited for the connection's 5 s idle timeout, and said the
/// server closed the connection).
#[tokio::test(flavor = "multi_thread")]
async fn a_health_check_of_a_silent_server_ends_at_its_timeout() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let held = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    let started = std::time::Instant::now();
    let out = frpc(args(&["health", &addr, "--timeout", "0.5"]), None).await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(68), "{err}"); // DEADLINE_EXCEEDED
    assert!(err.contains("no answer within 500ms"), "{err}");
    // Seconds apart from the idle timeout's 5 s: not a timing assertion on the 0.5 s.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    held.abort();
}

/// `-v` prints the response metadata to standard error (the server answers its `echo-*`
/// request metadata): after a unary reply, after a server stream's end, after a stream that
/// failed, and `(none)` where there is none (no such keys, or plain fRPC).
#[tokio::test(flavor = "multi_thread")]
async fn verbose_calls_print_the_response_metadata() {
    let server = RustServer::start(Framing::Frisbee).await;
    let addr = server.addr().to_string();
    let stderr = |out: &Output| String::from_utf8_lossy(&out.stderr).into_owned();
    let echoed = "Response metadata:\necho-user: ann\necho-trace-bin: AP8=\n";
    let headers = [
        "-v",
        "-H",
        "echo-user:ann",
        "-H",
        "echo-trace-bin:AP8",
        "-H",
        "other:x",
    ];
    let call = |method: &str, request: &str, more: &[&str]| {
        let mut line = args(&["call", &addr, method, request]);
        line.extend(args(more));
        line
    };

    let out = frpc(
        call("capture.EchoService/Echo", r#"{"Message":"hi"}"#, &headers),
        None,
    )
    .await;
    assert_echo(&json(&out), "hi");
    assert_eq!(stderr(&out), echoed);

    let out = frpc(call("capture.EchoService/Search", "{}", &headers), None).await;
    assert_eq!(messages(&out), ["r0", "r1"]);
    assert_eq!(stderr(&out), echoed);

    let failing = r#"{"snippets":["fail"]}"#;
    let out = frpc(call("capture.EchoService/Search", failing, &headers), None).await;
    assert_eq!(out.status.code(), Some(66), "UNKNOWN");
    let err = stderr(&out);
    assert!(err.starts_with(echoed) && err.contains("search failed"), "{err}");

    let out = frpc(
        call("capture.EchoService/Echo", "{}", &["-v", "-H", "other:x"]),
        None,
    )
    .await;
    assert_eq!(stderr(&out), "Response metadata:\n(none)\n");
    let plain = [&headers[..], &["--no-extensions", "--proto", CAPTURE_PROTO]].concat();
    let out = frpc(call("capture.EchoService/Echo", "{}", &plain), None).await;
    assert_eq!(stderr(&out), "Response metadata:\n(none)\n");

    // Without -v nothing is printed.
    let out = frpc(call("capture.EchoService/Echo", "{}", &headers[1..]), None).await;
    assert_eq!(stderr(&out), "");
}

/// Output piped to a reader that closed early (`frpc describe … | head -1`) is no error: the
/// command exits 0 (it panicked on the broken pipe).
#[tokio::test(flavor = "multi_thread")]
async fn a_closed_standard_output_is_no_panic() {
    let server = RustServer::start(Framing::Frisbee).await;
    let addr = server.addr().to_string();
    let status = tokio::task::spawn_blocking(move || {
        let mut child = Command::new(env!("CARGO_BIN_EXE_frpc"))
            .args(["describe", &addr, "capture.EchoService"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run frpc");
        drop(child.stdout.take());
        child.wait_with_output().expect("frpc finishes")
    })
    .await
    .unwrap();
    let err = String::from_utf8_lossy(&status.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(status.status.code(), Some(0), "{err}");
}
