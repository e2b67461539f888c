# Top-level entry points. `make main` is the main job of the README and
# `make test` runs every test (CI runs it through .ci/run).
SHELL := /bin/bash
BUILD_DIR ?= build/engine
BIN_DIR := $(CURDIR)/bin
CACHE_DIR ?= $(HOME)/.cache/rolis
export GOFLAGS ?= -buildvcs=false

.PHONY: all build deps engine engine-test test main bench bench-full bench-kind clean
.PHONY: envtest-assets manifests operator operator-test

all: build

deps:
	hack/install-deps.sh

$(BUILD_DIR)/build.ninja: engine/CMakeLists.txt
	cmake -S engine -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo

engine: deps $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR)
	mkdir -p $(BIN_DIR)
	for b in rolis-bench rolis-replay-bench rolis-checkpoint-bench rolisd; do [ ! -f $(BUILD_DIR)/bin/$$b ] || cp -f $(BUILD_DIR)/bin/$$b $(BIN_DIR)/; done

# The in-process benchmark suite (docs/benchmarks.md, "Suite"): every mode
# (silo, rolis, 2pl, calvin) x workload, the thread, batch-size and zipf
# sweeps and replay-only, as JSON lines, plots and a table in build/bench/.
# bench: short runs (under 10 minutes); bench-full: 10 s runs. Neither needs
# a cluster nor is part of make test.
BENCH_OUT ?= build/bench
# Debian's python3, which has python3-matplotlib (apt-get install -y python3-matplotlib).
BENCH_PYTHON ?= /usr/bin/python3
bench: deps $(BUILD_DIR)/build.ninja
	nice cmake --build $(BUILD_DIR) --target rolis-bench rolisd rolis-replay-bench
	BIN=$(BUILD_DIR)/bin hack/bench/run.sh $(BENCH_OUT); rc=$$?; $(BENCH_PYTHON) hack/bench/plot.py $(BENCH_OUT) && exit $$rc

bench-full: deps $(BUILD_DIR)/build.ninja build
	nice cmake --build $(BUILD_DIR) --target rolis-bench rolisd rolis-replay-bench
	BENCH_SECONDS=10 BENCH_WARMUP=2 BIN=$(BUILD_DIR)/bin hack/bench/run.sh $(BENCH_OUT); rc=$$?; \
	  hack/kind/kube-demo.sh && hack/bench/kind.sh $(BENCH_OUT) || rc=1; \
	  $(BENCH_PYTHON) hack/bench/plot.py $(BENCH_OUT) && exit $$rc

# The Kubernetes part alone, against the local cluster's rolis-sample
# (docs/benchmarks.md, "On Kubernetes").
bench-kind: build
	hack/kind/kube-demo.sh
	hack/bench/kind.sh $(BENCH_OUT); rc=$$?; $(BENCH_PYTHON) hack/bench/plot.py $(BENCH_OUT) && exit $$rc

build: engine manifests operator go-build

engine-test: engine
	cd $(BUILD_DIR) && ctest --output-on-failure --timeout 600 -j2

test: engine-test operator-test go-test alerts-test replication-test fuzz-cpp-test e2e

# libFuzzer targets of the C++ decoders (engine/fuzz/README.md), in a clang
# build of their own (build/fuzz, through the same ccache as the engine's).
# fuzz-cpp-test runs each for FUZZ_TEST_SECONDS (make test), fuzz-cpp for
# FUZZ_SECONDS; both fail on a crash and leave the reproducer in build/fuzz/artifacts.
FUZZ_TEST_SECONDS ?= 10
FUZZ_SECONDS ?= 300
.PHONY: fuzz-cpp fuzz-cpp-test
fuzz-cpp-test: deps
	engine/fuzz/run.sh $(FUZZ_TEST_SECONDS)
fuzz-cpp: deps
	engine/fuzz/run.sh $(FUZZ_SECONDS)

# The main job: build everything and run it.
main: build
	hack/main.sh

# --- operator (api/, controllers/, cmd/operator, config/) ---
CONTROLLER_GEN_VERSION := v0.23.0
CONTROLLER_GEN := $(CACHE_DIR)/bin/controller-gen-$(CONTROLLER_GEN_VERSION)
GO_MOD_DIR = $(shell go mod download -json $(1) | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')

$(CONTROLLER_GEN):
	mkdir -p $(CACHE_DIR)/bin/cg-$(CONTROLLER_GEN_VERSION)
	GOBIN=$(CACHE_DIR)/bin/cg-$(CONTROLLER_GEN_VERSION) nice go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(CACHE_DIR)/bin/cg-$(CONTROLLER_GEN_VERSION)/controller-gen $@

# Prints the folder to use as KUBEBUILDER_ASSETS (kube-apiserver, etcd, kubectl).
envtest-assets:
	@hack/envtest-assets.sh

# Generated code and manifests: deepcopy, the CRD, RBAC, and the third-party
# CRDs the integration tests install (generated from their Go modules).
manifests: $(CONTROLLER_GEN)
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	$(CONTROLLER_GEN) crd rbac:roleName=rolis-operator paths=./api/... paths=./controllers/... \
	  output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	rm -rf $(CURDIR)/build/crd-monitoring && mkdir -p $(CURDIR)/build/crd-monitoring config/crd/external
	cd $(call GO_MOD_DIR,github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring) && \
	  $(CONTROLLER_GEN) crd:crdVersions=v1 paths=./v1 output:crd:dir=$(CURDIR)/build/crd-monitoring
	cp $(CURDIR)/build/crd-monitoring/monitoring.coreos.com_servicemonitors.yaml config/crd/external/
	cp $(call GO_MOD_DIR,github.com/cert-manager/cert-manager)/deploy/crds/cert-manager.io_certificates.yaml \
	  $(call GO_MOD_DIR,github.com/cert-manager/cert-manager)/deploy/crds/cert-manager.io_issuers.yaml config/crd/external/
	chmod u+w config/crd/external/*.yaml

operator:
	mkdir -p $(BIN_DIR)
	nice go build -o $(BIN_DIR)/rolis-operator ./cmd/operator

# Unit tests and the envtest integration tests (real kube-apiserver and etcd).
# ROLISD is set so that the real-rolisd failover specs fail, rather than skip,
# when the binary is missing.
operator-test: engine
	assets="$$(hack/envtest-assets.sh)" && KUBEBUILDER_ASSETS="$$assets" ROLISD=$(BIN_DIR)/rolisd \
	  nice go test ./api/... ./controllers/... ./cmd/operator/... ./cmd/kubectl-rolis/...

# --- Go client, rolisctl and their tests (pkg/client, cmd/rolisctl, internal/testserver, test/server) ---
.PHONY: go-build go-test go-unit-test server-test

# rolisctl --version: 0.1.0+ the checkout's git describe, as rolisd's.
ROLISCTL_VERSION ?= 0.1.0+$(shell git describe --always --dirty 2>/dev/null || echo unknown)

go-build:
	mkdir -p $(BIN_DIR)
	nice go build -ldflags "-X main.version=$(ROLISCTL_VERSION)" -o $(BIN_DIR)/rolisctl ./cmd/rolisctl
	nice go build -o $(BIN_DIR)/kubectl-rolis ./cmd/kubectl-rolis

go-unit-test:
	nice go test ./pkg/... ./cmd/rolisctl/... ./internal/testserver/... ./internal/ledger/...

# Integration tests against real rolisd processes on loopback (bin/rolisd).
server-test: engine go-build
	ROLISD_BIN=$(BIN_DIR)/rolisd nice go test -count=1 -timeout 20m ./test/server/...

go-test: go-unit-test server-test go-fuzz

# --- fuzzing: native Go fuzz targets (`func FuzzX`, seed corpora under the
# package's testdata/fuzz). `make test` runs each briefly (go-fuzz), `make fuzz`
# longer. One line per target: PACKAGE FuzzName.
.PHONY: go-fuzz fuzz
GO_FUZZ_TARGETS := \
	./pkg/client FuzzBatchResponseDecode \
	./pkg/client FuzzBatchRequestEncode \
	./pkg/client FuzzAdminReplies
GO_FUZZ_TIME ?= 10s
FUZZ_TIME ?= 5m

go-fuzz:
	@set -e; set -- $(GO_FUZZ_TARGETS); while [ $$# -gt 0 ]; do \
	  echo "==> fuzz $$1 $$2 for $(GO_FUZZ_TIME)"; \
	  nice go test -run '^$$' -fuzz="^$$2\$$" -fuzztime=$(GO_FUZZ_TIME) $$1; shift 2; done

fuzz: fuzz-cpp
	$(MAKE) go-fuzz GO_FUZZ_TIME=$(FUZZ_TIME)

# --- alerts and dashboard of the chart (docs/operations.md, "Dashboards and alerts") ---
# promtool check rules and promtool test rules (test/alerts) on the rendered
# PrometheusRule; the dashboard's queries must parse.
.PHONY: alerts-test
alerts-test: deps
	hack/check-alerts.sh

# --- replication (engine/src/replication, test/replication; docs/replication.md) ---
.PHONY: replication-test soak
SOAK_RUNS ?= 50

# Replicated clusters of real rolisd processes (3 and 5 members) on loopback
# under kill -9, SIGSTOP, partitions and transport faults.
replication-test: engine go-build
	ROLISD_BIN=$(BIN_DIR)/rolisd nice go test -count=1 -timeout 30m ./test/replication/...

# Seeded fault runs: 200 in process (fault-injecting transport) and
# $(SOAK_RUNS) with real processes; each prints how many faults it injected
# and how many runs passed. pipefail: the status is the test's, not grep's,
# so any failed run (or a fault that could not be injected) fails the target.
soak: engine go-build
	set -o pipefail; ROLIS_SOAK_RUNS=200 $(BUILD_DIR)/tests/replication/replication_fault_soak_test 2>/dev/null \
	  | grep -E '^fault soak:|FAILED|Failure'
	set -o pipefail; ROLISD_BIN=$(BIN_DIR)/rolisd ROLIS_SOAK_RUNS=$(SOAK_RUNS) nice go test -count=1 -timeout 180m \
	  -run 'TestSoak$$' -v ./test/replication/ | grep -E '^soak:|^(ok|FAIL)|--- FAIL'

clean:
	rm -rf build bin

# ---- Images, Helm chart and the local Kind cluster (docs/packaging.md) ----
# None of these is a prerequisite of `test`: the Kind cluster is opt-in.
.PHONY: images kind-up kind-down kind-load helm-lint e2e e2e-full

# Images from the binaries `make build` put in bin/ (run it first).
images:
	hack/kind/images.sh

kind-up:
	hack/kind/up.sh

kind-down:
	hack/kind/down.sh

kind-load:
	hack/kind/load.sh

helm-lint:
	hack/kind/helm-lint.sh

# End-to-end suite on the Kind cluster (e2e/, docs/e2e.md); brings the cluster
# up and loads the images first when needed. e2e: the quick subset (install,
# leader pod deleted, follower's rolisd killed, every pod deleted, every
# rolisd killed); e2e-full: every scenario.
e2e: build
	hack/e2e.sh quick

e2e-full: build
	hack/e2e.sh full
