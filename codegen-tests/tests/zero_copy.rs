//! `bytes` fields generated with `bytes(["."])` are `bytes::Bytes` slices of the frame the
//! connection read, on the server and on the client: no copy between the socket and the
//! handler. The codec splits each frame's content off the connection's read buffer, and the
//! runtime decodes it with `Decoder::from_bytes`, which slices `bytes` fields out of it.
//!
//! Pointers are compared while the slices are alive (so their memory cannot be reused): two
//! fields of one message lie exactly as far apart as the encoding puts them, and so do fields
//! of two frames that arrived in one read, with the second frame's header between them.

use frpc::codegen::{Bytes, Message, encode};
use frpc::wire::{Framing, Header};
use frpc::{Concurrency, Context, Status};
use frpc_codegen_tests::bytes::blob::{Blobs, BlobsClient, BlobsServer, Pair};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// Echoes every request and hands its fields to the test.
struct Echo(mpsc::UnboundedSender<Pair>);

impl Blobs for Echo {
    async fn echo(&self, _: &Context, request: Pair) -> Result<Pair, Status> {
        let _ = self.0.send(request.clone());
        Ok(request)
    }
}

/// Where `part` starts in memory.
fn addr(part: &Bytes) -> usize {
    part.as_ptr() as usize
}

/// The bytes an encoded `bytes` field of `len` bytes puts before its content: in polyglot, or
/// in protobuf (the field's tag, 1 byte here, and its varint length).
fn prefix(len: usize, protobuf: bool) -> usize {
    match protobuf {
        false => encode::bytes_len(len) - len,
        true => 1 + frpc::codegen::prost::encoding::encoded_len_varint(len as u64),
    }
}

/// `tail` starts right where `head` ends plus the prefix of the encoded `tail` field: both are
/// slices of one buffer holding the encoded message.
fn assert_adjacent(pair: &Pair, side: &str) {
    assert_adjacent_in(pair, side, false);
}

fn assert_adjacent_in(pair: &Pair, side: &str, protobuf: bool) {
    assert_eq!(
        addr(&pair.tail),
        addr(&pair.head) + pair.head.len() + prefix(pair.tail.len(), protobuf),
        "{side}: head and tail are not slices of one frame"
    );
}

fn server(concurrency: Concurrency, seen: mpsc::UnboundedSender<Pair>) -> frpc::Server {
    frpc::Server::builder()
        .concurrency(concurrency)
        .add_service(BlobsServer::new(Echo(seen)))
        .build()
        .unwrap()
}

/// A 1 MiB field arrives over many reads; the server's request and the client's reply still
/// hold it as a slice of the one frame, next to the field after it: in polyglot, and in the
/// protobuf encoding frpc peers negotiate (prost slices `Bytes` fields out of the content).
#[tokio::test]
async fn large_bytes_fields_are_slices_of_the_frame_on_both_sides() {
    for (concurrency, protobuf) in [Concurrency::Inline, Concurrency::PerRpc]
        .into_iter()
        .flat_map(|c| [(c, false), (c, true)])
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, mut seen) = mpsc::unbounded_channel();
        let server = server(concurrency, tx);
        let serving = tokio::spawn(async move { server.serve_listener(listener).await });
        let config = frpc::ClientConfig::default().protobuf(protobuf);
        let raw = frpc::Client::connect_with(addr, config).await.unwrap();
        assert!(raw.negotiated().await);
        assert_eq!(raw.protobuf_accepted(), protobuf);
        let client = BlobsClient::new(raw);

        let sent = Pair {
            head: Bytes::from(vec![7u8; 1 << 20]),
            tail: Bytes::from_static(b"the field after the large one"),
        };
        let reply = client.echo(sent.clone()).await.unwrap();
        assert_eq!(reply, sent);
        let received = seen.recv().await.unwrap();
        assert_eq!(received, sent);
        let side = |side| format!("{side} ({concurrency:?}, protobuf {protobuf})");
        assert_adjacent_in(&received, &side("server"), protobuf);
        assert_adjacent_in(&reply, &side("client"), protobuf);
        serving.abort();
    }
}

/// Two frames that arrive in one read of the socket are split off one read buffer: the first
/// request's `head` and the second's lie exactly the first frame's remaining content and the
/// second frame's header and field prefix apart. A runtime that copied each frame's content,
/// or each field, out of the read buffer would put them in separate allocations.
#[tokio::test]
async fn bytes_fields_of_two_frames_are_slices_of_one_read_buffer() {
    let pairs = [
        Pair {
            head: Bytes::from_static(b"first head"),
            tail: Bytes::from_static(b"first tail"),
        },
        Pair {
            head: Bytes::from_static(b"second head, a bit longer"),
            tail: Bytes::from_static(b"second tail"),
        },
    ];
    let contents: Vec<Bytes> = pairs.iter().map(Message::to_polyglot).collect();
    let mut frames = Vec::new();
    for (id, content) in (1..).zip(&contents) {
        let op = frpc_codegen_tests::bytes::blob::blobs::ECHO;
        Header {
            id,
            op,
            len: content.len() as u32,
        }
        .encode(Framing::Frisbee, &mut frames);
        frames.extend_from_slice(content);
    }
    let offset = |content: &Bytes, field: &Bytes| {
        content
            .windows(field.len())
            .position(|w| w == &field[..])
            .unwrap()
    };
    // From the first head to the second: the rest of the first content, the second header,
    // and the second content up to its head.
    let distance = contents[0].len() - offset(&contents[0], &pairs[0].head)
        + Framing::Frisbee.header_len()
        + offset(&contents[1], &pairs[1].head);

    // Both frames are written before the server accepts the connection, so its first read
    // normally finds both. The kernel may still hand them over in two reads; a fresh
    // connection tries again (a copying runtime never lines them up, however often it tries).
    let mut lined_up = 0;
    for _ in 0..10 {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut stream = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        stream.write_all(&frames).await.unwrap();
        let (tx, mut seen) = mpsc::unbounded_channel();
        let server = server(Concurrency::Inline, tx);
        let serving = tokio::spawn(async move { server.serve_listener(listener).await });
        let first = seen.recv().await.unwrap();
        let second = seen.recv().await.unwrap();
        assert_eq!([first.clone(), second.clone()], pairs);
        assert_adjacent(&first, "first frame");
        assert_adjacent(&second, "second frame");
        serving.abort();
        if addr(&second.head) == addr(&first.head) + distance {
            lined_up += 1;
            break;
        }
    }
    assert_eq!(lined_up, 1, "no two frames of one read were slices of one buffer");
}
