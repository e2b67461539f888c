#!/usr/bin/env bash
# What kind of work on the CPUs the worker does not use slows it: ROUNDS
# rounds (default 10) of the unreplicated rolis-bench with each
# --other-cpu-load (none, pause, stream, random), the order rotating from
# round to round; prints each run, then per load the median throughput and
# the median of its paired ratio to the idle run of the same round, as a
# table and a JSON line. With --replicas=3 on two vCPUs the followers' work
# runs beside the worker; this says which part of such work costs it
# (docs/benchmarks.md, "Measuring on a small machine").
#   [ROUNDS=10] [BENCH=path/to/rolis-bench] engine/bench/interference.sh --workload=tpcc --threads=1 --seconds=4
set -euo pipefail
. "$(dirname "$0")/bench_line.sh"
rounds=${ROUNDS:-10}
bin=${BENCH:-$(dirname "$0")/../../bin/rolis-bench}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
loads=(none pause stream random)
for i in $(seq "$rounds"); do
  # Rotated by one per round: each load runs first, second, ... equally often.
  order=()
  for ((k = 0; k < ${#loads[@]}; k++)); do order+=("${loads[(i + k) % ${#loads[@]}]}"); done
  for load in "${order[@]}"; do
    line=$(bench_line "$bin" "$@" --replicas=1 --other-cpu-load="$load")
    echo "round $i $load: $(echo "$line" | cut -c1-160)"
    echo "$i $load $line" >>"$out"
  done
done
python3 - "$out" <<'PY'
import json, statistics, sys
runs = {}
for raw in open(sys.argv[1]):
    i, load, line = raw.split(" ", 2)
    runs.setdefault(int(i), {})[load] = json.loads(line)
rounds = [r for r in runs.values() if "none" in r]
print("%-8s %6s %12s %16s" % ("load", "runs", "median_tps", "paired_vs_idle"))
summary = {"benchmark": "other_cpu_interference", "rounds": len(rounds)}
for load in ("none", "pause", "stream", "random"):
    got = [r for r in rounds if load in r]
    if not got:
        continue
    tps = statistics.median(r[load]["throughput_tps"] for r in got)
    paired = statistics.median(r[load]["throughput_tps"] / r["none"]["throughput_tps"] for r in got)
    print("%-8s %6d %12.0f %16.3f" % (load, len(got), tps, paired))
    summary[load] = {"median_tps": round(tps, 1), "paired_vs_idle": round(paired, 4)}
if rounds:
    summary["workload"] = rounds[0]["none"]["workload"]
print(json.dumps(summary))
PY
