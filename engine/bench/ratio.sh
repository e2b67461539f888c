#!/usr/bin/env bash
# Replicated ÷ unreplicated throughput, measured in one session: runs
# rolis-bench ROUNDS times with --replicas=1 and then
# --replicas=3 (alternating, so both see the same machine; even rounds run
# the replicated one first), prints each run's
# figures and the ratio of the medians (throughput and CPU-normalized), and
# the median of each round's own replicated/unreplicated ratio.
#   [ROUNDS=3] [BENCH=path/to/rolis-bench] engine/bench/ratio.sh --workload=ycsbpp --threads=1 --seconds=5
set -euo pipefail
rounds=${ROUNDS:-3}
bin=${BENCH:-$(dirname "$0")/../../bin/rolis-bench}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# Rounds alternate the order (1 3, then 3 1): a machine that speeds up or
# slows down during the set favours neither side.
for i in $(seq "$rounds"); do
  order="1 3"
  [ $((i % 2)) -eq 0 ] && order="3 1"
  for r in $order; do
    load=$(cut -d' ' -f1 /proc/loadavg)
    line=$("$bin" "$@" --replicas=$r | tail -n 1)
    echo "round $i replicas $r (loadavg $load): $line" | cut -c1-400
    echo "$line" >>"$out"
  done
done
python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {1: [r for r in rows if r["replicas"] == 1], 3: [r for r in rows if r["replicas"] == 3]}
def med(rs, k): return statistics.median(r[k] for r in rs)
w = rows[0]["workload"]
t1, t3 = med(by[1], "throughput_tps"), med(by[3], "throughput_tps")
c1, c3 = med(by[1], "cpu_normalized_tps"), med(by[3], "cpu_normalized_tps")
# steal_ms: what the hypervisor took from the workers' CPUs (max over runs).
def steal(rs): return max(r.get("steal_ms", -1) for r in rs)
print("%-8s %9s %14s %18s %9s %9s %9s %9s" % ("replicas", "runs", "median_tps", "median_cpu_norm", "p50_us", "p95_us", "p99_us",
                                             "steal_ms"))
for r, rs in sorted(by.items()):
    print("%-8d %9d %14.0f %18.0f %9.1f %9.1f %9.1f %9.0f" % (r, len(rs), med(rs, "throughput_tps"), med(rs, "cpu_normalized_tps"),
          med(rs, "p50_us"), med(rs, "p95_us"), med(rs, "p99_us"), steal(rs)))
# Each round's replicated run right after its unreplicated one: the median
# of those paired ratios follows the machine's slow swings less than the
# ratio of the medians does.
paired = statistics.median(b["throughput_tps"] / a["throughput_tps"] for a, b in zip(by[1], by[3]))
print("ratio replicated/unreplicated: throughput %.3f  cpu-normalized %.3f  (median of the %d paired rounds: %.3f)"
      % (t3 / t1, c3 / c1, min(len(by[1]), len(by[3])), paired))
print(json.dumps({"benchmark": "replication_ratio", "workload": w, "threads": rows[0]["threads"], "rounds": len(by[1]),
                  "unreplicated_tps": t1, "replicated_tps": t3, "ratio": round(t3 / t1, 4),
                  "ratio_cpu_normalized": round(c3 / c1, 4), "ratio_paired_median": round(paired, 4), "replicated_p50_us": med(by[3], "p50_us"),
                  "replicated_p95_us": med(by[3], "p95_us"), "replicated_p99_us": med(by[3], "p99_us"),
                  "max_steal_ms": max(steal(by[1]), steal(by[3]))}))
PY
