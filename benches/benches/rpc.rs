//! A few cells under criterion: frpc (inline) vs tonic vs the raw framed echo, with 32 B
//! messages, one client ping-ponging and 16 clients with one call in flight each. Servers run
//! in-process on 127.0.0.1:0 (the `frpc-bench` program puts them in their own processes).
//!
//! One iteration is one call; with 16 clients the time reported is wall time per call, i.e. the
//! inverse of throughput. Connections stay open across samples.
//!
//! `cargo bench -p frpc-bench --bench rpc`

use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use frpc_bench::frameworks::{self, Client, Framework};
use frpc_bench::pool;
use frpc_bench::workload::{self, Body, Callers, Limit, Payload, Window};
use tokio::sync::Mutex;

const FRAMING: frpc::Framing = frpc::Framing::Frisbee;

fn rpc(c: &mut Criterion) {
    let rt = workload::runtime(2);
    let body = Body::random(Payload::String, 32);
    for clients in [1, 16] {
        let mut group = c.benchmark_group(format!("{clients}-clients-32B"));
        group
            .sample_size(20)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2))
            .throughput(Throughput::Elements(1));
        for framework in [Framework::FrpcInline, Framework::Tonic, Framework::Raw] {
            let pool = rt.block_on(async {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                let addr = listener.local_addr().unwrap();
                tokio::spawn(frameworks::serve(framework, listener, FRAMING));
                Arc::new(Mutex::new(
                    pool::connect(framework, addr, clients, FRAMING)
                        .await
                        .expect("connect"),
                ))
            });
            group.bench_function(framework.name(), |b| {
                b.to_async(&rt).iter_custom(|iters| {
                    let (pool, body) = (pool.clone(), body.clone());
                    async move { calls(&pool, &body, iters).await }
                })
            });
        }
        group.finish();
    }
}

/// Makes `iters` calls spread over the pool's clients (one in flight each); returns the wall
/// time scaled to exactly `iters` calls.
async fn calls(pool: &Mutex<Vec<Client>>, body: &Body, iters: u64) -> Duration {
    let mut pool = pool.lock().await;
    let per_client = iters.div_ceil(pool.len() as u64).max(1);
    let limit = Limit::per_slot(Window::new(Duration::ZERO, Duration::from_secs(3600)), per_client);
    let started = std::time::Instant::now();
    let (clients, outcome) = pool::drive(std::mem::take(&mut *pool), body, 1, Callers::Tasks, limit).await;
    let elapsed = started.elapsed();
    *pool = clients;
    elapsed.mul_f64(iters as f64 / outcome.calls.max(1) as f64)
}

criterion_group!(benches, rpc);
criterion_main!(benches);
