#!/usr/bin/env bash
# Instructions per transaction of rolis-bench under callgrind: only the
# workloads' RunOne functions are counted (no loading, no driver), divided by
# the committed transactions. Does not drift with machine load.
#   engine/bench/ipt.sh path/to/rolis-bench --workload=tpcc --seconds=20
# Prints "workload ir commits ir_per_txn" and keeps the callgrind file as
# ipt.<workload>.<pid>.out in $IPT_DIR (default /tmp) for callgrind_annotate.
set -euo pipefail
if [ $# -lt 1 ] || [ ! -x "$1" ]; then
  echo "usage: ipt.sh path/to/rolis-bench [rolis-bench flags]" >&2
  exit 2
fi
bin=$1
shift
dir=${IPT_DIR:-/tmp}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cg="$dir/ipt.$$.out"
valgrind --tool=callgrind --callgrind-out-file="$cg" --toggle-collect='rolis::workloads::*::RunOne*' \
  "$bin" --threads=1 --warmup=0 --no-pin "$@" >"$log" 2>/dev/null
json=$(tail -n 1 "$log")
ir=$(grep -m1 '^totals:' "$cg" | awk '{print $2}')
python3 - "$json" "$ir" "$cg" <<'PY'
import json, os, sys
r = json.loads(sys.argv[1])
ir = int(sys.argv[2])
out = os.path.join(os.path.dirname(sys.argv[3]), "ipt.%s.%s.out" % (r["workload"], os.getpid()))
os.rename(sys.argv[3], out)
print("workload %s  Ir %d  commits %d  Ir/txn %.0f  (%s)" % (r["workload"], ir, r["commits"], ir / r["commits"], out))
PY
