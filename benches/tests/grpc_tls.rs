//! One TLS port for fRPC and gRPC: an frpc server with `tls(..)` and `grpc(true)` advertises
//! ALPN `h2` and routes by what the client chose. Called at the same time by grpcurl (`-cacert`,
//! `.ci/setup-grpcurl`), frpc's generated client over `GrpcChannel::connect_tls` and over an
//! fRPC TLS client; a cleartext client is refused.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use frpc::grpc::GrpcChannel;
use frpc::tls::rustls;
use frpc_bench::frameworks::frpc::pb as fpb;
use frpc_testdata::tools::grpcurl as grpcurl_path;

mod unary_svc;

/// A self-signed certificate for `localhost`: the server's config (no ALPN of its own), the
/// client's trusting it, and its PEM for grpcurl.
struct Certs {
    server: Arc<rustls::ServerConfig>,
    client: Arc<rustls::ClientConfig>,
    pem: String,
}

fn certs() -> Certs {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let der = cert.cert.der().clone();
    let key = rustls::pki_types::PrivateKeyDer::try_from(cert.signing_key.serialize_der()).unwrap();
    let server = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![der.clone()], key)
        .unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(der).unwrap();
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    Certs {
        server: Arc::new(server),
        client: Arc::new(client),
        pem: cert.cert.pem(),
    }
}

/// A shared port over TLS, with health beside the generated service.
async fn start(config: Arc<rustls::ServerConfig>) -> SocketAddr {
    let (_reporter, health) = frpc::health::service();
    let bound = frpc::Server::builder()
        .tls(config)
        .grpc(true)
        .add_service(fpb::BenchmarkServiceServer::new(unary_svc::Svc::new().0))
        .add_service(health)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    addr
}

/// Runs grpcurl over TLS trusting `cacert`: its exit status, stdout and stderr.
async fn grpcurl(cacert: &Path, args: &[&str]) -> (bool, String, String) {
    let out = tokio::process::Command::new(grpcurl_path())
        .arg("-cacert")
        .arg(cacert)
        .args(["-servername", "localhost"])
        .args(args)
        .output()
        .await
        .unwrap();
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (out.status.success(), text(out.stdout), text(out.stderr))
}

/// The generated client over fRPC-over-TLS: a few calls.
async fn frpc_tls_calls(addr: SocketAddr, tls: Arc<rustls::ClientConfig>) {
    let client = frpc::Client::connect_tls(addr, "localhost", tls, frpc::ClientConfig::default())
        .await
        .unwrap();
    let client = fpb::BenchmarkServiceClient::new(client);
    for i in 0..10 {
        let text = format!("frpc-tls:{i}");
        let reply = client
            .benchmark(fpb::Request {
                message: text.clone(),
            })
            .await
            .unwrap();
        assert_eq!(reply.message, text);
    }
}

/// The generated client over gRPC-over-TLS (`GrpcChannel::connect_tls`).
async fn grpc_tls_calls(addr: SocketAddr, tls: Arc<rustls::ClientConfig>) {
    let channel = GrpcChannel::connect_tls(&addr.to_string(), "localhost", tls)
        .await
        .unwrap();
    let client = fpb::BenchmarkServiceClient::new(channel);
    for i in 0..10 {
        let text = format!("grpc-tls:{i}");
        let reply = client
            .benchmark(fpb::Request {
                message: text.clone(),
            })
            .await
            .unwrap();
        assert_eq!(reply.message, text);
    }
    let err = client
        .benchmark(fpb::Request {
            message: "status:7".into(),
        })
        .await
        .unwrap_err();
    assert!(
        matches!(&err, frpc::Error::Status(s) if s.code() == frpc::Code::PermissionDenied),
        "{err:?}"
    );
    let mut metadata = frpc::Metadata::new();
    metadata.insert("x-user", "ada").unwrap();
    let slot = frpc::MetadataSlot::new();
    let reply = client
        .with_metadata(metadata)
        .with_response_metadata(&slot)
        .benchmark(fpb::Request {
            message: "meta".into(),
        })
        .await
        .unwrap();
    assert_eq!(reply.message, "ada");
    assert_eq!(slot.take().unwrap().get("x-echo-user"), Some("ada"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_tls_port_routes_by_alpn_for_frpc_grpc_and_grpcurl() {
    let (certs, stranger) = (certs(), certs());
    assert!(certs.server.alpn_protocols.is_empty());
    let addr = start(certs.server.clone()).await;
    let cacert = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("grpc-tls-{}.pem", addr.port()));
    std::fs::write(&cacert, &certs.pem).unwrap();
    let proto = Path::new(env!("CARGO_MANIFEST_DIR")).join("proto");
    let target = addr.to_string();
    let call = [
        "-import-path",
        proto.to_str().unwrap(),
        "-proto",
        "benchmark.proto",
        "-H",
        "x-user: grace",
        "-v",
        "-d",
        r#"{"Message":"meta"}"#,
        &target,
        "benchmark.BenchmarkService/Benchmark",
    ];
    // All three at once on the one port.
    let ((ok, out, err), (), ()) = tokio::join!(
        grpcurl(&cacert, &call),
        frpc_tls_calls(addr, certs.client.clone()),
        grpc_tls_calls(addr, certs.client.clone()),
    );
    assert!(ok, "{err}");
    assert!(
        out.contains(r#""Message": "grace""#) && out.contains("x-echo-user: grace"),
        "{out}"
    );

    // Reflection over TLS, no proto files.
    let (ok, out, err) = grpcurl(&cacert, &[&target, "list"]).await;
    assert!(ok, "{err}");
    assert!(
        out.contains("benchmark.BenchmarkService") && out.contains("grpc.reflection.v1.ServerReflection"),
        "{out}"
    );
    // grpcurl refuses the server when it does not trust it: TLS really is checked.
    let other = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("grpc-tls-other-{}.pem", addr.port()));
    std::fs::write(&other, stranger.pem).unwrap();
    let (ok, _, err) = grpcurl(&other, &[&target, "list"]).await;
    assert!(!ok && err.contains("certificate"), "{err}");
    let _ = std::fs::remove_file(&cacert);
    let _ = std::fs::remove_file(&other);
}

#[tokio::test]
async fn a_cleartext_grpc_client_is_refused_on_a_tls_port() {
    let certs = certs();
    let addr = start(certs.server).await;
    let plain = async {
        let channel = GrpcChannel::connect(&format!("http://{addr}")).await?;
        let client = fpb::BenchmarkServiceClient::new(channel);
        client.benchmark(fpb::Request { message: "x".into() }).await
    };
    let result = tokio::time::timeout(Duration::from_secs(10), plain)
        .await
        .expect("refused, not left hanging");
    let err = result.unwrap_err();
    assert!(
        matches!(&err, frpc::Error::Unavailable(_) | frpc::Error::Status(_)),
        "{err:?}"
    );
}

#[tokio::test]
async fn bad_tls_names_are_config_errors() {
    let certs = certs();
    let err = GrpcChannel::connect_tls("127.0.0.1:1", "not a name!", certs.client)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, frpc::Error::Config(text) if text.contains("server name")),
        "{err}"
    );
}
