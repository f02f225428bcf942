//! The generated types decode every message Go fRPC put on the wire in the captures
//! (`testdata/vectors/capture-frisbee-*.json`) to the expected values, and re-encode them to
//! the same bytes.

use frpc::codegen::{Bytes, Decoder, Envelope, Message, decode_envelope};
use frpc_codegen_tests::capture::{Data, Request, Response, SearchResponse, Test, request, search_response};

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
    let req = |m: &str, corpus: request::Corpus| {
        Decoded::Request(Request {
            message: m.into(),
            corpus: corpus as i32,
        })
    };
    let resp = |m: &str, test: Option<Data>| {
        Decoded::Response(Response {
            message: m.into(),
            test,
        })
    };
    let data = |m: &str, t: Test| Data {
        message: m.into(),
        checker: t as i32,
    };
    let eof = || Decoded::Error("EOF".into());
    vec![
        // unary Echo (the first request: `Request { message: "hi", corpus: WEB }`)
        req("hi", request::Corpus::Web),
        resp("hi", Some(data("d", Test::Monkey))),
        req("", request::Corpus::Universal),
        resp("", Some(data("d", Test::Monkey))),
        // unary Testy → error
        Decoded::Search(SearchResponse {
            results: vec![search_response::Result {
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
        req("x", request::Corpus::Universal),
        resp("x", None),
        req("y", request::Corpus::Universal),
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
    use frpc_codegen_tests::capture::{StockPrices, StockPricesWrapper};
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
