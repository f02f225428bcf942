//! A service trait's visibility is its server's, client's and operation numbers' too: a
//! private trait over private messages compiles without a warning (no `private_interfaces`,
//! and no `dead_code` for the half a program leaves unused), and works over TCP.
//! `tests/ui/private_service.rs` checks that its items stay private.
#![deny(warnings)]

mod private {
    use frpc::{Context, Status};

    #[derive(frpc::Message, Clone, Debug, Default, PartialEq)]
    struct Query {
        text: String,
    }

    /// Private, as are its messages; only its server is used in this module.
    #[frpc::service(package = "private")]
    trait Lookup {
        async fn find(&self, ctx: &Context, request: Query) -> Result<Query, Status>;
    }

    struct Finder;

    impl Lookup for Finder {
        async fn find(&self, _: &Context, request: Query) -> Result<Query, Status> {
            Ok(Query {
                text: format!("found {}", request.text),
            })
        }
    }

    /// A server of the private service on a free port: its address.
    pub(crate) async fn serve() -> std::net::SocketAddr {
        let server = frpc::Server::builder()
            .add_service(LookupServer::new(Finder))
            .bind("127.0.0.1:0")
            .await
            .unwrap();
        let addr = server.local_addr();
        tokio::spawn(server.serve());
        addr
    }

    /// The same service's client, `pub(crate)`: what it answers to `text`.
    #[frpc::service(package = "private")]
    pub(crate) trait Remote {
        async fn find(&self, ctx: &Context, request: Ask) -> Result<Ask, Status>;
    }

    #[derive(frpc::Message, Clone, Debug, Default, PartialEq)]
    pub(crate) struct Ask {
        pub(crate) text: String,
    }

    /// Calls `Lookup/Find` at `addr` through `Remote`'s client (`Remote`'s name is not sent:
    /// the operation number is, and both are the first method).
    pub(crate) async fn ask(addr: std::net::SocketAddr, text: &str) -> String {
        let client = RemoteClient::connect(addr).await.unwrap();
        let request = Ask { text: text.into() };
        client.find(request).await.unwrap().text
    }
}

#[tokio::test]
async fn a_private_service_serves_over_tcp() {
    let addr = private::serve().await;
    assert_eq!(private::ask(addr, "x").await, "found x");
}
