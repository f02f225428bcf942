//! Schema evolution between frpc peers: a client generated from `proto/evolve/v1` and a server
//! generated from `proto/evolve/v2` (`name`/`email` declared in the other order, a field and an
//! enum value added), over real TCP in both framings. Over the negotiated protobuf encoding they
//! exchange correct values in both directions, unary and streaming; with protobuf off (polyglot,
//! positional) the same pair fails as the guide's docs/guide/schema-evolution.md documents.

use frpc::{ClientConfig, Context, Framing, ServerConfig, Status, StreamSender, Streaming};
use frpc_codegen_tests::{evolve_v1 as v1, evolve_v2 as v2};
use tokio::sync::mpsc;

/// The v2 server: reports every message it decoded, answers with v2 messages.
struct Server {
    seen: mpsc::UnboundedSender<v2::Profile>,
}

fn v2_profile(name: &str, level: v2::Level, age: u32) -> v2::Profile {
    v2::Profile {
        email: format!("{name}@example.com"),
        name: name.into(),
        level: level as i32,
        age,
        score: -0.0,
        nickname: format!("{name}-nick"),
    }
}

impl v2::Profiles for Server {
    async fn get(&self, _: &Context, request: v2::Lookup) -> Result<v2::Profile, Status> {
        Ok(v2_profile(&request.id, v2::Level::Basic, 30))
    }

    async fn update(&self, _: &Context, request: v2::Profile) -> Result<v2::Profile, Status> {
        let _ = self.seen.send(request.clone());
        Ok(v2::Profile {
            name: request.name.to_uppercase(),
            email: request.email,
            level: v2::Level::Enterprise as i32,
            age: request.age + 1,
            score: request.score,
            nickname: "new".into(),
        })
    }

    async fn watch(
        &self,
        _: &Context,
        request: v2::Lookup,
        outbound: StreamSender<v2::Profile>,
    ) -> Result<(), Status> {
        outbound
            .send(v2_profile(&request.id, v2::Level::Basic, 1))
            .await?;
        outbound
            .send(v2_profile("second", v2::Level::Enterprise, 2))
            .await?;
        Ok(())
    }

    async fn collect(&self, _: &Context, mut inbound: Streaming<v2::Profile>) -> Result<v2::Profile, Status> {
        let mut names = Vec::new();
        let mut age = 0;
        while let Some(profile) = inbound.message().await? {
            names.push(profile.name.clone());
            age += profile.age;
            let _ = self.seen.send(profile);
        }
        Ok(v2_profile(&names.join("+"), v2::Level::Pro, age))
    }
}

struct Running {
    client: v1::ProfilesClient,
    raw: frpc::Client,
    seen: mpsc::UnboundedReceiver<v2::Profile>,
}

/// What one side turns on.
#[derive(Debug, Clone, Copy)]
struct Side {
    extensions: bool,
    protobuf: bool,
}

const ON: Side = Side {
    extensions: true,
    protobuf: true,
};

/// A v2 server: its address and what its handlers decoded.
async fn serve(framing: Framing, side: Side) -> (std::net::SocketAddr, mpsc::UnboundedReceiver<v2::Profile>) {
    let (tx, seen) = mpsc::unbounded_channel();
    let mut config = ServerConfig::default();
    config.connection.framing = framing;
    config.extensions = side.extensions;
    config.protobuf = side.protobuf;
    let bound = frpc::Server::builder()
        .config(config)
        .add_service(v2::ProfilesServer::new(Server { seen: tx }))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    (addr, seen)
}

/// A v1 client, negotiation settled.
async fn connect(addr: std::net::SocketAddr, framing: Framing, side: Side) -> frpc::Client {
    let mut config = ClientConfig::default();
    config.connection.framing = framing;
    config.extensions = side.extensions;
    config.protobuf = side.protobuf;
    let raw = frpc::Client::connect_with(addr, config).await.unwrap();
    raw.negotiated().await;
    raw
}

/// A v2 server and a v1 client, protobuf on or off on the client's side.
async fn pair(framing: Framing, protobuf: bool) -> Running {
    let (addr, seen) = serve(framing, ON).await;
    let side = Side {
        extensions: true,
        protobuf,
    };
    let raw = connect(addr, framing, side).await;
    assert!(raw.extensions_accepted());
    assert_eq!(raw.protobuf_accepted(), protobuf);
    Running {
        client: v1::ProfilesClient::new(raw.clone()),
        raw,
        seen,
    }
}

/// Whether `client`'s calls and streams travel in protobuf, seen from the values: over
/// polyglot v1 reads v2's `email` as its `name`.
async fn speaks_protobuf<T: frpc::Caller>(client: &v1::ProfilesClient<T>) -> bool {
    let unary = client.get(v1::Lookup { id: "x".into() }).await.unwrap();
    let mut watch = client.watch(v1::Lookup { id: "x".into() }).await.unwrap();
    let streamed = watch.message().await.unwrap().unwrap();
    let protobuf = unary.name == "x";
    assert_eq!(streamed.name == "x", protobuf, "a stream and a call disagree");
    assert_eq!(
        (unary.name.as_str(), unary.email.as_str()),
        match protobuf {
            true => ("x", "x@example.com"),
            false => ("x@example.com", "x"),
        }
    );
    protobuf
}

/// The first call of a fresh connection, made before the server answered the extension
/// offer, goes in protobuf: it waits for the answer. It went in polyglot, positional, so v1's
/// `name` was read as v2's `email` (an adopter's probe, session 30: 199 first calls of 200).
/// A lazy channel's first call, made while it connects, too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_call_of_a_connection_goes_in_protobuf() {
    for framing in [Framing::Frisbee, Framing::Legacy] {
        let (addr, _seen) = serve(framing, ON).await;
        let mut config = ClientConfig::default();
        config.connection.framing = framing;
        for _ in 0..20 {
            let fresh = frpc::Client::connect_with(addr, config.clone()).await.unwrap();
            let client = v1::ProfilesClient::new(fresh);
            let reply = client.get(v1::Lookup { id: "x".into() }).await.unwrap();
            assert_eq!((reply.name.as_str(), framing), ("x", framing));
        }
        let endpoint = frpc::Endpoint::from(addr).framing(framing);
        let client = v1::ProfilesClient::new(endpoint.connect_lazy());
        let reply = client.get(v1::Lookup { id: "x".into() }).await.unwrap();
        assert_eq!((reply.name.as_str(), framing), ("x", framing), "a lazy channel");
    }
}

fn v1_profile(name: &str, level: v1::Level, age: u32) -> v1::Profile {
    v1::Profile {
        name: name.into(),
        email: format!("{name}@example.com"),
        level: level as i32,
        age,
        score: -0.0,
    }
}

const FRAMINGS: [Framing; 2] = [Framing::Frisbee, Framing::Legacy];

#[tokio::test]
async fn v1_client_and_v2_server_agree_over_protobuf() {
    for framing in FRAMINGS {
        let mut running = pair(framing, true).await;
        let client = &running.client;

        // v2 → v1: reordered fields land by number, the added field is skipped.
        let got = client.get(v1::Lookup { id: "ann".into() }).await.unwrap();
        assert_eq!(got, v1_profile("ann", v1::Level::Basic, 30), "{framing:?}");
        assert!(got.score.is_sign_negative(), "-0.0 arrives as -0.0");

        // v1 → v2 and back: the added field reads as its default, the added enum value
        // reaches v1 as its number (prost keeps unknown enum values).
        let got = client
            .update(v1_profile("bob", v1::Level::Pro, 41))
            .await
            .unwrap();
        let seen = running.seen.recv().await.unwrap();
        assert_eq!(
            seen,
            v2::Profile {
                nickname: String::new(),
                ..v2_profile("bob", v2::Level::Pro, 41)
            }
        );
        assert_eq!(
            (got.name.as_str(), got.email.as_str()),
            ("BOB", "bob@example.com")
        );
        assert_eq!((got.level, got.age), (v2::Level::Enterprise as i32, 42));
        assert!(seen.score.is_sign_negative() && got.score.is_sign_negative());
        assert!(v1::Level::try_from(got.level).is_err(), "3 is not a v1 level");

        // Server streaming.
        let mut watch = client.watch(v1::Lookup { id: "cy".into() }).await.unwrap();
        let first = watch.message().await.unwrap().unwrap();
        assert_eq!(first, v1_profile("cy", v1::Level::Basic, 1));
        assert!(first.score.is_sign_negative());
        let second = watch.message().await.unwrap().unwrap();
        assert_eq!((second.name.as_str(), second.level), ("second", 3));
        assert_eq!(second.email, "second@example.com");
        assert!(watch.message().await.unwrap().is_none());

        // Client streaming.
        let mut collect = client.collect().await.unwrap();
        collect.send(v1_profile("d", v1::Level::Basic, 5)).await.unwrap();
        collect.send(v1_profile("e", v1::Level::Pro, 6)).await.unwrap();
        let got = collect.close_and_recv().await.unwrap();
        assert_eq!(got, v1_profile("d+e", v1::Level::Pro, 11));
        for (name, age) in [("d", 5), ("e", 6)] {
            let seen = running.seen.recv().await.unwrap();
            assert_eq!(
                (seen.name.as_str(), seen.email.as_str()),
                (name, &*format!("{name}@example.com"))
            );
            assert_eq!((seen.age, seen.nickname.as_str()), (age, ""));
            assert!(seen.score.is_sign_negative());
        }
        assert!(running.raw.protobuf_accepted());
    }
}

/// The same pair with protobuf off: polyglot is positional, so v1 reads v2's `email` as its
/// `name` and the other way round (silently), and v2 cannot read v1's shorter `Profile` at all.
#[tokio::test]
async fn over_polyglot_the_same_pair_breaks() {
    for framing in FRAMINGS {
        let running = pair(framing, false).await;
        let client = &running.client;

        // v2 → v1: name and email swapped, no error.
        let got = client.get(v1::Lookup { id: "ann".into() }).await.unwrap();
        assert_eq!(
            (got.name.as_str(), got.email.as_str()),
            ("ann@example.com", "ann"),
            "{framing:?}"
        );

        // v1 → v2: the request lacks v2's added field.
        let err = client
            .update(v1_profile("bob", v1::Level::Pro, 41))
            .await
            .unwrap_err();
        let status = err.status().expect("an error reply");
        assert!(
            status.message().contains("cannot decode the request"),
            "{status:?}"
        );
        assert!(status.message().contains("truncated"), "{status:?}");

        // Streams: the swap again.
        let mut watch = client.watch(v1::Lookup { id: "cy".into() }).await.unwrap();
        let first = watch.message().await.unwrap().unwrap();
        assert_eq!(
            (first.name.as_str(), first.email.as_str()),
            ("cy@example.com", "cy")
        );
    }
}

/// Protobuf only when both sides have it on (and extensions on): every other pairing speaks
/// polyglot, and says so.
#[tokio::test]
async fn protobuf_is_negotiated_per_connection() {
    let sides = [
        ON,
        Side {
            extensions: true,
            protobuf: false,
        },
        Side {
            extensions: false,
            protobuf: true,
        },
    ];
    for framing in FRAMINGS {
        for server in sides {
            let (addr, _seen) = serve(framing, server).await;
            for client in sides {
                let raw = connect(addr, framing, client).await;
                let both = |f: fn(&Side) -> bool| f(&server) && f(&client);
                let expected = both(|s| s.extensions) && both(|s| s.protobuf);
                let what = format!("{framing:?}, server {server:?}, client {client:?}");
                assert_eq!(raw.extensions_accepted(), both(|s| s.extensions), "{what}");
                assert_eq!(raw.protobuf_accepted(), expected, "{what}");
                let client = v1::ProfilesClient::new(raw);
                assert_eq!(speaks_protobuf(&client).await, expected, "{what}");
            }
        }
    }
}

/// One server, a polyglot client and a protobuf client at once, with streams open on both:
/// each connection keeps its own encoding.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_server_serves_polyglot_and_protobuf_clients_at_once() {
    for framing in FRAMINGS {
        let (addr, _seen) = serve(framing, ON).await;
        let plain_side = Side {
            extensions: true,
            protobuf: false,
        };
        let plain = v1::ProfilesClient::new(connect(addr, framing, plain_side).await);
        let proto = v1::ProfilesClient::new(connect(addr, framing, ON).await);
        // Streams opened on both before either reads.
        let mut plain_watch = plain.watch(v1::Lookup { id: "p".into() }).await.unwrap();
        let mut proto_watch = proto.watch(v1::Lookup { id: "q".into() }).await.unwrap();
        let mut calls = tokio::task::JoinSet::new();
        for i in 0..20 {
            let (plain, proto) = (plain.clone(), proto.clone());
            calls.spawn(async move {
                let id = format!("n{i}");
                let (a, b) = tokio::join!(
                    plain.get(v1::Lookup { id: id.clone() }),
                    proto.get(v1::Lookup { id: id.clone() })
                );
                let (a, b) = (a.unwrap(), b.unwrap());
                assert_eq!((a.name, a.email), (format!("{id}@example.com"), id.clone()));
                assert_eq!((b.name, b.email), (id.clone(), format!("{id}@example.com")));
            });
        }
        while let Some(done) = calls.join_next().await {
            done.unwrap();
        }
        let a = plain_watch.message().await.unwrap().unwrap();
        let b = proto_watch.message().await.unwrap().unwrap();
        assert_eq!(
            (a.name.as_str(), b.name.as_str()),
            ("p@example.com", "q"),
            "{framing:?}"
        );
        assert!(speaks_protobuf(&proto).await);
        assert!(!speaks_protobuf(&plain).await);
    }
}

/// Channels pick the encoding where the connection is known: a one-endpoint channel and a
/// channel balanced over two v2 servers speak protobuf; balanced over a server with protobuf and
/// one without, unary calls go in polyglot (which both read), so no call fails.
#[tokio::test]
async fn channels_speak_protobuf_where_their_connections_negotiated_it() {
    let off = Side {
        extensions: true,
        protobuf: false,
    };
    for framing in FRAMINGS {
        let endpoint = |addr| frpc::Endpoint::from(addr).framing(framing);
        let (a, _seen_a) = serve(framing, ON).await;
        let (b, _seen_b) = serve(framing, ON).await;
        let (plain, _seen_plain) = serve(framing, off).await;

        let one = v1::ProfilesClient::new(endpoint(a).connect().await.unwrap());
        assert!(speaks_protobuf(&one).await, "{framing:?}");

        let both = frpc::Channel::balance_list([endpoint(a), endpoint(b)]);
        both.connected(2).await;
        let both = v1::ProfilesClient::new(both);
        for _ in 0..4 {
            assert!(speaks_protobuf(&both).await, "{framing:?}");
        }

        let mixed = frpc::Channel::balance_list([endpoint(a), endpoint(plain)]);
        mixed.connected(2).await;
        let mixed = v1::ProfilesClient::new(mixed);
        for _ in 0..8 {
            let got = mixed.get(v1::Lookup { id: "x".into() }).await.unwrap();
            // Polyglot: v1 reads v2's `email` as its `name`.
            assert_eq!((got.name.as_str(), got.email.as_str()), ("x@example.com", "x"));
        }
    }
}
