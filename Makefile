# kubectl-gray: build, test and run everything from this one file.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
# Under `make test` (KUBEGRAY_TIMINGS set) every recipe runs through test/hack/timed.sh, which
# runs it with the shell above and records the target's wall and CPU time, so that the log
# ends with where the time went (docs/development.md, Where the time goes).
ifneq ($(KUBEGRAY_TIMINGS),)
SHELL := $(CURDIR)/test/hack/timed.sh
.SHELLFLAGS = $@ -- /usr/bin/env bash -euo pipefail -c
endif
.DEFAULT_GOAL := help

# One set of build flags for every go command make runs (vet, unit tests, the binaries, the
# image, the e2e suites, the control planes): static and trimmed, as goreleaser and ko build, so
# that a package is compiled once per machine rather than once per flag set. With an empty build
# cache, go vet then go build took 424 CPU s this way and 635 with vet's default flags
# (test/hack/flag-cost.sh prints both).
export GOFLAGS     ?= -trimpath
export CGO_ENABLED ?= 0

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
DIST     := $(CURDIR)/dist
# The version goreleaser gave the build in dist/, e.g. 0.0.1-snapshot or 1.2.0.
DIST_VERSION = sed -n 's/.*"version":"\([^"]*\)".*/\1/p' $(DIST)/metadata.json
E2E_TIMEOUT ?= 75m
# Parallel subtests at a time (go test's default is GOMAXPROCS, 2 here): the e2e scenarios wait
# on their control plane far more than they compute. Running the suites that have a control
# plane of their own beside each other, at 4 or 8, shortened the package by less than a tenth
# (1287 s and 1266 s against 1399 s) and made timing-bound checks fail under the load
# (docs/development.md).
E2E_PARALLEL ?= 4
# ko and helm each pin their own k8s.io/* versions, so each has a tools module
# of its own (test/tools/ko, test/tools/helm), apart from test/tools.
KO       := go tool -modfile=$(CURDIR)/test/tools/ko/go.mod ko
HELM     := go tool -modfile=$(CURDIR)/test/tools/helm/go.mod helm
# Where `make image` keeps the image it built locally: oci/ (an OCI image
# layout, index and SBOMs) and bin/ (gray-controller taken out of the image,
# plus kubectl-gray: the binaries the e2e suites run).
IMAGE_DIR := $(BIN)/image
# Set it to build and push your own image, e.g. ghcr.io/you/gray-controller.
KO_DOCKER_REPO ?=
IMAGE_TAG ?= $(VERSION)
# What ko takes only as flags (see .ko.yaml): the user, the OCI labels, the SBOM.
KO_FLAGS = --bare --tags=$(IMAGE_TAG) --image-user=65532 --sbom=spdx \
	--image-label=org.opencontainers.image.source=https://github.com/kubegray/kubectl-gray \
	--image-label=org.opencontainers.image.version=$(VERSION) \
	--image-label=org.opencontainers.image.revision=$(shell git rev-parse HEAD 2>/dev/null || echo unknown) \
	--image-label=org.opencontainers.image.licenses=Apache-2.0
# The image `make render` and `make deploy` put in the overlay instead of the
# release's (kubebuilder's IMG=): NAME:TAG or NAME@sha256:...; empty keeps it.
IMG ?=
# Builds (or reuses) the control plane of KUBEGRAY_K8S and points the e2e harness at it: the
# first command of every recipe that starts one.
CONTROLPLANE_ENV = export KUBEGRAY_CONTROLPLANE="$$(test/hack/build-controlplane.sh | tail -n1)"

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
# Static (CGO_ENABLED=0, -trimpath) as goreleaser and ko build them, so that their linux/amd64
# builds find every package compiled already.
build: ## Build kubectl-gray and gray-controller into bin/ with version info injected.
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/kubectl-gray ./cmd/gray-controller

.PHONY: version-check
version-check: build ## Prove the -X injection took effect in both binaries.
	@test/hack/version-check.sh $(BIN) $(VERSION) $(COMMIT)

.PHONY: fmt
fmt: ## Format all Go code.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet on every module.
	go vet ./...
	cd test && go vet ./...
	cd test/gitops && go vet ./...

.PHONY: lint
lint: no-binaries ## Run golangci-lint (pinned as a Go tool in test/tools).
	$(GOTOOLS) golangci-lint run ./...
	cd test && $(GOTOOLS) golangci-lint run ./...
	cd test/gitops && $(GOTOOLS) golangci-lint run ./...

.PHONY: no-binaries
no-binaries: ## Fail on any tracked file over 1 MB that is not text (a committed build, say).
	@test/hack/no-binaries.sh

.PHONY: controlplane
controlplane: ## Build (or reuse) etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok.
	test/hack/build-controlplane.sh

.PHONY: chromium
chromium: ## Install (or find) Debian's Chromium, the headless browser of the dashboard's e2e (TestDashboard).
	test/hack/install-chromium.sh

.PHONY: prometheus
prometheus: ## Unpack (or reuse) prometheus and promtool from Debian's package, which the e2e suites run (test/prom).
	test/hack/install-prometheus.sh

.PHONY: test-unit
test-unit: ## Unit tests, plus a short run of every fuzz target.
	go test -count=1 ./...
	cd test/gitops && go test -count=1 ./...
	cd test && go test -count=1 ./cmd/testtime
	test/hack/timings-check.sh
	go test -run '^$$' -fuzz '^FuzzParsePercent$$' -fuzztime $(FUZZTIME) ./pkg/grayapi
	go test -run '^$$' -fuzz '^FuzzGrayRollout$$' -fuzztime $(FUZZTIME) ./pkg/rollout
	go test -run '^$$' -fuzz '^FuzzScopeQuery$$' -fuzztime $(FUZZTIME) ./pkg/gates
	go test -run '^$$' -fuzz '^FuzzJudgeWebhookAnswer$$' -fuzztime $(FUZZTIME) ./pkg/gates

.PHONY: image
image: build ## Build gray-controller's image with ko: into a local registry and bin/image, or KO_DOCKER_REPO when set.
ifeq ($(KO_DOCKER_REPO),)
	go build -C test -o $(BIN)/image-builder ./cmd/image
	VERSION=$(VERSION) COMMIT=$(COMMIT) DATE=$(DATE) \
		$(BIN)/image-builder build -out $(IMAGE_DIR) -- $(KO) build $(KO_FLAGS) ./cmd/gray-controller
	cp $(BIN)/kubectl-gray $(IMAGE_DIR)/bin/kubectl-gray
else
	VERSION=$(VERSION) COMMIT=$(COMMIT) DATE=$(DATE) KO_DOCKER_REPO=$(KO_DOCKER_REPO) \
		$(KO) build $(KO_FLAGS) ./cmd/gray-controller
endif

.PHONY: image-check
image-check: image ## TestImage: the image's platforms, user, labels, no shell; its controller runs chrooted against a real control plane.
	$(CONTROLPLANE_ENV); \
	export KUBEGRAY_IMAGE="$(IMAGE_DIR)/oci" KUBEGRAY_BIN="$(IMAGE_DIR)/bin"; \
	cd test && go test -count=1 -run '^TestImage$$' -v ./e2e/

.PHONY: helm-lint
helm-lint: ## helm lint --strict the chart in both modes.
	$(HELM) lint --strict charts/gray-controller
	$(HELM) lint --strict charts/gray-controller --set mode=instead

.PHONY: helm-check
helm-check: helm-lint image ## TestHelm: helm template diffed against the kustomize overlays, helm install and uninstall on a real control plane.
	$(CONTROLPLANE_ENV); \
	export KUBEGRAY_IMAGE="$(IMAGE_DIR)/oci" KUBEGRAY_BIN="$(IMAGE_DIR)/bin"; \
	export KUBEGRAY_HELM="$$(go tool -modfile=$(CURDIR)/test/tools/helm/go.mod -n helm)"; \
	cd test && go test -count=1 -run '^TestHelm' -v ./e2e/

# The overlay `make render` and `make deploy` use.
MODE ?= alongside

.PHONY: render
render: ## Print manifests/$(MODE) with the image set to IMG (kustomize images:, as `kustomize edit set image` writes it).
	@test/hack/render.sh $(MODE) $(IMG)

.PHONY: deploy
deploy: ## Apply manifests/$(MODE) to the current kubectl context with the image IMG (e.g. IMG=ghcr.io/you/gray-controller:dev).
	$(MAKE) -s render | kubectl apply --server-side -f -

.PHONY: render-check
render-check: ## `make render IMG=...` sets the image in every overlay, by tag and by digest.
	@test/hack/render-check.sh

# The real-cluster steps run `go test -json` into testtime record (test/cmd/testtime), which keeps
# the events in $(TEST_JSON)/<target>.json and prints what go test prints without -json (every
# line with -v); `make test` then holds each top-level test to its budget in $(TEST_BUDGETS).
TESTTIME     := $(BIN)/testtime
TEST_JSON    := $(BIN)/test-json
TEST_LOG      = $(TESTTIME) record -o $(TEST_JSON)/$@.json
TEST_BUDGETS := test/hack/test-budgets.tsv

.PHONY: testtime
testtime:
	go build -C test -o $(TESTTIME) ./cmd/testtime

# The e2e suites `make test` runs in its second lane (test-e2e-side), which test-e2e then skips
# (E2E_LANES=2): long ones that wait on their control planes and hold no check a niced, loaded
# machine could make fail, and the ones that need Prometheus, fetched in the background after the
# 1.37 control plane; the webhook gates' suites too, which balance the lanes (the first lane took
# 29 min and this one 15 in the first clean-clone run with every gate suite, 2026-12-04)
# (docs/development.md, Where the time goes).
E2E_SIDE_TESTS := ^(TestTamperInstead|TestTamperAlongside|TestAlongsideByConstruction|TestMetricsInPrometheus|TestPrometheusGates|TestWebhookGates|TestWebhookGateAcrossALeaderKill)$$
# manifests/alongside-eager's suites: make test runs them on the Kubernetes it is for (1.30 to
# 1.35), in the 1.35 leg only; on 1.37 they took 87 + 19 s of the first lane and 106 s of the
# second (the clean-clone run at c5115d6), proving the same controller code again.
E2E_EAGER_TESTS := ^(TestAlongsideEagerGrayScenarios|TestAlongsideEager|TestAlongsideEagerByConstruction)$$
E2E_LANES      ?= 1
E2E_ENV = $(CONTROLPLANE_ENV); \
	export KUBEGRAY_BIN="$(IMAGE_DIR)/bin" KUBEGRAY_IMAGE="$(IMAGE_DIR)/oci"; \
	export KUBEGRAY_HELM="$$(go tool -modfile=$(CURDIR)/test/tools/helm/go.mod -n helm)"

.PHONY: test-e2e
test-e2e: image testtime ## Real-cluster tests; the controller under test is the binary taken out of the image.
	$(E2E_ENV); \
	cd test && go test -json -count=1 -timeout $(E2E_TIMEOUT) -parallel $(E2E_PARALLEL) $(if $(filter 2,$(E2E_LANES)),-skip '$(E2E_SIDE_TESTS)|$(E2E_EAGER_TESTS)') $(E2E_FLAGS) ./... \
		| $(TEST_LOG) $(filter -v,$(E2E_FLAGS))

# The randomized suite's long runs, on a seed not drawn before (the date and time unless
# GRAY_SEED is set): make test runs its ciSeed only (test/e2e/randomized_coverage_test.go).
# Report a run in BENCHMARKS.md.
GRAY_SCENARIOS ?= 200
GRAY_FAILING   ?= 100
GRAY_MODES     ?= instead|alongside

.PHONY: test-randomized
test-randomized: build ## The randomized suite on a new seed, GRAY_SCENARIOS and GRAY_FAILING per mode with leader kills (long; BENCHMARKS.md).
	$(CONTROLPLANE_ENV); export KUBEGRAY_BIN="$(BIN)"; \
	export GRAY_SEED="$${GRAY_SEED:-$$(date -u +%Y%m%d%H%M)}" GRAY_SCENARIOS=$(GRAY_SCENARIOS) GRAY_FAILING=$(GRAY_FAILING); \
	echo "GRAY_SEED=$$GRAY_SEED"; \
	cd test && go test -count=1 -timeout 240m -run 'TestGrayRandomized/($(GRAY_MODES))$$' -v ./e2e/

.PHONY: test-e2e-side
test-e2e-side: image testtime ## The e2e suites make test runs in its second lane (E2E_SIDE_TESTS), on their own.
	$(E2E_ENV); \
	cd test && $(SIDE_NICE) go test -json -count=1 -timeout 30m -parallel $(E2E_PARALLEL) -run '$(E2E_SIDE_TESTS)' ./e2e/ \
		| $(TEST_LOG)

# The Kubernetes 1.35 leg: a cluster without MutatingAdmissionPolicy v1, where
# alongside mode runs as manifests/alongside-eager installs it, and the plugin
# against instead mode. The harness fails unless the control plane really is
# KUBEGRAY_K8S.
K8S_PREVIOUS ?= 1.35.4

.PHONY: test-e2e-k8s135
test-e2e-k8s135: image testtime ## The e2e leg on Kubernetes 1.35: eager alongside scenarios, TestPlugin.
	export KUBEGRAY_K8S=$(K8S_PREVIOUS); \
	$(CONTROLPLANE_ENV); \
	export KUBEGRAY_BIN="$(IMAGE_DIR)/bin"; \
	cd test && $(SIDE_NICE) go test -json -count=1 -timeout 20m -parallel $(E2E_PARALLEL) -run '$(E2E_EAGER_TESTS)|^(TestAlongsideAdmissionRefusesWithoutPolicy|TestPlugin)$$' ./e2e/ \
		| $(TEST_LOG)

# Upstream's own Deployment e2e tests, built from k8s.io/kubernetes at the
# version test/go.mod pins (test/conformance carries the conformance build tag,
# so ./... never compiles it). KUBEGRAY_K8S=1.35.4 runs it against the 1.35
# control plane; CONFORMANCE_SKIP is a regular expression of further specs to
# skip; CONFORMANCE_REPORT keeps the suite's log and JUnit report (by default
# they go to a temporary folder, and the log is streamed). -trimpath as in
# build-controlplane.sh: the suite then reuses the control plane's compiled
# k8s.io/kubernetes packages from the build cache (about 2 minutes, not 6-9).
CONFORMANCE_BIN    ?= $(BIN)/upstream-e2e.test
CONFORMANCE_REPORT ?=
CONFORMANCE_SKIP   ?=

# The suite binary is built once per make run: conformance and conformance-k8s135 share it,
# as they share the image. It waits for the 1.37 control plane's build (on its lock), whose
# compiled packages it reuses: built beside it on a fresh machine, it compiled them twice.
.PHONY: conformance-suite
conformance-suite:
	$(CONTROLPLANE_ENV); cd test && go test -c -trimpath -tags conformance -o $(CONFORMANCE_BIN) ./conformance

CONFORMANCE_RUN = $(CONTROLPLANE_ENV); \
	export KUBEGRAY_BIN="$(IMAGE_DIR)/bin" KUBEGRAY_UPSTREAM_E2E="$(CONFORMANCE_BIN)"; \
	export KUBEGRAY_UPSTREAM_E2E_REPORT="$(CONFORMANCE_REPORT)" KUBEGRAY_UPSTREAM_E2E_SKIP='$(CONFORMANCE_SKIP)'; \
	cd test && $(SIDE_NICE) go test -json -count=1 -timeout 45m -run '^TestUpstreamDeploymentE2E$$' ./e2e/ | $(TEST_LOG) -v

.PHONY: conformance
conformance: image conformance-suite testtime ## Upstream's Deployment e2e (test/e2e/apps) against gray-controller (from the image) in instead mode.
	$(CONFORMANCE_RUN)

.PHONY: conformance-k8s135
conformance-k8s135: image conformance-suite testtime ## The same suite (1.37's) against the Kubernetes 1.35 control plane.
	export KUBEGRAY_K8S=$(K8S_PREVIOUS); $(CONFORMANCE_RUN)

.PHONY: goreleaser-check
goreleaser-check: ## Validate .goreleaser.yaml with the pinned goreleaser.
	$(GOTOOLS) goreleaser check

.PHONY: release-snapshot
release-snapshot: ## Build every release archive and checksums.txt into dist/ (nothing is published; the image is `make image`).
	$(GOTOOLS) goreleaser release --snapshot --clean --skip=publish,ko

.PHONY: krew-manifest
krew-manifest: ## Render krew/gray.yaml from the build in dist/ (make release-snapshot, or a release, first).
	krew/render.sh $(DIST) "$$($(DIST_VERSION))" > $(DIST)/gray.yaml
	mv $(DIST)/gray.yaml krew/gray.yaml

.PHONY: krew-check
krew-check: release-snapshot ## krew's validator accepts the manifest; krew installs every archive; `kubectl gray version` works.
	$(GOTOOLS) validate-krew-manifest -manifest krew/gray.yaml -skip-install
	GOTOOLS='$(GOTOOLS)' test/hack/krew-check.sh $(DIST) "$$($(DIST_VERSION))"

# Where `make test` records each step's times (test/hack/timed.sh).
TIMINGS := $(BIN)/timings.tsv
# Prometheus (a download, seconds) and both control planes, one after the other in the order
# the lanes need them, each timed as a step of its own. The 1.37 control plane is what every
# lane waits for on a fresh machine, so it builds at the other steps' priority; 1.35, needed
# minutes later, builds niced, yet ahead of the release checks (nice 19).
# Chromium (a Debian package, for the dashboard's e2e) installs beside them.
CONTROLPLANE_BUILDS = { test/hack/timed.sh chromium -- test/hack/install-chromium.sh & } && \
	test/hack/timed.sh prometheus -- test/hack/install-prometheus.sh && \
	test/hack/timed.sh controlplane -- test/hack/build-controlplane.sh && \
	KUBEGRAY_K8S=$(K8S_PREVIOUS) nice -n 10 test/hack/timed.sh controlplane-k8s135 -- test/hack/build-controlplane.sh

.PHONY: test
test: ## Every test: vet, lint, unit, fuzz, release plumbing, the image and chart, real-cluster and upstream's Deployment e2e on 1.37 and 1.35.
	@# On a fresh machine both control planes (10-13 minutes each) are built from source and
	@# Prometheus fetched, in the background from the start (CONTROLPLANE_BUILDS); the targets
	@# that need one wait for it on its script's lock. Warm, the builds are seconds.
	@# Every step's times go to $(TIMINGS), printed as a table when make test ends, pass or fail.
	@mkdir -p $(BIN); \
	export KUBEGRAY_TIMINGS=$(TIMINGS); : >$(TIMINGS); \
	setsid sh -c '$(CONTROLPLANE_BUILDS)' >$(BIN)/controlplanes.log 2>&1 & builds=$$!; \
	trap 'kill -- -$$builds 2>/dev/null || true; test/hack/timings.sh $(TIMINGS) || true' EXIT; \
	test/hack/timed.sh test -- $(MAKE) --no-print-directory test-steps

# The checks that need no cluster: the static ones, the unit tests and fuzz runs, then the
# release checks (goreleaser, then seven cross-compiled binaries: 18 minutes of compiling on a
# fresh machine). Before the lanes they kept the first cluster test waiting (about 30 minutes
# cold, 2 warm); they run niced beside the real-cluster suites instead, which wait on their
# clusters more than they compute, and their log is printed when they end; a failure fails
# make test.
STATIC_CHECKS  := vet lint version-check test-unit helm-lint render-check
RELEASE_CHECKS := goreleaser-check krew-check
# The real-cluster steps run in two lanes (make -j2, in this order): the 1.37 e2e package
# but its side suites in one; upstream's suite on 1.37, the side suites (E2E_SIDE_TESTS), the
# 1.35 leg and upstream's suite on 1.35 one after the other in the other, mildly niced
# (SIDE_NICE) so that the e2e package's timing-bound checks keep their share of the 2 cores.
# The lanes take about as long as each other warm; cold, the 1.35 control plane is built while
# the second lane runs on 1.37. Each lane has control planes of its own; the image is built
# once, before either starts, and upstream's suite binary once, in the second lane.
CLUSTER_STEPS  := test-e2e conformance test-e2e-side test-e2e-k8s135 conformance-k8s135
SIDE_NICE      ?=
# Once the lanes pass, each of their top-level tests is held to its budget (testtime check),
# after the background checks have ended, so that one run reports every verdict. When a lane
# fails, the failed tests and their last lines are printed last (testtime failures), where the
# tail of the log that CI keeps shows them.

.PHONY: test-steps
test-steps: build
	@log=$(BIN)/checks.log; rm -rf $(TEST_JSON); \
	setsid nice -n 19 ionice -c 3 $(MAKE) --no-print-directory -o build $(STATIC_CHECKS) $(RELEASE_CHECKS) >$$log 2>&1 & checks=$$!; \
	trap 'kill -- -$$checks 2>/dev/null || true' EXIT; \
	echo "$(STATIC_CHECKS) $(RELEASE_CHECKS) run in the background beside the image and $(CLUSTER_STEPS): $$log"; \
	$(MAKE) --no-print-directory -o build image testtime; lanes=0; \
	$(MAKE) --no-print-directory -o build -o image -o testtime --jobs=2 --keep-going --output-sync=target SIDE_NICE='nice -n 5' \
		E2E_LANES=2 $(CLUSTER_STEPS) || lanes=$$?; \
	echo "waiting for $(STATIC_CHECKS) $(RELEASE_CHECKS)"; status=0; wait $$checks || status=$$?; \
	cat $$log; if ((status != 0)); then echo "$(STATIC_CHECKS) $(RELEASE_CHECKS) failed (exit $$status)" >&2; fi; \
	if ((lanes != 0)); then $(TESTTIME) failures $(TEST_JSON)/*.json >&2; echo "$(CLUSTER_STEPS) failed (exit $$lanes)" >&2; exit 1; fi; \
	$(TESTTIME) check -budgets $(TEST_BUDGETS) $(CLUSTER_STEPS:%=$(TEST_JSON)/%.json); \
	if ((status != 0)); then exit 1; fi

.PHONY: bench-rollout
bench-rollout: build ## Benchmark: 100 Deployments x 10 replicas rolled by the built-in controller vs ours.
	$(CONTROLPLANE_ENV); \
	cd test && go run ./cmd/bench rollout -controller $(BIN)/gray-controller $(BENCH_FLAGS)

.PHONY: bench-scale
bench-scale: build ## Benchmark: 2,000 Deployments x 10 replicas, built-in vs ours: RSS, API requests, settle times (long).
	$(CONTROLPLANE_ENV); \
	cd test && go run ./cmd/bench scale -controller $(BIN)/gray-controller $(BENCH_FLAGS)

.PHONY: bench-gray
bench-gray: build ## Benchmark: 50 gray rollouts at once: hold latency and overshoot (must be 0).
	$(CONTROLPLANE_ENV); \
	cd test && go run ./cmd/bench gray -controller $(BIN)/gray-controller $(BENCH_FLAGS)

.PHONY: bench-gates
# Prometheus: $KUBEGRAY_PROMETHEUS, else test/prom runs test/hack/install-prometheus.sh (seconds).
bench-gates: build ## Benchmark: 100 held Deployments without and with a Prometheus gate every 10 s: queries/s, sync p50/p99, CPU, RSS.
	$(CONTROLPLANE_ENV); \
	cd test && go run ./cmd/bench gates -controller $(BIN)/gray-controller $(BENCH_FLAGS)

.PHONY: bench-gates-fairness
bench-gates-fairness: build ## Benchmark: a quiet namespace's gate measurement delay p50/p99 alone and beside a noisy namespace whose gates are slow on the same provider.
	$(CONTROLPLANE_ENV); \
	cd test && go run ./cmd/bench gates-fairness -controller $(BIN)/gray-controller $(BENCH_FLAGS)

.PHONY: bench-status
bench-status: build ## Benchmark: `kubectl gray status` vs `kubectl rollout status` on one Deployment.
	$(CONTROLPLANE_ENV); export KUBEGRAY_BIN=$(BIN); \
	cd test && go test -run '^$$' -bench BenchmarkStatusVsRolloutStatus -benchtime 20x -count 3 ./e2e/

.PHONY: bench-dashboard
bench-dashboard: build ## Benchmark: `kubectl gray dashboard` with 1,000 gray Deployments: the list's first paint, hold-to-page p50/p99, the server's RSS.
	$(CONTROLPLANE_ENV); export KUBEGRAY_BIN=$(BIN); \
	cd test && go test -run '^$$' -bench BenchmarkDashboard -benchtime 5x -timeout 20m ./e2e/

.PHONY: cluster-up
cluster-up: controlplane ## Start a local control plane in .cluster/ and print the KUBECONFIG to export.
	cd test && go run ./cmd/cluster up $(CLUSTER_DIR)

.PHONY: cluster-down
cluster-down: ## Stop the local control plane started by cluster-up.
	cd test && go run ./cmd/cluster down $(CLUSTER_DIR)

.PHONY: demo
demo: build controlplane ## The main job: a narrated gray release on a local control plane (DEMO_KEEP=0 tears it down).
	CLUSTER_DIR=$(CLUSTER_DIR) test/hack/demo.sh
