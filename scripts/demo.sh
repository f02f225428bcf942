#!/usr/bin/env bash
# Installs what a fresh machine lacks, then runs the main demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/setup
cargo run --release -p frpc-examples --example echo
