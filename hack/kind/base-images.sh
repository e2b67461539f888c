#!/usr/bin/env bash
# Builds the two local base images from Debian packages (no registry needed):
#   local/rolis-base:bookworm  debootstrap --variant=minbase bookworm, docker import
#                              (FROM of every project image, see Dockerfile)
#   local/kindbase:bookworm    a second minbase rootfs with systemd, containerd,
#                              runc, CNI plugins, iptables..., laid out as kind's
#                              images/base expects (kindbase.Dockerfile)
# Idempotent and cached: an existing image is kept; the rootfs tarballs are kept
# in $ROLIS_CACHE/rootfs (keyed by the package list), so a wiped Docker only
# re-imports; the .debs are kept in $ROLIS_CACHE/debootstrap-debs.
#   hack/kind/base-images.sh [rolis-base] [kindbase]   (default: both)
source "$(dirname "$0")/lib.sh"
ensure_packages debootstrap docker.io jq
need_docker
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SUITE=bookworm
KINDBASE_PACKAGES=(systemd systemd-sysv dbus containerd runc containernetworking-plugins
  iptables nftables iproute2 ethtool socat conntrack mount util-linux kmod procps
  ca-certificates jq pigz libseccomp2 e2fsprogs)
mkdir -p "$CACHE/rootfs" "$CACHE/debootstrap-debs"

# rootfs_tar NAME PKG...: prints the path of a cached rootfs tarball, making it
# with debootstrap when absent.
rootfs_tar() {
  local name="$1"; shift
  local key; key=$(echo "$SUITE $MIRROR $*" | sha256sum | cut -c1-12)
  local tar="$CACHE/rootfs/$name-$SUITE-$key.tar"
  if [ -f "$tar" ]; then echo "$tar"; return; fi
  local dir; dir=$(mktemp -d "$CACHE/rootfs/.$name.XXXX")
  local inc=(); (($#)) && inc=(--include="$(IFS=,; echo "$*")")
  log "debootstrap --variant=minbase $SUITE for $name${*:+ (+ $# packages)} (1-4 min, cached afterwards)"
  local s; s=$(date +%s)
  as_root "${NICE[@]}" debootstrap --variant=minbase --cache-dir="$CACHE/debootstrap-debs" \
    "${inc[@]}" "$SUITE" "$dir" "$MIRROR" >"$dir.log" 2>&1 \
    || { tail -20 "$dir.log" >&2; as_root rm -rf "$dir"; die "debootstrap failed (log: $dir.log)"; }
  # The same suites as the host, so images can apt-get the host's library versions.
  printf 'deb %s %s main\ndeb %s %s-updates main\ndeb http://deb.debian.org/debian-security %s-security main\n' \
    "$MIRROR" "$SUITE" "$MIRROR" "$SUITE" "$SUITE" | as_root tee "$dir/etc/apt/sources.list" >/dev/null
  as_root rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/* "$dir"/usr/share/doc/* \
    "$dir"/usr/share/man/* "$dir"/usr/share/locale/* "$dir"/var/log/* "$dir"/tmp/*
  # Keep apt from bringing docs and caches back into derived images.
  printf 'path-exclude /usr/share/doc/*\npath-exclude /usr/share/man/*\npath-exclude /usr/share/locale/*\n' \
    | as_root tee "$dir/etc/dpkg/dpkg.cfg.d/01-rolis-nodoc" >/dev/null
  printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' \
    | as_root tee "$dir/etc/apt/apt.conf.d/01-rolis-norecommends" >/dev/null
  as_root tar -C "$dir" --numeric-owner -cf "$tar.tmp" .
  mv "$tar.tmp" "$tar"; as_root rm -rf "$dir" "$dir.log"
  info "rootfs $name: $(du -h "$tar" | cut -f1) in $(( $(date +%s) - s ))s"
  echo "$tar"
}

import_rootfs() { # TAR IMAGE
  log "docker import $2"
  docker import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["/bin/bash"]' "$1" "$2" >/dev/null
}

build_rolis_base() {
  if image_exists "$BASE_IMAGE"; then info "$BASE_IMAGE present"; return; fi
  import_rootfs "$(rootfs_tar rolis-base)" "$BASE_IMAGE"
}

build_kindbase() {
  if image_exists "$KINDBASE_IMAGE"; then info "$KINDBASE_IMAGE present"; return; fi
  local rootfs_img="local/kindbase-rootfs:$SUITE"
  image_exists "$rootfs_img" || import_rootfs "$(rootfs_tar kindbase "${KINDBASE_PACKAGES[@]}")" "$rootfs_img"
  # Kind's own node files (entrypoint, systemd units, containerd config) come from
  # the kind module that `go install` of kind uses.
  local kinddir; kinddir=$(go mod download -json "sigs.k8s.io/kind@$KIND_VERSION" | jq -r .Dir)
  local ctx; ctx=$(mktemp -d)
  cp -r "$kinddir/images/base/files" "$ctx/files"; chmod -R u+w "$ctx/files"
  cp "$KIND_DIR/kindbase.Dockerfile" "$ctx/Dockerfile"
  log "docker build $KINDBASE_IMAGE"
  docker_build -q --build-arg ROOTFS="$rootfs_img" -t "$KINDBASE_IMAGE" "$ctx" >/dev/null
  rm -rf "$ctx"
}

targets=("$@"); ((${#targets[@]})) || targets=(rolis-base kindbase)
for t in "${targets[@]}"; do
  case "$t" in
    rolis-base) step "base image $BASE_IMAGE" build_rolis_base ;;
    kindbase) step "Kind base image $KINDBASE_IMAGE" build_kindbase ;;
    *) die "unknown base image $t" ;;
  esac
done
