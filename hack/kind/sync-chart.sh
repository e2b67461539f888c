#!/usr/bin/env bash
# Copies what controller-gen generates from the operator's markers into the chart:
#   config/crd/bases/*.yaml  -> charts/rolis-operator/files/crds/ (templates/crds.yaml)
#   config/rbac/role.yaml    -> charts/rolis-operator/files/manager-role.yaml
# (the chart's ClusterRole takes its rules from that file). These chart files
# are never edited by hand. `--check` changes nothing and fails when they differ.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
CHART="$ROOT/charts/rolis-operator"
check=0; [ "${1:-}" = --check ] && check=1
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
mkdir -p "$out/files/crds"

shopt -s nullglob
crds=("$ROOT"/config/crd/bases/*.yaml)
if ((${#crds[@]} == 0)); then
  echo "sync-chart: no CRDs in config/crd/bases (controller-gen has not run yet)" >&2
else
  cp "${crds[@]}" "$out/files/crds/"
fi
if [ -f "$ROOT/config/rbac/role.yaml" ]; then
  cp "$ROOT/config/rbac/role.yaml" "$out/files/manager-role.yaml"
else
  echo "sync-chart: no config/rbac/role.yaml (controller-gen has not run yet)" >&2
fi

changed=0
mkdir -p "$CHART/files/crds"
diff -r -q -x .gitkeep "$out/files" "$CHART/files" >/dev/null 2>&1 || changed=1
if ((check)); then
  if ((changed)); then
    diff -r -q -x .gitkeep "$out/files" "$CHART/files" >&2 || true
    echo "sync-chart: the chart's CRDs or RBAC differ from config/: run hack/kind/sync-chart.sh" >&2
    exit 1
  fi
  echo "sync-chart: chart in sync with config/"
  exit 0
fi
rm -f "$CHART/files/crds"/*.yaml "$CHART/files/manager-role.yaml"
cp -r "$out/files"/. "$CHART/files/"
echo "sync-chart: $(ls "$CHART/files/crds" | wc -l) CRD file(s), RBAC rules: $([ -f "$CHART/files/manager-role.yaml" ] && echo copied || echo missing)"
