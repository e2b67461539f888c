#!/usr/bin/env bash
# Builds the project's images from the binaries `make build` left in bin/
# (see the Dockerfile for why the binaries come from the host):
#   rolis/rolisd        --target rolisd     bin/rolisd
#   rolis/rolis-operator --target operator  bin/rolis-operator
#   rolis/rolis-tools   --target tools      bin/rolisctl + kubectl + kubectl-rolis
# Tag: $IMAGE_TAG, default the chart's appVersion (what the chart, config/
# and config/samples deploy).
# An image whose binary is missing fails alone, with the reason, and the
# others are still built; the exit status is non-zero if any failed.
# ROLISD_BIN, OPERATOR_BIN, ROLISCTL_BIN and KUBECTL_BIN take the binaries from
# elsewhere (a build directory of one's own); the build context is a staging
# folder that holds just those files, laid out as the Dockerfile expects.
#   hack/kind/images.sh [rolisd] [operator] [tools]   (default: all)
source "$(dirname "$0")/lib.sh"
need_docker
image_exists "$BASE_IMAGE" || "$KIND_DIR/base-images.sh" rolis-base
TAG="${IMAGE_TAG:-$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$ROOT/charts/rolis-operator/Chart.yaml")}"
PREFIX="${IMAGE_PREFIX:-rolis}"
declare -A IMAGE=([rolisd]="$PREFIX/rolisd" [operator]="$PREFIX/rolis-operator" [tools]="$PREFIX/rolis-tools")
declare -A NEEDS=([rolisd]="bin/rolisd" [operator]="bin/rolis-operator" [tools]="bin/rolisctl bin/kubectl bin/kubectl-rolis")
declare -A SRC=([bin/rolisd]="${ROLISD_BIN:-$ROOT/bin/rolisd}" [bin/rolis-operator]="${OPERATOR_BIN:-$ROOT/bin/rolis-operator}"
  [bin/rolisctl]="${ROLISCTL_BIN:-$ROOT/bin/rolisctl}" [bin/kubectl]="${KUBECTL_BIN:-$ROOT/bin/kubectl}"
  [bin/kubectl-rolis]="${KUBECTL_ROLIS_BIN:-$ROOT/bin/kubectl-rolis}")
CONTEXT="$CACHE/images/context"

# (build_one runs after `if`, where bash ignores `set -e`: every failure in it
# returns explicitly.)
# Debian packages that hold the shared libraries of a binary (the host is the
# same bookworm as the image, so the package names carry over).
runtime_debs() {
  local lib pkgs=() p
  while read -r lib; do
    p=$(dpkg -S "$lib" 2>/dev/null || dpkg -S "${lib#/usr}" 2>/dev/null || dpkg -S "/usr$lib" 2>/dev/null) \
      || { echo "$1 links $lib, which no Debian package holds" >&2; return 1; }
    pkgs+=("${p%%:*}")
  done < <(ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | xargs -r realpath)
  printf '%s\n' "${pkgs[@]}" | sort -u | tr '\n' ' '
}

build_one() { # TARGET
  local t="$1" f missing=()
  for f in ${NEEDS[$t]}; do [ -x "${SRC[$f]}" ] || missing+=("${SRC[$f]}"); done
  if ((${#missing[@]})); then
    echo "  $t: ${missing[*]} missing: run 'make build' (or the build of the component that makes it)" >&2
    return 1
  fi
  local args=(--target "$t" --network host --build-arg BASE_IMAGE="$BASE_IMAGE" --build-arg VERSION="$TAG")
  # Skip the build when the image was made from these very inputs (even a
  # fully cached build takes a minute here: the package look-ups below and
  # BuildKit's export of the layers).
  local key
  key=$( { for f in ${NEEDS[$t]}; do sha256sum <"${SRC[$f]}"; done; sha256sum <"$ROOT/Dockerfile"
           echo "${args[*]}"; docker image inspect -f '{{.Id}}' "$BASE_IMAGE"; } | sha256sum | cut -c1-16)
  if [ "$(docker image inspect -f '{{index .Config.Labels "io.rolis.inputs"}}' "${IMAGE[$t]}:$TAG" 2>/dev/null || true)" = "$key" ]; then
    info "${IMAGE[$t]}:$TAG up to date"; return 0
  fi
  if [ "$t" = rolisd ]; then
    local debs; debs=$(runtime_debs "${SRC[bin/rolisd]}") || return 1
    info "rolisd runtime packages: ${debs:-none}"
    args+=(--build-arg RUNTIME_DEBS="$debs")
  fi
  # Stage the binaries (hard links when on the same file system).
  mkdir -p "$CONTEXT/bin"
  for f in ${NEEDS[$t]}; do
    rm -f "$CONTEXT/$f"; ln "${SRC[$f]}" "$CONTEXT/$f" 2>/dev/null || cp "${SRC[$f]}" "$CONTEXT/$f" || return 1
  done
  docker_build -q "${args[@]}" --label io.rolis.inputs="$key" -f "$ROOT/Dockerfile" -t "${IMAGE[$t]}:$TAG" "$CONTEXT" >/dev/null || return 1
  info "${IMAGE[$t]}:$TAG $(docker image inspect -f '{{.Size}}' "${IMAGE[$t]}:$TAG" | awk '{printf "%d MB", $1/1e6}')"
}

targets=("$@"); ((${#targets[@]})) || targets=(rolisd operator tools)
# The tools image carries the cluster's kubectl (for `helm test` and e2e jobs).
if [[ " ${targets[*]} " == *" tools "* ]] && [ -z "${KUBECTL_BIN:-}" ] && [ ! -x "$ROOT/bin/kubectl" ]; then
  mkdir -p "$ROOT/bin"
  "${NICE[@]}" "$ROOT/hack/build-k8s.sh" kubectl >/dev/null && cp "$K8S_BIN/kubectl" "$ROOT/bin/kubectl"
fi
failed=()
for t in "${targets[@]}"; do
  [ -n "${IMAGE[$t]:-}" ] || die "unknown image target $t (rolisd, operator, tools)"
  log "image ${IMAGE[$t]}:$TAG"; s=$(date +%s)
  if build_one "$t"; then info "done in $(( $(date +%s) - s ))s"
  else failed+=("$t"); log "image $t FAILED"; fi
done
total_time
((${#failed[@]} == 0)) || die "images not built: ${failed[*]}"
