//! A large request through a one-endpoint `Channel` leaves from its own buffers, as it does
//! through a `Client`, in polyglot and in protobuf alike: a megabyte `string` field is handed to
//! the connection, not copied into one buffer first. Client-side bytes allocated per call, counted on the client's own
//! current-thread runtime with `allocation-counter` (the server runs on a thread of its own).

use std::net::SocketAddr;

use frpc::{Caller, Channel, Client, Context, Endpoint, Status};
use frpc_codegen_tests::bytes::blob::{Note, Notes, NotesClient, NotesServer};

const CALLS: usize = 20;
const TEXT: usize = 1 << 20;

struct Echo;

impl Notes for Echo {
    async fn echo(&self, _: &Context, request: Note) -> Result<Note, Status> {
        Ok(request)
    }
}

/// A server on a runtime of its own thread, outside the count.
fn serve() -> SocketAddr {
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            addr_tx.send(listener.local_addr().unwrap()).unwrap();
            let server = frpc::Server::builder()
                .add_service(NotesServer::new(Echo))
                .build()
                .unwrap();
            server.serve_listener(listener).await
        })
    });
    addr_rx.recv().unwrap()
}

/// Bytes allocated on this thread per echo of a note with a `TEXT`-byte title through
/// `caller` (the note built inside the count, as every caller builds its request).
fn bytes_per_call(rt: &tokio::runtime::Runtime, caller: impl Caller) -> usize {
    let client = NotesClient::new(caller);
    let echo = || async {
        let note = Note {
            title: "t".repeat(TEXT),
            ..Note::default()
        };
        let reply = client.echo(note).await.unwrap();
        assert_eq!(reply.title.len(), TEXT);
    };
    rt.block_on(async {
        for _ in 0..3 {
            echo().await;
        }
    });
    let info = allocation_counter::measure(|| {
        rt.block_on(async {
            for _ in 0..CALLS {
                echo().await;
            }
        })
    });
    info.bytes_total as usize / CALLS
}

/// Polyglot (as with a Go peer) or protobuf (what frpc peers negotiate by default).
fn config(protobuf: bool) -> frpc::ClientConfig {
    let mut config = frpc::ClientConfig::default();
    config.protobuf = protobuf;
    config
}

#[test]
fn a_large_request_through_a_channel_is_not_copied() {
    let addr = serve();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut by_client = [0; 2];
    for protobuf in [false, true] {
        let client = rt.block_on(Client::connect_with(addr, config(protobuf))).unwrap();
        let channel: Channel = rt
            .block_on(Endpoint::from(addr).client_config(config(protobuf)).connect())
            .unwrap();
        rt.block_on(client.negotiated());
        assert_eq!(client.protobuf_accepted(), protobuf);
        let client = bytes_per_call(&rt, client);
        let channel = bytes_per_call(&rt, channel);
        println!("bytes allocated per call, protobuf {protobuf}: client {client}, channel {channel}");
        // The request and the reply's string, at least; a copy of the request would add `TEXT`.
        assert!(client >= 2 * TEXT, "client {client}");
        assert!(
            channel < client + TEXT / 2,
            "client {client}, channel {channel}: the channel copied the request"
        );
        by_client[usize::from(protobuf)] = client;
    }
    let [polyglot, protobuf] = by_client;
    assert!(
        protobuf < polyglot + TEXT / 2,
        "polyglot {polyglot}, protobuf {protobuf}: protobuf copied the request"
    );
}
