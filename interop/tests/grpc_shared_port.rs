//! One `grpc(true)` port, three kinds of client at once: the real Go fRPC peer (frisbee-go,
//! both framings) running its scenarios, grpcurl (a gRPC client nobody here wrote) calling
//! every kind of method through server reflection (no proto file), with an error status,
//! metadata both ways, a deadline whose cancel reaches the handler, and gRPC health; and an
//! frpc-rs client. Each gets its own protocol's answers from the one server instance, and the
//! Go peer sees fRPC's bytes as on a plain port.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use frpc::{Concurrency, Context, Framing, Status, StreamSender, Streaming};
use frpc_examples::capture::pb;
use frpc_interop::{InteropService, both_framings, client_config, run_go_client};
use frpc_testdata::tools::grpcurl;
use tokio::sync::mpsc;

const TIMEOUT: Duration = Duration::from_secs(60);

/// The Go peer's scenarios run together (one client process each): unary, server-streaming,
/// client-streaming, bidi, an error status, and a thousand concurrent unary calls.
const GO_SCENARIOS: [&str; 6] = ["echo", "testy", "search", "upload", "echostream", "concurrent"];

async fn go_frpc_grpcurl_and_frpc_share_one_port(framing: Framing) {
    let (events, mut seen) = mpsc::unbounded_channel();
    let (reporter, health) = frpc::health::service();
    reporter.set_serving("capture.EchoService");
    let bound = frpc::Server::builder()
        .framing(framing)
        .concurrency(Concurrency::PerRpc)
        .grpc(true)
        .add_service(pb::EchoServiceServer::new(Shared { events }))
        .add_service(health)
        .bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let addr = bound.local_addr();
    let server = tokio::spawn(bound.serve());
    let go = join_spawned(GO_SCENARIOS.map(|scenario| go_scenario(framing, addr, scenario)));
    let ((), (), ()) = tokio::join!(go, grpcurl_calls(addr, &mut seen), frpc_calls(framing, addr));
    assert!(!server.is_finished(), "the shared-port server stopped");
    server.abort();
}

both_framings!(go_frpc_grpcurl_and_frpc_share_one_port);

/// The interop service (what the Go peer expects), with two Echo requests only grpcurl sends:
/// `meta` answers the `x-user` header back as `x-echo-user`, `hang` waits until cancelled and
/// reports it.
struct Shared {
    events: mpsc::UnboundedSender<&'static str>,
}

impl pb::EchoService for Shared {
    async fn echo(&self, ctx: &Context, request: pb::Request) -> Result<pb::Response, Status> {
        match request.message.as_str() {
            "meta" => {
                let user = ctx.metadata().get("x-user").unwrap_or("-").to_owned();
                let mut reply = frpc::Metadata::new();
                reply.insert("x-echo-user", &user).expect("a valid header");
                ctx.set_response_metadata(reply);
                InteropService.echo(ctx, request).await
            }
            "hang" => {
                let _ = self.events.send("hang started");
                let (ctx, events) = (ctx.clone(), self.events.clone());
                tokio::spawn(async move {
                    ctx.cancelled().await;
                    let _ = events.send("hang cancelled");
                });
                std::future::pending().await
            }
            _ => InteropService.echo(ctx, request).await,
        }
    }

    async fn echo_stream(
        &self,
        ctx: &Context,
        inbound: Streaming<pb::Request>,
        outbound: StreamSender<pb::Response>,
    ) -> Result<(), Status> {
        InteropService.echo_stream(ctx, inbound, outbound).await
    }

    async fn testy(
        &self,
        ctx: &Context,
        request: pb::SearchResponse,
    ) -> Result<pb::StockPricesWrapper, Status> {
        InteropService.testy(ctx, request).await
    }

    async fn search(
        &self,
        ctx: &Context,
        request: pb::SearchResponse,
        outbound: StreamSender<pb::Response>,
    ) -> Result<(), Status> {
        InteropService.search(ctx, request, outbound).await
    }

    async fn upload(&self, ctx: &Context, inbound: Streaming<pb::Data>) -> Result<pb::Response, Status> {
        InteropService.upload(ctx, inbound).await
    }
}

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

/// grpcurl against the same port: reflection, each kind of method, an error, metadata both
/// ways, a deadline reaching the handler as a cancel, health.
async fn grpcurl_calls(addr: SocketAddr, seen: &mut mpsc::UnboundedReceiver<&'static str>) {
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

    let meta = ["-v", "-H", "x-user: ada", "capture.EchoService/Echo"];
    let meta = run_grpcurl(addr, &meta, Some(r#"{"Message":"meta"}"#))
        .await
        .expect("metadata");
    assert!(meta.contains("x-echo-user: ada"), "{meta}");

    let hang = ["-max-time", "0.3", "capture.EchoService/Echo"];
    let err = run_grpcurl(addr, &hang, Some(r#"{"Message":"hang"}"#))
        .await
        .expect_err("deadline");
    assert!(err.contains("DeadlineExceeded"), "{err}");
    assert_eq!(seen.recv().await, Some("hang started"));
    assert_eq!(seen.recv().await, Some("hang cancelled"));

    // gRPC's health service (its proto, since frpc's health service embeds no descriptors).
    let health = health_proto();
    let proto = ["-import-path", health.0.to_str().unwrap(), "-proto", health.1];
    let check = [&proto[..], &["grpc.health.v1.Health/Check"]].concat();
    let status = run_grpcurl(addr, &check, Some(r#"{"service":"capture.EchoService"}"#)).await;
    assert_eq!(json_lines(&status.expect("Check"))[0]["status"], "SERVING");
    let unknown = run_grpcurl(addr, &check, Some(r#"{"service":"nobody"}"#)).await;
    assert!(unknown.expect_err("unknown").contains("Code: NotFound"));
}

/// gRPC's `grpc.health.v1` proto, written where grpcurl can read it: its directory and name.
fn health_proto() -> (PathBuf, &'static str) {
    const PROTO: &str = r#"syntax = "proto3";
package grpc.health.v1;
message HealthCheckRequest { string service = 1; }
message HealthCheckResponse {
  enum ServingStatus { UNKNOWN = 0; SERVING = 1; NOT_SERVING = 2; SERVICE_UNKNOWN = 3; }
  ServingStatus status = 1;
}
service Health {
  rpc Check(HealthCheckRequest) returns (HealthCheckResponse);
  rpc Watch(HealthCheckRequest) returns (stream HealthCheckResponse);
}
"#;
    // Written once per process, and whole (a temporary file renamed into place): the tests of
    // both framings run at once, and one's grpcurl must never read the file while the other
    // truncates it to write it again.
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("grpc-health-proto");
        std::fs::create_dir_all(&dir).expect("create the proto directory");
        let partial = dir.join(format!("health.proto.{}", std::process::id()));
        std::fs::write(&partial, PROTO).expect("write health.proto");
        std::fs::rename(&partial, dir.join("health.proto")).expect("move health.proto into place");
        dir
    });
    (dir.clone(), "health.proto")
}

/// Runs grpcurl in cleartext against `addr`: `args` are its flags then what to do (a method,
/// `list`), `data` the request JSON. Its stdout, or its stdout and stderr when it failed.
async fn run_grpcurl(addr: SocketAddr, args: &[&str], data: Option<&str>) -> Result<String, String> {
    let (target, flags) = args.split_last().expect("a method or a verb");
    let mut command = tokio::process::Command::new(grpcurl());
    command.arg("-plaintext").args(flags);
    if let Some(data) = data {
        command.args(["-d", data]);
    }
    command.arg(addr.to_string()).arg(target).kill_on_drop(true);
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
