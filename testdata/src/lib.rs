//! The Go packet captures in `testdata/vectors/` (`capture-frisbee-v0.1{0,1}.json`), loaded once
//! here for every crate's tests instead of parsed again in each; [`tools`] finds the
//! third-party peers (grpcurl, Python grpcio) the tests run.

use std::path::PathBuf;

use serde_json::Value;

pub mod tools;

/// The two captures: frisbee-go v0.11 (10-byte header) and v0.10 (8-byte header).
pub const CAPTURES: [&str; 2] = ["capture-frisbee-v0.11.json", "capture-frisbee-v0.10.json"];

/// `testdata/vectors/`.
pub fn vectors_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/vectors"))
}

/// One packet as Go wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedPacket {
    /// Written by the client (`C->S`), else by the server.
    pub from_client: bool,
    /// Header id.
    pub id: u16,
    /// Header operation.
    pub op: u16,
    /// The `magic` field of a v0.11 header.
    pub magic: Option<u16>,
    /// The header bytes.
    pub header: Vec<u8>,
    /// The content bytes (empty for PING, PONG and stream closes).
    pub content: Vec<u8>,
}

impl CapturedPacket {
    /// Header and content, as they were on the wire.
    pub fn wire(&self) -> Vec<u8> {
        [&self.header[..], &self.content[..]].concat()
    }
}

/// A named scenario: packets in write order.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// What the Go client did.
    pub name: String,
    /// The packets, both directions.
    pub packets: Vec<CapturedPacket>,
}

/// One capture file.
#[derive(Debug, Clone)]
pub struct Capture {
    /// The file name.
    pub file: &'static str,
    /// 10 (v0.11) or 8 (v0.10).
    pub header_size: usize,
    /// The scenarios in order.
    pub scenarios: Vec<Scenario>,
}

impl Capture {
    /// Loads `testdata/vectors/<file>`; panics on a malformed file (tests only).
    pub fn load(file: &'static str) -> Capture {
        let path = vectors_dir().join(file);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let json: Value = serde_json::from_str(&text).expect("valid JSON");
        let scenarios = json["scenarios"]
            .as_array()
            .expect("scenarios")
            .iter()
            .map(|s| Scenario {
                name: s["scenario"].as_str().expect("scenario name").to_owned(),
                // The last scenario has `"packets": []`; be lenient about `null` too.
                packets: s["packets"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(packet)
                    .collect(),
            })
            .collect();
        Capture {
            file,
            header_size: json["header_size"].as_u64().expect("header_size") as usize,
            scenarios,
        }
    }

    /// Both captures.
    pub fn all() -> Vec<Capture> {
        CAPTURES.into_iter().map(Capture::load).collect()
    }

    /// Every packet with its scenario, in order.
    pub fn packets(&self) -> impl Iterator<Item = (&Scenario, &CapturedPacket)> {
        self.scenarios
            .iter()
            .flat_map(|s| s.packets.iter().map(move |p| (s, p)))
    }
}

fn packet(p: &Value) -> CapturedPacket {
    let number = |key: &str| u16::try_from(p[key].as_u64().expect(key)).expect("a u16");
    // Zero-length packets have no `content_hex`.
    let content = hex::decode(p["content_hex"].as_str().unwrap_or_default()).expect("hex content");
    assert_eq!(
        content.len() as u64,
        p["len"].as_u64().expect("len"),
        "len matches the content"
    );
    CapturedPacket {
        from_client: p["dir"] == "C->S",
        id: number("id"),
        op: number("op"),
        magic: p.get("magic").map(|_| number("magic")),
        header: hex::decode(p["header_hex"].as_str().expect("header_hex")).expect("hex header"),
        content,
    }
}
