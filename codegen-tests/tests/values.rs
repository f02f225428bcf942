//! Floating-point values survive every path exactly (`proto/values/values.proto`): -0.0,
//! infinities and NaN payloads in singular, optional, repeated (packed and not), map, nested,
//! repeated-message, oneof and wrapper fields, in both encodings, and between two frpc peers
//! (protobuf negotiated) on unary calls and every kind of stream, both directions.
//!
//! frpc's protobuf bytes equal what Go's protobuf library writes for the same values: the
//! vectors in `tests/vectors/values.json` were written by `interop/go/pbvectors` (a Go program
//! on google.golang.org/protobuf); `go_writes_the_checked_in_vectors` runs it again when Go is
//! installed (`UPDATE_VECTORS=1` rewrites the file).

use std::collections::HashMap;
use std::path::PathBuf;

use frpc::codegen::{Bytes, Message};
use frpc::{Context, Status, StreamSender, Streaming};
use frpc_codegen_tests::values::floats::Pick;
use frpc_codegen_tests::values::{Floats, Point, ValuesService, ValuesServiceClient, ValuesServiceServer};
use proptest::collection::{hash_map, vec};
use proptest::prelude::*;

const NEG: f64 = -0.0;
const NEG32: f32 = -0.0;

/// A named value, with the same value in protojson for the Go program.
struct Case {
    name: &'static str,
    json: &'static str,
    value: Floats,
}

fn point(x: f64, y: f32) -> Point {
    Point { x, y }
}

fn cases() -> Vec<Case> {
    let case = |name, json, value| Case { name, json, value };
    vec![
        case("zero", "{}", Floats::default()),
        case(
            "plain",
            r#"{"d": 1.5, "f": -2.25, "i": -3, "s": "hi"}"#,
            Floats {
                d: 1.5,
                f: -2.25,
                i: -3,
                s: "hi".into(),
                ..Default::default()
            },
        ),
        case(
            "singular",
            r#"{"d": -0, "f": -0}"#,
            Floats {
                d: NEG,
                f: NEG32,
                ..Default::default()
            },
        ),
        case(
            "optional",
            r#"{"od": -0, "of": 0}"#,
            Floats {
                od: Some(NEG),
                of: Some(0.0),
                ..Default::default()
            },
        ),
        case(
            "repeated",
            r#"{"rd": [-0, 1.5, 0], "rf": [-0, 0]}"#,
            Floats {
                rd: vec![NEG, 1.5, 0.0],
                rf: vec![NEG32, 0.0],
                ..Default::default()
            },
        ),
        case(
            "maps",
            r#"{"md": {"a": -0}, "mf": {"0": -0}}"#,
            Floats {
                md: HashMap::from([("a".to_string(), NEG)]),
                mf: HashMap::from([(0, NEG32)]),
                ..Default::default()
            },
        ),
        case(
            "nested",
            r#"{"point": {"x": -0, "y": -0}, "points": [{"x": -0}, {"y": -0}, {}], "mp": {"k": {"x": -0}}}"#,
            Floats {
                point: Some(point(NEG, NEG32)),
                points: vec![point(NEG, 0.0), point(0.0, NEG32), point(0.0, 0.0)],
                mp: HashMap::from([("k".to_string(), point(NEG, 0.0))]),
                ..Default::default()
            },
        ),
        case(
            "oneof double",
            r#"{"pd": -0}"#,
            Floats {
                pick: Some(Pick::Pd(NEG)),
                ..Default::default()
            },
        ),
        case(
            "oneof float",
            r#"{"pf": 0}"#,
            Floats {
                pick: Some(Pick::Pf(0.0)),
                ..Default::default()
            },
        ),
        case(
            "oneof message",
            r#"{"pp": {"x": -0}}"#,
            Floats {
                pick: Some(Pick::Pp(point(NEG, 0.0))),
                ..Default::default()
            },
        ),
        case(
            "wrappers",
            r#"{"wd": -0, "wf": 0}"#,
            Floats {
                wd: Some(NEG),
                wf: Some(0.0),
                ..Default::default()
            },
        ),
        case(
            "infinities",
            r#"{"d": "-Infinity", "f": "Infinity", "rd": ["Infinity", -0], "point": {"y": "-Infinity"}}"#,
            Floats {
                d: f64::NEG_INFINITY,
                f: f32::INFINITY,
                rd: vec![f64::INFINITY, NEG],
                point: Some(point(0.0, f32::NEG_INFINITY)),
                ..Default::default()
            },
        ),
    ]
}

fn protobuf(value: &Floats) -> Vec<u8> {
    let mut buf = Vec::with_capacity(value.protobuf_len());
    value.encode_protobuf(&mut buf);
    assert_eq!(buf.len(), value.protobuf_len(), "protobuf_len");
    buf
}

/// Equal to the bit: the polyglot encoding writes every float's bits, and the values compared
/// here have maps of at most one entry (so their order is fixed).
fn assert_same_bits(a: &Floats, b: &Floats, what: &str) {
    assert_eq!(a.to_polyglot(), b.to_polyglot(), "{what}: {a:?} vs {b:?}");
}

fn vectors_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/values.json")
}

/// The checked-in vectors: `name → hex`.
fn vectors() -> HashMap<String, String> {
    let text = std::fs::read_to_string(vectors_path()).expect("tests/vectors/values.json");
    let list: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
    list.into_iter()
        .map(|v| {
            (
                v["name"].as_str().unwrap().to_owned(),
                v["hex"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn frpc_writes_gos_bytes() {
    let vectors = vectors();
    for case in cases() {
        let ours = hex::encode(protobuf(&case.value));
        let go = vectors
            .get(case.name)
            .unwrap_or_else(|| panic!("no vector {}", case.name));
        assert_eq!(&ours, go, "{}", case.name);
        // And Go's bytes read back to the same bits.
        let back = Floats::decode_protobuf(Bytes::from(hex::decode(go).unwrap())).unwrap();
        assert_same_bits(&back, &case.value, case.name);
    }
}

#[test]
fn polyglot_keeps_the_values_too() {
    for case in cases() {
        let back = Floats::from_polyglot(&case.value.to_polyglot()).unwrap();
        assert_same_bits(&back, &case.value, case.name);
    }
}

/// Runs `interop/go/pbvectors` over the cases and compares with the checked-in vectors
/// (skipped, with a note, where Go is not installed; CI installs it).
#[test]
fn go_writes_the_checked_in_vectors() {
    let go = frpc_interop::go_command();
    if !go.exists() && which("go").is_none() {
        eprintln!("Go is not installed: the vectors are checked against the file only");
        return;
    }
    let dir = frpc_interop::go_dir().join("pbvectors");
    let bin = std::env::temp_dir().join(format!("frpc-pbvectors-{}", std::process::id()));
    let built = frpc_interop::go(&dir)
        .args(["build", "-o"])
        .arg(&bin)
        .arg(".")
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    // The descriptor set, wrappers.proto included.
    let mut compiler = protox::Compiler::new(["proto"]).unwrap();
    compiler.include_imports(true);
    compiler.open_file("proto/values/values.proto").unwrap();
    let set = compiler.file_descriptor_set();
    let set_path = std::env::temp_dir().join(format!("frpc-values-{}.pb", std::process::id()));
    std::fs::write(&set_path, frpc::codegen::prost::Message::encode_to_vec(&set)).unwrap();
    let cases = cases();
    let input: String = cases
        .iter()
        .map(|c| format!("{{\"message\": \"values.Floats\", \"json\": {}}}\n", c.json))
        .collect();
    let mut child = std::process::Command::new(&bin)
        .arg(&set_path)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    let _ = std::fs::remove_file(&bin);
    let _ = std::fs::remove_file(&set_path);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let hexes: Vec<&str> = std::str::from_utf8(&output.stdout).unwrap().lines().collect();
    assert_eq!(hexes.len(), cases.len());
    if std::env::var_os("UPDATE_VECTORS").is_some() {
        let list: Vec<serde_json::Value> = cases
            .iter()
            .zip(&hexes)
            .map(|(c, hex)| {
                serde_json::json!({
                    "name": c.name,
                    "message": "values.Floats",
                    "json": serde_json::from_str::<serde_json::Value>(c.json).unwrap(),
                    "hex": hex,
                })
            })
            .collect();
        std::fs::write(
            vectors_path(),
            serde_json::to_string_pretty(&list).unwrap() + "\n",
        )
        .unwrap();
    }
    let vectors = vectors();
    for (case, hex) in cases.iter().zip(hexes) {
        assert_eq!(
            vectors[case.name], hex,
            "{}: Go now writes other bytes",
            case.name
        );
    }
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}

struct Echo;

impl ValuesService for Echo {
    async fn echo(&self, _: &Context, request: Floats) -> Result<Floats, Status> {
        Ok(request)
    }

    async fn chat(
        &self,
        _: &Context,
        mut inbound: Streaming<Floats>,
        outbound: StreamSender<Floats>,
    ) -> Result<(), Status> {
        while let Some(value) = inbound.message().await? {
            outbound.send(value).await?;
        }
        Ok(())
    }

    async fn watch(
        &self,
        _: &Context,
        request: Floats,
        outbound: StreamSender<Floats>,
    ) -> Result<(), Status> {
        outbound.send(request.clone()).await?;
        outbound.send(request).await?;
        Ok(())
    }

    async fn collect(&self, _: &Context, mut inbound: Streaming<Floats>) -> Result<Floats, Status> {
        let mut last = None;
        while let Some(value) = inbound.message().await? {
            last = Some(value);
        }
        last.ok_or_else(|| Status::invalid_argument("no message"))
    }
}

/// Between two frpc peers (protobuf negotiated): unary calls and streams of every kind give
/// every case back to the bit, both directions (a value the request lost could not come back).
#[tokio::test]
async fn values_cross_frpc_peers_exactly() {
    let bound = frpc::Server::builder()
        .add_service(ValuesServiceServer::new(Echo))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve());
    let raw = frpc::Client::connect(addr).await.unwrap();
    assert!(raw.negotiated().await);
    assert!(raw.protobuf_accepted(), "protobuf is negotiated");
    let client = ValuesServiceClient::new(raw);
    for case in cases() {
        let back = client.echo(case.value.clone()).await.unwrap();
        assert_same_bits(&back, &case.value, case.name);
    }
    let mut chat = client.chat().await.unwrap();
    for case in cases() {
        chat.send(case.value.clone()).await.unwrap();
        let back = chat.message().await.unwrap().unwrap();
        assert_same_bits(&back, &case.value, case.name);
    }
    drop(chat);
    for case in cases() {
        // Server streaming: the request, then twice the reply.
        let mut watch = client.watch(case.value.clone()).await.unwrap();
        for _ in 0..2 {
            let back = watch.message().await.unwrap().unwrap();
            assert_same_bits(&back, &case.value, case.name);
        }
        assert!(watch.message().await.unwrap().is_none(), "{}", case.name);
        // Client streaming: two messages, the last one back.
        let mut collect = client.collect().await.unwrap();
        collect.send(Floats::default()).await.unwrap();
        collect.send(case.value.clone()).await.unwrap();
        let back = collect.close_and_recv().await.unwrap();
        assert_same_bits(&back, &case.value, case.name);
    }
}

/// Any float, NaN payloads and signed zeros included.
fn any_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(0.0),
        Just(NEG),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        any::<u64>().prop_map(f64::from_bits),
        any::<f64>(),
    ]
}

fn any_f32() -> impl Strategy<Value = f32> {
    prop_oneof![
        Just(0.0f32),
        Just(NEG32),
        any::<u32>().prop_map(f32::from_bits),
        any::<f32>(),
    ]
}

fn any_point() -> impl Strategy<Value = Point> {
    (any_f64(), any_f32()).prop_map(|(x, y)| Point { x, y })
}

prop_compose! {
    fn any_values()(
        d in any_f64(), f in any_f32(), od in proptest::option::of(any_f64()),
        of in proptest::option::of(any_f32()), rd in vec(any_f64(), 0..4), rf in vec(any_f32(), 0..4),
        md in hash_map("[a-z]{0,3}", any_f64(), 0..2), mf in hash_map(any::<i32>(), any_f32(), 0..2),
        point in proptest::option::of(any_point()), points in vec(any_point(), 0..3),
        mp in hash_map("[a-z]{0,3}", any_point(), 0..2),
        pick in proptest::option::of(prop_oneof![
            any_f64().prop_map(Pick::Pd), any_f32().prop_map(Pick::Pf), any_point().prop_map(Pick::Pp),
        ]),
        wd in proptest::option::of(any_f64()), wf in proptest::option::of(any_f32()),
        i in any::<i32>(), s in "[a-z]{0,4}",
    ) -> Floats {
        Floats { d, f, od, of, rd, rf, md, mf, point, points, mp, pick, wd, wf, i, s }
    }
}

/// `value` without what prost's derive would drop: -0.0 where implicit presence applies
/// (singular and nested floats, wrappers) and map entries with a default key or value.
fn kept_by_prost(mut value: Floats) -> Floats {
    let positive = |x: f64| if x.to_bits() == NEG.to_bits() { 0.0 } else { x };
    let positive32 = |x: f32| if x.to_bits() == NEG32.to_bits() { 0.0 } else { x };
    let point = |p: &mut Point| {
        p.x = positive(p.x);
        p.y = positive32(p.y);
    };
    value.d = positive(value.d);
    value.f = positive32(value.f);
    value.point.iter_mut().chain(&mut value.points).for_each(point);
    if let Some(Pick::Pp(p)) = &mut value.pick {
        point(p);
    }
    value.md.retain(|k, x| !k.is_empty() && *x != 0.0);
    value.mf.retain(|k, x| *k != 0 && *x != 0.0);
    value.mp.clear();
    value.wd = value.wd.filter(|x| *x != 0.0);
    value.wf = value.wf.filter(|x| *x != 0.0);
    value
}

proptest! {
    /// Both encodings give back every bit (maps of at most one entry: fixed order).
    #[test]
    fn every_value_round_trips_bit_exactly(value in any_values()) {
        let back = Floats::decode_protobuf(Bytes::from(protobuf(&value))).unwrap();
        prop_assert_eq!(back.to_polyglot(), value.to_polyglot());
        let back = Floats::from_polyglot(&value.to_polyglot()).unwrap();
        prop_assert_eq!(back.to_polyglot(), value.to_polyglot());
    }

    /// Where prost's derive keeps the values (no -0.0 in a singular or nested float or a
    /// wrapper; no map entry with a default key or value, which Go, and so frpc, writes and
    /// prost leaves out), frpc's encoding is prost's own byte for byte.
    #[test]
    fn frpc_matches_prost_where_prost_keeps_the_values(value in any_values()) {
        let value = kept_by_prost(value);
        prop_assert_eq!(protobuf(&value), frpc::codegen::prost::Message::encode_to_vec(&value));
    }
}

/// Go peers get polyglot, which keeps -0.0 as well: frpc writes `StockPrices {prices: {"x":
/// -0.0}}` as the bytes `interop/go/peer`'s `TestNegativeZeroSurvives` checks Go writes and reads
/// back negative (run by `interop/tests/go_codecs.rs`).
#[test]
fn polyglot_negative_zero_is_the_go_peers_bytes() {
    let prices = frpc_codegen_tests::capture::StockPrices {
        prices: HashMap::from([("x".to_string(), NEG)]),
    };
    let bytes = prices.to_polyglot();
    assert_eq!(hex::encode(&bytes), "080002050f0a01050a01780f8000000000000000");
    let back = frpc_codegen_tests::capture::StockPrices::from_polyglot(&bytes).unwrap();
    assert!(back.prices["x"] == 0.0 && back.prices["x"].is_sign_negative());
}

/// Both encodings of `m`, decoded again, re-encoded in polyglot (which writes every float's
/// bits; maps of at most one entry keep their order).
fn both_ways<M: Message>(m: &M) -> [Bytes; 2] {
    let mut protobuf = Vec::with_capacity(m.protobuf_len());
    m.encode_protobuf(&mut protobuf);
    assert_eq!(protobuf.len(), m.protobuf_len(), "protobuf_len");
    [
        M::decode_protobuf(Bytes::from(protobuf)).unwrap().to_polyglot(),
        M::from_polyglot(&m.to_polyglot()).unwrap().to_polyglot(),
    ]
}

proptest! {
    /// The other generated schemas with floats keep them to the bit too: the capture schema's
    /// `map<string, double>` inside a repeated message, and the evolving `Profile`'s `double`.
    #[test]
    fn other_schemas_keep_their_floats(
        prices in vec(hash_map("[a-z]{0,3}", any_f64(), 0..2), 0..3),
        score in any_f64(),
    ) {
        use frpc_codegen_tests::capture::{StockPrices, StockPricesWrapper};
        let wrapper = StockPricesWrapper {
            s_prices: prices.into_iter().map(|prices| StockPrices { prices }).collect(),
        };
        for back in both_ways(&wrapper) {
            prop_assert_eq!(back, wrapper.to_polyglot());
        }
        let profile = frpc_codegen_tests::evolve_v1::Profile { score, ..Default::default() };
        for back in both_ways(&profile) {
            prop_assert_eq!(back, profile.to_polyglot());
        }
    }
}
