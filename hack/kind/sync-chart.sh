#!/usr/bin/env bash
# Copies what controller-gen generates from the operator's markers into the chart:
#   config/crd/bases/*.yaml  -> charts/rolis-operator/crds/
#   config/rbac/role.yaml    -> charts/rolis-operator/files/manager-role.yaml
# (the chart's ClusterRole takes its rules from that file). These chart files
# are never edited by hand. `--check` changes nothing and fails when they differ.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
CHART="$ROOT/charts/rolis-operator"
check=0; [ "${1:-}" = --check ] && check=1
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
mkdir -p "$out/crds" "$out/files"

shopt -s nullglob
crds=("$ROOT"/config/crd/bases/*.yaml)
if ((${#crds[@]} == 0)); then
  echo "sync-chart: no CRDs in config/crd/bases (controller-gen has not run yet)" >&2
else
  cp "${crds[@]}" "$out/crds/"
fi
if [ -f "$ROOT/config/rbac/role.yaml" ]; then
  cp "$ROOT/config/rbac/role.yaml" "$out/files/manager-role.yaml"
else
  echo "sync-chart: no config/rbac/role.yaml (controller-gen has not run yet)" >&2
fi

changed=0
for d in crds files; do
  mkdir -p "$CHART/$d"
  diff -r -q -x .gitkeep "$out/$d" "$CHART/$d" >/dev/null 2>&1 || changed=1
done
if ((check)); then
  if ((changed)); then
    for d in crds files; do diff -r -q -x .gitkeep "$out/$d" "$CHART/$d" >&2 || true; done
    echo "sync-chart: the chart's CRDs or RBAC differ from config/: run hack/kind/sync-chart.sh" >&2
    exit 1
  fi
  echo "sync-chart: chart in sync with config/"
  exit 0
fi
for d in crds files; do
  rm -f "$CHART/$d"/*.yaml
  cp "$out/$d"/. "$CHART/$d/" -r
done
echo "sync-chart: $(ls "$CHART/crds" | wc -l) CRD file(s), RBAC rules: $([ -f "$CHART/files/manager-role.yaml" ] && echo copied || echo missing)"
