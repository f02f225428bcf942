//! `capture-server --grpc`'s server (capture.proto's EchoService on both protocols on one
//! port), called by grpcurl (installed by `.ci/setup-grpcurl`) as docs/guide/grpc.md shows and
//! by an frpc client, at the same time.

use std::path::Path;

use frpc::{Concurrency, Framing};
use frpc_examples::capture::{self, pb};
use frpc_testdata::tools::grpcurl;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpcurl_and_frpc_call_capture_server_on_one_port() {
    let server = capture::builder(Framing::Frisbee, Concurrency::PerRpc)
        .grpc(true)
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { server.serve_listener(listener).await });

    let proto = Path::new(env!("CARGO_MANIFEST_DIR")).join("../proto");
    let grpc = tokio::process::Command::new(grpcurl())
        .args([
            "-plaintext",
            "-import-path",
            proto.to_str().unwrap(),
            "-proto",
            "capture.proto",
        ])
        .args([
            "-d",
            r#"{"Message":"hello"}"#,
            &addr.to_string(),
            "capture.EchoService/Echo",
        ])
        .output();
    let frpc = async {
        let client = pb::EchoServiceClient::connect(addr).await.unwrap();
        let request = pb::Request {
            message: "hi".into(),
            ..Default::default()
        };
        client.echo(request).await.unwrap()
    };
    let (grpc, reply) = tokio::join!(grpc, frpc);
    let grpc = grpc.unwrap();
    let out = String::from_utf8(grpc.stdout).unwrap();
    assert!(grpc.status.success(), "{}", String::from_utf8_lossy(&grpc.stderr));
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["Message"], "hello");
    assert_eq!(json["Test"]["Checker"], "Monkey");
    assert_eq!(reply.message, "hi");
}
