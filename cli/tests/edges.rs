//! The `frpc` binary at its edges, against live servers on 127.0.0.1:0: streams that end while
//! standard input stays open, `bench --duration` with calls never answered, replies proto3 JSON
//! cannot write, a closed standard error, and arguments it refuses.

use std::process::{Output, Stdio};
use std::time::Duration;

use frpc::{Context, Framing, Status, StreamSender, Streaming};
use frpc_interop::RustServer;
use tokio::io::AsyncWriteExt as _;

const CAPTURE_PROTO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../proto/capture.proto");
const EDGES_PROTO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/proto/edges.proto");
const TALK_PROTO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/proto/talk.proto");

/// How long a command that should end by itself may take: well past the half-second deadlines
/// below, well short of never (the defects these tests guard against hung until killed).
const ENDS_WITHIN: Duration = Duration::from_secs(5);

fn frpc_command(args: &[&str]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_frpc"));
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // A command that never ends is killed with the test's future.
        .kill_on_drop(true);
    command
}

/// Runs `frpc args…` with `input` on standard input, which then stays open until the command
/// has ended: it must end by itself, within [`ENDS_WITHIN`].
async fn frpc_input_open(args: &[&str], input: &str) -> Output {
    let mut child = frpc_command(args).spawn().expect("run frpc");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).await.unwrap();
    stdin.flush().await.unwrap();
    let out = tokio::time::timeout(ENDS_WITHIN, child.wait_with_output()).await;
    drop(stdin);
    out.unwrap_or_else(|_| panic!("frpc {args:?} still runs after {ENDS_WITHIN:?}, its input open"))
        .unwrap()
}

/// Runs `frpc args…` with an empty standard input; it must end within [`ENDS_WITHIN`].
async fn frpc(args: &[&str]) -> Output {
    let mut command = frpc_command(args);
    command.stdin(Stdio::null());
    let out = tokio::time::timeout(ENDS_WITHIN, command.output()).await;
    out.unwrap_or_else(|_| panic!("frpc {args:?} still runs after {ENDS_WITHIN:?}"))
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A server of raw routes 10…13, each answering with the request it got.
async fn echo_routes() -> String {
    let mut builder = frpc::Server::builder();
    for op in 10..14u16 {
        builder = builder.route(op, |_ctx, packet| async move { Some(packet.content) });
    }
    let server = builder.bind("127.0.0.1:0").await.unwrap();
    let addr = server.local_addr().to_string();
    tokio::spawn(server.serve());
    addr
}

#[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
pub struct Text {
    pub value: String,
}

/// Streams that the server ends before the client's input does (tests/proto/talk.proto).
#[frpc::service(package = "talk")]
pub trait Talk {
    async fn chat(
        &self,
        ctx: &Context,
        inbound: Streaming<Text>,
        outbound: StreamSender<Text>,
    ) -> Result<(), Status>;
    async fn first(&self, ctx: &Context, inbound: Streaming<Text>) -> Result<Text, Status>;
    async fn tally(&self, ctx: &Context, inbound: Streaming<Text>) -> Result<Text, Status>;
}

/// Tells what `tally` read: `"message"` for each message, then `"eof"`, or `"dropped"`
/// (cancelled) when the handler went before the end.
struct Brief(tokio::sync::mpsc::UnboundedSender<&'static str>);

/// Says `"dropped"` unless disarmed.
struct Dropped(Option<tokio::sync::mpsc::UnboundedSender<&'static str>>);

impl Drop for Dropped {
    fn drop(&mut self) {
        if let Some(said) = self.0.take() {
            let _ = said.send("dropped");
        }
    }
}

impl Talk for Brief {
    async fn chat(
        &self,
        _: &Context,
        mut inbound: Streaming<Text>,
        outbound: StreamSender<Text>,
    ) -> Result<(), Status> {
        if let Some(text) = inbound.message().await? {
            outbound
                .send(Text {
                    value: format!("bye {}", text.value),
                })
                .await?;
        }
        Ok(())
    }

    async fn first(&self, _: &Context, mut inbound: Streaming<Text>) -> Result<Text, Status> {
        let text = inbound.message().await?.unwrap_or_default();
        Ok(Text {
            value: format!("got {}", text.value),
        })
    }

    async fn tally(&self, _: &Context, mut inbound: Streaming<Text>) -> Result<Text, Status> {
        let mut dropped = Dropped(Some(self.0.clone()));
        while inbound.message().await?.is_some() {
            let _ = self.0.send("message");
        }
        dropped.0 = None;
        let _ = self.0.send("eof");
        Ok(Text::default())
    }
}

async fn talk_server() -> (String, tokio::sync::mpsc::UnboundedReceiver<&'static str>) {
    let (said, heard) = tokio::sync::mpsc::unbounded_channel();
    let server = frpc::Server::builder()
        .add_service(TalkServer::new(Brief(said)))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = server.local_addr().to_string();
    tokio::spawn(server.serve());
    (addr, heard)
}

/// A stream the server ends is over, though standard input stays open: the process prints the
/// reply and exits 0 (it waited for the input to close, the runtime's exit waiting for the
/// read of standard input in its blocking pool; the client stream did not watch the call at all).
#[tokio::test(flavor = "multi_thread")]
async fn streams_the_server_ends_exit_with_the_input_open() {
    let (addr, _heard) = talk_server().await;
    for (method, reply) in [("talk.Talk/Chat", "bye a"), ("talk.Talk/First", "got a")] {
        let call = ["call", &addr, method, "--proto", TALK_PROTO];
        let out = frpc_input_open(&call, "{\"value\":\"a\"}\n").await;
        assert_eq!(out.status.code(), Some(0), "{method}: {}", stderr(&out));
        assert_eq!(
            stdout(&out).trim(),
            format!("{{\"value\":\"{reply}\"}}"),
            "{method}"
        );
    }
}

/// A client stream whose input turns out bad is cancelled, not ended as the input's end would
/// end it: the server must not answer a partial upload as a whole one.
#[tokio::test(flavor = "multi_thread")]
async fn a_client_stream_with_bad_input_is_cancelled() {
    let (addr, mut heard) = talk_server().await;
    let call = ["call", &addr, "talk.Talk/Tally", "--proto", TALK_PROTO];
    let mut child = frpc_command(&call).spawn().expect("run frpc");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"{\"value\":\"a\"}\n").await.unwrap();
    stdin.flush().await.unwrap();
    // The handler waits for the next message when the bad input comes.
    let said = tokio::time::timeout(ENDS_WITHIN, heard.recv()).await.unwrap();
    assert_eq!(said, Some("message"));
    stdin.write_all(b"not json\n").await.unwrap();
    stdin.flush().await.unwrap();
    let out = tokio::time::timeout(ENDS_WITHIN, child.wait_with_output()).await;
    let out = out.expect("frpc ends at its bad input").unwrap();
    drop(stdin);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("not JSON values"), "{}", stderr(&out));
    let said = tokio::time::timeout(ENDS_WITHIN, heard.recv()).await.unwrap();
    assert_eq!(said, Some("dropped"));
}

/// `--timeout` ends a client or bidi stream whose input stays open: DEADLINE_EXCEEDED, 68 (the
/// client stream noticed only at the next line of input; the bidi stream printed the error
/// but the process waited for the input to close).
#[tokio::test(flavor = "multi_thread")]
async fn a_stream_ends_at_its_timeout_with_the_input_open() {
    let server = RustServer::start(Framing::Frisbee).await;
    let addr = server.addr().to_string();
    for method in ["capture.EchoService/Upload", "capture.EchoService/EchoStream"] {
        let call = ["call", &addr, method, "--timeout", "0.5"];
        let out = frpc_input_open(&call, "{\"Message\":\"a\"}\n").await;
        assert_eq!(out.status.code(), Some(68), "{method}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("DEADLINE_EXCEEDED"),
            "{method}: {}",
            stderr(&out)
        );
    }
}

/// `bench --duration` ends when the duration passes, calls in flight or not (it waited for
/// every call, forever for a server that never answers). Route 10 never answers.
#[tokio::test(flavor = "multi_thread")]
async fn bench_ends_when_its_duration_passes() {
    let server = frpc::Server::builder()
        .route(10, |_ctx, _packet| async move { None })
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = server.local_addr().to_string();
    tokio::spawn(server.serve());
    let bench = [
        "bench",
        &addr,
        "capture.EchoService/Echo",
        "{}",
        "--duration",
        "0.5",
        "-c",
        "2",
        "--json",
        "--proto",
        CAPTURE_PROTO,
    ];
    let out = frpc(&bench).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let summary: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(summary["count"], 0, "no call completed: {summary}");
}

/// `-c` out of all proportion is refused before any call (a trillion aborted the process
/// allocating its slots), as are more connections than calls in flight; `-c` above `-n` runs
/// `-n` calls.
#[tokio::test(flavor = "multi_thread")]
async fn bench_refuses_absurd_concurrency() {
    let server = RustServer::start(Framing::Frisbee).await;
    let addr = server.addr().to_string();
    let bench = |load: &[&str]| {
        let mut line = vec!["bench", &addr, "capture.EchoService/Echo", "{}", "--json"];
        line.extend(load);
        line.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let refusals = [
        (&["-c", "1000000000000"][..], "at most 100000 calls in flight"),
        (
            &["--duration", "1", "-c", "2000000"][..],
            "at most 100000 calls in flight",
        ),
        (
            &["-c", "2", "--connections", "3"][..],
            "--connections 3 is more than -c 2",
        ),
    ];
    for (load, said) in refusals {
        let line = bench(load);
        let out = frpc(&line.iter().map(String::as_str).collect::<Vec<_>>()).await;
        assert_eq!(out.status.code(), Some(1), "{load:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(said), "{load:?}: {}", stderr(&out));
    }
    let line = bench(&["-n", "5", "-c", "50000", "--connections", "2"]);
    let out = frpc(&line.iter().map(String::as_str).collect::<Vec<_>>()).await;
    let summary: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(summary["ok"], 5, "{summary}");
}

/// A reply proto3 JSON cannot write (an `Any` of a type the schema lacks, a Timestamp past
/// year 9999, a FieldMask path that does not round-trip) is an error, exit 1, as grpcurl
/// makes it (it panicked, exit 101).
#[tokio::test(flavor = "multi_thread")]
async fn unprintable_replies_are_errors() {
    let addr = echo_routes().await;
    for (method, request) in [
        (
            "edges.Echo/AnyOut",
            r#"{"typeUrl":"type.googleapis.com/no.Such","value":"AQI="}"#,
        ),
        ("edges.Echo/TimestampOut", r#"{"seconds":"9223372036854775807"}"#),
        ("edges.Echo/MaskOut", r#"{"paths":["Foo_Bar"]}"#),
    ] {
        let out = frpc(&["call", &addr, method, "--proto", EDGES_PROTO, request]).await;
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{method}: {err}");
        assert!(
            err.contains("cannot be written as proto3 JSON"),
            "{method}: {err}"
        );
    }
}

/// A float printed as `3.4028235e+38` (f32::MAX, as the CLI prints it) is taken back, rounded
/// to the nearest float as Go's protojson rounds it, wherever a float sits; one that rounds to
/// infinity is still out of range.
#[tokio::test(flavor = "multi_thread")]
async fn floats_printed_are_taken_back() {
    let addr = echo_routes().await;
    let call = |request: &str| {
        let request = request.to_string();
        let addr = addr.clone();
        async move {
            frpc(&[
                "call",
                &addr,
                "edges.Echo/Floats",
                "--proto",
                EDGES_PROTO,
                &request,
            ])
            .await
        }
    };
    let out = call(r#"{"f":3.4028234663852886e38}"#).await;
    let printed = stdout(&out);
    assert!(printed.contains(r#""f":3.4028235e+38"#), "{printed}");
    let max = "3.4028235e+38";
    let request = format!(
        r#"{{"f":{max},"many":[-{max},"{max}"],"boxed":{max},"byName":{{"x":{max}}},"next":{{"f":{max}}},"d":{max}}}"#
    );
    let out = call(&request).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reply: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let float = |at: &str| {
        reply
            .pointer(at)
            .and_then(serde_json::Value::as_f64)
            .map(|x| x as f32)
    };
    for at in ["/f", "/boxed", "/byName/x", "/next/f", "/many/1"] {
        assert_eq!(float(at), Some(f32::MAX), "{at}: {reply}");
    }
    assert_eq!(float("/many/0"), Some(-f32::MAX), "{reply}");
    // A double keeps what it was given.
    assert_eq!(reply["d"], serde_json::json!(3.4028235e38), "{reply}");
    let out = call(r#"{"f":3.5e38}"#).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
}

/// `--proto` names a file inside the `-I` directories, as grpcurl's `-proto`/`-import-path`
/// take it (the README's own example failed: the name was looked for in the working
/// directory only).
#[tokio::test(flavor = "multi_thread")]
async fn proto_names_resolve_in_the_import_paths() {
    let server = RustServer::start(Framing::Frisbee).await;
    let addr = server.addr().to_string();
    let workspace = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let run = |proto: &'static str| {
        let mut command = frpc_command(&[
            "call",
            &addr,
            "capture.EchoService/Echo",
            "--proto",
            proto,
            "-I",
            "proto",
            r#"{"Message":"hi"}"#,
        ]);
        command.current_dir(workspace).stdin(Stdio::null());
        command.output()
    };
    let out = run("capture.proto").await.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains(r#""Message":"hi""#), "{}", stdout(&out));
    let out = run("nowhere.proto").await.unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no file nowhere.proto, nor in proto"),
        "{}",
        stderr(&out)
    );
}

/// A closed standard error (`frpc call -v … 2>&1 | head -1`) is no panic: the exit status
/// still says how the call went (it was 101, a panic writing the error or the metadata).
#[tokio::test(flavor = "multi_thread")]
async fn a_closed_standard_error_is_no_panic() {
    let server = RustServer::start(Framing::Frisbee).await;
    let addr = server.addr().to_string();
    for (call, code) in [
        (["call", &addr, "capture.EchoService/Testy", "{}"], 66),
        (["call", &addr, "capture.EchoService/Echo", "-v"], 0),
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let mut command = frpc_command(&call);
        command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(writer);
        // `status`, not `output`: `output` would pipe standard error anew.
        let status = tokio::time::timeout(ENDS_WITHIN, command.status()).await;
        assert_eq!(status.unwrap().unwrap().code(), Some(code), "{call:?}");
    }
}

/// Text after the request that is not JSON is the parser's error, not "takes one request,
/// not 2".
#[tokio::test(flavor = "multi_thread")]
async fn text_after_the_request_is_a_json_error() {
    let server = RustServer::start(Framing::Frisbee).await;
    let addr = server.addr().to_string();
    let out = frpc(&[
        "call",
        &addr,
        "capture.EchoService/Echo",
        r#"{"Message":"x"} oops"#,
    ])
    .await;
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("the request is not JSON: expected"), "{err}");
    // Two requests are still counted as such.
    let out = frpc(&["call", &addr, "capture.EchoService/Echo", "{} {}"]).await;
    assert!(
        stderr(&out).contains("takes one request, not 2"),
        "{}",
        stderr(&out)
    );
}

/// Options that would be silently lost are refused: a metadata key given twice (metadata holds
/// one value per key: the first was dropped), `--server-name` without TLS (ignored). With
/// `-v`, a command that made no call prints no response metadata (it printed `(none)`).
#[tokio::test(flavor = "multi_thread")]
async fn options_that_would_be_lost_are_refused() {
    let server = RustServer::start(Framing::Frisbee).await;
    let addr = server.addr().to_string();
    let echo = ["call", &addr, "capture.EchoService/Echo", "{}", "-v"];
    let twice = [&echo[..], &["-H", "key:v1", "-H", "Key:v2"]].concat();
    let out = frpc(&twice).await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "error: header `key` is given twice: frpc metadata holds one value per key\n"
    );
    let named = [&echo[..], &["--server-name", "localhost"]].concat();
    let out = frpc(&named).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("add --tls or --ca FILE"),
        "{}",
        stderr(&out)
    );
    let out = frpc(&["call", &addr, "capture.EchoService/Nope", "{}", "-v"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(!stderr(&out).contains("Response metadata"), "{}", stderr(&out));
}
