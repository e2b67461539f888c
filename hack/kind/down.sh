#!/usr/bin/env bash
# Deletes the Kind cluster. Images, binaries and the Docker daemon are kept
# (caches); `hack/kind/down.sh --all` also stops the Docker daemon it started.
source "$(dirname "$0")/lib.sh"
if docker_ok; then
  ensure_kind
  if kind get clusters 2>/dev/null | grep -qx "$KIND_CLUSTER"; then
    step "kind delete cluster $KIND_CLUSTER" kind delete cluster --name "$KIND_CLUSTER"
  else
    info "no cluster $KIND_CLUSTER"
  fi
fi
if [ "${1:-}" = --all ] && [ -f /var/run/rolis-dockerd.pid ]; then
  pid=$(cat /var/run/rolis-dockerd.pid)
  log "stopping dockerd (pid $pid)"
  as_root kill "$pid" 2>/dev/null || true
  for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
fi
total_time
