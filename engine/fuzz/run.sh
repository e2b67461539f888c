#!/usr/bin/env bash
# Builds the libFuzzer targets (engine/fuzz/CMakeLists.txt) in a clang build
# of their own and runs each for a bounded time, starting from its seed
# corpus (corpus/<target>/). Prints executions and crashes per target and
# exits non-zero when any target crashed (the reproducer is left in
# $FUZZ_ARTIFACTS, default build/fuzz/artifacts). README.md has the details.
# Usage: run.sh SECONDS_PER_TARGET [TARGET...]   (default: every target)
set -euo pipefail
seconds="${1:?usage: run.sh SECONDS_PER_TARGET [TARGET...]}"; shift
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="${FUZZ_BUILD_DIR:-$repo/build/fuzz}"
artifacts="${FUZZ_ARTIFACTS:-$build/artifacts}"
command -v clang++ >/dev/null || { echo "run.sh: clang++ is missing (hack/install-deps.sh installs it)" >&2; exit 2; }

if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$repo/engine" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DROLIS_FUZZ=ON >/dev/null
fi
nice cmake --build "$build" --target rolis_fuzz_all
mapfile -t targets < <(if (($#)); then printf '%s\n' "$@"; else cat "$build/fuzz/targets.txt"; fi)
mkdir -p "$artifacts"

status=0
printf '%-28s %12s %8s %s\n' target executions crashes corpus
for t in "${targets[@]}"; do
  [ -n "$t" ] || continue
  seeds="$here/corpus/$t"
  work="$build/corpus/$t"  # what the run finds; the seeds stay as committed
  mkdir -p "$seeds" "$work"
  log="$build/$t.log"
  rc=0
  before=$(find "$artifacts" -maxdepth 1 -name "$t-*" | wc -l)
  # -fork is not used: one process, so the executions counted are all of them.
  "$build/fuzz/$t" "$work" "$seeds" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$artifacts/$t-" >"$log" 2>&1 || rc=$?
  execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' | tail -1)
  crashes=$(( $(find "$artifacts" -maxdepth 1 -name "$t-*" | wc -l) - before ))
  if [ "$rc" != 0 ] || [ -z "$execs" ]; then
    crashes=$((crashes > 0 ? crashes : 1)); status=1
  fi
  printf '%-28s %12s %8s %s\n' "$t" "${execs:-?}" "$crashes" "$(ls "$work" | wc -l) inputs"
  if [ "$rc" != 0 ]; then
    grep -m1 -E 'ERROR|SUMMARY|==[0-9]+==' "$log" | sed 's/^/    /' || true
    echo "    log: $log; reproducer: $(ls -t "$artifacts"/"$t"-* 2>/dev/null | head -1)"
  fi
done
exit $status
