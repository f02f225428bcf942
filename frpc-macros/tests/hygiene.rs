//! The macros' output names only absolute paths: it compiles in a `#![no_implicit_prelude]`
//! module, where `Option`, `Vec`, `String`, `Result`, `Default`… are not in scope.

mod no_prelude {
    #![no_implicit_prelude]

    #[derive(::frpc::Message, Clone, Copy, Debug, Default, PartialEq)]
    pub enum Kind {
        #[default]
        A,
        B = 7,
    }

    #[derive(::frpc::Message, Clone, Debug, Default, PartialEq)]
    pub struct Ping {
        pub text: ::std::string::String,
        #[frpc(enumeration)]
        pub kind: Kind,
        pub maybe: ::core::option::Option<u32>,
        pub list: ::std::vec::Vec<::std::string::String>,
        pub map: ::std::collections::HashMap<::std::string::String, Pong>,
        pub pong: ::core::option::Option<Pong>,
    }

    #[derive(::frpc::Message, Clone, Debug, Default, PartialEq)]
    pub struct Pong {
        pub n: i64,
    }

    /// A service declared without the prelude.
    #[::frpc::service(package = "hygiene")]
    pub trait Pinger {
        /// Unary.
        async fn ping(
            &self,
            ctx: &::frpc::Context,
            request: Ping,
        ) -> ::core::result::Result<Pong, ::frpc::Status>;
        /// Server streaming.
        async fn watch(
            &self,
            ctx: &::frpc::Context,
            request: Ping,
            outbound: ::frpc::StreamSender<Pong>,
        ) -> ::core::result::Result<(), ::frpc::Status>;
        /// Client streaming.
        async fn gather(
            &self,
            ctx: &::frpc::Context,
            inbound: ::frpc::Streaming<Ping>,
        ) -> ::core::result::Result<Pong, ::frpc::Status>;
        /// Bidi.
        async fn chat(
            &self,
            ctx: &::frpc::Context,
            inbound: ::frpc::Streaming<Ping>,
            outbound: ::frpc::StreamSender<Pong>,
        ) -> ::core::result::Result<(), ::frpc::Status>;
    }
}

#[test]
fn compiles_without_the_prelude() {
    use frpc::codegen::{Message, Service};
    let ping = no_prelude::Ping {
        kind: no_prelude::Kind::B,
        ..Default::default()
    };
    assert_eq!(
        no_prelude::Ping::from_polyglot(&ping.to_polyglot()).unwrap(),
        ping
    );
    assert_eq!(i32::from(no_prelude::Kind::B), 7);
    assert_eq!(
        (
            no_prelude::pinger::PING,
            no_prelude::pinger::WATCH,
            no_prelude::pinger::GATHER,
            no_prelude::pinger::CHAT
        ),
        (10, 11, 12, 13)
    );
    struct Impl;
    impl no_prelude::Pinger for Impl {
        async fn ping(
            &self,
            _: &frpc::Context,
            _: no_prelude::Ping,
        ) -> Result<no_prelude::Pong, frpc::Status> {
            Ok(no_prelude::Pong { n: 1 })
        }
        async fn watch(
            &self,
            _: &frpc::Context,
            _: no_prelude::Ping,
            _: frpc::StreamSender<no_prelude::Pong>,
        ) -> Result<(), frpc::Status> {
            Ok(())
        }
        async fn gather(
            &self,
            _: &frpc::Context,
            _: frpc::Streaming<no_prelude::Ping>,
        ) -> Result<no_prelude::Pong, frpc::Status> {
            Ok(no_prelude::Pong::default())
        }
        async fn chat(
            &self,
            _: &frpc::Context,
            _: frpc::Streaming<no_prelude::Ping>,
            _: frpc::StreamSender<no_prelude::Pong>,
        ) -> Result<(), frpc::Status> {
            Ok(())
        }
    }
    let server = no_prelude::PingerServer::new(Impl);
    assert_eq!(server.name(), "hygiene.Pinger");
}
