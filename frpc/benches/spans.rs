//! What the per-RPC `tracing` span costs when no subscriber is installed: the span frpc creates
//! around every call (`debug_span!("rpc", op, id)` + `Instrument`) versus the same future bare.
//!
//! `cargo bench -p frpc-rs --bench spans`

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use criterion::{Criterion, criterion_group, criterion_main};
use tracing::Instrument;

fn poll_ready<F: Future>(fut: F) -> F::Output {
    let mut cx = Context::from_waker(Waker::noop());
    match pin!(fut).poll(&mut cx) {
        Poll::Ready(out) => out,
        Poll::Pending => unreachable!("the benchmarked futures are always ready"),
    }
}

fn spans(c: &mut Criterion) {
    let mut group = c.benchmark_group("rpc-span");
    group.bench_function("bare", |b| {
        b.iter(|| poll_ready(std::hint::black_box(async { 1u32 })))
    });
    group.bench_function("with-span-no-subscriber", |b| {
        b.iter(|| {
            let (op, id) = (std::hint::black_box(10u16), std::hint::black_box(1u16));
            let span = tracing::debug_span!("rpc", op, id);
            poll_ready(std::hint::black_box(async { 1u32 }).instrument(span))
        })
    });
    group.finish();
}

criterion_group!(benches, spans);
criterion_main!(benches);
