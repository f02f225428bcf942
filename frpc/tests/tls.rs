//! TLS around the byte stream, with a certificate made at test time.
#![cfg(feature = "tls")]

mod support;

use std::sync::Arc;
use std::time::Duration;

use frpc::tls::rustls;
use frpc::{Client, ClientConfig, Error, Server};
use support::*;
use tokio::net::TcpListener;

struct Certs {
    server: Arc<rustls::ServerConfig>,
    client: Arc<rustls::ClientConfig>,
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
    }
}

async fn tls_server(config: Arc<rustls::ServerConfig>) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = Server::builder()
        .tls(config)
        .add_service(TestService::default())
        .build()
        .unwrap();
    tokio::spawn(async move { server.serve_listener(listener).await });
    addr
}

#[tokio::test]
async fn unary_and_streaming_over_tls() {
    let certs = certs();
    let addr = tls_server(certs.server).await;
    let client = Client::connect_tls(addr, "localhost", certs.client, ClientConfig::default())
        .await
        .unwrap();
    assert_eq!(call(&client, ECHO, "secret").await.unwrap().value, "secret");
    let mut stream = frpc::codegen::call_server_streaming::<Text, Text>(&client, COUNT, &Text::new("2"))
        .await
        .unwrap();
    assert_eq!(stream.message().await.unwrap().unwrap().value, "0");
    assert_eq!(stream.message().await.unwrap().unwrap().value, "1");
    assert!(stream.message().await.unwrap().is_none());
    assert!(client.into_raw().await.is_err(), "no takeover over TLS");
}

/// A server requiring a client certificate, and a client without one: TLS 1.3 finishes the
/// client's side of the handshake first, so the connect succeeds and the first call fails with
/// the server's alert, and only that: no advice to try the other framing, which the error once
/// ended with.
#[tokio::test]
async fn a_missing_client_certificate_is_a_tls_error_not_a_framing_hint() {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let der = cert.cert.der().clone();
    let key = rustls::pki_types::PrivateKeyDer::try_from(cert.signing_key.serialize_der()).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(der.clone()).unwrap();
    let roots = Arc::new(roots);
    let verifier =
        rustls::server::WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone())
            .build()
            .unwrap();
    let server = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(vec![der], key)
        .unwrap();
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let addr = tls_server(Arc::new(server)).await;
    let err = match Client::connect_tls(addr, "localhost", Arc::new(client), ClientConfig::default()).await {
        Ok(client) => call(&client, ECHO, "x").await.unwrap_err(),
        Err(err) => err,
    };
    let text = err.to_string();
    assert!(text.contains("Certificate"), "{text}");
    assert!(!text.contains("framing"), "{text}");
}

#[tokio::test]
async fn plain_client_against_tls_server_fails_clearly() {
    let certs = certs();
    let addr = tls_server(certs.server).await;
    let client = Client::connect(addr).await.unwrap();
    let result = tokio::time::timeout(Duration::from_secs(5), call(&client, ECHO, "x"))
        .await
        .expect("no hang");
    assert!(
        matches!(result, Err(Error::ConnectionClosed { .. })),
        "{result:?}"
    );
    // The TLS server's alert says what it is: the hint is TLS, not the other framing.
    let err = result.unwrap_err().to_string();
    assert!(err.contains("this looks like TLS"), "{err}");
    assert!(!err.contains("Framing::Legacy"), "{err}");
}

#[tokio::test]
async fn tls_client_against_plain_server_fails_clearly() {
    let certs = certs();
    let server = start(Default::default()).await;
    let connect = Client::connect_tls(server.addr, "localhost", certs.client, ClientConfig::default());
    let result = tokio::time::timeout(Duration::from_secs(5), connect)
        .await
        .expect("no hang");
    let err = result.map(|_| ()).unwrap_err();
    assert!(
        matches!(err, Error::Connect { addr, .. } if addr == server.addr),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(text.contains("does it serve TLS?"), "{text}");
    assert!(text.contains(&server.addr.to_string()), "{text}");
}

#[tokio::test]
async fn wrong_server_name_is_refused() {
    let certs = certs();
    let addr = tls_server(certs.server).await;
    let result = Client::connect_tls(addr, "example.com", certs.client, ClientConfig::default()).await;
    let err = result.map(|_| ()).unwrap_err();
    assert!(err.to_string().to_lowercase().contains("certificate"), "{err}");
}

/// A server that accepts and never answers the handshake: the connect fails within
/// `connect_timeout`, saying it was the handshake (not a call's timeout).
#[tokio::test]
async fn a_silent_handshake_fails_within_the_connect_timeout() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let held = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        std::future::pending::<()>().await;
        drop(stream);
    });
    let config = ClientConfig::default().connect_timeout(Duration::from_millis(200));
    let err = Client::connect_tls(addr, "localhost", certs().client, config)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Connect { .. }), "{err:?}");
    assert!(err.to_string().contains("no TLS handshake within 200ms"), "{err}");
    held.abort();
}

/// A connection still in its TLS handshake when the server begins shutting down is dropped
/// then: a silent client held `serve_with_shutdown` up to its idle timeout (20 s here), past a
/// 200 ms grace (found by a probe, 2026-11-29).
#[tokio::test]
async fn a_connection_in_its_handshake_does_not_hold_the_shutdown() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut config = frpc::ServerConfig::default();
    config.connection.idle_timeout = Duration::from_secs(20);
    config.shutdown_grace = Duration::from_millis(200);
    let server = Server::builder()
        .config(config)
        .tls(certs().server)
        .add_service(TestService::default())
        .build()
        .unwrap();
    let stop = Arc::new(tokio::sync::Notify::new());
    let signal = stop.clone();
    let serving = tokio::spawn({
        let server = server.clone();
        async move {
            server
                .serve_listener_with_shutdown(listener, async move { signal.notified().await })
                .await
        }
    });
    let _silent = tokio::net::TcpStream::connect(addr).await.unwrap();
    while server.connections() == 0 {
        tokio::task::yield_now().await;
    }
    stop.notify_one();
    // A hang guard well below the idle timeout, not a timing assertion on the grace.
    tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("the shutdown waited for the handshake")
        .unwrap()
        .unwrap();
}
