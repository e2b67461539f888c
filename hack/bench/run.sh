#!/usr/bin/env bash
# The in-process benchmark suite (docs/benchmarks.md, "Suite"): short
# rolis-bench runs of every mode x workload, the sweeps the plots need
# (threads, batch size, zipf theta) and rolis-replay-bench, each run's JSON
# line appended to a .jsonl file in OUT. hack/bench/plot.py draws them.
#
#   hack/bench/run.sh [OUT]          OUT: build/bench by default
#   BENCH_SECONDS=10 BENCH_WARMUP=2  longer runs (make bench-full)
#
# Binaries: BENCH (rolis-bench), REPLAY_BENCH and ROLISD (for the failover
# timeline), by default from build/engine/bin; the failover timeline also
# needs Go (it builds rolisctl). A failed run is reported and the rest go
# on; the script then exits 1.
set -u
OUT=${1:-build/bench}
BIN=${BIN:-build/engine/bin}
BENCH=${BENCH:-$BIN/rolis-bench}
REPLAY_BENCH=${REPLAY_BENCH:-$BIN/rolis-replay-bench}
ROLISD=${ROLISD:-$BIN/rolisd}
SECS=${BENCH_SECONDS:-2}
WARM=${BENCH_WARMUP:-0.5}
mkdir -p "$OUT"
# The files of this script only: failover-kind.jsonl and rtt.jsonl come from
# Kind runs (docs/benchmarks.md, "Failover timeline", "Injected RTT").
for f in suite mix threads batch zipf replay failover; do rm -f "$OUT/$f.jsonl"; done
failed=0

# run FILE ARGS...: one rolis-bench run; its JSON line goes to OUT/FILE.
run() {
  local file=$1
  shift
  local log
  log=$(mktemp)
  echo "rolis-bench $*" >&2
  if timeout 300 nice "$BENCH" --seconds="$SECS" --warmup="$WARM" "$@" >"$log" 2>&1 &&
    tail -1 "$log" | python3 -c 'import json,sys; json.loads(sys.stdin.read())' 2>/dev/null; then
    tail -1 "$log" >>"$OUT/$file"
  else
    echo "FAILED: rolis-bench $*" >&2
    tail -5 "$log" >&2
    failed=1
  fi
  rm -f "$log"
}

# Every mode x workload (2pl and calvin run TPC-C with its reconnaissance step).
for mode in silo rolis 2pl calvin; do
  for w in ycsbpp retwis tpca bank hash tpcc; do
    extra=()
    case $w in bank | hash) extra=(--mix=50/50) ;; tpcc) extra=(--tpcc-items=10000 --tpcc-customers=300) ;; esac
    run suite.jsonl --mode=$mode --workload=$w "${extra[@]}"
  done
done
for mix in 90/10 10/90; do
  for w in bank hash; do run mix.jsonl --mode=rolis --workload=$w --mix=$mix; done
done

# No acknowledged transaction lost: each replicated mode loses a follower
# (SIGKILL) mid-run and must find every acknowledged transaction (calvin:
# batch) on a majority afterwards (docs/benchmarks.md, "Correctness").
for mode in rolis 2pl calvin; do
  run correctness.jsonl --mode=$mode --workload=bank --mix=50/50 --kill-follower-at=1 --check-acked
done

# Throughput against worker threads, every mode (YCSB++).
for mode in silo rolis 2pl calvin; do
  for t in 1 2; do run threads.jsonl --mode=$mode --workload=ycsbpp --threads=$t; done
done

# Client-visible commit latency against batch size (rolis, YCSB++).
for b in 1 10 50 200 1000; do run batch.jsonl --mode=rolis --workload=ycsbpp --batch-size=$b; done

# Throughput and abort rate against zipf theta, rolis and silo, 2 threads
# (one thread has no one to conflict with).
for mode in silo rolis; do
  for z in 0 0.5 0.8 0.9 0.95 0.99; do run zipf.jsonl --mode=$mode --workload=ycsbpp --threads=2 --zipf=$z; done
done

# Replay only: a follower's decode and apply of a recorded YCSB++ run.
echo "rolis-replay-bench --workload=ycsbpp --store=preloaded" >&2
if out=$(timeout 300 nice "$REPLAY_BENCH" --workload=ycsbpp --store=preloaded 2>/dev/null | tail -1) &&
  echo "$out" | python3 -c 'import json,sys; json.loads(sys.stdin.read())' 2>/dev/null; then
  echo "$out" >>"$OUT/replay.jsonl"
else
  echo "FAILED: rolis-replay-bench" >&2
  failed=1
fi

# Failover timeline: rolisctl bench --timeline=100ms against 3 rolisd on
# loopback, the leader SIGKILLed 2 s into a 6 s run, once per way of
# electing (test/replication/failover_timeline_test.go).
echo "failover timeline (3 rolisd on loopback, builtin and driver)" >&2
log=$(mktemp)
root=$(cd "$(dirname "$0")/../.." && pwd)
if ! ROLISD_BIN=$(realpath "$ROLISD") ROLIS_FAILOVER_TIMELINE_OUT=$(realpath "$OUT")/failover.jsonl \
  timeout 300 nice go -C "$root" test -count=1 -v -run 'TestFailoverTimeline$' ./test/replication/ >"$log" 2>&1; then
  echo "FAILED: failover timeline" >&2
  tail -20 "$log" >&2
  failed=1
fi
grep 'failover_timeline_test' "$log" >&2
rm -f "$log"
exit $failed
