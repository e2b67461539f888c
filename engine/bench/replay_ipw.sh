#!/usr/bin/env bash
# Instructions per replayed write of rolis-replay-bench under callgrind: only
# its timed replay (TimedReplay: decode + apply) is counted, divided by the
# writes replayed. One line per (workload, store); does not drift with
# machine load.
#   engine/bench/replay_ipw.sh path/to/rolis-replay-bench [--small] [other flags]
# Runs every workload x store.
set -euo pipefail
if [ $# -lt 1 ] || [ ! -x "$1" ]; then
  echo "usage: replay_ipw.sh path/to/rolis-replay-bench [flags]" >&2
  exit 2
fi
bin=$1
shift
dir=${IPW_DIR:-/tmp}
for workload in ycsbpp tpcc; do
  for store in preloaded empty; do
    cg="$dir/replay_ipw.$$.$workload.$store.out"
    json=$(valgrind --tool=callgrind --callgrind-out-file="$cg" --collect-atstart=no \
      --toggle-collect='*TimedReplay*' "$bin" --workload "$workload" --store "$store" "$@" \
      2>/dev/null | tail -n 1)
    ir=$(grep -m1 '^totals:' "$cg" | awk '{print $2}')
    python3 - "$json" "$ir" "$cg" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
ir = int(sys.argv[2])
print("%-7s %-9s writes %8d  Ir %12d  Ir/write %6.0f  (%s)" % (r["workload"], r["store"], r["writes"], ir, ir / r["writes"], sys.argv[3]))
PY
  done
done
