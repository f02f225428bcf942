//! Decodes arbitrary bytes as every message of capture.proto (the generated code): never a
//! panic, and whatever decodes re-encodes and decodes to the same value.
#![no_main]

use bytes::Bytes;
use frpc_examples::capture::pb;
use frpc_wire::polyglot::{Decoder, Envelope, Message, decode_envelope};
use libfuzzer_sys::fuzz_target;

fn check<M: Message + PartialEq + std::fmt::Debug>(input: &Bytes) {
    if let Ok(Envelope::Message(m)) = decode_envelope::<M>(&mut Decoder::from_bytes(input)) {
        let again = M::from_polyglot(&m.to_polyglot()).expect("our own encoding decodes");
        assert_eq!(again, m);
    }
}

fuzz_target!(|data: &[u8]| {
    let input = Bytes::copy_from_slice(data);
    check::<pb::Request>(&input);
    check::<pb::Response>(&input);
    check::<pb::Data>(&input);
    check::<pb::SearchResponse>(&input);
    check::<pb::StockPrices>(&input);
    check::<pb::StockPricesWrapper>(&input);
});
