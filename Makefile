# Top-level entry points. `make main` is the main job of the README and
# `make test` runs every test (CI runs it through .ci/run).
SHELL := /bin/bash
BUILD_DIR ?= build/engine
BIN_DIR := $(CURDIR)/bin
CACHE_DIR ?= $(HOME)/.cache/rolis
export GOFLAGS ?= -buildvcs=false

.PHONY: all build deps engine engine-test test main bench clean

all: build

deps:
	hack/install-deps.sh

$(BUILD_DIR)/build.ninja: engine/CMakeLists.txt
	cmake -S engine -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo

engine: deps $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR)
	mkdir -p $(BIN_DIR)
	for b in rolis-bench rolisd; do [ ! -f $(BUILD_DIR)/bin/$$b ] || cp -f $(BUILD_DIR)/bin/$$b $(BIN_DIR)/; done

build: engine go-build

engine-test: engine
	cd $(BUILD_DIR) && ctest --output-on-failure --timeout 600 -j2

test: engine-test go-test

# The main job: build everything and run it.
main: build
	$(BIN_DIR)/rolis-bench --workload=ycsbpp --threads=1 --seconds=5
	$(BIN_DIR)/rolis-bench --workload=tpcc --threads=1 --seconds=5

# --- Go client, rolisctl and their tests (pkg/client, cmd/rolisctl, internal/testserver, test/server) ---
.PHONY: go-build go-test go-unit-test server-test

go-build:
	mkdir -p $(BIN_DIR)
	nice go build -o $(BIN_DIR)/rolisctl ./cmd/rolisctl

go-unit-test:
	nice go test ./pkg/... ./cmd/rolisctl/... ./internal/testserver/...

# Integration tests against real rolisd processes on loopback (bin/rolisd).
server-test: engine go-build
	ROLISD_BIN=$(BIN_DIR)/rolisd nice go test -count=1 -timeout 20m ./test/server/...

go-test: go-unit-test server-test

clean:
	rm -rf build bin
