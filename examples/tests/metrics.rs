//! `frpc::metrics::MetricsLayer` through the Prometheus exporter: known calls to the capture
//! server, then a scrape over HTTP shows their counts by method and status code.

use frpc::Framing;
use frpc_examples::capture::pb::{EchoServiceClient, Request, SearchResponse};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

async fn scrape(addr: std::net::SocketAddr) -> String {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nhost: test\r\n\r\n")
        .await
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
    response
}

#[tokio::test(flavor = "multi_thread")]
async fn prometheus_counts_calls_by_method_and_code() {
    let handle = frpc_examples::metrics::install_recorder().unwrap();
    let http = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let http_addr = http.local_addr().unwrap();
    tokio::spawn(frpc_examples::metrics::serve_metrics(http, handle));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = frpc_examples::metrics::server(Framing::Frisbee);
    tokio::spawn(async move { server.serve(listener).await });

    let client = EchoServiceClient::connect(addr).await.unwrap();
    for message in ["a", "b", "c"] {
        let request = Request {
            message: message.into(),
            ..Default::default()
        };
        client.echo(request).await.unwrap();
    }
    client.testy(SearchResponse::default()).await.unwrap_err();

    let text = scrape(http_addr).await;
    let echo = r#"rpc_server_requests{rpc_system="frpc",rpc_service="capture.EchoService",rpc_method="Echo",rpc_frpc_status_code="OK"} 3"#;
    let testy = r#"rpc_server_requests{rpc_system="frpc",rpc_service="capture.EchoService",rpc_method="Testy",rpc_frpc_status_code="UNKNOWN"} 1"#;
    assert!(text.contains(echo), "{text}");
    assert!(text.contains(testy), "{text}");
    let durations = r#"rpc_server_duration_count{rpc_system="frpc",rpc_service="capture.EchoService",rpc_method="Echo",rpc_frpc_status_code="OK"} 3"#;
    assert!(text.contains(durations), "{text}");
}
