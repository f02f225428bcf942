//! A few cells under criterion: one client ping-pong with 32 B, frpc (inline) vs tonic vs raw.
//! Servers run in-process on 127.0.0.1:0 (the `frpc-bench` program separates processes).
//!
//! `cargo bench -p frpc-bench --bench rpc`

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use frpc_bench::load::{self, Cell};
use frpc_bench::service::{self, Framework};

fn rpc(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("ping-pong-32B");
    group.sample_size(20).measurement_time(Duration::from_secs(5));
    for framework in [Framework::FrpcInline, Framework::Tonic, Framework::Raw] {
        let addr = rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            tokio::spawn(service::serve(framework, listener, frpc::Framing::Frisbee));
            addr
        });
        // Each iteration: 200 ms of one client with one call in flight; report time per call.
        group.bench_function(framework.name(), |b| {
            b.to_async(&rt).iter_custom(|iters| async move {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let cell = Cell {
                        clients: 1,
                        inflight: 1,
                        size: 32,
                        duration: Duration::from_millis(200),
                        warmup: Duration::ZERO,
                    };
                    let outcome = load::run(framework, addr, cell, frpc::Framing::Frisbee).await;
                    total += cell.duration / outcome.calls.max(1) as u32;
                }
                total
            })
        });
    }
    group.finish();
}

criterion_group!(benches, rpc);
criterion_main!(benches);
