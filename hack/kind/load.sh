#!/usr/bin/env bash
# Loads the project's images (images.sh) into every node of the Kind cluster.
# Images that were not built are reported and skipped. rolisd is loaded
# under a second name too, $TAG-next, for the e2e upgrade scenario (not with
# KIND_LOAD_NEXT=0).
source "$(dirname "$0")/lib.sh"
need_docker
ensure_kind
TAG="${IMAGE_TAG:-$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$ROOT/charts/rolis-operator/Chart.yaml")}"
PREFIX="${IMAGE_PREFIX:-rolis}"
kind get clusters 2>/dev/null | grep -qx "$KIND_CLUSTER" || die "no cluster $KIND_CLUSTER: run make kind-up"
missing=0
for i in rolisd rolis-operator rolis-tools; do
  img="$PREFIX/$i:$TAG"
  if ! image_exists "$img"; then log "$img not built (make images): skipped"; missing=1; continue; fi
  step "kind load $img" kind_load "$img"
  # A second name of the rolisd image: the e2e upgrade scenario rolls the
  # cluster to it (a new pod template, the same binary).
  if [ "$i" = rolisd ] && [ "${KIND_LOAD_NEXT:-1}" = 1 ]; then
    docker tag "$img" "$img-next"
    step "kind load $img-next" kind_load "$img-next"
  fi
done
total_time
exit "$missing"
