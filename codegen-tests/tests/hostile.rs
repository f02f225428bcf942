//! Hostile peers against generated code: nesting that would overflow the stack, and enum
//! indices from a newer .proto, which must come back out unchanged.

use frpc::codegen::{Bytes, DecodeError, Decoder, EnumIndex, Envelope, Message, decode_envelope};
use frpc_codegen_tests::hostile::{Chain, Dense, Enums, Gappy, Node};

/// In a thread with a tokio worker's 2 MiB stack.
fn small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap()
}

/// `depth` Nodes, each the only child of the one before: `08 00 01 03 0A 01` …, then an empty
/// slice `01 03 0A 00`.
fn nodes(depth: usize) -> Bytes {
    let mut out = Vec::new();
    for level in 1..=depth {
        let children = u8::from(level < depth);
        out.extend_from_slice(&[0x08, 0x00, 0x01, 0x03, 0x0a, children]);
    }
    out.into()
}

/// `depth` Chains, each the `next` of the one before: `08 00` …, then `00` (no next).
fn chains(depth: usize) -> Bytes {
    let mut out = [0x08, 0x00].repeat(depth);
    out.push(0x00);
    out.into()
}

fn node_depth(n: &Node) -> usize {
    1 + n.children.first().map_or(0, node_depth)
}

fn chain_depth(c: &Chain) -> usize {
    1 + c.next.as_deref().map_or(0, chain_depth)
}

const TOO_DEEP: DecodeError = DecodeError::TooDeep { max: 100 };

#[test]
fn ten_thousand_levels_fail_cleanly_on_a_small_stack() {
    let (node, chain, envelope) = small_stack(|| {
        (
            Node::from_polyglot(&nodes(10_000)),
            Chain::from_polyglot(&chains(10_000)),
            // What the server runtime calls on a request.
            decode_envelope::<Node>(&mut Decoder::from_bytes(&nodes(10_000))).map(|_| ()),
        )
    });
    assert_eq!(node, Err(TOO_DEEP));
    assert_eq!(chain, Err(TOO_DEEP));
    assert_eq!(envelope, Err(TOO_DEEP));
}

#[test]
fn a_hundred_levels_decode() {
    let (node, chain) = small_stack(|| {
        (
            Node::from_polyglot(&nodes(100)),
            Chain::from_polyglot(&chains(100)),
        )
    });
    let node = node.unwrap();
    assert_eq!(node_depth(&node), 100);
    assert_eq!(node.to_polyglot(), nodes(100));
    assert_eq!(chain_depth(&chain.unwrap()), 100);
    assert_eq!(Node::from_polyglot(&nodes(101)), Err(TOO_DEEP));
    assert_eq!(Chain::from_polyglot(&chains(101)), Err(TOO_DEEP));
}

#[test]
fn depth_is_configurable() {
    let depth = small_stack(|| {
        let input = nodes(300);
        let mut dec = Decoder::from_bytes(&input).with_max_depth(300);
        match decode_envelope::<Node>(&mut dec) {
            Ok(Envelope::Message(n)) => node_depth(&n),
            other => panic!("{other:?}"),
        }
    });
    assert_eq!(depth, 300);
    let input = nodes(10);
    let mut dec = Decoder::from_bytes(&input).with_max_depth(9);
    assert_eq!(
        decode_envelope::<Node>(&mut dec),
        Err(DecodeError::TooDeep { max: 9 })
    );
}

/// `Enums` with every field holding an index the enums do not declare, as a newer Go peer
/// writes it: plain values (dense, gappy), repeated (denses, gappies), maps (by_name, by_num).
fn unknown_enums_bytes() -> Vec<u8> {
    let mut b = vec![0x08, 0x00];
    b.extend_from_slice(&[0x0a, 0x03]); // dense: index 3 (Dense has 3 values)
    b.extend_from_slice(&[0x0a, 0x07]); // gappy: index 7 (Gappy has 5)
    b.extend_from_slice(&[
        0x01, 0x0a, 0x0a, 0x03, 0x0a, 0x01, 0x0a, 0x09, 0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f,
    ]);
    b.extend_from_slice(&[0x01, 0x0a, 0x0a, 0x03, 0x0a, 0x05, 0x0a, 0x02, 0x0a, 0x80, 0x01]);
    // by_name: {"x": index 6}
    b.extend_from_slice(&[0x02, 0x05, 0x0a, 0x0a, 0x01, 0x05, 0x0a, 0x01, b'x', 0x0a, 0x06]);
    // by_num: {-1: index 4}
    b.extend_from_slice(&[0x02, 0x0c, 0x0a, 0x0a, 0x01, 0x0c, 0x01, 0x0a, 0x04]);
    b
}

#[test]
fn unknown_enum_indices_round_trip_exactly() {
    let input = Bytes::from(unknown_enums_bytes());
    let m = Enums::from_polyglot(&input).unwrap();
    // Dense: the number is the index.
    assert_eq!(m.dense, 3);
    assert_eq!(m.denses, [1, 9, -1]); // index u32::MAX is the number -1
    assert_eq!(m.by_num.get(&-1), Some(&4));
    // Gappy declares 0, 5, 2, 5 (alias), -1: unknown indices 5, 6, 7, … are the undeclared
    // numbers 1, 3, 4, …
    assert_eq!(m.gappy, 4);
    assert_eq!(m.gappies[0], 1);
    assert_eq!(m.gappies[1], 2); // a declared index keeps its number
    assert_eq!(m.by_name["x"], 3);
    for n in [m.dense, m.gappy] {
        assert!(Dense::try_from(n).is_err() || Gappy::try_from(n).is_err());
    }
    assert_eq!(m.to_polyglot(), input, "re-encoded bytes differ");
}

#[test]
fn unknown_numbers_never_collide_with_declared_ones() {
    let declared: Vec<i32> = [0, 5, 2, -1].into();
    for index in (5..1000).chain([u32::MAX - 5, 1 << 31]) {
        let number = Gappy::from_index(index).unwrap();
        assert!(!declared.contains(&number), "index {index} → declared {number}");
        assert_eq!(Gappy::to_index(number), index);
    }
    for index in 0..1000 {
        assert_eq!(Dense::from_index(index), Some(index as i32));
        assert_eq!(Dense::to_index(index as i32), index);
    }
    // Declared values are unchanged: an alias is written with its first index.
    assert_eq!([0, 5, 2, -1].map(Gappy::to_index), [0, 1, 2, 4]);
    assert_eq!(
        (0..5).map(Gappy::from_index).collect::<Vec<_>>(),
        [0, 5, 2, 5, -1].map(Some)
    );
}

mod over_sockets {
    //! The decode limits where users configure things (`ConnectionConfig::decode`, in
    //! `ServerConfig` and `ClientConfig`): a Go peer (Go accepts any depth) sending 1,000-deep
    //! data is refused by default and served once the user raises the depth limit, on the
    //! server and on the client, in both framings.

    use std::time::Duration;

    use frpc::wire::{Framing, Packet, PacketCodec, op};
    use frpc::{ClientConfig, Code, Context, ServerConfig, Status};
    use frpc_codegen_tests::hostile::{Chain, Deep, DeepClient, DeepServer};
    use futures_util::{SinkExt, StreamExt};
    use tokio::net::{TcpListener, TcpStream};
    use tokio_util::codec::Framed;

    use super::{Decoder, Envelope, chain_depth, chains, decode_envelope};

    struct Echo;

    impl Deep for Echo {
        async fn echo(&self, _: &Context, chain: Chain) -> Result<Chain, Status> {
            Ok(chain)
        }
    }

    const FRAMINGS: [Framing; 2] = [Framing::Frisbee, Framing::Legacy];
    /// The Deep service's Echo.
    const ECHO: u16 = 10;

    async fn next(raw: &mut Framed<TcpStream, PacketCodec>) -> Packet {
        loop {
            let packet = tokio::time::timeout(Duration::from_secs(10), raw.next())
                .await
                .expect("a packet")
                .expect("open")
                .unwrap();
            if packet.op > op::PONG {
                return packet;
            }
        }
    }

    /// A raw peer (as a Go client would) sends a 1,000-deep chain to a server with `max_depth`.
    async fn send_deep_chain(framing: Framing, max_depth: Option<u32>) -> Packet {
        let mut config = ServerConfig::default();
        config.connection.framing = framing;
        if let Some(depth) = max_depth {
            config.connection.decode.max_depth = depth;
        }
        let bound = frpc::Server::builder()
            .config(config)
            .add_service(DeepServer::new(Echo))
            .bind("127.0.0.1:0")
            .await
            .unwrap();
        let addr = bound.local_addr();
        tokio::spawn(bound.serve());
        let mut raw = Framed::new(TcpStream::connect(addr).await.unwrap(), PacketCodec::new(framing));
        raw.send(Packet::new(1, ECHO, chains(1000))).await.unwrap();
        next(&mut raw).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_server_serves_deep_data_once_allowed() {
        for framing in FRAMINGS {
            let refused = send_deep_chain(framing, None).await;
            // A polyglot error (Go clients see the text).
            assert_eq!(refused.content[0], 0x06, "{framing:?}");
            assert!(String::from_utf8_lossy(&refused.content).contains("nested deeper than 100"));
            let served = send_deep_chain(framing, Some(1000)).await;
            let mut decoder = Decoder::from_bytes(&served.content).with_max_depth(1000);
            let Ok(Envelope::Message(chain)) = decode_envelope::<Chain>(&mut decoder) else {
                panic!("{framing:?}: the echo is the chain");
            };
            assert_eq!(chain_depth(&chain), 1000, "{framing:?}");
        }
    }

    /// A raw server (as a Go server would) answers every call with a 1,000-deep chain.
    async fn deep_server(framing: Framing) -> std::net::SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut raw = Framed::new(stream, PacketCodec::new(framing));
                    while let Some(Ok(packet)) = raw.next().await {
                        let reply = match packet.op {
                            op::PING => Packet::pong(),
                            ECHO => Packet::new(packet.id, ECHO, chains(1000)),
                            _ => continue,
                        };
                        if raw.send(reply).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        addr
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_client_reads_deep_data_once_allowed() {
        for framing in FRAMINGS {
            let addr = deep_server(framing).await;
            let mut config = ClientConfig::default();
            config.connection.framing = framing;
            let client = DeepClient::new(frpc::Client::connect_with(addr, config.clone()).await.unwrap());
            let err = client.echo(Chain::default()).await.unwrap_err();
            assert_eq!(err.code(), Code::Internal, "{err}");
            assert!(err.to_string().contains("nested deeper than 100"), "{err}");
            config.connection.decode.max_depth = 1000;
            let client = DeepClient::new(frpc::Client::connect_with(addr, config).await.unwrap());
            let chain = client.echo(Chain::default()).await.unwrap();
            assert_eq!(chain_depth(&chain), 1000, "{framing:?}");
        }
    }
}
