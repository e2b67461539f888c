#!/usr/bin/env bash
# cert-manager on the Kind cluster, built from its Go module (no image can be
# pulled): controller, webhook and cainjector compiled from
# github.com/cert-manager/cert-manager@$CERT_MANAGER_VERSION, one image each,
# loaded into the nodes; the module's own Helm chart renders the manifests and
# its deploy/crds the CRDs. Then two ClusterIssuers for the project:
#   rolis-selfsigned  self-signed, signs the CA only
#   rolis-ca          a CA (secret rolis-ca in cert-manager): RolisCluster
#                     spec.tls.issuerRef {kind: ClusterIssuer, name: rolis-ca}
# Why v1.11.5: it is the last release whose commands are in the module itself;
# since v1.12 cmd/* are separate modules that the module proxy does not serve.
# Idempotent; binaries cached in $ROLIS_CACHE/cert-manager/VERSION.
source "$(dirname "$0")/lib.sh"
V="${CERT_MANAGER_VERSION:-v1.11.5}"
NS=cert-manager
need_docker
ensure_helm
need_api
DIR="$CACHE/cert-manager/$V"
MOD=$(go mod download -json "github.com/cert-manager/cert-manager@$V" | jq -r .Dir)
[ -d "$MOD/cmd/controller" ] || die "cert-manager $V: no cmd/controller in the module (see the header of this script)"

build() {
  local missing=() c
  for c in controller webhook cainjector; do [ -x "$DIR/bin/$c" ] || missing+=("./cmd/$c"); done
  ((${#missing[@]})) || { info "binaries cached in $DIR/bin"; return; }
  if [ ! -f "$DIR/src/.prepared" ]; then
    rm -rf "$DIR/src"; mkdir -p "$DIR"; cp -r "$MOD" "$DIR/src"; chmod -R u+w "$DIR/src"
    touch "$DIR/src/.prepared"
  fi
  log "building cert-manager $V ${missing[*]} (10-20 min on 2 busy cores, cached afterwards)"
  mkdir -p "$DIR/bin"
  (cd "$DIR/src" && CGO_ENABLED=0 "${NICE[@]}" go build -mod=mod -trimpath \
    -ldflags "-s -w -X github.com/cert-manager/cert-manager/pkg/util.AppVersion=$V" \
    -o "$DIR/bin/" "${missing[@]}")
}

images() {
  local c
  for c in controller webhook cainjector; do
    # Its chart runs the pods with runAsNonRoot: the image must name a user.
    component_image "local/cert-manager-$c:$V" "$DIR/bin/$c" "$BASE_IMAGE" entrypoint 65532:65532
  done
  kind_load "local/cert-manager-controller:$V" "local/cert-manager-webhook:$V" "local/cert-manager-cainjector:$V"
}

install() {
  local chart; chart=$(mktemp -d)
  cp -r "$MOD/deploy/charts/cert-manager/." "$chart/"; chmod -R u+w "$chart"
  sed -e "s/^version: .*/version: $V/" -e "s/^appVersion: .*/appVersion: $V/" -e 's/{{IS_PRERELEASE}}/false/' \
    "$chart/Chart.template.yaml" >"$chart/Chart.yaml"
  # The CRDs carry Helm expressions in their labels; fill them in. (The files
  # have no leading ---: separate them, or they merge into one document.)
  local f
  for f in "$MOD"/deploy/crds/crd-*.yaml; do
    echo "---"
    sed -e "s/'{{ template \"cert-manager.name\" . }}'/cert-manager/" -e "s/'{{ .Release.Name }}'/cert-manager/" \
      -e '/# Generated labels/d' "$f"
  done | kubectl apply --server-side -f - >/dev/null
  kubectl wait --for=condition=Established crd/clusterissuers.cert-manager.io crd/certificates.cert-manager.io \
    --timeout=60s >/dev/null
  kubectl create namespace "$NS" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  # Prometheus (addon-prometheus-operator.sh) scrapes cert-manager when it
  # runs: the chart's RolisCertificateExpiring needs its metrics, with
  # honorLabels so that namespace is the certificate's (docs/operations.md,
  # "Dashboards and alerts").
  local monitor=()
  if kubectl get crd servicemonitors.monitoring.coreos.com >/dev/null 2>&1; then
    monitor=(--set prometheus.servicemonitor.enabled=true --set prometheus.servicemonitor.honorLabels=true)
  fi
  helm template cert-manager "$chart" -n "$NS" "${monitor[@]}" \
    --set image.repository=local/cert-manager-controller --set image.tag="$V" \
    --set webhook.image.repository=local/cert-manager-webhook --set webhook.image.tag="$V" \
    --set cainjector.image.repository=local/cert-manager-cainjector --set cainjector.image.tag="$V" \
    --set startupapicheck.enabled=false --set global.leaderElection.namespace="$NS" \
    | kubectl apply -n "$NS" -f - >/dev/null
  rm -rf "$chart"
  local d
  for d in cert-manager cert-manager-webhook cert-manager-cainjector; do
    kubectl -n "$NS" rollout status "deployment/$d" --timeout=300s >/dev/null
  done
}

issuers() {
  local manifest
  manifest=$(cat <<YAML
apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: rolis-selfsigned}
spec: {selfSigned: {}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: rolis-ca, namespace: $NS}
spec:
  isCA: true
  commonName: rolis-ca
  secretName: rolis-ca
  duration: 87600h
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {kind: ClusterIssuer, name: rolis-selfsigned, group: cert-manager.io}
---
apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: rolis-ca}
spec: {ca: {secretName: rolis-ca}}
YAML
)
  # The webhook answers a few seconds after its pod is Ready (cainjector must
  # first put its CA into the webhook configurations).
  local ok=0
  for _ in $(seq 60); do
    if echo "$manifest" | kubectl apply -f - >/dev/null 2>&1; then ok=1; break; fi
    sleep 2
  done
  ((ok)) || { echo "$manifest" | kubectl apply -f -; die "cert-manager's webhook does not accept objects"; }
  kubectl wait --for=condition=Ready clusterissuer/rolis-ca --timeout=120s >/dev/null
  # One real issuance end to end.
  kubectl apply -f - >/dev/null <<YAML
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: rolis-smoke-test, namespace: default}
spec:
  secretName: rolis-smoke-test
  dnsNames: [smoke.rolis.local]
  issuerRef: {kind: ClusterIssuer, name: rolis-ca}
YAML
  kubectl -n default wait --for=condition=Ready certificate/rolis-smoke-test --timeout=120s >/dev/null
  kubectl -n default delete certificate/rolis-smoke-test >/dev/null
  kubectl -n default delete secret/rolis-smoke-test --ignore-not-found >/dev/null
  info "ClusterIssuers rolis-selfsigned and rolis-ca Ready; a test certificate was issued"
}

step "cert-manager $V binaries" build
step "cert-manager images" images
step "cert-manager install" install
step "cert-manager issuers" issuers
