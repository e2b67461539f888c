#!/usr/bin/env bash
# Before/after comparison of two rolis-bench binaries on a shared machine:
# runs A and B alternately ROUNDS times with the same flags (so both see the
# same load; even rounds run B first), prints each run and the medians of both and their ratio
# (B ÷ A), wall-clock and CPU-normalized. A_FLAGS and B_FLAGS add flags to
# one side only (to compare two settings of one binary).
#   [ROUNDS=5] engine/bench/ab.sh path/to/rolis-bench.base path/to/rolis-bench -- --workload=ycsbpp --seconds=5
#   B_FLAGS=--snapshot-epochs=25 engine/bench/ab.sh bin/rolis-bench bin/rolis-bench -- --workload=ycsbpp
set -euo pipefail
. "$(dirname "$0")/bench_line.sh"
rounds=${ROUNDS:-5}
if [ $# -lt 2 ]; then
  echo "usage: ab.sh BIN_A BIN_B [-- rolis-bench flags]" >&2
  exit 2
fi
a=$1 b=$2
shift 2
[ "${1:-}" = "--" ] && shift
for bin in "$a" "$b"; do
  [ -x "$bin" ] || { echo "ab.sh: $bin is not an executable" >&2; exit 2; }
done
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# Rounds alternate the order (A B, then B A): a machine that speeds up or
# slows down during the set favours neither side.
for i in $(seq "$rounds"); do
  order="A B"
  [ $((i % 2)) -eq 0 ] && order="B A"
  for side in $order; do
    bin=$a extra=${A_FLAGS:-}
    [ $side = B ] && bin=$b extra=${B_FLAGS:-}
    load=$(cut -d' ' -f1 /proc/loadavg)
    # shellcheck disable=SC2086 # extra is a list of flags
    line=$(bench_line "$bin" "$@" $extra)
    echo "round $i $side (loadavg $load): $line" | cut -c1-300
    echo "$side $line" >>"$out"
  done
done
python3 "$(dirname "$0")/busy_machine.py" "$out"
python3 - "$out" <<'PY'
import json, statistics, sys
rows = {"A": [], "B": []}
for l in open(sys.argv[1]):
    side, js = l.split(" ", 1)
    rows[side].append(json.loads(js))
def med(side, k): return statistics.median(r[k] for r in rows[side])
for side in "AB":
    print("%s: median of %d  throughput_tps %.0f  cpu_normalized_tps %.0f  p50_us %.2f" % (
        side, len(rows[side]), med(side, "throughput_tps"), med(side, "cpu_normalized_tps"), med(side, "p50_us")))
    print("   cpu_normalized runs: " + " / ".join("%.0f" % r["cpu_normalized_tps"] for r in rows[side]))
print("B/A: throughput %.3f  cpu_normalized %.3f" % (
    med("B", "throughput_tps") / med("A", "throughput_tps"), med("B", "cpu_normalized_tps") / med("A", "cpu_normalized_tps")))
PY
