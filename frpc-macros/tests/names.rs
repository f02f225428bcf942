//! Rust-first names a tonic user's trait may hold: methods named like the generated client's
//! own (`connect`, `new`, `clone`) are `connect_`, `new_` and `clone_` on the client, the
//! server still calls them (`clone` is also one of `Arc`'s), and a deprecated field is carried
//! without a warning from the derive (this file denies `deprecated` outside the test body). A
//! `#[deprecated]` method is served without a warning, and only its client method is
//! deprecated (`tests/ui/deprecated_method.rs` checks that calling it warns). A message named
//! `T`, like the generated server's and client's type parameter, is served and called. Raw
//! names of the client's own (`r#connect`) are renamed as the plain ones are, and names with
//! the `_` that keeps a keyword from being one (`trait Self_`, `fn self_`) are the RPC names
//! `frpc-codegen` gives them for (`service Self`, `rpc Self`).
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

/// Named as `frpc-codegen` names `service Self { rpc Self(..); rpc Connect(..); rpc New(..) }`
/// but for the raw `r#connect` and `r#new`, which a Rust-first trait may write.
#[frpc::service(package = "names_kw")]
pub trait Self_ {
    async fn self_(&self, ctx: &Context, request: T) -> Result<T, Status>;
    async fn r#connect(&self, ctx: &Context, request: T) -> Result<T, Status>;
    async fn r#new(&self, ctx: &Context, request: T) -> Result<T, Status>;
}

struct Keywords;

impl Self_ for Keywords {
    async fn self_(&self, _: &Context, request: T) -> Result<T, Status> {
        Ok(request)
    }

    async fn r#connect(&self, _: &Context, request: T) -> Result<T, Status> {
        Ok(T {
            value: request.value + 1,
        })
    }

    async fn r#new(&self, _: &Context, request: T) -> Result<T, Status> {
        Ok(T {
            value: request.value + 2,
        })
    }
}

/// A server of `Self_` whose interceptor notes each call's service and method names, and a
/// client of it.
async fn keywords_server() -> (SelfClient, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let noted = seen.clone();
    let server = frpc::Server::builder()
        .interceptor(move |call: &frpc::CallRequest| {
            let name = format!("{}/{}", call.service(), call.method());
            noted.lock().unwrap().push(name);
            Ok(())
        })
        .add_service(SelfServer::new(Keywords))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = server.local_addr();
    tokio::spawn(server.serve());
    (SelfClient::connect(addr).await.unwrap(), seen)
}

/// `r#connect` and `r#new` were inherent methods of the same names as the client's own
/// `connect` and `new` (E0592): they are `connect_` and `new_`, as `connect` and `new` are.
#[tokio::test]
async fn raw_names_of_the_clients_own_methods_are_renamed() {
    let (client, _) = keywords_server().await;
    assert_eq!(client.connect_(T { value: 1 }).await.unwrap(), T { value: 2 });
    assert_eq!(client.new_(T { value: 1 }).await.unwrap(), T { value: 3 });
}

/// `trait Self_` and `fn self_` are the service `Self` and the RPC `Self` (they were `Self_`,
/// which no `.proto` names: `frpc-codegen` turns `rpc Self` into `self_`), as the server's
/// layers see them; the operation numbers follow declaration order, as before.
#[tokio::test]
async fn names_kept_from_keywords_by_an_underscore_are_rpc_names_without_it() {
    assert_eq!(self_::SERVICE_NAME, "names_kw.Self");
    assert_eq!((self_::SELF, self_::CONNECT, self_::NEW), (10, 11, 12));
    let (client, seen) = keywords_server().await;
    assert_eq!(client.self_(T { value: 7 }).await.unwrap(), T { value: 7 });
    client.connect_(T::default()).await.unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen, ["names_kw.Self/Self", "names_kw.Self/Connect"]);
}
