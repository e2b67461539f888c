#!/usr/bin/env bash
# Client-visible commit latency against the replication batch size: one
# unreplicated run (the throughput baseline), then rolis-bench --replicas=3
# at each batch size, in one session. Prints a table (throughput, wall and
# per worker CPU-second, its ratio to the baseline, p50/p95/p99 of
# Begin-to-watermark latency) and a JSON line.
#   [SIZES="50 100 ..."] [BENCH=path/to/rolis-bench] engine/bench/batch_sweep.sh --workload=ycsbpp --threads=1 --seconds=5
# Batch timeout: pass --batch-timeout=... among the flags (default 1ms; a
# long one, e.g. 100ms, lets every batch fill to its size).
set -euo pipefail
bin=${BENCH:-$(dirname "$0")/../../bin/rolis-bench}
sizes=${SIZES:-50 100 200 400 800 1600 3200}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
args=()
for a in "$@"; do [[ $a == --batch-timeout=* ]] || args+=("$a"); done
"$bin" "${args[@]}" --replicas=1 | tail -n 1 >>"$out"
for b in $sizes; do
  "$bin" "$@" --replicas=3 --batch-size="$b" | tail -n 1 >>"$out"
done
python3 - "$out" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
base = rows[0]
print("workload %s threads %d, loadavg %s" % (base["workload"], base["threads"], sys.argv[2]))
print("%-8s %8s %10s %10s %7s %9s %9s %9s %8s" % ("batch", "timeout", "tps", "cpu_norm", "ratio", "p50_us", "p95_us",
                                                   "p99_us", "unacked"))
print("%-8s %8s %10.0f %10.0f %7.3f %9s %9s %9s %8s" % ("unrepl.", "-", base["throughput_tps"], base["cpu_normalized_tps"],
                                                      1.0, "-", "-", "-", "-"))
for r in rows[1:]:
    print("%-8d %8s %10.0f %10.0f %7.3f %9.1f %9.1f %9.1f %8d" % (r["batch_size"], "%dus" % r["batch_timeout_us"],
          r["throughput_tps"], r["cpu_normalized_tps"], r["cpu_normalized_tps"] / base["cpu_normalized_tps"], r["p50_us"],
          r["p95_us"], r["p99_us"], r["unacked_txns"]))
print("ratio: CPU-normalized throughput (commits per worker CPU-second) against the unreplicated run")
print(json.dumps({"benchmark": "batch_sweep", "workload": base["workload"], "threads": base["threads"],
                  "unreplicated_tps": base["throughput_tps"], "unreplicated_cpu_normalized_tps": base["cpu_normalized_tps"],
                  "rows": [{k: r[k] for k in ("batch_size", "batch_timeout_us", "throughput_tps", "cpu_normalized_tps",
                                                "p50_us", "p95_us", "p99_us", "unacked_txns")} for r in rows[1:]]}))
PY
