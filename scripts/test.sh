#!/usr/bin/env bash
# Installs what a fresh machine lacks, then runs every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/setup
cargo test --workspace --all-features
