//! A packet over the receiver's content limit is answered, not fatal: the transport skips its
//! content, a request gets an error reply naming the limit, a reply fails only its call, a
//! stream message fails only its stream; the connection serves what comes next. Both framings.
// Some tests here use `#[frpc::service]`s or `frpc::health`: without `macros` the file is left out.
#![cfg(feature = "macros")]

mod support;

use frpc::codegen::Message;
use frpc::{Client, ClientConfig, Concurrency, Error, Framing};
use frpc_wire::{Packet, PacketCodec, op};
use futures_util::{SinkExt, StreamExt};
use support::*;
use tokio::net::TcpListener;
use tokio_util::codec::Framed;

const SMALL: u32 = 1024;
const LARGE: u32 = 1024 * 1024;

fn server_config(framing: Framing, limit: u32) -> frpc::ServerConfig {
    let mut config = config(Concurrency::PerRpc);
    config.connection.framing = framing;
    config.connection.max_content_length = limit;
    config
}

async fn client(addr: std::net::SocketAddr, framing: Framing, limit: u32) -> Client {
    let mut config = ClientConfig::default();
    config.connection.framing = framing;
    config.connection.max_content_length = limit;
    Client::connect_with(addr, config).await.unwrap()
}

#[tokio::test]
async fn an_oversize_request_gets_an_error_naming_the_limit_and_the_connection_survives() {
    for framing in [Framing::Frisbee, Framing::Legacy] {
        let server = start(server_config(framing, SMALL)).await;
        let client = client(server.addr, framing, LARGE).await;
        let err = call(&client, ECHO, &"x".repeat(4096)).await.unwrap_err();
        let status = err.status().unwrap_or_else(|| panic!("{framing:?}: {err}"));
        assert!(
            status.message().contains("exceeds the limit of 1024 bytes"),
            "{framing:?}: {status}"
        );
        assert_eq!(
            call(&client, ECHO, "next").await.unwrap().value,
            "next",
            "{framing:?}"
        );
        assert!(!client.is_closed());
    }
}

/// A peer that answers the first request with a reply of 4 KiB and echoes the rest.
async fn peer_with_one_big_reply(framing: Framing) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let codec = PacketCodec::new(framing).with_max_content_length(LARGE);
        let mut framed = Framed::new(stream, codec);
        let mut first = true;
        while let Some(Ok(packet)) = framed.next().await {
            let reply = match packet.op {
                op::PING => Packet::pong(),
                op::PONG => continue,
                // An frpc client's extension offer: ignored, as a Go server does.
                0xFFFF => continue,
                _ if first => {
                    first = false;
                    Packet::new(packet.id, packet.op, Text::new("b".repeat(4096)).to_polyglot())
                }
                _ => packet,
            };
            if framed.send(reply).await.is_err() {
                return;
            }
        }
    });
    addr
}

#[tokio::test]
async fn an_oversize_reply_fails_only_its_call() {
    for framing in [Framing::Frisbee, Framing::Legacy] {
        let addr = peer_with_one_big_reply(framing).await;
        let client = client(addr, framing, SMALL).await;
        let err = call(&client, ECHO, "give me a big one").await.unwrap_err();
        assert!(
            matches!(err, Error::TooLarge { len, max: SMALL } if len > 4096),
            "{framing:?}: {err}"
        );
        assert_eq!(
            call(&client, ECHO, "next").await.unwrap().value,
            "next",
            "{framing:?}"
        );
        assert!(!client.is_closed());
    }
}

#[tokio::test]
async fn an_oversize_stream_message_fails_only_its_stream() {
    for framing in [Framing::Frisbee, Framing::Legacy] {
        let server = start(server_config(framing, SMALL)).await;
        let client = client(server.addr, framing, LARGE).await;
        let mut chat = codegen_bidi(&client).await;
        chat.send(Text::new("ok")).await.unwrap();
        assert_eq!(chat.message().await.unwrap().unwrap().value, "ok", "{framing:?}");
        chat.send(Text::new("z".repeat(4096))).await.unwrap();
        let err = chat.message().await.unwrap_err();
        let status = err.status().unwrap_or_else(|| panic!("{framing:?}: {err}"));
        assert!(
            status.message().contains("exceeds the limit of 1024 bytes"),
            "{framing:?}: {status}"
        );
        assert_eq!(
            call(&client, ECHO, "after").await.unwrap().value,
            "after",
            "{framing:?}"
        );
    }
}

async fn codegen_bidi(client: &Client) -> frpc::BidiCall<Text, Text> {
    frpc::codegen::call_bidi::<Text, Text>(client, CHAT)
        .await
        .unwrap()
}

/// A reply that grows its request: `n` bytes for a request of a few.
#[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
pub struct Size {
    pub n: u32,
    pub text: String,
}

#[frpc::service(package = "oversize")]
pub trait Grow {
    async fn grow(&self, ctx: &frpc::Context, request: Size) -> Result<Size, frpc::Status>;
}

struct Grower;

impl Grow for Grower {
    async fn grow(&self, _: &frpc::Context, request: Size) -> Result<Size, frpc::Status> {
        Ok(Size {
            n: request.n,
            text: "x".repeat(request.n as usize),
        })
    }
}

/// Requests and replies over the limit fail with RESOURCE_EXHAUSTED, as a code between frpc
/// peers (a Go peer, which takes no codes, reads the same text): the call fails, the
/// connection goes on.
#[tokio::test]
async fn oversize_requests_and_replies_are_resource_exhausted() {
    for framing in [Framing::Frisbee, Framing::Legacy] {
        let server = frpc::Server::builder()
            .config(server_config(framing, SMALL))
            .add_service(GrowServer::new(Grower))
            .bind("127.0.0.1:0")
            .await
            .unwrap();
        let addr = server.local_addr();
        let serving = tokio::spawn(server.serve());
        let client = GrowClient::new(client(addr, framing, LARGE).await);

        let request = |n: u32, text: &str| Size { n, text: text.into() };
        let err = client.grow(request(1, &"y".repeat(4096))).await.unwrap_err();
        assert_eq!(err.code(), frpc::Code::ResourceExhausted, "{framing:?}: {err}");
        assert!(err.to_string().contains("request of"), "{framing:?}: {err}");
        let err = client.grow(request(4096, "")).await.unwrap_err();
        assert_eq!(err.code(), frpc::Code::ResourceExhausted, "{framing:?}: {err}");
        assert!(
            err.to_string().contains("response too large"),
            "{framing:?}: {err}"
        );
        assert_eq!(
            client.grow(request(3, "")).await.unwrap().text,
            "xxx",
            "{framing:?}"
        );
        serving.abort();
    }
}

/// A stream message over the sender's own limit fails its `send` and leaves the stream usable:
/// the message, never sent, takes none of the flow-control credit (it would have taken the
/// whole byte window, which the peer would never have given back, and every later send would
/// have waited forever).
#[tokio::test]
async fn an_oversize_stream_send_leaves_the_stream_usable() {
    for framing in [Framing::Frisbee, Framing::Legacy] {
        let server = start(server_config(framing, LARGE)).await;
        let client = client(server.addr, framing, LARGE).await;
        let mut chat = codegen_bidi(&client).await;
        chat.send(Text::new("ok")).await.unwrap();
        assert_eq!(chat.message().await.unwrap().unwrap().value, "ok", "{framing:?}");
        let err = chat.send(Text::new("z".repeat(2 << 20))).await.unwrap_err();
        assert!(matches!(err, Error::TooLarge { .. }), "{framing:?}: {err}");
        for value in ["after", "and again"] {
            let send = tokio::time::timeout(std::time::Duration::from_secs(10), chat.send(Text::new(value)));
            send.await.expect("the send goes on").unwrap();
            assert_eq!(chat.message().await.unwrap().unwrap().value, value, "{framing:?}");
        }
    }
}

/// A limit smaller than the server's own error replies still gets every call an answer: an
/// error's text is cut to fit (its code kept for a client that takes codes), and where not
/// even an error without text fits, the connection closes. The calls waited for ever
/// (session 33's config probe: limits of 16 to 48 bytes).
#[tokio::test]
async fn error_replies_are_cut_to_fit_a_small_limit() {
    const LIMIT: u32 = 40;
    for extensions in [true, false] {
        let server = start(server_config(Framing::Frisbee, LIMIT)).await;
        let config = ClientConfig::default().extensions(extensions);
        let client = Client::connect_with(server.addr, config).await.unwrap();
        let timed = client.with_timeout(std::time::Duration::from_secs(10));
        let err = call(&timed, ECHO, &"x".repeat(300)).await.unwrap_err();
        let status = err
            .status()
            .unwrap_or_else(|| panic!("extensions {extensions}: {err}"));
        assert!(status.message().starts_with("request of 3"), "{status}");
        let full = "request of 316 bytes exceeds the limit of 40 bytes";
        assert!(status.message().len() < full.len(), "not cut: {status}");
        if extensions {
            assert_eq!(status.code(), frpc::Code::ResourceExhausted, "{status}");
        }
        assert_eq!(call(&timed, ECHO, "next").await.unwrap().value, "next");
    }
    // Not even an error without text fits one byte: the connection closes.
    let server = start(server_config(Framing::Frisbee, 1)).await;
    let config = ClientConfig::default().extensions(false);
    let client = Client::connect_with(server.addr, config).await.unwrap();
    let timed = client.with_timeout(std::time::Duration::from_secs(10));
    let err = call(&timed, ECHO, "hi").await.unwrap_err();
    assert!(
        matches!(err, Error::ConnectionClosed { .. }),
        "a reply that cannot fit: {err:?}"
    );
}
