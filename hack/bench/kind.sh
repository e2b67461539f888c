#!/usr/bin/env bash
# The Kubernetes part of the benchmark suite (docs/benchmarks.md, "On
# Kubernetes"): against a running RolisCluster on the local Kind cluster
# (hack/kind/kube-demo.sh makes rolis-sample), with `kubectl rolis bench`
# (a Job of the tools image against the client Service):
#   kind.jsonl           YCSB++ and TPC-C at 1 and 4 client streams, each line
#                        with the CPU the members spent per transaction
#                        (member_cpu_us_per_txn, read from the host's /proc:
#                        on Kind the pods' processes are the host's)
#   failover-kind.jsonl  a 12 s YCSB++ run with the leader's rolisd killed
#                        (kill -9) 4 s in, outcomes per 100 ms bucket
#   rtt.jsonl            YCSB++ with 0, 5, 20 and 50 ms injected between the
#                        worker nodes (tc netem), when the kernel has netem
#
#   hack/bench/kind.sh [OUT]     OUT: build/bench by default
#   KIND_BENCH_CLUSTER=rolis-sample KIND_BENCH_NAMESPACE=default KIND_BENCH_SECONDS=10
#   KIND_BENCH_MEMORY=3Gi (the members' memory limit, set when it differs)
#   KIND_BENCH_PARTS="throughput failover rtt" (which of the three to run)
source "$(dirname "$0")/../kind/lib.sh"
OUT=${1:-$ROOT/build/bench}
NAME=${KIND_BENCH_CLUSTER:-rolis-sample}
NS=${KIND_BENCH_NAMESPACE:-default}
SECS=${KIND_BENCH_SECONDS:-10}
PLUGIN="$ROOT/bin/kubectl-rolis"
PARTS=" ${KIND_BENCH_PARTS:-throughput failover rtt} "
part() { [[ $PARTS == *" $1 "* ]]; }
kc() { kubectl --context "kind-$KIND_CLUSTER" -n "$NS" "$@"; }
mkdir -p "$OUT"
[ -x "$PLUGIN" ] || die "no $PLUGIN: make build first"
kc wait --for=condition=Ready "roliscluster/$NAME" --timeout=300s >/dev/null ||
  die "roliscluster $NS/$NAME is not Ready (hack/kind/kube-demo.sh makes rolis-sample)"
# The members' memory limit for the runs (the sample's 1Gi fills with TPC-C
# within a minute, and a member restarted after the kill needs room to
# recover and catch up: docs/benchmarks.md, "On Kubernetes"). Raising it is
# a rolling restart.
MEM=${KIND_BENCH_MEMORY:-3Gi}
if [ "$(kc get roliscluster "$NAME" -o jsonpath='{.spec.resources.limits.memory}')" != "$MEM" ]; then
  info "resources.limits.memory of $NAME set to $MEM (a rolling restart)"
  kc patch roliscluster "$NAME" --type merge -p "{\"spec\":{\"resources\":{\"limits\":{\"memory\":\"$MEM\"}}}}" >/dev/null
  sleep 5
  kc wait --for=condition=Ready "roliscluster/$NAME" --timeout=600s >/dev/null || die "$NAME is not Ready after the memory change"
fi

# The host PIDs of the rolisd processes of the pods with these uids, found
# by the uid in their cgroup paths (on Kind the pods' processes are the
# host's).
rolisd_pids_of_pods() {
  for p in $(pgrep -f '^/usr/local/bin/rolisd'); do
    for u in "$@"; do
      if grep -Eq "pod(${u}|${u//-/_})" "/proc/$p/cgroup" 2>/dev/null; then echo "$p"; fi
    done
  done
}
member_pids() {
  # shellcheck disable=SC2046
  rolisd_pids_of_pods $(kc get pods -l app.kubernetes.io/instance="$NAME" -o jsonpath='{.items[*].metadata.uid}')
}
cpu_ticks() { for p in "$@"; do awk '{print $14+$15}' "/proc/$p/stat" 2>/dev/null || echo 0; done | paste -sd' '; }

# bench LABEL FILE EXTRA PLUGIN-FLAGS -- ROLISCTL-FLAGS: one run; its JSON
# line, with the label, the members' CPU over the run and the fields of the
# JSON object EXTRA, goes to OUT/FILE.
bench() {
  local label=$1 file=$2 extra=$3 log pids before after
  shift 3
  log=$(mktemp)
  mapfile -t pids < <(member_pids)
  before=$(cpu_ticks "${pids[@]}")
  info "kubectl rolis bench $NAME $*"
  if ! "$PLUGIN" --context "kind-$KIND_CLUSTER" -n "$NS" bench "$NAME" "$@" >"$log" 2>&1; then
    tail -5 "$log" >&2
    rm -f "$log"
    return 1
  fi
  after=$(cpu_ticks "${pids[@]}")
  grep '^{' "$log" | tail -1 | python3 -c '
import json, sys
r = json.load(sys.stdin)
b, a = [list(map(int, x.split())) for x in sys.argv[2:4]]
hz = 100.0
n = r.get("commits", 0) + r.get("aborts", 0) + r.get("errors", 0)
# The window is the whole Job (load and warm-up too): an upper bound per
# measured transaction, close when the load is short.
r["label"] = sys.argv[1]
r["member_cpu_s"] = [round((y - x) / hz, 2) for x, y in zip(b, a)]
r.update(json.loads(sys.argv[4]))
print(json.dumps(r))' "$label" "$before" "$after" "$extra" >>"$OUT/$file"
  grep -E '^(throughput|latency)' "$log" | sed 's/^/    /' >&2
  rm -f "$log"
}

failed=0
if part throughput; then
  : >"$OUT/kind.jsonl"
  bench "ycsbpp 1 stream" kind.jsonl {} --seconds="$SECS" -- --keys=100000 --json || failed=1
  bench "ycsbpp 4 streams" kind.jsonl {} --seconds="$SECS" -- --keys=100000 --no-load --concurrency=4 --json || failed=1
  bench "tpcc 1 stream" kind.jsonl {} --workload=tpcc --seconds="$SECS" -- --check --json || failed=1
  bench "tpcc 4 streams" kind.jsonl {} --workload=tpcc --seconds="$SECS" -- --concurrency=4 --check --json || failed=1
fi

# Failover timeline: the leader's rolisd killed 4 s into a 12 s run.
failover() {
  local log=$OUT/failover-kind.log leader uid kill
  "$PLUGIN" --context "kind-$KIND_CLUSTER" -n "$NS" bench "$NAME" --seconds=12 -- --keys=100000 --no-load \
    --warmup=1 --timeline=100ms --timeout=1s --json >"$log" 2>&1 &
  local job=$!
  for _ in $(seq 600); do grep -q ' run\] ' "$log" 2>/dev/null && break; sleep 0.2; done
  sleep 3
  leader=$(kc get roliscluster "$NAME" -o jsonpath='{.status.leader}')
  uid=$(kc get pod "$leader" -o jsonpath='{.metadata.uid}')
  kill=$(date +%s.%N)
  # shellcheck disable=SC2046
  kill -9 $(rolisd_pids_of_pods "$uid")
  info "killed the rolisd of $leader"
  wait "$job" || return 1
  # Where the gap goes: the operator's first events after the kill (its
  # clock is the host's: Kind's nodes share its kernel) and the first
  # bucket of the run's timeline with a commit after the new leader opened.
  kc get events.events.k8s.io --field-selector "regarding.name=$NAME" -o json >"$OUT/failover-kind-events.json"
  grep '^{' "$log" | tail -1 | python3 -c 'import json, sys
from datetime import datetime
r = json.load(sys.stdin)
kill = float(sys.argv[1])
r.update(kill_unix=kill, where="kind", election="operator")
def unix(t):
    return datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp() if t else None
seen = {}
for e in json.load(open(sys.argv[2]))["items"]:
    at = unix((e.get("series") or {}).get("lastObservedTime") or e.get("eventTime") or e["metadata"]["creationTimestamp"])
    if at is not None and at >= kill:
        seen[e["reason"]] = min(seen.get(e["reason"], at), at)
def after(*reasons):
    ts = [seen[x] for x in reasons if x in seen]
    return round(min(ts) - kill, 3) if ts else None
r["detected_after_s"] = after("LeaderGone", "LeaderUnhealthy", "LeaderLeaving")
r["promoted_after_s"] = after("Promoted")
r["label_moved_after_s"] = after("LeaderLabelMoved")
# Replies the old leader sent before it died are still read for a few ms
# after the kill: the first commit counted is the first after the new
# leader opened.
start = r.get("timeline_start_unix")
opened = kill + (r["promoted_after_s"] or 0)
for b in r.get("timeline", []):
    if start is not None and start + b["t"] > opened and b["committed"] > 0:
        r["first_commit_after_s"] = round(start + b["t"] - kill, 3)  # the start of its bucket
        break
print(json.dumps(r))' "$kill" "$OUT/failover-kind-events.json" >>"$OUT/failover-kind.jsonl"
  tail -1 "$OUT/failover-kind.jsonl" | python3 -c 'import json, sys
r = json.load(sys.stdin)
print("    after the kill: detected %s s, promoted %s s, leader label moved %s s, first commit %s s" % tuple(
    r.get(k) for k in ("detected_after_s", "promoted_after_s", "label_moved_after_s", "first_commit_after_s")))' >&2
  kc wait --for=condition=Ready "roliscluster/$NAME" --timeout=300s >/dev/null
}
if part failover; then
  : >"$OUT/failover-kind.jsonl"
  failover || failed=1
fi

# Injected round trip between the worker nodes. netem is a kernel qdisc
# (CONFIG_NET_SCH_NETEM); without it there is no delay to inject.
workers=$(kind get nodes --name "$KIND_CLUSTER" | grep worker || true)
first=$(echo "$workers" | head -1)
if ! part rtt; then
  :
elif docker exec "$first" tc qdisc add dev eth0 root netem delay 1ms 2>/dev/null; then
  docker exec "$first" tc qdisc del dev eth0 root
  : >"$OUT/rtt.jsonl"
  for rtt in 0 5 20 50; do
    for n in $workers; do
      docker exec "$n" tc qdisc del dev eth0 root 2>/dev/null || true
      [ "$rtt" = 0 ] || docker exec "$n" tc qdisc add dev eth0 root netem delay $((rtt * 500))us
    done
    bench "rtt $rtt" rtt.jsonl "{\"rtt_ms\": $rtt}" --seconds="$SECS" -- --keys=100000 --no-load --json || failed=1
  done
  for n in $workers; do docker exec "$n" tc qdisc del dev eth0 root 2>/dev/null || true; done
else
  log "injected RTT skipped: this kernel has no netem qdisc (CONFIG_NET_SCH_NETEM)"
fi
total_time
exit $failed
