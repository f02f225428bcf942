//! The metrics example's path end to end: known calls through `frpc::metrics::MetricsLayer`
//! (and `ClientMetricsLayer` on a channel) over TCP, then a scrape of the Prometheus exporter
//! over HTTP, checked count by count. One test: the recorder is global to the process.

use std::net::SocketAddr;

use frpc::NamedService;
use frpc::metrics::ClientMetricsLayer;
use frpc_examples::capture::{CaptureService, pb};
use frpc_examples::metrics::{self, samples};
use pb::echo_service;

/// A port free a moment ago: the exporter takes an address, not a listener.
fn free_port() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrape_counts_every_call_by_method_and_status_code() {
    let metrics_addr = free_port();
    metrics::install_prometheus(metrics_addr).unwrap();
    let bound = metrics::server().unwrap().bind("127.0.0.1:0").await.unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());

    let client = pb::EchoServiceClient::connect(addr).await.unwrap();
    for message in ["a", "b", "c"] {
        let request = pb::Request {
            message: message.into(),
            corpus: 0,
        };
        client.echo(request).await.unwrap();
    }
    let err = client.testy(pb::SearchResponse::default()).await.unwrap_err();
    let code = err.code() as u8;
    assert_ne!(code, 0, "Testy fails: {err}");

    // Through a channel with client metrics: the generated client's calls name themselves (by
    // their gRPC path); a call made by operation number alone is labelled with the number, or
    // with a name given to the layer.
    let layer = ClientMetricsLayer::new(echo_service::SERVICE_NAME).method(99, "Named");
    let channel = frpc::Endpoint::from(addr)
        .connect()
        .await
        .unwrap()
        .with_metrics(layer);
    for op in [echo_service::ECHO, 99] {
        let request = frpc::channel::Request {
            op,
            path: "",
            body: frpc::codegen::Message::to_polyglot(&pb::Request::default()),
            timeout: None,
            metadata: None,
        };
        // Op 99 is unknown to the server: the reply is an error (UNIMPLEMENTED).
        let _ = tower::ServiceExt::oneshot(channel.clone(), request).await;
    }
    // A call its caller drops before the reply (a timeout around it) is booked CANCELLED
    // (it was not booked at all): here to a peer that answers the connection (a PONG, as a Go
    // server answers the client's PING), then reads requests and answers none.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_addr = silent.local_addr().unwrap();
    let held = tokio::spawn(async move {
        use futures_util::{SinkExt, StreamExt};
        let (stream, _) = silent.accept().await.unwrap();
        let codec = frpc::wire::PacketCodec::new(frpc::Framing::Frisbee);
        let mut framed = tokio_util::codec::Framed::new(stream, codec);
        framed.send(frpc::wire::Packet::pong()).await.unwrap();
        while framed.next().await.is_some() {}
    });
    let dropped = ClientMetricsLayer::new(echo_service::SERVICE_NAME).method(98, "Dropped");
    let unanswered = frpc::Endpoint::from(silent_addr)
        .connect()
        .await
        .unwrap()
        .with_metrics(dropped);
    let request = frpc::channel::Request {
        op: 98,
        path: "",
        body: frpc::codegen::Message::to_polyglot(&pb::Request::default()),
        timeout: None,
        metadata: None,
    };
    let call = tower::ServiceExt::oneshot(unanswered, request);
    let gave_up = tokio::time::timeout(std::time::Duration::from_millis(50), call).await;
    assert!(gave_up.is_err(), "the silent peer answered: {gave_up:?}");
    held.abort();
    let through_channel = pb::EchoServiceClient::new(channel);
    through_channel.echo(pb::Request::default()).await.unwrap();
    through_channel
        .testy(pb::SearchResponse::default())
        .await
        .unwrap_err();
    // Streams: 2 replies to one request; 3 requests to one reply; one dropped unfinished.
    let mut search = through_channel
        .search(pb::SearchResponse::default())
        .await
        .unwrap();
    while search.message().await.unwrap().is_some() {}
    drop(search);
    let mut upload = through_channel.upload().await.unwrap();
    for _ in 0..3 {
        upload.send(pb::Data::default()).await.unwrap();
    }
    upload.close_and_recv().await.unwrap();
    let mut echo = through_channel.echo_stream().await.unwrap();
    echo.send(pb::Request::default()).await.unwrap();
    echo.message().await.unwrap().unwrap();
    drop(echo);
    // A client stream whose connection closes under it: its handler's next read fails, and
    // the server books the call CANCELLED (the client went), not UNAVAILABLE.
    let gone = frpc::Client::connect(addr).await.unwrap();
    let mut upload = pb::EchoServiceClient::new(gone.clone()).upload().await.unwrap();
    upload.send(pb::Data::default()).await.unwrap();
    gone.close();

    let service = format!(
        "rpc_service=\"{}\"",
        pb::EchoServiceServer::<CaptureService>::NAME
    );
    let count_in = |text: &str, metric: &str, method: &str, code: u8| -> f64 {
        let method = format!("rpc_method=\"{method}\"");
        let code = format!("rpc_frpc_status_code=\"{code}\"");
        let labels = ["rpc_system=\"frpc\"", &service, &method, &code];
        samples(text, metric, &labels).map(|(_, value)| value).sum()
    };
    // The server records a stream once its handler's future is done, just after the stream's
    // end went out (or once the handler is dropped: the client cancelled it): the client may
    // see the end first, so scrape until all three are in.
    let streams_recorded = |text: &str| {
        let recorded = |method, code| count_in(text, "rpc_server_requests", method, code) == 1.0;
        let cancelled = frpc::Code::Cancelled as u8;
        recorded("Search", 0)
            && recorded("Upload", 0)
            && recorded("EchoStream", cancelled)
            && recorded("Upload", cancelled)
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let text = loop {
        let text = metrics::scrape(metrics_addr).await.unwrap();
        if streams_recorded(&text) || std::time::Instant::now() > deadline {
            break text;
        }
        tokio::task::yield_now().await;
    };
    let count = |metric: &str, method: &str, code: u8| count_in(&text, metric, method, code);
    assert_eq!(count("rpc_server_requests", "Echo", 0), 5.0, "{text}");
    assert_eq!(count("rpc_server_requests", "Testy", code), 2.0, "{text}");
    assert_eq!(count("rpc_server_requests", "Testy", 0), 0.0, "{text}");
    let unavailable = frpc::Code::Unavailable as u8;
    assert_eq!(count("rpc_server_requests", "Upload", unavailable), 0.0, "{text}");
    let cancelled = frpc::Code::Cancelled as u8;
    assert_eq!(count("rpc_server_requests", "Upload", cancelled), 1.0, "{text}");
    // The duration histogram holds the same calls (a summary by default: its `_count`).
    assert_eq!(count("rpc_server_duration_count", "Echo", 0), 5.0, "{text}");
    // The client's side of the channel's calls, with the same labels.
    assert_eq!(count("rpc_client_requests", "Echo", 0), 1.0, "{text}");
    assert_eq!(count("rpc_client_requests", "Testy", code), 1.0, "{text}");
    let by_number = echo_service::ECHO.to_string();
    assert_eq!(count("rpc_client_requests", &by_number, 0), 1.0, "{text}");
    let unimplemented = frpc::Code::Unimplemented as u8;
    assert_eq!(
        count("rpc_client_requests", "Named", unimplemented),
        1.0,
        "{text}"
    );
    assert_eq!(count("rpc_client_duration_count", "Echo", 0), 1.0, "{text}");
    let cancelled = frpc::Code::Cancelled as u8;
    assert_eq!(count("rpc_client_requests", "Dropped", cancelled), 1.0, "{text}");

    // Messages per stream, on both sides (summaries: `_sum` adds the streams' counts).
    assert_eq!(
        count("rpc_server_responses_per_rpc_sum", "Search", 0),
        2.0,
        "{text}"
    );
    assert_eq!(
        count("rpc_server_requests_per_rpc_sum", "Search", 0),
        1.0,
        "{text}"
    );
    assert_eq!(
        count("rpc_server_requests_per_rpc_sum", "Upload", 0),
        3.0,
        "{text}"
    );
    assert_eq!(
        count("rpc_server_responses_per_rpc_sum", "Upload", 0),
        1.0,
        "{text}"
    );
    assert_eq!(
        count("rpc_server_requests_per_rpc_count", "Upload", 0),
        1.0,
        "{text}"
    );
    assert_eq!(count("rpc_client_requests", "Search", 0), 1.0, "{text}");
    assert_eq!(
        count("rpc_client_responses_per_rpc_sum", "Search", 0),
        2.0,
        "{text}"
    );
    assert_eq!(
        count("rpc_client_requests_per_rpc_sum", "Upload", 0),
        3.0,
        "{text}"
    );
    assert_eq!(
        count("rpc_client_responses_per_rpc_sum", "Upload", 0),
        1.0,
        "{text}"
    );
    assert_eq!(count("rpc_client_duration_count", "Upload", 0), 1.0, "{text}");
    // Dropped before the server ended it: CANCELLED, with what it carried so far.
    let cancelled = frpc::Code::Cancelled as u8;
    assert_eq!(
        count("rpc_client_requests", "EchoStream", cancelled),
        1.0,
        "{text}"
    );
    assert_eq!(
        count("rpc_client_requests_per_rpc_sum", "EchoStream", cancelled),
        1.0,
        "{text}"
    );
    assert_eq!(
        count("rpc_client_responses_per_rpc_sum", "EchoStream", cancelled),
        1.0,
        "{text}"
    );
    // The server books the stream the client cancelled as CANCELLED too, with what it carried.
    assert_eq!(
        count("rpc_server_requests", "EchoStream", cancelled),
        1.0,
        "{text}"
    );
    assert_eq!(
        count("rpc_server_requests_per_rpc_sum", "EchoStream", cancelled),
        1.0,
        "{text}"
    );
    // Unary calls record no messages per call.
    assert_eq!(
        count("rpc_server_requests_per_rpc_count", "Echo", 0),
        0.0,
        "{text}"
    );
}
