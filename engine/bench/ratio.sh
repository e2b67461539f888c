#!/usr/bin/env bash
# Replicated ÷ unreplicated throughput, measured in one set of rounds: runs
# rolis-bench ROUNDS times with --replicas=1 and then
# --replicas=3 (alternating, so both see the same machine; even rounds run
# the replicated one first), prints each run's
# figures and the ratio of the medians (throughput and CPU-normalized), and
# the median of each round's own replicated/unreplicated ratio, and a 90%
# bootstrap interval of the ratio over the rounds (how far another set on
# the same machine might land).
# With DECOMPOSE=1 each round also runs the leader alone
# (--mode=replicated --replicas=1: the same commit hook, batches and loop,
# no followers) and the summary splits the ratio into the leader's own path
# (one member ÷ unreplicated) and what the followers add (three ÷ one).
# RAW=file keeps every run's line ("round side json") there; several such
# files pooled: engine/bench/ratio_summary.py FILE...
#   [ROUNDS=3] [DECOMPOSE=1] [RAW=file] [BENCH=path/to/rolis-bench] engine/bench/ratio.sh --workload=ycsbpp --threads=1 --seconds=5
set -euo pipefail
. "$(dirname "$0")/bench_line.sh"
rounds=${ROUNDS:-3}
bin=${BENCH:-$(dirname "$0")/../../bin/rolis-bench}
if [ -n "${RAW:-}" ]; then
  out=$RAW
  : >"$out"
else
  out=$(mktemp)
  trap 'rm -f "$out"' EXIT
fi
sides=(u r3)
[ "${DECOMPOSE:-0}" = 1 ] && sides=(u r1 r3)
flags_of() {
  case $1 in
    u) echo "--replicas=1" ;;
    r1) echo "--mode=replicated --replicas=1" ;;
    r3) echo "--replicas=3" ;;
  esac
}
# Rounds alternate the order (forward, then reversed): a machine that speeds
# up or slows down during the set favours no side.
for i in $(seq "$rounds"); do
  order=("${sides[@]}")
  if [ $((i % 2)) -eq 0 ]; then
    order=()
    for ((k = ${#sides[@]} - 1; k >= 0; k--)); do order+=("${sides[k]}"); done
  fi
  for side in "${order[@]}"; do
    load=$(cut -d' ' -f1 /proc/loadavg)
    # shellcheck disable=SC2046
    line=$(bench_line "$bin" "$@" $(flags_of "$side"))
    echo "round $i $side (loadavg $load): $line" | cut -c1-400
    echo "$i $side $line" >>"$out"
  done
done
python3 "$(dirname "$0")/busy_machine.py" "$out"
python3 "$(dirname "$0")/ratio_summary.py" "$out"
