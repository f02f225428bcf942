//! The runtime hands a handler `bytes::Bytes` fields that are slices of the frame the
//! connection read: the codec splits each frame's content off the read buffer and the request
//! is decoded with `Decoder::from_bytes`, which slices `bytes` fields out of it. The messages
//! here use `#[derive(frpc::Message)]`, whose `Bytes` fields have the same codec (`ByteBuf`)
//! as frpc-codegen's `bytes(["."])`; `codegen-tests/tests/zero_copy.rs` checks generated code,
//! both sides and a 1 MiB field.
// The services are `#[frpc::service]`s: without the `macros` feature there is nothing to test.
#![cfg(feature = "macros")]

use bytes::Bytes;
use frpc::codegen::{Message, encode};
use frpc::wire::{Framing, Header};
use frpc::{Concurrency, Context, Status};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// `message Pair { bytes head = 1; bytes tail = 2; }`
#[derive(Debug, Clone, Default, PartialEq, frpc::Message)]
pub struct Pair {
    pub head: Bytes,
    pub tail: Bytes,
}

#[frpc::service(package = "zero_copy")]
pub trait Blobs {
    async fn echo(&self, ctx: &Context, request: Pair) -> Result<Pair, Status>;
}

/// Echoes every request and hands it to the test.
struct Echo(mpsc::UnboundedSender<Pair>);

impl Blobs for Echo {
    async fn echo(&self, _: &Context, request: Pair) -> Result<Pair, Status> {
        let _ = self.0.send(request.clone());
        Ok(request)
    }
}

fn addr(part: &Bytes) -> usize {
    part.as_ptr() as usize
}

/// Two requests written in one write before the server accepts the connection arrive in one
/// read (or, rarely, the kernel splits them and a fresh connection tries again). Their fields,
/// kept alive by the test, lie exactly where the frames put them in one read buffer: each
/// `tail` right after its `head` and the encoded field prefix, the second `head` after the
/// first frame's remaining content and the second frame's header. Copying a frame's content
/// or a field out of the read buffer would put them in separate allocations.
#[tokio::test]
async fn bytes_fields_are_slices_of_the_read_buffer() {
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
        let len = content.len() as u32;
        Header {
            id,
            op: blobs::ECHO,
            len,
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
    let distance = contents[0].len() - offset(&contents[0], &pairs[0].head)
        + Framing::Frisbee.header_len()
        + offset(&contents[1], &pairs[1].head);
    let prefix = |field: &Bytes| encode::bytes_len(field.len()) - field.len();

    for concurrency in [Concurrency::Inline, Concurrency::PerRpc] {
        let mut lined_up = false;
        for _ in 0..10 {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let mut stream = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
            stream.write_all(&frames).await.unwrap();
            let (tx, mut seen) = mpsc::unbounded_channel();
            let server = frpc::Server::builder()
                .concurrency(concurrency)
                .add_service(BlobsServer::new(Echo(tx)))
                .build()
                .unwrap();
            let serving = tokio::spawn(async move { server.serve_listener(listener).await });
            let mut got = [seen.recv().await.unwrap(), seen.recv().await.unwrap()];
            got.sort_by_key(|p| p.head.len()); // per-RPC handlers may finish in any order
            assert_eq!(got, pairs);
            for pair in &got {
                assert_eq!(
                    addr(&pair.tail),
                    addr(&pair.head) + pair.head.len() + prefix(&pair.tail),
                    "{concurrency:?}: head and tail are not slices of one frame"
                );
            }
            serving.abort();
            if addr(&got[1].head) == addr(&got[0].head) + distance {
                lined_up = true;
                break;
            }
        }
        assert!(
            lined_up,
            "{concurrency:?}: no two frames of one read were slices of one buffer"
        );
    }
}
