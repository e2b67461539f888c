# Images of the project, built by `make images` (hack/kind/images.sh):
#   --target rolisd     the engine (the StatefulSet's container)
#   --target operator   the Kubernetes operator
#   --target tools      rolisctl and kubectl: `helm test` hooks and e2e/load jobs
#
# Why the binaries come from the host: they are built by `make build` (the
# engine with the repo's own CMake, the Go programs with the host's module and
# build caches) and the build stages below only take them from bin/, check and
# strip them. This machine reaches no registry but Debian's and the Go module
# proxy, has 2 shared cores, and the host already holds warm caches; compiling
# again inside `docker build` would need the host's caches bound in and would
# double the compile time, for the same bytes. Runtime
# stages install the engine's shared libraries with apt from Debian (the same
# bookworm as the host, so the same ABI); images.sh passes their names
# (RUNTIME_DEBS, found with ldd and dpkg -S) and builds with --network=host,
# the only network the build has.
#
# The build context is a staging folder that images.sh fills with just these
# binaries, laid out as bin/ (ROLISD_BIN, OPERATOR_BIN, ROLISCTL_BIN and
# KUBECTL_BIN take them from a build directory other than bin/).
#
# Built with BuildKit (DOCKER_BUILDKIT=1 and Debian's docker 20.10 client), which
# builds only the stages a target needs: an image whose binary is missing fails
# alone. BASE_IMAGE is made by hack/kind/base-images.sh: debootstrap --variant=minbase
# bookworm, then docker import. It is never pulled.
ARG BASE_IMAGE=local/rolis-base:bookworm

########## build stages: take, check and strip the binaries of `make build` ##########
FROM ${BASE_IMAGE} AS strip
RUN apt-get update -q && apt-get install -y -q binutils file && apt-get clean && rm -rf /var/lib/apt/lists/*

FROM strip AS rolisd-build
COPY bin/rolisd /out/rolisd
# RelWithDebInfo keeps DWARF for profiling on the host; the image needs none of it.
RUN file /out/rolisd | grep -q 'ELF 64-bit' && strip --strip-debug /out/rolisd

FROM strip AS operator-build
COPY bin/rolis-operator /out/rolis-operator
RUN file /out/rolis-operator | grep -q 'ELF 64-bit' && strip /out/rolis-operator

FROM strip AS tools-build
COPY bin/rolisctl bin/kubectl bin/kubectl-rolis /out/
RUN for b in /out/*; do file "$b" | grep -q 'ELF 64-bit' && strip "$b" || exit 1; done

########## runtime stages ##########
FROM ${BASE_IMAGE} AS runtime
# One unprivileged user for every image; the chart runs as this uid too.
RUN groupadd --system --gid 65532 rolis \
 && useradd --system --uid 65532 --gid 65532 --home-dir /var/lib/rolis --no-create-home \
      --shell /usr/sbin/nologin rolis \
 && install -d -o 65532 -g 65532 -m 0750 /var/lib/rolis
ARG VERSION=dev
LABEL org.opencontainers.image.source="https://github.com/rolisdb/rolis" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"

FROM runtime AS rolisd
# Debian packages of rolisd's shared libraries (images.sh: ldd + dpkg -S on the host).
ARG RUNTIME_DEBS=""
RUN if [ -n "${RUNTIME_DEBS}" ]; then \
      apt-get update -q && apt-get install -y -q ${RUNTIME_DEBS} \
      && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin; \
    fi
COPY --from=rolisd-build /out/rolisd /usr/local/bin/rolisd
# Every library resolves, or the build stops here rather than in a pod.
RUN ! ldd /usr/local/bin/rolisd 2>&1 | grep 'not found'
USER 65532:65532
WORKDIR /var/lib/rolis
ENTRYPOINT ["/usr/local/bin/rolisd"]

FROM runtime AS operator
COPY --from=operator-build /out/rolis-operator /usr/local/bin/rolis-operator
RUN ! ldd /usr/local/bin/rolis-operator 2>&1 | grep 'not found'
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/rolis-operator"]

FROM runtime AS tools
COPY --from=tools-build /out/rolisctl /out/kubectl /out/kubectl-rolis /usr/local/bin/
RUN ! ldd /usr/local/bin/rolisctl 2>&1 | grep 'not found'
USER 65532:65532
WORKDIR /tmp
ENTRYPOINT ["/usr/local/bin/rolisctl"]
