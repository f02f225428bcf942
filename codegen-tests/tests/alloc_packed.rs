//! A packed run of scalars decodes into a vector allocated once at its size: frpc's prost path
//! reserves the run's elements before prost reads them, and the decode budget charges what the
//! run holds. A list of 100,000 small ids (100 KB on the wire, 800 KB in Rust) fits the default
//! budget; grown one push at a time it peaked at 1.5 MB and was refused (session 31's values
//! probe: a Go peer's `repeated int64` of 8,193 zeros, or `repeated Color` of 65,537 values,
//! failed where polyglot took them). A counting global allocator: its own test binary.

use frpc::codegen::{Bytes, Message, ProtobufBudget};
use frpc_codegen_tests::kitchen::Table;
use peak_alloc::PeakAlloc;

#[global_allocator]
static ALLOC: PeakAlloc = PeakAlloc;

#[test]
fn a_packed_run_is_allocated_once_and_charged_what_it_holds() {
    let n = 100_000;
    let table = Table {
        rows: Vec::new(),
        ids: (0..n).map(|i| i % 100).collect(),
    };
    let mut bytes = Vec::new();
    table.encode_protobuf(&mut bytes);
    assert!(bytes.len() < 2 * n as usize, "one byte an id: {}", bytes.len());
    let limits = frpc::DecodeLimits::default();
    let mut budget = ProtobufBudget::new(limits.memory_budget(bytes.len()), limits.max_depth);
    Table::protobuf_cost(&bytes, &mut budget).expect("within the default budget");

    let input = Bytes::from(bytes);
    let base = ALLOC.current_usage();
    ALLOC.reset_peak_usage();
    let back = Table::decode_protobuf(input).unwrap();
    let peak = ALLOC.peak_usage() - base;
    let held = n as usize * size_of::<i64>();
    assert!(peak <= held + 4096, "peak {peak} bytes for {held} held");
    assert!(back == table);
}
