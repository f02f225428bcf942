//! Response metadata on fRPC streams: what a handler sets with `Context::set_response_metadata`
//! travels with the stream's end (its `EOF`, or the error that ends it), as gRPC's trailers,
//! to a client that took the metadata extension, and lands in the handle's `MetadataSlot`.
//! Peers without extensions (Go's) see the plain `EOF` they always saw, in both framings.
// The services are `#[frpc::service]`s: without the `macros` feature there is nothing to test.
#![cfg(feature = "macros")]

use std::time::Duration;

use bytes::Bytes;
use frpc::wire::{Framing, Packet, PacketCodec};
use frpc::{
    ClientConfig, Code, Context, Metadata, MetadataSlot, ServerConfig, Status, StreamSender, Streaming,
};
use futures_util::{SinkExt, StreamExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::codec::Framed;

mod spec_bytes;

#[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
pub struct Text {
    pub value: String,
}

fn text(value: impl Into<String>) -> Text {
    Text { value: value.into() }
}

#[frpc::service(package = "trailers")]
pub trait Trailers {
    /// Sends `first`, then sets the metadata `cursor: <request>` and ends: with `NOT_FOUND`
    /// when the request is `fail`, well otherwise.
    async fn watch(&self, ctx: &Context, request: Text, outbound: StreamSender<Text>) -> Result<(), Status>;
    /// Counts the requests; the count goes back as the response and as the metadata `count`.
    async fn sum(&self, ctx: &Context, inbound: Streaming<Text>) -> Result<Text, Status>;
    /// Echoes each request; at the end the metadata `echoed: <count>`.
    async fn chat(
        &self,
        ctx: &Context,
        inbound: Streaming<Text>,
        outbound: StreamSender<Text>,
    ) -> Result<(), Status>;
    /// Sets `from: handler`, hands the sender to a task that sends `late` and returns `Ok`.
    async fn spawned(&self, ctx: &Context, request: Text, outbound: StreamSender<Text>)
    -> Result<(), Status>;
    /// Sends whether `set_response_metadata` took the metadata, then ends.
    async fn report(&self, ctx: &Context, request: Text, outbound: StreamSender<Text>) -> Result<(), Status>;
}

struct Svc;

fn metadata(key: &str, value: &str) -> Metadata {
    let mut metadata = Metadata::new();
    metadata.insert(key, value).unwrap();
    metadata
}

impl Trailers for Svc {
    async fn watch(&self, ctx: &Context, request: Text, outbound: StreamSender<Text>) -> Result<(), Status> {
        ctx.set_response_metadata(metadata("cursor", "replaced"));
        outbound.send(text("first")).await?;
        ctx.set_response_metadata(metadata("cursor", &cursor(&request.value)));
        match request.value.as_str() {
            "fail" => Err(Status::not_found("gone")),
            _ => Ok(()),
        }
    }

    async fn sum(&self, ctx: &Context, mut inbound: Streaming<Text>) -> Result<Text, Status> {
        let (mut count, mut last) = (0, String::new());
        while let Some(request) = inbound.message().await? {
            count += 1;
            last = request.value;
        }
        let value = match last.as_str() {
            "big" => cursor(&last),
            _ => count.to_string(),
        };
        ctx.set_response_metadata(metadata("count", &value));
        Ok(text(count.to_string()))
    }

    async fn chat(
        &self,
        ctx: &Context,
        mut inbound: Streaming<Text>,
        outbound: StreamSender<Text>,
    ) -> Result<(), Status> {
        let mut count = 0;
        while let Some(request) = inbound.message().await? {
            outbound.send(request).await?;
            count += 1;
        }
        ctx.set_response_metadata(metadata("echoed", &count.to_string()));
        Ok(())
    }

    async fn spawned(&self, ctx: &Context, _: Text, outbound: StreamSender<Text>) -> Result<(), Status> {
        ctx.set_response_metadata(metadata("from", "handler"));
        tokio::spawn(async move { outbound.send(text("late")).await });
        Ok(())
    }

    async fn report(&self, ctx: &Context, _: Text, outbound: StreamSender<Text>) -> Result<(), Status> {
        let taken = ctx.set_response_metadata(metadata("cursor", "x"));
        outbound.send(text(taken.to_string())).await?;
        Ok(())
    }
}

/// The cursor for a request: 2,000 bytes for `big` (over a client's limit of 256 below).
fn cursor(request: &str) -> String {
    match request {
        "big" => "v".repeat(2000),
        other => other.to_owned(),
    }
}

const LIMIT: Duration = Duration::from_secs(10);

async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {LIMIT:?}"))
}

async fn serve(config: ServerConfig) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = frpc::Server::builder()
        .config(config)
        .add_service(TrailersServer::new(Svc))
        .build()
        .unwrap();
    tokio::spawn(async move { server.serve_listener(listener).await });
    addr
}

/// A client of a server with the defaults, extensions negotiated, whose calls leave their
/// response metadata in the returned slot.
async fn client() -> (TrailersClient<frpc::Client>, MetadataSlot) {
    let addr = serve(ServerConfig::default()).await;
    let connection = frpc::Client::connect(addr).await.unwrap();
    assert_eq!(connection.negotiation().await, frpc::Negotiated::Extensions);
    let slot = MetadataSlot::new();
    (
        TrailersClient::new(connection.with_response_metadata(&slot)),
        slot,
    )
}

fn value(slot: &MetadataSlot, key: &str) -> Option<String> {
    slot.take()?.get(key).map(str::to_owned)
}

/// Reads `stream`'s one message, `expected`, then its end.
async fn one_then_the_end(stream: &mut Streaming<Text>, expected: &str) {
    let message = within(expected, stream.message()).await.unwrap();
    assert_eq!(message, Some(text(expected)));
    assert!(within("the end", stream.message()).await.unwrap().is_none());
}

#[tokio::test]
async fn a_server_streams_end_carries_the_metadata_set_last() {
    let (client, slot) = client().await;
    let mut stream = within("open", client.watch(text("c-7"))).await.unwrap();
    one_then_the_end(&mut stream, "first").await;
    assert_eq!(value(&slot, "cursor").as_deref(), Some("c-7"));
}

#[tokio::test]
async fn an_error_that_ends_a_stream_carries_its_code_and_the_metadata() {
    let (client, slot) = client().await;
    let mut stream = within("open", client.watch(text("fail"))).await.unwrap();
    assert_eq!(
        within("first", stream.message()).await.unwrap().unwrap(),
        text("first")
    );
    let err = within("end", stream.message()).await.unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err}");
    assert_eq!(value(&slot, "cursor").as_deref(), Some("fail"));
}

#[tokio::test]
async fn a_client_streaming_response_brings_its_metadata() {
    let (client, slot) = client().await;
    let mut call = within("open", client.sum()).await.unwrap();
    for i in 0..3 {
        call.send(text(i.to_string())).await.unwrap();
    }
    let response = within("response", call.close_and_recv()).await.unwrap();
    assert_eq!(response, text("3"));
    assert_eq!(value(&slot, "count").as_deref(), Some("3"));
}

#[tokio::test]
async fn a_bidi_streams_end_carries_its_metadata() {
    let (client, slot) = client().await;
    let mut call = within("open", client.chat()).await.unwrap();
    for i in 0..2 {
        call.send(text(i.to_string())).await.unwrap();
        assert_eq!(
            within("echo", call.message()).await.unwrap().unwrap(),
            text(i.to_string())
        );
    }
    call.close_send().await.unwrap();
    assert!(slot.take().is_none(), "nothing before the end");
    assert!(within("end", call.message()).await.unwrap().is_none());
    assert_eq!(value(&slot, "echoed").as_deref(), Some("2"));
}

/// A handler that hands its sender to a task and returns `Ok`: the stream ends when the task's
/// sender goes, and that end carries what the handler set.
#[tokio::test]
async fn a_spawned_senders_end_carries_the_handlers_metadata() {
    let (client, slot) = client().await;
    let mut stream = within("open", client.spawned(text(""))).await.unwrap();
    one_then_the_end(&mut stream, "late").await;
    assert_eq!(value(&slot, "from").as_deref(), Some("handler"));
}

/// Metadata over the client's `max_metadata_size` fails the stream with RESOURCE_EXHAUSTED, as
/// it fails a unary call, whether or not the caller collects it: a server-streaming call at its
/// end, a client-streaming call with its response (it was INTERNAL "malformed", and a
/// client-streaming call failed only where a slot collected the metadata).
#[tokio::test]
async fn metadata_over_the_clients_limit_is_resource_exhausted() {
    let addr = serve(ServerConfig::default()).await;
    let mut config = ClientConfig::default();
    config.connection.max_metadata_size = 256;
    let connection = frpc::Client::connect_with(addr, config).await.unwrap();
    assert_eq!(connection.negotiation().await, frpc::Negotiated::Extensions);
    let slot = MetadataSlot::new();
    for handle in [connection.clone(), connection.with_response_metadata(&slot)] {
        let client = TrailersClient::new(handle);
        let mut stream = within("open", client.watch(text("big"))).await.unwrap();
        assert_eq!(
            within("first", stream.message()).await.unwrap().unwrap(),
            text("first")
        );
        let err = within("end", stream.message()).await.unwrap_err();
        assert_eq!(err.code(), Code::ResourceExhausted, "{err}");
        assert!(err.to_string().contains("max_metadata_size"), "{err}");

        let mut call = within("open", client.sum()).await.unwrap();
        call.send(text("big")).await.unwrap();
        let err = within("response", call.close_and_recv()).await.unwrap_err();
        assert_eq!(err.code(), Code::ResourceExhausted, "{err}");
        assert!(slot.take().is_none());
    }
}

/// Through a `Channel`, as through a `Client`.
#[tokio::test]
async fn a_channels_stream_leaves_its_metadata_in_the_slot() {
    let addr = serve(ServerConfig::default()).await;
    let channel = frpc::Endpoint::new(addr.to_string()).connect().await.unwrap();
    let slot = MetadataSlot::new();
    let client = TrailersClient::new(channel.with_response_metadata(&slot));
    let mut stream = within("open", client.watch(text("via-channel"))).await.unwrap();
    while within("message", stream.message()).await.unwrap().is_some() {}
    assert_eq!(value(&slot, "cursor").as_deref(), Some("via-channel"));
}

/// Extensions off on either side: nothing is sent and the handler is told so; the slot says
/// the server sent nothing.
#[tokio::test]
async fn without_extensions_the_handler_is_told_nothing_goes() {
    for (server_on, client_on) in [(false, true), (true, false)] {
        let mut config = ServerConfig::default();
        config.extensions = server_on;
        let addr = serve(config).await;
        let mut client_config = ClientConfig::default();
        client_config.extensions = client_on;
        let connection = frpc::Client::connect_with(addr, client_config).await.unwrap();
        assert_eq!(connection.negotiation().await, frpc::Negotiated::Plain);
        let slot = MetadataSlot::new();
        let client = TrailersClient::new(connection.with_response_metadata(&slot));
        let mut stream = within("open", client.report(text(""))).await.unwrap();
        let taken = within("report", stream.message()).await.unwrap().unwrap();
        assert_eq!(taken, text("false"), "server {server_on}, client {client_on}");
        assert!(within("end", stream.message()).await.unwrap().is_none());
        assert!(slot.take().is_none(), "the end carried nothing");
    }
}

type Raw = Framed<TcpStream, PacketCodec>;

/// The next packet that is not a heartbeat.
async fn next(raw: &mut Raw) -> Packet {
    loop {
        let packet = within("a packet", raw.next()).await.expect("open").unwrap();
        if packet.op > frpc::wire::op::PONG {
            return packet;
        }
    }
}

const EOF: &[u8] = b"\x06\x05\x0a\x03EOF";

/// Opens stream 1 for `report` on a raw connection, sends its request, and returns the
/// stream's packets up to its `EOF`'s (the last).
async fn report_on(raw: &mut Raw) -> Vec<Bytes> {
    let open = Bytes::from_static(&[0x09, trailers::REPORT as u8]);
    raw.send(Packet::new(1, frpc::wire::op::STREAM, open))
        .await
        .unwrap();
    let request = frpc::codegen::Message::to_polyglot(&text(""));
    raw.send(Packet::new(1, frpc::wire::op::STREAM, request))
        .await
        .unwrap();
    let mut contents = Vec::new();
    loop {
        let packet = next(raw).await;
        if packet.op != frpc::wire::op::STREAM {
            continue; // ACCEPT
        }
        let end = packet.content.ends_with(EOF);
        contents.push(packet.content);
        if end {
            return contents;
        }
    }
}

/// The bytes, in both framings: a peer that never offered (a Go client) gets the plain `EOF`
/// it always got; one that took metadata gets it behind a METADATA header, as the example of
/// docs/extensions.md §7 writes it.
#[tokio::test]
async fn the_ends_bytes_plain_and_with_metadata() {
    let in_doc = spec_bytes::Spec::load().bytes(&[
        "00 0f 00 01 00 02 00 00 00 1a",
        "fe",
        "02 00 00 00 0c",
        "06 63 75 72 73 6f 72 00 00 00 01 78",
        "00",
        "06 05 0a 03 45 4f 46",
    ]);
    for framing in [Framing::Frisbee, Framing::Legacy] {
        let mut config = ServerConfig::default();
        config.connection.framing = framing;
        let addr = serve(config).await;

        let mut plain = Framed::new(TcpStream::connect(addr).await.unwrap(), PacketCodec::new(framing));
        let contents = report_on(&mut plain).await;
        let taken = frpc::codegen::Message::to_polyglot(&text("false"));
        assert_eq!(
            contents,
            [taken, Bytes::from_static(EOF)],
            "{framing:?}: a Go client's bytes"
        );

        let mut offered = Framed::new(TcpStream::connect(addr).await.unwrap(), PacketCodec::new(framing));
        let offer = Bytes::from_static(&[1, 0, 0, 1, 0xff]);
        offered.send(Packet::new(1, 0xffff, offer)).await.unwrap();
        let contents = report_on(&mut offered).await;
        let taken = frpc::codegen::Message::to_polyglot(&text("true"));
        assert_eq!(contents[0], taken, "{framing:?}");
        let end = Packet::new(1, frpc::wire::op::STREAM, contents[1].clone());
        assert_eq!(
            spec_bytes::wire_hex(&end),
            in_doc,
            "{framing:?}: the example of §7"
        );
    }
}
