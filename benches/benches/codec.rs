//! Encoding and decoding the benchmark's generated messages (frpc-codegen output, the types
//! frpc sends) in both of frpc's encodings: polyglot (fRPC's, and what Go peers get) and protobuf
//! (what frpc peers negotiate: the marker byte `FD` and the prost encoding, docs/extensions.md
//! §10), for the `string` payload (`Request`) and the `bytes` payload (`BlobRequest`), 32 B and
//! 1 MiB.
//!
//! `encode/prost-derive/…` writes the same bytes with prost's derive, which frpc-codegen's own
//! protobuf encoder replaced (the derive drops -0.0): what the replacement costs or saves.
//!
//! `cargo bench -p frpc-bench --bench codec` (add `-- --quick` for a fast pass). Benchmark ids are
//! `encode/polyglot/32B`, `encode/protobuf/1MiB`, `decode/polyglot/bytes-32B`, ….

use std::hint::black_box;

use bytes::{BufMut, Bytes, BytesMut};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use frpc_bench::frameworks::frpc::pb::{BlobRequest, Request};
use frpc_wire::polyglot::Message;

/// The protobuf marker byte frpc puts before a protobuf-encoded message.
const MARKER: u8 = 0xFD;

/// A message content as frpc sends it on a connection that negotiated protobuf (what the
/// runtime's `calls::codec::encode` does: one allocation at the exact size).
fn to_protobuf<M: Message>(message: &M) -> Bytes {
    let mut buf = BytesMut::with_capacity(1 + message.protobuf_len());
    buf.put_u8(MARKER);
    message.encode_protobuf(&mut buf);
    buf.freeze()
}

/// The same content written by prost's derive (`encode_raw`), which frpc-codegen's own
/// protobuf encoder replaced (prost drops a float holding -0.0): their cost side by side.
fn to_protobuf_by_prost<M: prost::Message>(message: &M) -> Bytes {
    let mut buf = BytesMut::with_capacity(1 + message.encoded_len());
    buf.put_u8(MARKER);
    message.encode_raw(&mut buf);
    buf.freeze()
}

/// Reads a protobuf content back (what the runtime's `calls::codec::decode` does for `FD`).
fn from_protobuf<M: Message>(content: &Bytes) -> M {
    assert_eq!(content.first(), Some(&MARKER));
    M::decode_protobuf(content.slice(1..)).expect("valid")
}

fn cells<M: Message + prost::Message + Clone + PartialEq + std::fmt::Debug>(
    c: &mut Criterion,
    label: &str,
    message: M,
    size: usize,
) {
    let polyglot = message.to_polyglot();
    let protobuf = to_protobuf(&message);
    // Both encodings decode back to the message, and both sizes are exact.
    assert_eq!(polyglot.len(), message.polyglot_len());
    assert_eq!(protobuf.len(), 1 + message.protobuf_len());
    assert_eq!(M::from_polyglot(&polyglot).expect("valid"), message);
    assert_eq!(from_protobuf::<M>(&protobuf), message);
    assert_eq!(to_protobuf_by_prost(&message), protobuf);

    let mut group = c.benchmark_group("encode");
    group.throughput(Throughput::Bytes(size as u64));
    group.bench_function(BenchmarkId::new("polyglot", label), |b| {
        b.iter(|| black_box(&message).to_polyglot())
    });
    group.bench_function(BenchmarkId::new("protobuf", label), |b| {
        b.iter(|| to_protobuf(black_box(&message)))
    });
    group.bench_function(BenchmarkId::new("prost-derive", label), |b| {
        b.iter(|| to_protobuf_by_prost(black_box(&message)))
    });
    group.finish();

    let mut group = c.benchmark_group("decode");
    group.throughput(Throughput::Bytes(size as u64));
    group.bench_function(BenchmarkId::new("polyglot", label), |b| {
        b.iter(|| M::from_polyglot(black_box(&polyglot)).expect("valid"))
    });
    group.bench_function(BenchmarkId::new("protobuf", label), |b| {
        b.iter(|| from_protobuf::<M>(black_box(&protobuf)))
    });
    group.finish();
}

fn codec(c: &mut Criterion) {
    for (label, size) in [("32B", 32usize), ("1MiB", 1 << 20)] {
        let request = Request {
            message: "x".repeat(size),
        };
        cells(c, label, request, size);
        let blob = BlobRequest {
            data: Bytes::from(vec![b'x'; size]),
        };
        cells(c, &format!("bytes-{label}"), blob, size);
    }
}

criterion_group!(benches, codec);
criterion_main!(benches);
