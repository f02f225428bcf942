//! Large `bytes::Bytes` fields of a reply are written from their own buffers (the encoding is
//! a chain of parts: the encoded bytes around them and the fields themselves), and the bytes on
//! the wire are exactly the encoding into one buffer: with a reader that takes them a little
//! at a time (the writer's vectored writes go through partly) and with several replies queued.
//! Large `String` fields of a message given up (a reply, a generated client's request) are
//! handed over the same way.

use std::time::Duration;

use frpc::codegen::{Bytes, Message, Parts};
use frpc::wire::parts::SPLICE_MIN;
use frpc::wire::{Framing, Header};
use frpc::{Concurrency, Context, Status};
use frpc_codegen_tests::bytes::blob::{
    Blobs, BlobsServer, Note, Notes, NotesClient, NotesServer, Pair, blobs, notes,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

struct Echo;

impl Blobs for Echo {
    async fn echo(&self, _: &Context, request: Pair) -> Result<Pair, Status> {
        Ok(request)
    }
}

fn pair(head: usize, tail: usize, seed: u8) -> Pair {
    let bytes = |len: usize, salt: u8| -> Bytes {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed ^ salt))
            .collect::<Vec<u8>>()
            .into()
    };
    Pair {
        head: bytes(head, 0x55),
        tail: bytes(tail, 0xaa),
    }
}

/// The parts, one after another, are the one-buffer encoding; a field of at least
/// `SPLICE_MIN` bytes is a part of its own, the very memory of the field.
#[test]
fn parts_are_the_one_buffer_encoding() {
    const { assert!(<Pair as Message>::POLYGLOT_PARTS) };
    let sizes = [
        (0, 0),
        (10, 20),
        (SPLICE_MIN - 1, 3),
        (SPLICE_MIN, 0),
        (1 << 20, 17),
        (5, 1 << 20),
        (1 << 20, 1 << 16),
    ];
    for (head, tail) in sizes {
        let pair = pair(head, tail, head as u8);
        let mut parts = Parts::default();
        pair.encode_polyglot_parts(&mut parts);
        assert_eq!(parts.len(), pair.polyglot_len());
        let chain = parts.into_vec();
        assert_eq!(chain.concat(), pair.to_polyglot(), "{head} + {tail}");
        for field in [&pair.head, &pair.tail] {
            let spliced = chain
                .iter()
                .any(|part| part.as_ptr() == field.as_ptr() && part.len() == field.len());
            assert_eq!(spliced, field.len() >= SPLICE_MIN, "{head} + {tail}");
        }
    }
}

/// A note whose strings (`title`, `remark`, each tag) are `text` bytes long, with `pair`.
fn note(text: usize, pair: Pair, seed: u8) -> Note {
    let text = |salt: u8| -> String {
        (0..text)
            .map(|i| char::from(b'a' + (i as u8 ^ seed ^ salt) % 26))
            .collect()
    };
    Note {
        title: text(1),
        remark: Some(text(2)),
        pair: Some(pair),
        tags: vec![text(3), text(4)],
        count: u32::from(seed),
    }
}

/// A given-up note's parts, one after another, are its one-buffer encoding, in polyglot and in
/// protobuf; its large `title` and `remark` are parts of their own, the very memory of the
/// strings (a `tags` element, repeated, is copied), and so are its pair's large fields.
#[test]
fn a_note_given_up_is_the_one_buffer_encoding() {
    const { assert!(<Note as Message>::POLYGLOT_OWNED_PARTS && <Note as Message>::PROTOBUF_OWNED_PARTS) };
    for protobuf in [false, true] {
        for (text, pair) in [
            (0, pair(0, 0, 0)),
            (SPLICE_MIN - 1, pair(SPLICE_MIN, 9, 1)),
            (SPLICE_MIN, pair(1, 2, 3)),
            (1 << 20, pair(5, 1 << 20, 4)),
        ] {
            let what = format!("{text} bytes, protobuf {protobuf}");
            let note = note(text, pair, text as u8);
            let held = [
                note.title.as_ptr(),
                note.remark.as_ref().unwrap().as_ptr(),
                note.tags[0].as_ptr(),
            ];
            let pair = note.pair.clone().unwrap();
            let mut parts = Parts::default();
            let bytes = match protobuf {
                false => {
                    let bytes = note.to_polyglot();
                    note.into_polyglot_parts(&mut parts);
                    bytes
                }
                true => {
                    let mut bytes = Vec::new();
                    note.encode_protobuf(&mut bytes);
                    note.into_protobuf_parts(&mut parts);
                    bytes.into()
                }
            };
            assert_eq!(parts.len(), bytes.len(), "{what}");
            let chain = parts.into_vec();
            assert_eq!(chain.concat(), bytes, "{what}");
            let handed_over =
                |at: *const u8| chain.iter().any(|part| part.as_ptr() == at && part.len() == text);
            assert_eq!(handed_over(held[0]), text >= SPLICE_MIN, "title, {what}");
            assert_eq!(handed_over(held[1]), text >= SPLICE_MIN, "remark, {what}");
            assert!(!handed_over(held[2]) || text == 0, "a tag is copied");
            for field in [&pair.head, &pair.tail] {
                let spliced = chain
                    .iter()
                    .any(|part| part.as_ptr() == field.as_ptr() && part.len() == field.len());
                assert_eq!(spliced, field.len() >= SPLICE_MIN, "pair, {what}");
            }
        }
    }
}

struct EchoNotes;

impl Notes for EchoNotes {
    async fn echo(&self, _: &Context, request: Note) -> Result<Note, Status> {
        Ok(request)
    }
}

fn server(concurrency: Concurrency) -> frpc::Server {
    frpc::Server::builder()
        .concurrency(concurrency)
        .add_service(BlobsServer::new(Echo))
        .add_service(NotesServer::new(EchoNotes))
        .build()
        .unwrap()
}

/// A request frame for `message` to operation `op` under `id`.
fn frame(id: u16, op: u16, message: &impl Message) -> Vec<u8> {
    let content = message.to_polyglot();
    let mut frame = Vec::new();
    Header {
        id,
        op,
        len: content.len() as u32,
    }
    .encode(Framing::Frisbee, &mut frame);
    frame.extend_from_slice(&content);
    frame
}

/// Echoes of large pairs and notes, read off the socket byte for byte: each is its request's
/// frame (the echo encodes as the request did). `slow` reads in small pieces with pauses, so
/// the server's socket fills and its vectored writes go through in pieces.
async fn echo_on_the_wire(concurrency: Concurrency, slow: bool) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = server(concurrency);
    let serving = tokio::spawn(async move { server.serve_listener(listener).await });
    let mut socket = TcpStream::connect(addr).await.unwrap();
    // Medium pairs first (each written at once when nothing is ahead of it, not queued):
    // enough to fill the socket of a slow reader while one is being written.
    let mut pairs: Vec<Pair> = (0..30)
        .map(|i| pair(100 * 1024, 90 * 1024 + i, 5 + i as u8))
        .collect();
    pairs.extend([
        pair(1 << 20, 40 * 1024, 1),
        pair(100, 200, 2),
        pair(SPLICE_MIN, SPLICE_MIN + 1, 3),
        pair(3, 3 << 20, 4),
    ]);
    let mut frames: Vec<Vec<u8>> = (1..)
        .zip(&pairs)
        .map(|(id, pair)| frame(id, blobs::ECHO, pair))
        .collect();
    for (id, text) in [(100, 1 << 20), (101, 7), (102, SPLICE_MIN)] {
        frames.push(frame(
            id,
            notes::ECHO,
            &note(text, pair(text.min(SPLICE_MIN), 2 * SPLICE_MIN, 5), id as u8),
        ));
    }
    let (mut read, mut write) = socket.split();
    let writing = async {
        for frame in &frames {
            write.write_all(frame).await.unwrap();
        }
    };
    let expected: usize = frames.iter().map(Vec::len).sum();
    let reading = async {
        let mut got = Vec::with_capacity(expected);
        let mut chunk = vec![0u8; if slow { 4096 } else { 1 << 16 }];
        while replies_len(&got) < expected {
            let n = read.read(&mut chunk).await.unwrap();
            assert!(n > 0, "closed after {} bytes", got.len());
            got.extend_from_slice(&chunk[..n]);
            if slow && got.len() < 2 << 20 {
                tokio::time::sleep(Duration::from_micros(200)).await;
            }
        }
        got
    };
    let ((), got) = tokio::join!(writing, reading);
    // Inline answers in order; a call per task may answer in any order.
    let mut replies = split(&got);
    replies.sort_by_key(|(id, _)| *id);
    assert_eq!(replies.len(), frames.len());
    for ((id, reply), frame) in replies.iter().zip(&frames) {
        assert!(
            reply == frame,
            "reply {id} differs from its request ({concurrency:?}, slow {slow})"
        );
    }
    serving.abort();
}

/// The length of the whole frames in `bytes` that are not heartbeats.
fn replies_len(mut bytes: &[u8]) -> usize {
    let mut total = 0;
    while let Ok(Some(header)) = Header::parse(Framing::Frisbee, bytes) {
        let len = Framing::Frisbee.header_len() + header.len as usize;
        if bytes.len() < len {
            break;
        }
        if header.op != frpc::wire::op::PING {
            total += len;
        }
        bytes = &bytes[len..];
    }
    total
}

/// The frames in `bytes` with their ids, but for heartbeats (the server pings a slow peer).
fn split(mut bytes: &[u8]) -> Vec<(u16, Vec<u8>)> {
    let mut frames = Vec::new();
    while !bytes.is_empty() {
        let header = Header::parse(Framing::Frisbee, bytes)
            .unwrap()
            .expect("a whole header");
        let len = Framing::Frisbee.header_len() + header.len as usize;
        if header.op != frpc::wire::op::PING {
            frames.push((header.id, bytes[..len].to_vec()));
        }
        bytes = &bytes[len..];
    }
    frames
}

#[tokio::test]
async fn large_replies_are_exact_on_the_wire() {
    for concurrency in [Concurrency::Inline, Concurrency::PerRpc] {
        echo_on_the_wire(concurrency, false).await;
    }
}

#[tokio::test]
async fn large_replies_are_exact_through_partial_writes() {
    for concurrency in [Concurrency::Inline, Concurrency::PerRpc] {
        echo_on_the_wire(concurrency, true).await;
    }
}

/// A generated client gives its request up: large strings go out from their own buffers and
/// come back whole, whichever the server runs the call on.
#[tokio::test]
async fn large_notes_round_trip_through_the_generated_client() {
    for concurrency in [Concurrency::Inline, Concurrency::PerRpc] {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = server(concurrency);
        let serving = tokio::spawn(async move { server.serve_listener(listener).await });
        let client = NotesClient::connect(addr).await.unwrap();
        for text in [1 << 20, 3, SPLICE_MIN] {
            let sent = note(text, pair(SPLICE_MIN, 1 << 16, 6), text as u8);
            let reply = client.echo(sent.clone()).await.unwrap();
            assert!(reply == sent, "{text} bytes ({concurrency:?})");
        }
        serving.abort();
    }
}
