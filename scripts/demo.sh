#!/usr/bin/env bash
# Installs what a fresh machine lacks, then runs the main demo: the side-by-side benchmark of
# frpc, tonic and a raw framed echo (about a minute), writing its table, JSON and chart to
# target/bench/. `cargo run --release -p frpc-examples --example echo` is the small RPC tour.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/setup
mkdir -p target/bench
cargo run --release -p frpc-bench -- --quick \
  --json target/bench/bench.json --csv target/bench/bench.csv --svg target/bench/bench.svg
echo "chart: target/bench/bench.svg"
