//! What the tests of `docs/extensions.md`'s examples share: the examples themselves, and
//! packets as the hex they are written in there (frisbee-go v0.11 framing).
#![allow(dead_code, reason = "each test file uses what it needs")]

use frpc::Framing;
use frpc::wire::{Packet, PacketCodec};

/// `docs/extensions.md`, read once per test.
pub struct Spec(String);

impl Spec {
    pub fn load() -> Spec {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/extensions.md");
        Spec(std::fs::read_to_string(path).unwrap())
    }

    /// The bytes of an example, given as the fragments the document writes it in (each must
    /// be there), joined.
    pub fn bytes(&self, fragments: &[&str]) -> String {
        for fragment in fragments {
            assert!(self.0.contains(fragment), "docs/extensions.md lacks {fragment:?}");
        }
        fragments.join(" ")
    }
}

/// A packet as the document writes it: header and content, bytes in hex separated by spaces.
pub fn wire_hex(packet: &Packet) -> String {
    let mut buf = bytes::BytesMut::new();
    tokio_util::codec::Encoder::encode(&mut PacketCodec::new(Framing::Frisbee), packet.clone(), &mut buf)
        .unwrap();
    buf.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The bytes of a hex text as the document writes it.
pub fn unhex(text: &str) -> Vec<u8> {
    text.split_whitespace()
        .map(|b| u8::from_str_radix(b, 16).unwrap())
        .collect()
}
