#!/usr/bin/env bash
# Client-visible commit latency against the replication batch size: one
# unreplicated run (the throughput baseline), then rolis-bench --replicas=3
# at each batch size in turn: closed loop (the peak at that size),
# then, unless RATE=0, open loop at RATE (default 0.8) of that peak
# (--rate: latency from each transaction's due time). With RUNS=N (default
# 1) each size runs N closed-loop runs, the peak is their median, and then N
# open-loop runs: the table gives medians (and the worst p99, so a single
# slow run stays visible); a shared machine's speed moves by ±10% between
# runs, and 80% of one fast run's peak can be 90% of a slow one's.
# Prints a table (throughput, wall and per worker CPU-second, its ratio to
# the baseline, p50/p95/p99 of Begin-to-watermark latency at the peak and at
# the rate) and a JSON line.
#   [SIZES="50 100 ..."] [RATE=0.8] [RUNS=1] [BENCH=path/to/rolis-bench] engine/bench/batch_sweep.sh --workload=ycsbpp --threads=1 --seconds=5
# Batch timeout: pass --batch-timeout=... among the flags (default 1ms; a
# long one, e.g. 100ms, lets every batch fill to its size).
set -euo pipefail
. "$(dirname "$0")/bench_line.sh"
bin=${BENCH:-$(dirname "$0")/../../bin/rolis-bench}
sizes=${SIZES:-50 100 200 400 800 1600 3200}
rate=${RATE:-0.8}
runs=${RUNS:-1}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
args=()
for a in "$@"; do [[ $a == --batch-timeout=* ]] || args+=("$a"); done
"$bin" "${args[@]}" --replicas=1 | tail -n 1 >>"$out"
for b in $sizes; do
  peaks=()
  for i in $(seq "$runs"); do
    line=$(bench_line "$bin" "$@" --replicas=3 --batch-size="$b")
    echo "$line" >>"$out"
    peaks+=("$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["throughput_tps"])' "$line")")
  done
  if [[ $rate != 0 ]]; then
    tps=$(python3 -c 'import statistics,sys; print(int(statistics.median(map(float, sys.argv[2:])) * float(sys.argv[1])))' \
      "$rate" "${peaks[@]}")
    for i in $(seq "$runs"); do
      "$bin" "$@" --replicas=3 --batch-size="$b" --rate="$tps" | tail -n 1 >>"$out"
    done
  fi
done
python3 - "$out" "$(cut -d' ' -f1-3 /proc/loadavg)" "$runs" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
runs = int(sys.argv[3])
base = rows[0]
keys = ("batch_size", "batch_timeout_us", "throughput_tps", "cpu_normalized_tps", "p50_us", "p95_us", "p99_us",
        "unacked_txns", "rate_tps", "max_lag_us", "engine_p99_us", "steal_ms")

def merged(group):
    # Medians of each figure over a size's runs; counts add up; the worst p99 and steal kept.
    m = {k: statistics.median(r[k] for r in group) for k in keys}
    for k in ("batch_size", "batch_timeout_us", "rate_tps"): m[k] = group[0][k]  # the same in every run
    m["unacked_txns"] = sum(r["unacked_txns"] for r in group)
    m["p99_max_us"] = max(r["p99_us"] for r in group)
    m["steal_ms"] = max(r.get("steal_ms", -1) for r in group)
    m["runs"] = len(group)
    return m

def by_size(rs):
    sizes = sorted({r["batch_size"] for r in rs})
    return [merged([r for r in rs if r["batch_size"] == b]) for b in sizes]

peaks = by_size([r for r in rows[1:] if not r.get("rate_tps")])
rated = by_size([r for r in rows[1:] if r.get("rate_tps")])
print("workload %s threads %d, loadavg %s, %d run(s) per row (medians)" % (base["workload"], base["threads"], sys.argv[2], runs))
print("%-8s %8s %10s %10s %7s %9s %9s %9s %10s %8s" % ("batch", "timeout", "tps", "cpu_norm", "ratio", "p50_us", "p95_us",
                                                        "p99_us", "p99_max_us", "unacked"))
print("%-8s %8s %10.0f %10.0f %7.3f %9s %9s %9s %10s %8s" % ("unrepl.", "-", base["throughput_tps"], base["cpu_normalized_tps"],
                                                             1.0, "-", "-", "-", "-", "-"))
for r in peaks:
    print("%-8d %8s %10.0f %10.0f %7.3f %9.1f %9.1f %9.1f %10.1f %8d" % (r["batch_size"], "%dus" % r["batch_timeout_us"],
          r["throughput_tps"], r["cpu_normalized_tps"], r["cpu_normalized_tps"] / base["cpu_normalized_tps"], r["p50_us"],
          r["p95_us"], r["p99_us"], r["p99_max_us"], r["unacked_txns"]))
print("ratio: CPU-normalized throughput (commits per worker CPU-second) against the unreplicated run")
if rated:
    print()
    print("open loop at a share of each batch size's peak (latency from the due time):")
    print("%-8s %10s %10s %10s %9s %9s %9s %10s %10s %10s %9s" % ("batch", "peak_tps", "rate_tps", "tps", "p50_us", "p95_us",
                                                                  "p99_us", "p99_max_us", "eng_p99_us", "max_lag_us",
                                                                  "steal_ms"))
    for r in rated:
        peak = next(p for p in peaks if p["batch_size"] == r["batch_size"])
        print("%-8d %10.0f %10.0f %10.0f %9.1f %9.1f %9.1f %10.1f %10.1f %10.0f %9.0f" % (r["batch_size"],
              peak["throughput_tps"], r["rate_tps"], r["throughput_tps"], r["p50_us"], r["p95_us"], r["p99_us"],
              r["p99_max_us"], r["engine_p99_us"], r["max_lag_us"], r["steal_ms"]))
    print("eng_p99_us: the engine's own p99 from the due time (before replication): the worker's queueing")
    print("steal_ms: time the hypervisor took from the worker's CPU in the window (the most in any run)")
print(json.dumps({"benchmark": "batch_sweep", "workload": base["workload"], "threads": base["threads"], "runs": runs,
                  "unreplicated_tps": base["throughput_tps"], "unreplicated_cpu_normalized_tps": base["cpu_normalized_tps"],
                  "rows": peaks, "rated_rows": rated}))
PY
