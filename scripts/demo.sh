#!/usr/bin/env bash
# Installs what a fresh machine lacks, then runs the main demo: the side-by-side benchmark of
# frpc, tonic and a raw framed echo (under two minutes: 7 interleaved samples per framework and
# cell), writing its table, JSON and chart to target/bench/. `bash scripts/demo.sh before.json`
# also compares with an earlier run's JSON (flagging changes larger than both runs' spreads).
# `cargo run --release -p frpc-examples --example echo` is the small RPC tour.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/setup
mkdir -p target/bench
cargo run --release -p frpc-bench -- --quick \
  --json target/bench/bench.json --csv target/bench/bench.csv --svg target/bench/bench.svg \
  ${1:+--baseline "$1"}
echo "chart: target/bench/bench.svg"
