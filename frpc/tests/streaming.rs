//! Streaming RPCs between the frpc client and server.

mod support;

use std::time::Duration;

use frpc::codegen;
use frpc::{Client, Error};
use support::*;

#[tokio::test]
async fn server_streaming_delivers_in_order_then_ends() {
    let server = start(Default::default()).await;
    let client = Client::connect(server.addr).await.unwrap();
    let mut stream = codegen::call_server_streaming::<Text, Text>(&client, COUNT, &Text::new("5"))
        .await
        .unwrap();
    let mut got = Vec::new();
    while let Some(msg) = stream.message().await.unwrap() {
        got.push(msg.value);
    }
    assert_eq!(got, ["0", "1", "2", "3", "4"]);
    drop(stream);
    assert_eq!(client.open_streams(), 0, "the stream table drained");
}

#[tokio::test]
async fn server_streaming_error_reaches_the_client_as_an_error() {
    let server = start(Default::default()).await;
    let client = Client::connect(server.addr).await.unwrap();
    let mut stream = codegen::call_server_streaming::<Text, Text>(&client, COUNT, &Text::new("3"))
        .await
        .unwrap();
    let mut got = Vec::new();
    let err = loop {
        match stream.message().await {
            Ok(Some(msg)) => got.push(msg.value),
            Ok(None) => panic!("ended without the error"),
            Err(err) => break err,
        }
    };
    assert_eq!(got, ["0", "1", "2"]);
    assert_eq!(err.status().map(|s| s.message()), Some("three is too many"));
    assert!(stream.message().await.unwrap().is_none(), "ended after the error");
}

#[tokio::test]
async fn client_streaming_collects_every_message() {
    let server = start(Default::default()).await;
    let client = Client::connect(server.addr).await.unwrap();
    let mut call = codegen::call_client_streaming::<Text, Text>(&client, JOIN)
        .await
        .unwrap();
    for part in ["a", "b", "c"] {
        call.send(Text::new(part)).await.unwrap();
    }
    assert_eq!(call.close_and_recv().await.unwrap().value, "a,b,c");
    assert_eq!(client.open_streams(), 0);
}

#[tokio::test]
async fn bidi_echoes_and_ends_cleanly() {
    let server = start(Default::default()).await;
    let client = Client::connect(server.addr).await.unwrap();
    let mut call = codegen::call_bidi::<Text, Text>(&client, CHAT).await.unwrap();
    for i in 0..100 {
        call.send(Text::new(i.to_string())).await.unwrap();
        assert_eq!(call.message().await.unwrap().unwrap().value, i.to_string());
    }
    call.close_send().await.unwrap();
    assert!(call.message().await.unwrap().is_none());
}

#[tokio::test]
async fn bidi_handler_error_reaches_the_client() {
    let server = start(Default::default()).await;
    let client = Client::connect(server.addr).await.unwrap();
    let mut call = codegen::call_bidi::<Text, Text>(&client, CHAT).await.unwrap();
    call.send(Text::new("fail")).await.unwrap();
    let err = call.message().await.unwrap_err();
    assert_eq!(err.status().map(|s| s.message()), Some("chat failed"));
}

#[tokio::test]
async fn dropping_a_bidi_handle_ends_the_server_handler() {
    let server = start(Default::default()).await;
    let client = Client::connect(server.addr).await.unwrap();
    let mut call = codegen::call_bidi::<Text, Text>(&client, CHAT).await.unwrap();
    call.send(Text::new("x")).await.unwrap();
    assert_eq!(call.message().await.unwrap().unwrap().value, "x");
    drop(call);
    assert_eq!(client.open_streams(), 0);
    // Many abandoned streams leave nothing behind on either side.
    for _ in 0..200 {
        let mut call = codegen::call_bidi::<Text, Text>(&client, CHAT).await.unwrap();
        call.send(Text::new("y")).await.unwrap();
    }
    assert_eq!(client.open_streams(), 0);
    assert_eq!(call_unary_echo(&client).await, "ok");
}

/// Without extensions (as with a Go peer) the refusal is the stream's first item; between frpc
/// peers (open acknowledgement) the call itself fails, with `Unimplemented`.
#[tokio::test]
async fn unknown_streaming_method_is_refused_with_an_error() {
    let server = start(Default::default()).await;
    let plain = frpc::ClientConfig::default().extensions(false);
    let client = Client::connect_with(server.addr, plain).await.unwrap();
    let mut stream = codegen::call_server_streaming::<Text, Text>(&client, 99, &Text::new(""))
        .await
        .unwrap();
    let err = stream.message().await.unwrap_err();
    assert!(
        err.status()
            .unwrap()
            .message()
            .contains("unknown streaming method 99"),
        "{err}"
    );
    assert_eq!(err.code(), frpc::Code::Unknown);
    let client = Client::connect(server.addr).await.unwrap();
    let err = codegen::call_server_streaming::<Text, Text>(&client, 99, &Text::new(""))
        .await
        .unwrap_err();
    assert_eq!(err.code(), frpc::Code::Unimplemented, "{err}");
    assert!(err.to_string().contains("unknown streaming method 99"), "{err}");
}

#[tokio::test]
async fn streams_fail_when_the_connection_dies() {
    let server = start(Default::default()).await;
    let client = Client::connect(server.addr).await.unwrap();
    let mut call = codegen::call_bidi::<Text, Text>(&client, CHAT).await.unwrap();
    client.close();
    let result = tokio::time::timeout(Duration::from_secs(2), call.message())
        .await
        .expect("no hang");
    assert!(
        matches!(result, Err(Error::ConnectionClosed { .. })),
        "{result:?}"
    );
}

async fn call_unary_echo(client: &Client) -> String {
    call(client, ECHO, "ok").await.unwrap().value
}

/// Without flow control (as with a Go server), a consumer that falls `stream_buffer` messages
/// behind holds its connection's reading, as Go's reader blocks, and loses nothing: every one
/// of 10,000 messages arrives, in order, once it reads (its stream failed with an overflow
/// until session 30). The connection goes on afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_stream_consumer_holds_the_connection_and_loses_nothing() {
    let server = start(Default::default()).await;
    let mut config = frpc::ClientConfig::default();
    config.connection.stream_buffer = 16;
    config.extensions = false;
    let client = Client::connect_with(server.addr, config).await.unwrap();
    let mut slow = codegen::call_server_streaming::<Text, Text>(&client, COUNT, &Text::new("10000"))
        .await
        .unwrap();
    // Unread, the stream's buffer (16) fills and the rest waits in TCP's window; the server
    // is held back, nothing fails.
    let quiet = tokio::time::timeout(Duration::from_millis(300), std::future::pending::<()>()).await;
    assert!(quiet.is_err());
    assert_eq!(client.open_streams(), 1, "the slow stream is still open");
    for i in 0..10_000 {
        let got = tokio::time::timeout(Duration::from_secs(10), slow.message())
            .await
            .expect("every message comes")
            .unwrap()
            .unwrap_or_else(|| panic!("the stream ended after {i} messages"));
        assert_eq!(got.value, i.to_string());
    }
    assert!(slow.message().await.unwrap().is_none());
    assert_eq!(call(&client, ECHO, "after").await.unwrap().value, "after");
}

/// A Go client uploads thousands of small messages in one burst (its `Send`s only queue them):
/// the server's reader routes a whole read buffer's packets before the handler runs, so a
/// buffer of `stream_buffer` (1,024) filled however fast the handler read, and the upload
/// failed with "overflowed the peer's buffer" where a Go server took it (session 30's interop
/// probe). Now the reader waits for the handler, and every message arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_go_clients_burst_of_small_messages_is_all_read() {
    use futures_util::SinkExt;
    let server = start(Default::default()).await;
    let mut peer = RawPeer::connect(server.addr).await;
    let mut burst = vec![frpc::wire::Packet::new(
        1,
        2,
        bytes::Bytes::from_static(&[0x09, JOIN as u8]),
    )];
    burst.extend((0..5_000).map(|i| frpc::wire::Packet::new(1, 2, text_bytes(&i.to_string()))));
    burst.push(frpc::wire::Packet::new(1, 2, bytes::Bytes::from_static(EOF)));
    let mut packets = futures_util::stream::iter(burst.into_iter().map(Ok));
    peer.framed.send_all(&mut packets).await.unwrap();
    let reply = peer.next().await;
    let expected = (0..5_000).map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    assert_eq!((reply.id, reply.op), (1, 2));
    assert_eq!(&reply.content[..], &text_bytes(&expected)[..]);
    let end = peer.next().await;
    assert_eq!((end.id, &end.content[..]), (1, EOF));
}

/// A peer speaking raw packets, to send what a Go client sends after a stream has ended.
struct RawPeer {
    framed: tokio_util::codec::Framed<tokio::net::TcpStream, frpc::wire::PacketCodec>,
}

impl RawPeer {
    /// The first connection `listener` accepts, in the Frisbee framing.
    async fn accept(listener: &tokio::net::TcpListener) -> RawPeer {
        let (stream, _) = listener.accept().await.unwrap();
        let codec = frpc::wire::PacketCodec::new(frpc::Framing::Frisbee);
        RawPeer {
            framed: tokio_util::codec::Framed::new(stream, codec),
        }
    }

    async fn connect(addr: std::net::SocketAddr) -> RawPeer {
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let codec = frpc::wire::PacketCodec::new(frpc::Framing::Frisbee);
        RawPeer {
            framed: tokio_util::codec::Framed::new(stream, codec),
        }
    }

    async fn send(&mut self, id: u16, op: u16, content: bytes::Bytes) {
        use futures_util::SinkExt;
        self.framed
            .send(frpc::wire::Packet::new(id, op, content))
            .await
            .unwrap();
    }

    /// The next packet that is not a heartbeat, nor an frpc client's extension offer (op
    /// 0xFFFF), which this peer ignores as a Go server does. PINGs get their PONG, as from
    /// any Frisbee peer (the frpc client's first stream waits for the answer to its offer,
    /// which a PONG gives).
    async fn next(&mut self) -> frpc::wire::Packet {
        use futures_util::{SinkExt, StreamExt};
        loop {
            let packet = tokio::time::timeout(Duration::from_secs(5), self.framed.next())
                .await
                .expect("a packet within 5 s")
                .expect("the connection stays open")
                .unwrap();
            if packet.op == frpc::wire::op::PING {
                self.framed.send(frpc::wire::Packet::pong()).await.unwrap();
            }
            if packet.op > frpc::wire::op::PONG && packet.op != 0xFFFF {
                return packet;
            }
        }
    }

    /// [`RawPeer::next`], past the Frisbee closes (op 2 without content) of streams the
    /// client ended.
    async fn next_data(&mut self) -> frpc::wire::Packet {
        loop {
            let packet = self.next().await;
            if !(packet.op == frpc::wire::op::STREAM && packet.content.is_empty()) {
                return packet;
            }
        }
    }
}

/// A stream toward a peer without cancellation (Go's) ends with a Frisbee close, op 2 without
/// content, once its handles are gone: Go keeps a stream in its table until it is closed, so
/// 65,536 streams later the id's next open went to the old stream and hung (session 33's Go
/// interop probe; `interop` proves it against frisbee-go).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_toward_a_plain_peer_ends_with_a_frisbee_close() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let peer = tokio::spawn(async move {
        let mut peer = RawPeer::accept(&listener).await;
        let (open, request) = (peer.next().await, peer.next().await);
        assert_eq!((open.op, request.id), (2, open.id));
        peer.send(open.id, 2, text_bytes("only")).await;
        peer.send(open.id, 2, bytes::Bytes::from_static(EOF)).await;
        (open.id, peer.next().await)
    });
    let client = Client::connect(addr).await.unwrap();
    let mut stream = codegen::call_server_streaming::<Text, Text>(&client, COUNT, &Text::new("1"))
        .await
        .unwrap();
    assert_eq!(stream.message().await.unwrap().unwrap().value, "only");
    assert!(stream.message().await.unwrap().is_none());
    drop(stream);
    let (id, close) = peer.await.unwrap();
    assert_eq!((close.id, close.op, close.content.len()), (id, 2, 0), "{close:?}");
}

fn text_bytes(value: &str) -> bytes::Bytes {
    use frpc::codegen::Message;
    Text::new(value).to_polyglot()
}

const EOF: &[u8] = b"\x06\x05\x0a\x03EOF";

/// A handler that ends its stream before the client is done sending (client streaming replying
/// early, server streaming, bidi failing): the client's late messages, `EOF` and close are dropped,
/// nothing (no stream close) is sent back, the connection stays usable and no stream is left over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_packets_of_a_finished_stream_are_dropped() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = frpc::Server::builder()
        .add_service(TestService::default())
        .build()
        .unwrap();
    let serving = server.clone();
    tokio::spawn(async move { serving.serve_listener(listener).await });
    let mut peer = RawPeer::connect(addr).await;
    // (method, first message, what the server sends before its EOF)
    let cases: [(u16, &str, &[u8]); 3] = [
        (FIRST, "early", &text_bytes("early")),
        (COUNT, "1", &text_bytes("0")),
        (CHAT, "fail", b"\x06\x05\x0a\x0bchat failed"),
    ];
    for (round, (method, first, reply)) in cases.into_iter().enumerate() {
        let id = round as u16 + 1;
        let open = bytes::Bytes::from(vec![0x09, method as u8]);
        peer.send(id, 2, open).await;
        peer.send(id, 2, text_bytes(first)).await;
        let got = peer.next().await;
        assert_eq!(
            (got.id, got.op, &got.content[..]),
            (id, 2, reply),
            "method {method}"
        );
        let got = peer.next().await;
        assert_eq!(
            (got.id, got.op, &got.content[..]),
            (id, 2, EOF),
            "method {method}"
        );
        // Late: two messages, the EOF, a Frisbee close.
        peer.send(id, 2, text_bytes("late 1")).await;
        peer.send(id, 2, text_bytes("late 2")).await;
        peer.send(id, 2, bytes::Bytes::from_static(EOF)).await;
        peer.send(id, 2, bytes::Bytes::new()).await;
        // The server handles packets in order: the echo's reply is the next packet only if the
        // late ones got no answer (before the fix, an empty STREAM close came first).
        peer.send(7, ECHO, text_bytes("after")).await;
        let got = peer.next().await;
        assert_eq!((got.id, got.op), (7, ECHO), "method {method}: {got:?}");
        assert_eq!(&got.content[..], &text_bytes("after")[..]);
    }
    assert_eq!(server.open_streams(), 0, "no stream is left in the table");
}

/// The client side of the same rule: a server that keeps sending on a stream the client is done
/// with (a message, `EOF`, a close) gets no answer (the client's close went already), and the
/// client's table and calls are fine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_packets_of_a_finished_stream_are_dropped_by_the_client() {
    use futures_util::{SinkExt, StreamExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let mut peer = RawPeer::accept(&listener).await;
        let open = peer.next().await;
        let first = peer.next().await;
        assert_eq!((open.op, &first.content[..]), (2, &text_bytes("a")[..]));
        let id = open.id;
        for content in [text_bytes("reply"), bytes::Bytes::from_static(EOF)] {
            peer.send(id, 2, content).await;
        }
        // Everything the client sends from now on, until its unary call.
        let mut seen = Vec::new();
        loop {
            let packet = peer.next().await;
            if packet.op == ECHO {
                // Late packets first, then the reply: the client must drop the former.
                for content in [
                    text_bytes("late"),
                    bytes::Bytes::from_static(EOF),
                    bytes::Bytes::new(),
                ] {
                    peer.send(id, 2, content).await;
                }
                peer.framed.send(packet).await.unwrap();
                break;
            }
            seen.push(packet);
        }
        // The client answers nothing to the late packets: the next thing it sends is its
        // second call (or a heartbeat, skipped by `next`).
        let next = peer.next().await;
        peer.framed.send(next.clone()).await.unwrap();
        let _ = peer.framed.next().await;
        (seen, next)
    });
    let client = Client::connect(addr).await.unwrap();
    let mut upload = codegen::call_client_streaming::<Text, Text>(&client, JOIN)
        .await
        .unwrap();
    upload.send(Text::new("a")).await.unwrap();
    assert_eq!(upload.close_and_recv().await.unwrap().value, "reply");
    assert_eq!(call(&client, ECHO, "x").await.unwrap().value, "x");
    assert_eq!(call(&client, ECHO, "y").await.unwrap().value, "y");
    assert_eq!(client.open_streams(), 0);
    drop(client);
    let (seen, next) = server.await.unwrap();
    // Before its first call the client sent only its EOF on the stream, and its close once
    // done with it (to this peer, which takes no CANCEL).
    let seen: Vec<_> = seen.iter().map(|p| (p.op, p.content.to_vec())).collect();
    assert_eq!(seen, vec![(2, EOF.to_vec()), (2, Vec::new())]);
    assert_eq!((next.op, &next.content[..]), (ECHO, &text_bytes("y")[..]));
}

/// A request sent after its stream was closed fails (it is not silently dropped): bidi after
/// `close_send`, a split client stream after `close`. The server saw only what came before.
#[tokio::test]
async fn a_request_after_closing_the_request_stream_fails() {
    let server = start(config(frpc::Concurrency::PerRpc)).await;
    let client = Client::connect(server.addr).await.unwrap();

    let mut chat = codegen::call_bidi::<Text, Text>(&client, CHAT).await.unwrap();
    chat.send(Text::new("a")).await.unwrap();
    chat.close_send().await.unwrap();
    let err = chat.send(Text::new("b")).await.unwrap_err();
    assert!(matches!(err, Error::RequestStreamClosed), "{err}");
    assert_eq!(err.code(), frpc::Code::FailedPrecondition);
    let mut echoed = Vec::new();
    while let Some(message) = chat.message().await.unwrap() {
        echoed.push(message.value);
    }
    assert_eq!(echoed, ["a"]);

    let call = codegen::call_client_streaming::<Text, Text>(&client, JOIN);
    let (mut requests, response) = call.await.unwrap().split();
    requests.send(Text::new("x")).await.unwrap();
    requests.close().await.unwrap();
    let err = requests.send(Text::new("y")).await.unwrap_err();
    assert!(matches!(err, Error::RequestStreamClosed), "{err}");
    assert_eq!(response.recv().await.unwrap().value, "x");
}

/// A stream the client gives up before the server ended it keeps its id out of use while the
/// server's late messages may come: 65,535 streams later the next stream skips it, and a late
/// message under the old id reaches no one. Before, the new stream took the id and read the
/// old stream's message as its own (as unary calls did, session 30's fault probe).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_id_of_a_stream_given_up_is_not_reused_while_its_messages_may_come() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // Holds stream 1 unanswered, ends every other stream at once; once the one after the wrap
    // opens, sends a late message on stream 1 and then that stream's own message and end.
    let peer = tokio::spawn(async move {
        let mut peer = RawPeer::accept(&listener).await;
        let held = peer.next_data().await;
        assert_eq!((held.id, peer.next_data().await.id), (1, 1));
        let mut ids = Vec::new();
        loop {
            let open = peer.next_data().await;
            let request = peer.next_data().await;
            assert_eq!(open.id, request.id);
            if ids.len() == 65_535 {
                peer.send(1, 2, text_bytes("late")).await;
                peer.send(open.id, 2, text_bytes("mine")).await;
                peer.send(open.id, 2, bytes::Bytes::from_static(EOF)).await;
                return (ids, open.id);
            }
            ids.push(open.id);
            peer.send(open.id, 2, bytes::Bytes::from_static(EOF)).await;
        }
    });
    let mut config = frpc::ClientConfig::default();
    config.connection.ping_interval = Duration::from_secs(3600);
    config.extensions = false;
    let client = Client::connect_with(addr, config).await.unwrap();
    let given_up = codegen::call_server_streaming::<Text, Text>(&client, COUNT, &Text::new("held"))
        .await
        .unwrap();
    drop(given_up);
    for i in 0..65_535u32 {
        let mut stream = codegen::call_server_streaming::<Text, Text>(&client, COUNT, &Text::new("x"))
            .await
            .unwrap();
        assert!(stream.message().await.unwrap().is_none(), "stream {i}");
    }
    let mut last = codegen::call_server_streaming::<Text, Text>(&client, COUNT, &Text::new("last"))
        .await
        .unwrap();
    let mut got = Vec::new();
    while let Some(message) = last.message().await.unwrap() {
        got.push(message.value);
    }
    assert_eq!(got, ["mine"], "only the stream's own message");
    let (ids, last_id) = peer.await.unwrap();
    let wrap = ids.iter().position(|&id| id == 65535).unwrap();
    assert_eq!(&ids[wrap..], &[65535, 0], "the wrap");
    assert_eq!(last_id, 2, "id 1 skipped: its stream was given up");
}

/// A stream's error whose text is `EOF` (a Go error passed on) reaches the client as that
/// error, with its code, where the stream has codes: it read as a clean end, and the error was
/// lost. An error that says OK reaches it as UNKNOWN (it came as an error with code OK).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_that_read_like_the_end_or_like_success_stay_errors() {
    let server = start(Default::default()).await;
    let client = Client::connect(server.addr).await.unwrap();
    assert!(client.negotiated().await);
    let collect = |value: &'static str| {
        let client = client.clone();
        async move {
            // A handler that fails before its first message fails the opening.
            let opened =
                codegen::call_server_streaming::<Text, Text>(&client, COUNT, &Text::new(value)).await;
            let mut stream = match opened {
                Ok(stream) => stream,
                Err(err) => return (Vec::new(), Some(err)),
            };
            let mut got = Vec::new();
            loop {
                match stream.message().await {
                    Ok(Some(message)) => got.push(message.value),
                    Ok(None) => return (got, None),
                    Err(err) => return (got, Some(err)),
                }
            }
        }
    };
    let (got, err) = collect("eof").await;
    assert_eq!(got, ["0"]);
    let err = err.expect("the error, not the end");
    assert_eq!(
        (err.code(), err.status().map(|s| s.message())),
        (frpc::Code::NotFound, Some("EOF"))
    );
    let (_, err) = collect("unknown eof").await;
    let err = err.expect("an UNKNOWN error with text EOF is an error too");
    assert_eq!(err.code(), frpc::Code::Unknown);
    let (_, err) = collect("ok").await;
    let err = err.expect("an error");
    assert_eq!(
        (err.code(), err.status().map(|s| s.message())),
        (frpc::Code::Unknown, Some("m"))
    );
}
