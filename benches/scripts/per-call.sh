#!/usr/bin/env bash
# Instructions per call of one side of a benchmark pair, counted by callgrind: how the figures in
# docs/performance-log.md ("The rest of the A server's gap", "The code and state a call runs
# through") were made.
#
#   benches/scripts/per-call.sh server FRAMEWORK [options]   # FRAMEWORK's server under callgrind,
#                                                            # loaded by the raw client (native)
#   benches/scripts/per-call.sh client CLIENT [options]      # the load generator's CLIENT under
#                                                            # callgrind, on a native server
# Options:
#   --clients N      connections, one call in flight on each (default 16)
#   --size BYTES     the message's size (default 32)
#   --against FW     the server a client is measured on (default raw)
#   --functions K    also list the K functions with the most instructions of their own per call
#   --cache          also count L1 misses per call (callgrind's cache model; slower)
#
# Two runs, of 2 s and of 5 s of load, are differenced, so what the process does once (start-up,
# connecting, the runtime's threads) cancels out: a call costs the difference of the runs'
# totals over the difference of their calls. A call is one `send` of the measured process: one
# per reply (server) or request (client) while each connection has one call in flight and the
# other side is quick, as here. Pipelined workloads batch their writes, so this count does not
# fit them. Callgrind runs the measured process about 50 times slower and one thread at a time:
# its counts repeat to about 1%, its timing is not that of a real run.
set -euo pipefail
cd "$(dirname "$0")/../.."

usage() {
  sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

[ $# -ge 2 ] || usage
SIDE=$1
PEER=$2
shift 2
CLIENTS=16
SIZE=32
AGAINST=raw
FUNCTIONS=0
CACHE=no
while [ $# -gt 0 ]; do
  case $1 in
    --clients) CLIENTS=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --against) AGAINST=$2; shift 2 ;;
    --functions) FUNCTIONS=$2; shift 2 ;;
    --cache) CACHE=yes; shift ;;
    *) usage ;;
  esac
done
case $SIDE in server | client) ;; *) usage ;; esac

. benches/scripts/lib.sh
need valgrind valgrind

cargo build --release -q -p frpc-bench
BENCH=target/release/frpc-bench
OUT=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$OUT"' EXIT
GRIND=(valgrind --tool=callgrind "--cache-sim=$CACHE")

# Starts `$BENCH serve` of FRAMEWORK, run by the command in the arguments after it (valgrind)
# if there are any, and waits for its address.
serve() {
  local log=$1 framework=$2
  shift 2
  "$@" "$BENCH" serve --addr 127.0.0.1:0 --framework "$framework" >"$log" 2>&1 &
  SERVER=$!
  ADDR=$(listening "$log" "$SERVER")
}

# Runs the load generator's CLIENT for SECS, run by the command in the arguments after them if
# there are any.
load() {
  local client=$1 secs=$2
  shift 2
  "$@" "$BENCH" load --addr "$ADDR" --client "$client" --clients "$CLIENTS" --size "$SIZE" \
    --secs "$secs" --reps 1 >/dev/null
}

for secs in 2 5; do
  profile="$OUT/$secs.out"
  if [ "$SIDE" = server ]; then
    serve "$OUT/serve.log" "$PEER" "${GRIND[@]}" "--callgrind-out-file=$profile"
    load raw "$secs"
    kill -TERM "$SERVER"
    wait "$SERVER" 2>/dev/null || true
  else
    serve "$OUT/serve.log" "$AGAINST"
    load "$PEER" "$secs" "${GRIND[@]}" "--callgrind-out-file=$profile" -q
    kill -TERM "$SERVER"
    wait "$SERVER" 2>/dev/null || true
  fi
done

python3 - "$OUT/2.out" "$OUT/5.out" "$SIDE $PEER, $CLIENTS clients x $SIZE B" "$FUNCTIONS" <<'PY'
import re, subprocess, sys

short, long_, title, functions = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
SEND = re.compile(r'^(__libc_send|send|__send|sendto|__libc_sendto)$')

def sends(path):
    """The calls of the profile's `send` functions (one per call here)."""
    names, target, count = {}, None, 0
    for line in open(path):
        if line.startswith(('fn=', 'cfn=')):
            m = re.match(r'c?fn=\((\d+)\)(?: (.*))?', line.strip())
            if m.group(2):
                names[m.group(1)] = m.group(2)
            target = names.get(m.group(1)) if line.startswith('cfn=') else None
        elif line.startswith('calls=') and target and SEND.search(target):
            count += int(line.split('=')[1].split()[0])
    return count

def annotate(path):
    """(event names, program totals, {function: its own events})."""
    out = subprocess.run(['callgrind_annotate', '--threshold=100', '--auto=no', path],
                         capture_output=True, text=True, check=True).stdout
    events, totals, own = None, None, {}
    for line in out.splitlines():
        if line.startswith('Events shown:'):
            events = line.split(':')[1].split()
            continue
        numbers = re.findall(r'([\d,]+) \(\s*[\d.]+%\)', line)
        if not numbers or events is None:
            continue
        values = [int(n.replace(',', '')) for n in numbers]
        if 'PROGRAM TOTALS' in line:
            totals = values
        else:
            name = re.split(r'\)\s+', line, maxsplit=len(values))[-1].strip()
            # `file:function [object]`, one row per source file of the function's code (what
            # was inlined into it comes from other files): summed per function.
            name = re.sub(r' \[[^]]*\]$', '', name.split(':', 1)[-1])
            own[name] = own.get(name, 0) + values[0]
    return events, totals, own

calls = sends(long_) - sends(short)
if calls <= 0:
    sys.exit('per-call.sh: the longer run made no more calls than the shorter one')
events, a, own_a = annotate(short)
_, b, own_b = annotate(long_)
print(f'{title}: {calls} calls in the difference of the two runs')
for event, x, y in zip(events, a, b):
    print(f'  {event} per call: {(y - x) / calls:,.1f}')
if functions:
    rows = sorted(((own_b.get(k, 0) - own_a.get(k, 0)) / calls, k) for k in set(own_a) | set(own_b))
    print(f'  the {functions} functions with the most instructions of their own per call:')
    for value, name in reversed(rows[-functions:]):
        print(f'  {value:8.1f}  {name[:120]}')
PY
