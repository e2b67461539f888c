#!/usr/bin/env bash
# `make alerts-test`: renders the chart's PrometheusRule (alerts/rolis-alerts.yaml
# with the default values), checks it with `promtool check rules`, and runs
# the alert unit tests of test/alerts with `promtool test rules`; every query
# of the Grafana dashboard (dashboards/*.json, its variables filled in) must
# parse too.
# promtool comes from Debian's prometheus package (hack/install-deps.sh).
source "$(dirname "$0")/kind/lib.sh"
CHART="$ROOT/charts/rolis-operator"
command -v promtool >/dev/null || die "promtool is missing: run make deps (Debian package prometheus)"
ensure_helm
out="$ROOT/build/alerts"; rm -rf "$out"; mkdir -p "$out"
# The rule file is the PrometheusRule's spec (the template ends with it).
helm template rolis "$CHART" --set alerts.enabled=true -s templates/prometheusrule.yaml \
  | awk '/^spec:/ { inspec = 1; next } inspec { sub(/^  /, ""); print }' >"$out/rolis-alerts.rules.yaml"
[ -s "$out/rolis-alerts.rules.yaml" ] || die "no rules rendered from templates/prometheusrule.yaml"
cp "$ROOT"/test/alerts/*.test.yaml "$out/"
step "promtool check rules" promtool check rules "$out/rolis-alerts.rules.yaml"
step "promtool test rules" sh -c "cd '$out' && promtool test rules *.test.yaml"
# Every alert links its runbook section, and docs/operations.md has it.
for alert in $(sed -n 's/^ *- alert: //p' "$out/rolis-alerts.rules.yaml"); do
  anchor=$(echo "$alert" | tr 'A-Z' 'a-z')
  grep -q "runbook_url: .*#$anchor\$" "$out/rolis-alerts.rules.yaml" || die "$alert has no runbook_url ending in #$anchor"
  grep -q "^### $alert\$" "$ROOT/docs/operations.md" || die "docs/operations.md has no runbook section '### $alert'"
done
# The dashboard's queries as recording rules, so that promtool parses them.
{
  echo "groups:"
  echo "  - name: dashboard"
  echo "    rules:"
  n=0
  for f in "$CHART"/dashboards/*.json; do
    while IFS= read -r q; do
      n=$((n + 1))
      q=${q//\$__rate_interval/5m}; q=${q//\$namespace/.*}; q=${q//\$cluster/.*}
      printf "      - record: dashboard:query%d\n        expr: '%s'\n" "$n" "${q//\'/\'\'}"
    done < <(jq -r '.. | objects | select(has("expr")) | .expr' "$f")
  done
} >"$out/dashboard-queries.rules.yaml"
step "dashboard queries parse" promtool check rules "$out/dashboard-queries.rules.yaml"
info "alerts: $(grep -c '^ *- alert: ' "$out/rolis-alerts.rules.yaml") rules checked, runbooks present"
