#!/usr/bin/env bash
# Installs the Debian packages the build and the tests need. Idempotent: it
# does nothing when every package is already present.
set -euo pipefail
PACKAGES=(
  build-essential cmake ninja-build pkg-config git ccache
  libgtest-dev libgmock-dev libbenchmark-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libssl-dev openssl
  prometheus-cpp-dev libcivetweb-dev libjemalloc-dev libmimalloc-dev libabsl-dev libcli11-dev libspdlog-dev libfmt-dev
  nlohmann-json3-dev
  spin valgrind etcd-server
  prometheus  # promtool: make alerts-test (hack/check-alerts.sh)
  clang libclang-rt-14-dev  # engine/fuzz: libFuzzer and the sanitizers' runtimes (Debian 12: clang 14)
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "==> installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "==> Debian packages present"
fi
