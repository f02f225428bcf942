#!/usr/bin/env bash
# A server's CPU time per call split into user space and the kernel, sampled by `perf` on the
# real machine: whether a gap to the raw echo is the server's own code or its system calls.
#
#   benches/scripts/user-kernel.sh [options] FRAMEWORK...   # e.g. frpc-inline raw
# Options:
#   --clients N   connections of the raw client (default 128)
#   --inflight K  calls in flight on each, written together as workload B's joined callers do
#                 (default 1: workload A)
#   --size BYTES  the message's size (default 512)
#   --rounds R    rounds over the frameworks, interleaved (default 2)
#
# Each server runs with one worker thread pinned to core 0, the raw load client with one thread
# pinned to core 1 (as #29's first measurement was made), in closed loops; `perf record -e
# cpu-clock` samples the server for 3 s after 1.5 s of warm-up. The server keeps its core busy,
# so its CPU time per call is the samples' time over the calls the client counted, and the
# samples' share in the kernel splits it. Needs 2 cores, and `perf` allowed to sample (root, or
# kernel.perf_event_paranoid at most 1).
set -euo pipefail
cd "$(dirname "$0")/../.."

CLIENTS=128
INFLIGHT=1
SIZE=512
ROUNDS=2
FRAMEWORKS=()
while [ $# -gt 0 ]; do
  case $1 in
    --clients) CLIENTS=$2; shift 2 ;;
    --inflight) INFLIGHT=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    -*) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    *) FRAMEWORKS+=("$1"); shift ;;
  esac
done
[ ${#FRAMEWORKS[@]} -gt 0 ] || FRAMEWORKS=(frpc-inline raw)

. benches/scripts/lib.sh
need perf linux-perf

cargo build --release -q -p frpc-bench
BENCH=target/release/frpc-bench
OUT=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$OUT"' EXIT

echo "server CPU per call, $CLIENTS raw clients x $INFLIGHT in flight x $SIZE B (server on core 0, one thread)"
printf '%-14s %10s %10s %10s %10s\n' framework calls/s 'µs/call' 'kernel µs' 'user µs'
for _ in $(seq "$ROUNDS"); do
  for framework in "${FRAMEWORKS[@]}"; do
    taskset -c 0 "$BENCH" serve --addr 127.0.0.1:0 --framework "$framework" --threads 1 \
      >"$OUT/serve.log" 2>&1 &
    server=$!
    addr=$(listening "$OUT/serve.log" "$server")
    taskset -c 1 "$BENCH" load --addr "$addr" --client raw --client-threads 1 \
      --clients "$CLIENTS" --inflight "$INFLIGHT" --callers joined --size "$SIZE" --secs 6 \
      --reps 1 --json "$OUT/load.json" \
      >/dev/null 2>&1 &
    client=$!
    sleep 1.5
    perf record -q -e cpu-clock -F 4999 -p "$server" -o "$OUT/perf.data" -- sleep 3 \
      >/dev/null 2>&1
    wait "$client"
    kill "$server"
    wait "$server" 2>/dev/null || true
    perf report -i "$OUT/perf.data" --sort dso --stdio 2>/dev/null >"$OUT/report.txt"
    python3 - "$OUT/report.txt" "$OUT/load.json" "$framework" <<'PY'
import json, re, sys

report, load, framework = sys.argv[1], sys.argv[2], sys.argv[3]
text = open(report).read()
samples_ns = int(re.search(r'Event count \(approx.\): (\d+)', text).group(1))
kernel = sum(float(p) for p, dso in re.findall(r'^\s*([\d.]+)%\s+(\S+)', text, re.M)
             if dso.startswith('[kernel'))
rate = json.load(open(load))['rows'][0]['rps_total']
per_call = samples_ns / 3.0 / rate / 1e3
print(f'{framework:<14} {rate:>10,.0f} {per_call:>10.2f} {per_call * kernel / 100:>10.2f} '
      f'{per_call * (100 - kernel) / 100:>10.2f}')
PY
  done
done
