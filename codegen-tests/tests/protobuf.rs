//! The protobuf extension's bytes (docs/extensions.md §10), against raw peers over real TCP:
//! what an frpc client writes to a server that accepts the bit, what an frpc server writes to a
//! client that offered it, byte for byte as the document's examples show, and that the server
//! answers each request in the encoding it came in.

use std::time::Duration;

use frpc::{Context, Status, StreamSender, Streaming};
use frpc_codegen_tests::capture::{
    Data, EchoService, EchoServiceClient, EchoServiceServer, Request, Response, SearchResponse,
    StockPricesWrapper, request::Corpus,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

struct Echo;

impl EchoService for Echo {
    async fn echo(&self, _: &Context, request: Request) -> Result<Response, Status> {
        Ok(reply(&request.message))
    }

    async fn echo_stream(
        &self,
        _: &Context,
        mut inbound: Streaming<Request>,
        _: StreamSender<Response>,
    ) -> Result<(), Status> {
        while inbound.message().await?.is_some() {}
        Err(Status::unimplemented("not here"))
    }

    async fn testy(&self, _: &Context, _: SearchResponse) -> Result<StockPricesWrapper, Status> {
        Err(Status::unimplemented("not here"))
    }

    async fn search(
        &self,
        _: &Context,
        request: SearchResponse,
        outbound: StreamSender<Response>,
    ) -> Result<(), Status> {
        for message in request.snippets {
            outbound.send(Response { message, test: None }).await?;
        }
        Ok(())
    }

    async fn upload(&self, _: &Context, mut inbound: Streaming<Data>) -> Result<Response, Status> {
        while inbound.message().await?.is_some() {}
        Err(Status::unimplemented("not here"))
    }
}

/// The example's reply.
fn reply(message: &str) -> Response {
    Response {
        message: message.into(),
        test: Some(Data {
            message: "d".into(),
            checker: 1,
        }),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn unhex(text: &str) -> Vec<u8> {
    text.split_whitespace()
        .map(|b| u8::from_str_radix(b, 16).unwrap())
        .collect()
}

/// The examples of docs/extensions.md §10, each checked to be in the document.
struct Doc {
    /// What an frpc client offers (every extension).
    offer_all: String,
    /// The first five extensions: what the raw peers offer and accept.
    offer: String,
    accept: String,
    request: String,
    reply: String,
    open: String,
    stream_request: String,
    stream_reply: String,
    eof: String,
}

fn doc() -> Doc {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/extensions.md")).unwrap();
    let in_doc = |fragments: &[&str]| {
        for fragment in fragments {
            assert!(doc.contains(fragment), "docs/extensions.md lacks {fragment:?}");
        }
        fragments.join(" ")
    };
    Doc {
        offer_all: in_doc(&["00 0f 00 01 ff ff 00 00 00 05 01 00 00 07 ff"]),
        offer: in_doc(&["00 0f 00 01 ff ff 00 00 00 05 01 00 00 00 1f"]),
        accept: in_doc(&["00 0f 00 02 ff ff 00 00 00 05 01 00 00 00 1f"]),
        request: in_doc(&["00 0f 00 01 00 0a 00 00 00 07", "fd", "0a 02 68 69", "20 01"]),
        reply: in_doc(&[
            "00 0f 00 01 00 0a 00 00 00 0c",
            "fd",
            "0a 02 68 69",
            "12 05 0a 01 64 10 01",
        ]),
        open: in_doc(&["00 0f 00 01 00 02 00 00 00 03 09 0d fd"]),
        stream_request: in_doc(&["00 0f 00 01 00 02 00 00 00 04 fd 1a 01 61"]),
        stream_reply: in_doc(&["00 0f 00 01 00 02 00 00 00 04 fd 0a 01 61"]),
        eof: in_doc(&["00 0f 00 01 00 02 00 00 00 07 06 05 0a 03 45 4f 46"]),
    }
}

/// The next packet (Frisbee v0.11 framing) as hex, PINGs and PONGs skipped.
async fn next(stream: &mut TcpStream) -> String {
    loop {
        let mut header = [0u8; 10];
        let read = tokio::time::timeout(Duration::from_secs(5), stream.read_exact(&mut header));
        read.await.expect("a packet within 5 s").unwrap();
        let len = u32::from_be_bytes(header[6..10].try_into().unwrap()) as usize;
        let mut content = vec![0u8; len];
        stream.read_exact(&mut content).await.unwrap();
        let op = u16::from_be_bytes([header[4], header[5]]);
        if op > frpc::wire::op::PONG {
            return format!("{} {}", hex(&header), hex(&content))
                .trim_end()
                .to_string();
        }
    }
}

/// A raw connection to an frpc server of [`Echo`] that has offered the first five extensions
/// (protobuf among them) and read the server's ACCEPT.
async fn offered_connection(doc: &Doc) -> TcpStream {
    let bound = frpc::Server::builder()
        .add_service(EchoServiceServer::new(Echo))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(&unhex(&doc.offer)).await.unwrap();
    assert_eq!(next(&mut stream).await, doc.accept);
    stream
}

/// An frpc client against a raw server that accepts protobuf: the request, the stream's
/// messages and the decoded replies are the document's.
#[tokio::test]
async fn the_client_writes_the_documented_bytes() {
    let doc = doc();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let peer = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        assert_eq!(next(&mut stream).await, doc.offer_all);
        stream.write_all(&unhex(&doc.accept)).await.unwrap();
        assert_eq!(next(&mut stream).await, doc.request);
        stream.write_all(&unhex(&doc.reply)).await.unwrap();
        assert_eq!(next(&mut stream).await, doc.open);
        assert_eq!(next(&mut stream).await, doc.stream_request);
        stream.write_all(&unhex(&doc.stream_reply)).await.unwrap();
        stream.write_all(&unhex(&doc.eof)).await.unwrap();
        stream // kept open until the client is done
    });
    let raw = frpc::Client::connect(addr).await.unwrap();
    assert!(raw.negotiated().await);
    assert!(raw.protobuf_accepted());
    let client = EchoServiceClient::new(raw);
    let request = Request {
        message: "hi".into(),
        corpus: Corpus::Web as i32,
    };
    assert_eq!(client.echo(request).await.unwrap(), reply("hi"));
    let search = SearchResponse {
        snippets: vec!["a".into()],
        ..Default::default()
    };
    let mut results = client.search(search).await.unwrap();
    let first = results.message().await.unwrap().unwrap();
    assert_eq!(
        first,
        Response {
            message: "a".into(),
            test: None
        }
    );
    assert!(results.message().await.unwrap().is_none());
    drop(results);
    drop(peer.await.unwrap());
}

/// A raw client that offered protobuf against an frpc server: protobuf requests get the
/// document's protobuf replies, a polyglot request on the same connection a polyglot reply,
/// a stream opened with the marker carries protobuf (its `EOF` polyglot), one opened without it
/// polyglot; a protobuf request that does not decode fails that call only.
#[tokio::test]
async fn the_server_writes_the_documented_bytes() {
    let doc = doc();
    let mut stream = offered_connection(&doc).await;
    stream.write_all(&unhex(&doc.request)).await.unwrap();
    assert_eq!(next(&mut stream).await, doc.reply);

    // The same request in polyglot (id 2): answered in polyglot.
    let polyglot = frpc::codegen::Message::to_polyglot(&Request {
        message: "hi".into(),
        corpus: Corpus::Web as i32,
    });
    let mut packet = unhex("00 0f 00 02 00 0a");
    packet.extend_from_slice(&(polyglot.len() as u32).to_be_bytes());
    packet.extend_from_slice(&polyglot);
    stream.write_all(&packet).await.unwrap();
    let answer = frpc::codegen::Message::to_polyglot(&reply("hi"));
    let header = format!("00 0f 00 02 00 0a {}", hex(&(answer.len() as u32).to_be_bytes()));
    assert_eq!(next(&mut stream).await, format!("{header} {}", hex(&answer)));
    assert!(hex(&answer).starts_with("08 00"));

    // A stream.
    stream.write_all(&unhex(&doc.open)).await.unwrap();
    stream.write_all(&unhex(&doc.stream_request)).await.unwrap();
    assert_eq!(next(&mut stream).await, doc.stream_reply);
    assert_eq!(next(&mut stream).await, doc.eof);

    // A stream opened without the marker (a client whose types read only polyglot): polyglot
    // both ways on the same connection.
    let polyglot_request = frpc::codegen::Message::to_polyglot(&SearchResponse {
        snippets: vec!["a".into()],
        ..Default::default()
    });
    let mut packets = unhex("00 0f 00 03 00 02 00 00 00 02 09 0d 00 0f 00 03 00 02");
    packets.extend_from_slice(&(polyglot_request.len() as u32).to_be_bytes());
    packets.extend_from_slice(&polyglot_request);
    stream.write_all(&packets).await.unwrap();
    let polyglot_reply = frpc::codegen::Message::to_polyglot(&Response {
        message: "a".into(),
        test: None,
    });
    let header = format!(
        "00 0f 00 03 00 02 {}",
        hex(&(polyglot_reply.len() as u32).to_be_bytes())
    );
    assert_eq!(
        next(&mut stream).await,
        format!("{header} {}", hex(&polyglot_reply))
    );
    assert_eq!(
        next(&mut stream).await,
        doc.eof.replacen("00 0f 00 01", "00 0f 00 03", 1)
    );

    // Garbage behind the marker (a length running past the end): an error reply, id 3.
    stream
        .write_all(&unhex("00 0f 00 03 00 0a 00 00 00 03 fd 0a 09"))
        .await
        .unwrap();
    let error = next(&mut stream).await;
    assert!(error.starts_with("00 0f 00 03 00 0a"), "{error}");
    // An INVALID_ARGUMENT header (FE 03 … 03 00), then the polyglot error text.
    assert!(error[30..].starts_with("fe 03 00 00 00 01 03 00 06"), "{error}");
    // The connection still serves.
    let mut again = unhex(&doc.request);
    again[3] = 4; // id 4
    stream.write_all(&again).await.unwrap();
    let mut expected = unhex(&doc.reply);
    expected[3] = 4;
    assert_eq!(next(&mut stream).await, hex(&expected));
}

/// A protobuf message that cannot be decoded, on each kind of stream, is the client's bad
/// argument: INVALID_ARGUMENT (as for a unary request), then `EOF`; the connection still serves.
#[tokio::test]
async fn undecodable_stream_messages_are_invalid_argument() {
    let doc = doc();
    let mut stream = offered_connection(&doc).await;
    // Search (server streaming, its request), EchoStream (bidi) and Upload (client streaming),
    // each on its own stream id; the message's field 1 claims 9 bytes that are not there.
    for (id, method) in [(5u8, "0d"), (6, "0b"), (7, "0e")] {
        let open = format!("00 0f 00 {id:02x} 00 02 00 00 00 03 09 {method} fd");
        let garbage = format!("00 0f 00 {id:02x} 00 02 00 00 00 03 fd 0a 09");
        stream
            .write_all(&unhex(&format!("{open} {garbage}")))
            .await
            .unwrap();
        let error = next(&mut stream).await;
        let packet = format!("00 0f 00 {id:02x} 00 02");
        assert!(error.starts_with(&packet), "method {method}: {error}");
        // The STATUS header with INVALID_ARGUMENT (3), then the polyglot error.
        assert!(
            error[30..].starts_with("fe 03 00 00 00 01 03 00 06"),
            "method {method}: {error}"
        );
        assert_eq!(
            next(&mut stream).await,
            doc.eof.replacen("00 0f 00 01", &format!("00 0f 00 {id:02x}"), 1),
            "method {method}"
        );
    }
    // The connection still serves.
    stream.write_all(&unhex(&doc.request)).await.unwrap();
    assert_eq!(next(&mut stream).await, doc.reply);
}
