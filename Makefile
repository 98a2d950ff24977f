# kubectl-gray: build, test and run everything from this one file.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

PKG      := github.com/kubegray/kubectl-gray
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
COMMIT   ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
DATE     ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
# The one place version information is injected; goreleaser uses the same symbols.
LDFLAGS  := -s -w -X $(PKG)/pkg/version.Version=$(VERSION) -X $(PKG)/pkg/version.Commit=$(COMMIT) -X $(PKG)/pkg/version.Date=$(DATE)
BIN      := $(CURDIR)/bin
CLUSTER_DIR ?= $(CURDIR)/.cluster
GOTOOLS  := go tool -modfile=$(CURDIR)/test/tools/go.mod
FUZZTIME ?= 10s
E2E_TIMEOUT ?= 75m

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build kubectl-gray and gray-controller into bin/ with version info injected.
	go build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/kubectl-gray ./cmd/gray-controller

.PHONY: version-check
version-check: build ## Prove the -X injection took effect in both binaries.
	@for b in kubectl-gray gray-controller; do \
		out="$$($(BIN)/$$b version)"; echo "$$b version: $$out"; \
		grep -qF -- "$(VERSION)" <<<"$$out" || { echo "$$b: version $(VERSION) not injected" >&2; exit 1; }; \
		grep -qF -- "$(COMMIT)" <<<"$$out" || { echo "$$b: commit $(COMMIT) not injected" >&2; exit 1; }; \
	done

.PHONY: fmt
fmt: ## Format all Go code.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet on every module.
	go vet ./...
	cd test && go vet ./...

.PHONY: lint
lint: ## Run golangci-lint (pinned as a Go tool in test/tools).
	$(GOTOOLS) golangci-lint run ./...
	cd test && $(GOTOOLS) golangci-lint run ./...

.PHONY: controlplane
controlplane: ## Build (or reuse) etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok.
	test/hack/build-controlplane.sh

.PHONY: test-unit
test-unit: ## Unit tests, plus a short run of every fuzz target.
	go test -count=1 ./...
	go test -run '^$$' -fuzz '^FuzzParsePercent$$' -fuzztime $(FUZZTIME) ./pkg/grayapi

.PHONY: test-e2e
test-e2e: build ## Real-cluster tests (builds the control plane first when needed).
	export KUBEGRAY_CONTROLPLANE="$$(test/hack/build-controlplane.sh | tail -n1)"; \
	export KUBEGRAY_BIN="$(BIN)"; \
	cd test && go test -count=1 -timeout $(E2E_TIMEOUT) $(E2E_FLAGS) ./...

.PHONY: test
test: vet version-check test-unit test-e2e ## Every test: unit, fuzz, and real-cluster.

.PHONY: bench-rollout
bench-rollout: build ## Benchmark: 100 Deployments x 10 replicas rolled by the built-in controller vs ours.
	export KUBEGRAY_CONTROLPLANE="$$(test/hack/build-controlplane.sh | tail -n1)"; \
	cd test && go run ./cmd/bench-rollout -controller $(BIN)/gray-controller $(BENCH_FLAGS)

.PHONY: cluster-up
cluster-up: controlplane ## Start a local control plane in .cluster/ and print the KUBECONFIG to export.
	cd test && go run ./cmd/cluster up $(CLUSTER_DIR)

.PHONY: cluster-down
cluster-down: ## Stop the local control plane started by cluster-up.
	cd test && go run ./cmd/cluster down $(CLUSTER_DIR)

.PHONY: demo
demo: build cluster-up ## The main job: bring up a local cluster and show how to use kubectl gray on it.
	@echo
	@echo "Next: export the KUBECONFIG above, then"
	@echo "  PATH=$(BIN):\$$PATH kubectl gray --help"
	@echo "Stop the cluster with: make cluster-down"
