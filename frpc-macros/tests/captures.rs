//! The Rust-first capture types decode every message Go fRPC put on the wire in the captures
//! (`testdata/vectors/capture-frisbee-*.json`) to the expected values and re-encode them to the
//! same bytes (mirrors `codegen-tests/tests/captures.rs`); they encode like the types
//! frpc-codegen generates from `capture.proto`; the service has Go's operation numbers.

mod common;

use common::{
    Corpus, Data, EchoService, EchoServiceServer, Request, Response, SearchResponse, SearchResult,
    StockPrices, StockPricesWrapper, Test,
};
use frpc::codegen::{Bytes, Decoder, Envelope, Message, decode_envelope};
use frpc::{Context, Status, StreamSender, Streaming};
use frpc_codegen_tests::capture as generated;

/// One decoded packet content.
#[derive(Debug, PartialEq)]
enum Decoded {
    /// A stream open: `09 <op>`.
    Open(u16),
    Request(Request),
    Response(Response),
    Search(SearchResponse),
    Data(Data),
    Error(String),
}

/// Decodes `content` as `M` and checks that re-encoding gives the same bytes.
fn decode<M: Message + Clone>(content: &[u8], wrap: fn(M) -> Decoded) -> Decoded {
    let bytes = Bytes::copy_from_slice(content);
    match decode_envelope::<M>(&mut Decoder::from_bytes(&bytes)).expect("decodes") {
        Envelope::Message(m) => {
            assert_eq!(
                m.polyglot_len(),
                bytes.len(),
                "polyglot_len of {}",
                hex::encode(content)
            );
            assert_eq!(hex::encode(m.to_polyglot()), hex::encode(content), "re-encoding");
            wrap(m)
        }
        Envelope::Error(text) => {
            assert_eq!(
                hex::encode(frpc::wire::polyglot::error_to_bytes(&text)),
                hex::encode(content)
            );
            Decoded::Error(text)
        }
    }
}

fn replay(file: &'static str) -> Vec<Decoded> {
    let capture = frpc_testdata::Capture::load(file);
    let mut out = Vec::new();
    for scenario in &capture.scenarios {
        // Stream id → method op, from the `09 <op>` open.
        let mut streams = std::collections::HashMap::new();
        for packet in &scenario.packets {
            let (op, id, content, to_server) =
                (packet.op, packet.id, &packet.content[..], packet.from_client);
            if op < 2 || content.is_empty() {
                continue; // PING, PONG, stream close
            }
            let method = if op == 2 {
                if content[0] == 0x09 {
                    let method = Decoder::new(content).u16().unwrap();
                    streams.insert(id, method);
                    out.push(Decoded::Open(method));
                    continue;
                }
                streams[&id]
            } else {
                op
            };
            out.push(match (method, to_server) {
                (10 | 11, true) => decode(content, Decoded::Request),
                (10 | 11 | 13 | 14, false) => decode(content, Decoded::Response),
                (12 | 13, true) => decode(content, Decoded::Search),
                (12, false) => decode(content, Decoded::Search),
                (14, true) => decode(content, Decoded::Data),
                other => panic!("unexpected packet {other:?}"),
            });
        }
    }
    out
}

fn expected() -> Vec<Decoded> {
    let req = |m: &str, corpus: Corpus| {
        Decoded::Request(Request {
            message: m.into(),
            corpus,
        })
    };
    let resp = |m: &str, test: Option<Data>| {
        Decoded::Response(Response {
            message: m.into(),
            test,
        })
    };
    let data = |m: &str, checker: Test| Data {
        message: m.into(),
        checker,
    };
    let eof = || Decoded::Error("EOF".into());
    vec![
        // unary Echo (the first request: `Request { message: "hi", corpus: WEB }`)
        req("hi", Corpus::Web),
        resp("hi", Some(data("d", Test::Monkey))),
        req("", Corpus::Universal),
        resp("", Some(data("d", Test::Monkey))),
        // unary Testy → error
        Decoded::Search(SearchResponse {
            results: vec![SearchResult {
                url: "u".into(),
                ..Default::default()
            }],
            snippets: vec!["a".into()],
            ..Default::default()
        }),
        Decoded::Error("boom".into()),
        // server streaming Search
        Decoded::Open(13),
        Decoded::Search(SearchResponse::default()),
        resp("r0", None),
        resp("r1", None),
        eof(),
        Decoded::Open(13),
        Decoded::Search(SearchResponse {
            snippets: vec!["fail".into()],
            ..Default::default()
        }),
        resp("partial", None),
        Decoded::Error("search failed".into()),
        eof(),
        // client streaming Upload
        Decoded::Open(14),
        Decoded::Data(data("a", Test::Potato)),
        Decoded::Data(data("b", Test::Monkey)),
        eof(),
        resp("got 2", None),
        eof(),
        eof(),
        // bidi EchoStream
        Decoded::Open(11),
        req("x", Corpus::Universal),
        resp("x", None),
        req("y", Corpus::Universal),
        resp("y", None),
        eof(),
        eof(),
    ]
}

#[test]
fn frisbee_v0_11_capture() {
    assert_eq!(replay("capture-frisbee-v0.11.json"), expected());
}

#[test]
fn frisbee_v0_10_capture() {
    assert_eq!(replay("capture-frisbee-v0.10.json"), expected());
}

/// Go writes maps in random order: compare decoded content, not bytes.
#[test]
fn map_message_decodes_by_content() {
    // StockPricesWrapper{sPrices: [{prices: {"a": 1.5, "b": -2}}, {}]}, "b" written first.
    let mut wire = hex::decode("0800").unwrap(); // flags
    wire.extend(hex::decode("01030a02").unwrap()); // slice of 2 Any
    wire.extend(hex::decode("0800").unwrap()); // first element: flags
    wire.extend(hex::decode("02050f0a02").unwrap()); // map<string, f64> of 2
    wire.extend(hex::decode("050a0162").unwrap());
    wire.extend(hex::decode("0fc000000000000000").unwrap());
    wire.extend(hex::decode("050a0161").unwrap());
    wire.extend(hex::decode("0f3ff8000000000000").unwrap());
    wire.extend(hex::decode("0800").unwrap());
    wire.extend(hex::decode("02050f0a00").unwrap());
    let decoded = StockPricesWrapper::from_polyglot(&Bytes::from(wire.clone())).unwrap();
    let expected = StockPricesWrapper {
        s_prices: vec![
            StockPrices {
                prices: [("a".to_string(), 1.5), ("b".to_string(), -2.0)]
                    .into_iter()
                    .collect(),
            },
            StockPrices::default(),
        ],
    };
    assert_eq!(decoded, expected);
    assert_eq!(expected.polyglot_len(), wire.len());
    let again = StockPricesWrapper::from_polyglot(&expected.to_polyglot()).unwrap();
    assert_eq!(again, expected);
}

/// An unknown enum index is a decode error for a field held as the Rust enum, which has no
/// room for it; generated types (an `i32`) keep it (see `tests/hostile.rs`).
#[test]
fn unknown_enum_index_is_an_error() {
    // Data{message: "", checker: index 2}: `Test` has two values.
    let wire = Bytes::from(hex::decode("0800050a000a02").unwrap());
    let err = Data::from_polyglot(&wire).unwrap_err();
    assert!(err.to_string().contains("Test"), "{err}");
    assert_eq!(generated::Data::from_polyglot(&wire).unwrap().checker, 2);
}

/// The Rust-first types write exactly the bytes of the types generated from `capture.proto`.
#[test]
fn same_bytes_as_generated_types() {
    fn same(rust_first: &impl Message, generated: &impl Message) {
        assert_eq!(
            hex::encode(rust_first.to_polyglot()),
            hex::encode(generated.to_polyglot())
        );
        assert_eq!(rust_first.polyglot_len(), generated.polyglot_len());
    }
    for corpus in [Corpus::Universal, Corpus::Web, Corpus::Video] {
        same(
            &Request {
                message: "hi".into(),
                corpus,
            },
            &generated::Request {
                message: "hi".into(),
                corpus: i32::from(corpus),
            },
        );
    }
    same(
        &Response {
            message: "r".into(),
            test: Some(Data {
                message: "d".into(),
                checker: Test::Monkey,
            }),
        },
        &generated::Response {
            message: "r".into(),
            test: Some(generated::Data {
                message: "d".into(),
                checker: generated::Test::Monkey as i32,
            }),
        },
    );
    same(&Response::default(), &generated::Response::default());
    same(
        &SearchResponse {
            results: vec![SearchResult {
                url: "u".into(),
                title: "t".into(),
                snippets: vec!["s".into()],
            }],
            results2: vec![SearchResult::default(), SearchResult::default()],
            snippets: vec!["a".into(), "".into()],
            snippets2: vec![],
        },
        &generated::SearchResponse {
            results: vec![generated::search_response::Result {
                url: "u".into(),
                title: "t".into(),
                snippets: vec!["s".into()],
            }],
            results2: vec![Default::default(), Default::default()],
            snippets: vec!["a".into(), "".into()],
            snippets2: vec![],
        },
    );
    // One map entry, so the order cannot differ.
    same(
        &StockPricesWrapper {
            s_prices: vec![
                StockPrices {
                    prices: [("x".to_string(), 2.5)].into_iter().collect(),
                },
                StockPrices::default(),
            ],
        },
        &generated::StockPricesWrapper {
            s_prices: vec![
                generated::StockPrices {
                    prices: [("x".to_string(), 2.5)].into_iter().collect(),
                },
                generated::StockPrices::default(),
            ],
        },
    );
}

struct Nothing;

impl EchoService for Nothing {
    async fn echo(&self, _: &Context, _: Request) -> Result<Response, Status> {
        Ok(Response::default())
    }
    async fn echo_stream(
        &self,
        _: &Context,
        _: Streaming<Request>,
        _: StreamSender<Response>,
    ) -> Result<(), Status> {
        Ok(())
    }
    async fn testy(&self, _: &Context, _: SearchResponse) -> Result<StockPricesWrapper, Status> {
        Ok(StockPricesWrapper::default())
    }
    async fn search(&self, _: &Context, _: SearchResponse, _: StreamSender<Response>) -> Result<(), Status> {
        Ok(())
    }
    async fn upload(&self, _: &Context, _: Streaming<Data>) -> Result<Response, Status> {
        Ok(Response::default())
    }
}

/// Operation numbers from 10 in declaration order, as Go numbers `capture.proto`, and the
/// same method table as the generated server.
#[test]
fn ops_match_go_and_codegen() {
    use frpc::codegen::{MethodKind, Service};
    use generated::echo_service as gen_ops;
    assert_eq!(
        (
            common::echo_service::ECHO,
            common::echo_service::ECHO_STREAM,
            common::echo_service::TESTY,
            common::echo_service::SEARCH,
            common::echo_service::UPLOAD
        ),
        (10, 11, 12, 13, 14)
    );
    assert_eq!(
        (
            gen_ops::ECHO,
            gen_ops::ECHO_STREAM,
            gen_ops::TESTY,
            gen_ops::SEARCH,
            gen_ops::UPLOAD
        ),
        (10, 11, 12, 13, 14)
    );
    let table = |s: &dyn Service| {
        s.methods()
            .iter()
            .map(|m| (m.name, m.op, m.kind))
            .collect::<Vec<_>>()
    };
    let server = EchoServiceServer::new(Nothing);
    assert_eq!(server.name(), "capture.EchoService");
    assert_eq!(
        table(&server),
        [
            ("Echo", 10, MethodKind::Unary),
            ("EchoStream", 11, MethodKind::Bidi),
            ("Testy", 12, MethodKind::Unary),
            ("Search", 13, MethodKind::ServerStreaming),
            ("Upload", 14, MethodKind::ClientStreaming),
        ]
    );
    struct Gen;
    impl generated::EchoService for Gen {
        async fn echo(&self, _: &Context, _: generated::Request) -> Result<generated::Response, Status> {
            Ok(Default::default())
        }
        async fn echo_stream(
            &self,
            _: &Context,
            _: Streaming<generated::Request>,
            _: StreamSender<generated::Response>,
        ) -> Result<(), Status> {
            Ok(())
        }
        async fn testy(
            &self,
            _: &Context,
            _: generated::SearchResponse,
        ) -> Result<generated::StockPricesWrapper, Status> {
            Ok(Default::default())
        }
        async fn search(
            &self,
            _: &Context,
            _: generated::SearchResponse,
            _: StreamSender<generated::Response>,
        ) -> Result<(), Status> {
            Ok(())
        }
        async fn upload(
            &self,
            _: &Context,
            _: Streaming<generated::Data>,
        ) -> Result<generated::Response, Status> {
            Ok(Default::default())
        }
    }
    let generated_server = generated::EchoServiceServer::new(Gen);
    assert_eq!(table(&server), table(&generated_server));
    assert_eq!(server.name(), generated_server.name());
}
