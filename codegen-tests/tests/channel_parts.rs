//! A large polyglot request through a one-endpoint `Channel` leaves from its own buffers, as it
//! does through a `Client`: a megabyte `string` field is handed to the connection, not copied
//! into one buffer first. Client-side bytes allocated per call, counted on the client's own
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

#[test]
fn a_large_request_through_a_channel_is_not_copied() {
    let addr = serve();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // Polyglot, as with a Go peer: protobuf (which frpc peers negotiate by default) goes in
    // one buffer.
    let polyglot = || {
        let mut config = frpc::ClientConfig::default();
        config.protobuf = false;
        config
    };
    let client = rt.block_on(Client::connect_with(addr, polyglot())).unwrap();
    let channel: Channel = rt
        .block_on(Endpoint::from(addr).client_config(polyglot()).connect())
        .unwrap();
    rt.block_on(client.negotiated());
    assert!(client.extensions_accepted() && !client.protobuf_accepted());
    let by_client = bytes_per_call(&rt, client);
    let by_channel = bytes_per_call(&rt, channel);
    println!("bytes allocated per call: client {by_client}, channel {by_channel}");
    // The request and the reply's string, at least; a copy of the request would add `TEXT`.
    assert!(by_client >= 2 * TEXT, "client {by_client}");
    assert!(
        by_channel < by_client + TEXT / 2,
        "client {by_client}, channel {by_channel}: the channel copied the request"
    );
}
