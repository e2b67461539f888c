#!/usr/bin/env bash
# Starts a Docker daemon (Debian's docker.io) unless one already answers at
# $DOCKER_HOST. Its default runtime is runc-wrapper-host (see that file for why).
# Idempotent. State: $ROLIS_CACHE/docker/{daemon.json,dockerd.log,runc-wrapper};
# images and containers live in /var/lib/docker; pid file /var/run/rolis-dockerd.pid.
source "$(dirname "$0")/lib.sh"
ensure_packages docker.io jq iptables
if docker_ok; then info "Docker daemon already running at $DOCKER_HOST"; exit 0; fi
[ "$DOCKER_HOST" = unix:///var/run/docker.sock ] || die "no daemon at DOCKER_HOST=$DOCKER_HOST (unset it to let this script start one)"

D="$CACHE/docker"; mkdir -p "$D"
# A stable copy of the wrapper: the daemon keeps its path across checkouts.
install -m 755 "$KIND_DIR/runc-wrapper-host" "$D/runc-wrapper"
cat >"$D/daemon.json" <<JSON
{
  "runtimes": {"rolis-runc": {"path": "$D/runc-wrapper"}},
  "default-runtime": "rolis-runc",
  "storage-driver": "overlay2",
  "log-driver": "json-file",
  "log-opts": {"max-size": "10m", "max-file": "2"}
}
JSON
pidf=/var/run/rolis-dockerd.pid
if [ -f "$pidf" ] && kill -0 "$(cat "$pidf")" 2>/dev/null; then
  info "dockerd (pid $(cat "$pidf")) is starting"
else
  rm -f "$pidf"
  log "starting dockerd (log: $D/dockerd.log)"
  # A simple command (not the as_root function), so no shell lingers as its parent.
  sudo=(); [ "$(id -u)" = 0 ] || sudo=(sudo)
  "${sudo[@]}" setsid nohup dockerd --config-file "$D/daemon.json" --pidfile "$pidf" \
    -H unix:///var/run/docker.sock >>"$D/dockerd.log" 2>&1 </dev/null &
fi
for _ in $(seq 60); do docker_ok && break; sleep 1; done
docker_ok || { tail -20 "$D/dockerd.log" >&2; die "dockerd did not come up"; }
info "dockerd $(docker version -f '{{.Server.Version}}') up, default runtime $(docker info -f '{{.DefaultRuntime}}')"
