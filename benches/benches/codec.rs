//! Encoding and decoding the benchmark `Request { Message }` (32 B and 1 MiB) with polyglot and
//! with prost, so the codec's speed is on record.
//!
//! `cargo bench -p frpc-bench --bench codec` (add `-- --quick` for a fast pass). Benchmark ids are
//! `encode/polyglot/32B`, `encode/prost/1MiB`, `decode/polyglot/32B`, ….

use std::hint::black_box;

use bytes::{BufMut, Bytes, BytesMut};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use frpc_wire::DecodeError;
use frpc_wire::polyglot::{Decoder, Message as _, encode};

/// `message Request { string Message = 1; }`, with both encodings.
#[derive(Clone, PartialEq, prost::Message)]
struct Request {
    #[prost(string, tag = "1")]
    message: String,
}

impl frpc_wire::polyglot::Message for Request {
    fn fields_len(&self) -> usize {
        encode::bytes_len(self.message.len())
    }
    fn encode_fields(&self, buf: &mut impl BufMut) {
        encode::put_str(buf, &self.message)
    }
    fn decode_fields(&mut self, dec: &mut Decoder<'_>) -> Result<(), DecodeError> {
        self.message = dec.string()?;
        Ok(())
    }
}

fn codec(c: &mut Criterion) {
    for (label, size) in [("32B", 32usize), ("1MiB", 1 << 20)] {
        let request = Request {
            message: "x".repeat(size),
        };
        let polyglot = request.to_polyglot();
        let prost_bytes = Bytes::from(prost::Message::encode_to_vec(&request));
        // Both encodings decode back to the request, and polyglot's size is exact.
        assert_eq!(polyglot.len(), request.polyglot_len());
        assert_eq!(polyglot.len(), 2 + encode::bytes_len(size));
        assert_eq!(
            <Request as frpc_wire::polyglot::Message>::from_polyglot(&polyglot).expect("valid"),
            request
        );
        assert_eq!(
            <Request as prost::Message>::decode(prost_bytes.clone()).expect("valid"),
            request
        );

        let mut group = c.benchmark_group("encode");
        group.throughput(Throughput::Bytes(size as u64));
        group.bench_function(BenchmarkId::new("polyglot", label), |b| {
            b.iter(|| black_box(&request).to_polyglot())
        });
        group.bench_function(BenchmarkId::new("prost", label), |b| {
            b.iter(|| {
                let request = black_box(&request);
                let mut buf = BytesMut::with_capacity(prost::Message::encoded_len(request));
                prost::Message::encode(request, &mut buf).expect("capacity reserved");
                buf.freeze()
            })
        });
        group.finish();

        let mut group = c.benchmark_group("decode");
        group.throughput(Throughput::Bytes(size as u64));
        group.bench_function(BenchmarkId::new("polyglot", label), |b| {
            b.iter(|| {
                <Request as frpc_wire::polyglot::Message>::from_polyglot(black_box(&polyglot)).expect("valid")
            })
        });
        group.bench_function(BenchmarkId::new("prost", label), |b| {
            b.iter(|| <Request as prost::Message>::decode(black_box(&prost_bytes).clone()).expect("valid"))
        });
        group.finish();
    }
}

criterion_group!(benches, codec);
criterion_main!(benches);
