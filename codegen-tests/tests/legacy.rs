//! `proto/legacy/legacy.proto` over loopback TCP: methods named like the generated client's own
//! methods (`Connect`, `New`, `Client`, `WithMetadata`, `Clone`) get client methods with `_`
//! after their names and work in all four kinds, as do methods named like `Arc`'s (`Clone`,
//! `TypeId`), which the server calls; deprecated fields travel in both encodings, and the
//! deprecated method is marked (`src/lib.rs` denies `deprecated` in the generated code itself);
//! `FromCache` and `IntoArchive` compile clippy-clean.
#![allow(deprecated)] // Sets deprecated fields and calls the deprecated method on purpose.

use frpc::codegen::Message as _;
use frpc::{Context, Status, StreamSender, Streaming};
use frpc_codegen_tests::default::legacy::{
    Kind, Note, Session, SessionClient, SessionServer, Ticket, ticket,
};

struct Echo;

impl Session for Echo {
    async fn connect(
        &self,
        _: &Context,
        request: Ticket,
        outbound: StreamSender<Ticket>,
    ) -> Result<(), Status> {
        outbound.send(request.clone()).await?;
        outbound.send(request).await?;
        Ok(())
    }

    async fn new(&self, _: &Context, request: Ticket) -> Result<Ticket, Status> {
        Ok(request)
    }

    async fn client(&self, _: &Context, mut inbound: Streaming<Ticket>) -> Result<Ticket, Status> {
        let mut count = 0;
        while let Some(ticket) = inbound.message().await? {
            count += ticket.count;
        }
        Ok(Ticket {
            count,
            ..Ticket::default()
        })
    }

    async fn with_metadata(
        &self,
        _: &Context,
        mut inbound: Streaming<Ticket>,
        outbound: StreamSender<Ticket>,
    ) -> Result<(), Status> {
        while let Some(ticket) = inbound.message().await? {
            outbound.send(ticket).await?;
        }
        Ok(())
    }

    async fn clone(&self, _: &Context, request: Ticket) -> Result<Ticket, Status> {
        Ok(Ticket {
            id: format!("clone of {}", request.id),
            ..request
        })
    }

    async fn type_id(
        &self,
        _: &Context,
        request: Ticket,
        outbound: StreamSender<Ticket>,
    ) -> Result<(), Status> {
        outbound.send(request).await?;
        Ok(())
    }

    async fn from_cache(&self, _: &Context, request: Ticket) -> Result<Ticket, Status> {
        Ok(Ticket {
            count: request.count + 1,
            ..request
        })
    }

    async fn into_archive(&self, _: &Context, request: Ticket) -> Result<Ticket, Status> {
        Ok(Ticket {
            count: request.count + 2,
            ..request
        })
    }

    async fn old(&self, _: &Context, request: Ticket) -> Result<Ticket, Status> {
        Ok(Ticket {
            id: format!("old {}", request.id),
            ..request
        })
    }
}

/// A ticket with every field set, the deprecated ones included.
fn full_ticket() -> Ticket {
    Ticket {
        id: "t-1".into(),
        count: 3,
        kind: Kind::Old as i32,
        tags: vec!["a".into(), "b".into()],
        scores: [("x".to_string(), 7)].into(),
        note: Some(Note { text: "n".into() }),
        pick: Some(ticket::Pick::Name("p".into())),
    }
}

async fn serve() -> (SessionClient, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = frpc::Server::builder()
        .add_service(SessionServer::new(Echo))
        .build()
        .unwrap();
    let serving = tokio::spawn(async move {
        let _ = server.serve_listener(listener).await;
    });
    (SessionClient::connect(addr).await.unwrap(), serving)
}

#[tokio::test]
async fn methods_named_like_the_clients_own_work_in_every_kind() {
    let (client, serving) = serve().await;

    assert_eq!(client.new_(full_ticket()).await.unwrap(), full_ticket());

    let mut echoes = client.connect_(full_ticket()).await.unwrap();
    assert_eq!(echoes.message().await.unwrap(), Some(full_ticket()));
    assert_eq!(echoes.message().await.unwrap(), Some(full_ticket()));
    assert_eq!(echoes.message().await.unwrap(), None);

    let mut upload = client.client_().await.unwrap();
    for count in [1, 2, 4] {
        let ticket = Ticket {
            count,
            ..Ticket::default()
        };
        upload.send(ticket).await.unwrap();
    }
    assert_eq!(upload.close_and_recv().await.unwrap().count, 7);

    let mut chat = client.with_metadata_().await.unwrap();
    chat.send(full_ticket()).await.unwrap();
    assert_eq!(chat.message().await.unwrap(), Some(full_ticket()));
    chat.close_send().await.unwrap();
    assert_eq!(chat.message().await.unwrap(), None);

    // Named like methods of `Arc` (the server calls the handlers) and of `Clone` (the client).
    assert_eq!(client.clone_(full_ticket()).await.unwrap().id, "clone of t-1");
    let mut types = client.clone().type_id(full_ticket()).await.unwrap();
    assert_eq!(types.message().await.unwrap(), Some(full_ticket()));
    assert_eq!(types.message().await.unwrap(), None);

    // Names clippy has conventions for (`src/lib.rs`'s code passes `clippy -D warnings` in CI).
    assert_eq!(client.from_cache(full_ticket()).await.unwrap().count, 4);
    assert_eq!(client.into_archive(full_ticket()).await.unwrap().count, 5);

    // The client's own methods keep their names.
    let timed = client.with_timeout(std::time::Duration::from_secs(5));
    assert_eq!(timed.client().peer_addr(), client.client().peer_addr());

    serving.abort();
}

#[tokio::test]
async fn the_deprecated_method_still_calls() {
    let (client, serving) = serve().await;
    let reply = client.old(full_ticket()).await.unwrap();
    assert_eq!(reply.id, "old t-1");
    assert_eq!(reply.tags, ["a", "b"]);
    serving.abort();
}

#[test]
fn deprecated_fields_round_trip_in_both_encodings() {
    let ticket = full_ticket();
    let polyglot = ticket.to_polyglot();
    assert_eq!(Ticket::from_polyglot(&polyglot).unwrap(), ticket);
    let protobuf = frpc::codegen::prost::Message::encode_to_vec(&ticket);
    assert_eq!(
        <Ticket as frpc::codegen::prost::Message>::decode(&protobuf[..]).unwrap(),
        ticket
    );
}

#[test]
fn generated_docs_say_why_a_method_is_renamed() {
    let text = std::fs::read_to_string(concat!(env!("OUT_DIR"), "/default/legacy.rs")).unwrap();
    assert!(
        text.contains("/// Named `connect_`: `connect` is the client's own method."),
        "{text}"
    );
    let old = text.find("pub async fn old(").expect("the client's `old`");
    let above = &text[..old];
    assert!(
        above.trim_end().ends_with("#[deprecated]"),
        "{}",
        &above[above.len() - 200..]
    );
}
