//! Rust-first names a tonic user's trait may hold: methods named like the generated client's
//! own (`connect`, `new`, `clone`) are `connect_`, `new_` and `clone_` on the client, the
//! server still calls them (`clone` is also one of `Arc`'s), and a deprecated field is carried
//! without a warning from the derive (this file denies `deprecated` outside the test body). A
//! `#[deprecated]` method is served without a warning, and only its client method is
//! deprecated (`tests/ui/deprecated_method.rs` checks that calling it warns). A message named
//! `T`, like the generated server's and client's type parameter, is served and called.
#![deny(deprecated)]

use frpc::{Context, Status};

#[derive(frpc::Message, Clone, Debug, Default, PartialEq)]
pub struct Note {
    #[deprecated]
    pub old: String,
    pub text: String,
}

#[frpc::service(package = "names")]
pub trait Session {
    async fn connect(&self, ctx: &Context, request: Note) -> Result<Note, Status>;
    async fn new(&self, ctx: &Context, request: Note) -> Result<Note, Status>;
    async fn clone(&self, ctx: &Context, request: Note) -> Result<Note, Status>;
    /// The old way.
    #[deprecated(note = "call `connect`")]
    async fn legacy(&self, ctx: &Context, request: Note) -> Result<Note, Status>;
}

struct Svc;

impl Session for Svc {
    async fn connect(&self, _: &Context, request: Note) -> Result<Note, Status> {
        Ok(Note {
            text: format!("connect {}", request.text),
            ..request
        })
    }

    async fn new(&self, _: &Context, request: Note) -> Result<Note, Status> {
        Ok(Note {
            text: format!("new {}", request.text),
            ..request
        })
    }

    async fn clone(&self, _: &Context, request: Note) -> Result<Note, Status> {
        Ok(Note {
            text: format!("clone {}", request.text),
            ..request
        })
    }

    async fn legacy(&self, _: &Context, request: Note) -> Result<Note, Status> {
        Ok(Note {
            text: format!("legacy {}", request.text),
            ..request
        })
    }
}

#[tokio::test]
#[allow(deprecated)] // Sets the deprecated field on purpose.
async fn methods_named_like_the_clients_own_are_called() {
    let server = frpc::Server::builder()
        .add_service(SessionServer::new(Svc))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = server.local_addr();
    let serving = tokio::spawn(server.serve());
    let client = SessionClient::connect(addr).await.unwrap();
    let note = Note {
        old: "kept".into(),
        text: "x".into(),
    };

    let reply = client.clone().connect_(note.clone()).await.unwrap();
    assert_eq!((reply.old.as_str(), reply.text.as_str()), ("kept", "connect x"));
    assert_eq!(client.new_(note.clone()).await.unwrap().text, "new x");
    assert_eq!(client.clone_(note.clone()).await.unwrap().text, "clone x");
    assert_eq!(client.legacy(note).await.unwrap().text, "legacy x");
    serving.abort();
}

/// Named like the type parameter of the generated server and client.
#[derive(frpc::Message, Clone, Debug, Default, PartialEq)]
pub struct T {
    pub value: u32,
}

#[frpc::service(package = "names_t")]
pub trait Doubler {
    async fn double(&self, ctx: &Context, request: T) -> Result<T, Status>;
}

struct Twice;

impl Doubler for Twice {
    async fn double(&self, _: &Context, request: T) -> Result<T, Status> {
        Ok(T {
            value: request.value * 2,
        })
    }
}

#[tokio::test]
async fn a_message_named_t_is_served_and_called() {
    let server = frpc::Server::builder()
        .add_service(DoublerServer::new(Twice))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = server.local_addr();
    tokio::spawn(server.serve());
    let client = DoublerClient::connect(addr).await.unwrap();
    assert_eq!(client.double(T { value: 21 }).await.unwrap(), T { value: 42 });
}
