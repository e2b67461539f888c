#!/usr/bin/env bash
# Runs rolis-bench RUNS times (default 3) with the given flags and prints each
# run's JSON summary, the load average before it, and the median throughput,
# p50 and p99. For docs/benchmarks.md on a shared machine.
#   engine/bench/medians.sh [-n RUNS] [-b path/to/rolis-bench] -- --workload=ycsbpp --threads=1
set -euo pipefail
. "$(dirname "$0")/bench_line.sh"
runs=3
bin="$(dirname "$0")/../../bin/rolis-bench"
while getopts "n:b:" opt; do
  case $opt in
    n) runs=$OPTARG ;;
    b) bin=$OPTARG ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for i in $(seq "$runs"); do
  load=$(cut -d' ' -f1 /proc/loadavg)
  line=$(bench_line "$bin" "$@")
  echo "run $i (loadavg $load): $line"
  echo "$line" >>"$out"
done
python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def med(k): return statistics.median(r[k] for r in rows)
print("median of %d: throughput_tps %.0f  cpu_normalized_tps %.0f  abort_rate %.5f  p50_us %.2f  p99_us %.2f"
      "  load_seconds %.2f" % (len(rows), med("throughput_tps"), med("cpu_normalized_tps"), med("abort_rate"),
                               med("p50_us"), med("p99_us"), med("load_seconds")))
PY
