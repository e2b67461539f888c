#!/usr/bin/env bash
# The README's main job, run by `make main` after `make build`:
#   1. the engine benchmarks in process (YCSB++ and TPC-C, short runs);
#   2. a standalone rolisd on loopback, driven by rolisctl: put, get, status,
#      and a short YCSB++ bench over gRPC;
#   3. the database on Kubernetes: the local Kind cluster (make kind-up when
#      it is not up; the first time builds Kubernetes, about 45 minutes),
#      the images loaded into it, `helm install` of the operator,
#      `kubectl apply` of the sample RolisCluster (3 members), a short load
#      with rolisctl through the client Service, then
#      `kubectl get rolisclusters` and the cluster's status.
# Every step is idempotent: a second run upgrades and re-applies in place.
# MAIN_KUBERNETES=0 skips part 3.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="$PWD/bin"
start=$(date +%s)
step() { printf '\n==> [%ss] %s\n' "$(( $(date +%s) - start ))" "$*"; }

step "engine in process: YCSB++, 1 thread, 3 s"
"$BIN/rolis-bench" --workload=ycsbpp --threads=1 --seconds=3 --warmup=1 | tail -n 12
step "engine in process: TPC-C, 1 thread, 3 s"
"$BIN/rolis-bench" --workload=tpcc --threads=1 --seconds=3 --warmup=1 | tail -n 12

# Free loopback ports, asked of the kernel.
read -r client admin metrics < <(python3 -c '
import socket
ss=[socket.socket() for _ in range(3)]
for s in ss: s.bind(("127.0.0.1",0))
print(*[s.getsockname()[1] for s in ss])')
log=$(mktemp -t rolisd.XXXXXX.log)
step "starting rolisd (client 127.0.0.1:$client, admin :$admin, metrics :$metrics; log $log)"
"$BIN/rolisd" --listen="127.0.0.1:$client" --admin-listen="127.0.0.1:$admin" \
  --metrics-listen="127.0.0.1:$metrics" >"$log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$metrics/readyz" >/dev/null 2>&1 && break
  kill -0 $pid 2>/dev/null || { echo "rolisd exited; its log:"; cat "$log"; exit 1; }
  sleep 0.1
done
curl -fsS "http://127.0.0.1:$metrics/readyz" >/dev/null || { echo "rolisd not ready after 10 s; log: $log"; exit 1; }

ctl() { "$BIN/rolisctl" --endpoint="127.0.0.1:$client" "$@"; }
step "rolisctl put greeting hello; get greeting"
ctl put greeting hello
[ "$(ctl get greeting)" = hello ] && echo "get greeting -> hello"
step "rolisctl status"
"$BIN/rolisctl" --endpoint="127.0.0.1:$admin" status
step "rolisctl bench: YCSB++ one-shot transactions over loopback, 5 s"
ctl bench --workload=ycsbpp --seconds=5 --keys=100000 --json | tail -n 1
step "stopping rolisd (SIGTERM)"
kill -TERM $pid; wait $pid; trap - EXIT

[ "${MAIN_KUBERNETES:-1}" = 1 ] || { step "done in $(( $(date +%s) - start ))s (Kubernetes part skipped)"; exit 0; }
hack/kind/kube-demo.sh
step "done in $(( $(date +%s) - start ))s"
