# controller-manager: `make help` lists the targets.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

BIN        := $(CURDIR)/bin
GO         ?= go
ARGS       ?=
# The image `make image` builds and `make deploy` deploys (config/ itself names
# controller-manager:latest), and the OCI archive `make image` writes it to
# (see docs/deploying.md).
IMG        ?= controller-manager:latest
IMAGE_ARCHIVE ?= $(BIN)/controller-manager-image.tar
# The architecture of the image `make image` builds (the node's).
GOARCH     ?= $(shell $(GO) env GOARCH)
# kustomize Components `make deploy` adds to config/default, e.g.
# COMPONENTS=config/neutron (the Neutron backend; docs/deploying.md).
COMPONENTS ?=
# Integration tests and `make run` find kube-apiserver and etcd here.
export KUBEBUILDER_ASSETS ?= $(BIN)
# How long each fuzz target runs in `make test` (its committed corpus always runs).
FUZZTIME   ?= 10s
TEST_FLAGS ?= -race -count=1 -timeout=30m

# The build's identity, stamped into every binary make builds
# (internal/version; `controller-manager --version`): the version from git
# describe, the commit, and the commit's date (not the build's, so that a
# rebuild of the same commit is byte-identical). Outside git all are empty
# and the binary says so.
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null)
GIT_COMMIT  := $(shell git rev-parse HEAD 2>/dev/null)
BUILD_DATE  := $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null)
VERSION_PKG := github.com/kube-sample/controller-manager/internal/version
LDFLAGS     := -X $(VERSION_PKG).version=$(VERSION) -X $(VERSION_PKG).commit=$(GIT_COMMIT) -X $(VERSION_PKG).buildDate=$(BUILD_DATE)
export VERSION LDFLAGS

.DEFAULT_GOAL := help

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target> [ARGS=\"--flag ...\"]\n\nTargets:\n"} /^[a-zA-Z_-]+:.*?##/ { printf "  %-12s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

.PHONY: tools
tools: ## Build the pinned kube-apiserver, etcd, controller-gen, traefik, helm, external-dns, promtool and prometheus into bin/ (minutes the first time, cached after).
	hack/build-tools.sh

.PHONY: kubectl
kubectl: ## Build bin/kubectl (v1.36.3) to talk to the `make run` cluster and to render config/ (`kubectl kustomize`).
	hack/build-tools.sh kubectl

.PHONY: build
build: ## Build bin/controller-manager.
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/controller-manager ./cmd/controller-manager

.PHONY: image
image: ## Build the container image IMG (default controller-manager:latest) with buildah, no Docker needed, into the OCI archive IMAGE_ARCHIVE.
	@rm -rf $(BIN)/image && mkdir -p $(BIN)/image/linux_$(GOARCH)
	GO=$(GO) hack/build-binary.sh linux/$(GOARCH) $(BIN)/image/linux_$(GOARCH)/controller-manager
	hack/build-image.sh -f Dockerfile -t $(IMG) -o $(IMAGE_ARCHIVE) --build-arg TARGETOS=linux --build-arg TARGETARCH=$(GOARCH) $(BIN)/image

# The repository of the image `make release` builds, tagged VERSION, and
# where it writes the release.
IMAGE_REPO ?= controller-manager
DIST       ?= $(CURDIR)/dist
# The Go toolchain go.mod pins: a release's binaries are built with it
# (hack/build-binary.sh), and so are the tools that write its other files.
GO_TOOLCHAIN := $(shell sed -n 's/^toolchain //p' go.mod)

.PHONY: release
release: ## Write the release VERSION (make release VERSION=v0.1.0 [IMAGE_REPO=registry.example.com/controller-manager]) into dist/: the linux/amd64+arm64 image index (OCI archive), install.yaml, the packaged chart, an SBOM per architecture, BUILDINFO, SHA256SUMS (docs/install.md).
	GOTOOLCHAIN=$(GO_TOOLCHAIN) hack/build-tools.sh kubectl helm cyclonedx-gomod
	IMAGE_REPO=$(IMAGE_REPO) DIST=$(DIST) hack/release.sh

.PHONY: deploy
deploy: ## Apply config/default, its Deployment running IMG, to the cluster of KUBECONFIG.
	@hack/build-tools.sh kubectl
	IMG=$(IMG) COMPONENTS="$(COMPONENTS)" hack/deploy.sh apply

.PHONY: undeploy
undeploy: ## Delete what `make deploy` applied, the CRD (so every Network) included: delete Networks first.
	@hack/build-tools.sh kubectl
	IMG=$(IMG) COMPONENTS="$(COMPONENTS)" hack/deploy.sh delete

.PHONY: deploy-yaml
deploy-yaml: ## Print what `make deploy` applies (`kubectl kustomize` of the pinned bin/kubectl, built if missing).
	@hack/build-tools.sh kubectl >&2
	@IMG=$(IMG) COMPONENTS="$(COMPONENTS)" hack/deploy.sh render

# OPENSTACK=local makes `make run` also start the local Keystone + Neutron
# (hack/openstack-up.sh) and run the network controller on it.
OPENSTACK  ?=

.PHONY: run
run: build ## Run every controller: against KUBECONFIG or ARGS=--kubeconfig=... if given, else on a local control plane; OPENSTACK=local adds a local Keystone + Neutron for the network controller.
	@case "$(OPENSTACK)" in \
		"") wrap=() args=() ;; \
		local) wrap=(hack/with-openstack.sh --openrc) args=(--network-backend=neutron) ;; \
		*) echo "make run: OPENSTACK=$(OPENSTACK): use OPENSTACK=local, or nothing (in-memory network backend)" >&2; exit 2 ;; \
	esac; \
	if [[ -n "$${KUBECONFIG:-}" || "$(ARGS)" == *--kubeconfig* || "$(ARGS)" == *--master* ]]; then \
		echo "make run: using the given cluster ($${KUBECONFIG:-from ARGS})"; \
		exec "$${wrap[@]}" $(BIN)/controller-manager "$${args[@]}" $(ARGS); \
	else \
		hack/build-tools.sh kube-apiserver etcd; \
		$(GO) build -o $(BIN)/local-up ./hack/local-up; \
		exec "$${wrap[@]}" $(BIN)/local-up -- "$${args[@]}" $(ARGS); \
	fi

.PHONY: manifests
manifests: ## Regenerate the CRD (config/crd) and the ClusterRole (config/rbac/role.yaml, from the +kubebuilder:rbac markers) with controller-gen.
	hack/update-codegen.sh manifests

.PHONY: generate
generate: ## Regenerate clientset, listers, informers, deepcopy, the CRD, the ClusterRole, and ingress-manager's schema subset (hack/schemagen).
	hack/update-codegen.sh
	$(GO) run ./hack/schemagen

.PHONY: docs
docs: ## Regenerate docs/reference (flags, annotations, reasons, RBAC, chart values), docs/benchmarks.md (from bench-results/) and the alerts of docs/operations.md (from config/prometheus) with hack/docgen.
	$(GO) run ./hack/docgen

.PHONY: verify
verify: ## Check formatting, vet, generated code, generated docs, the Helm chart (helm lint, helm template) and a release's install.yaml and packaged chart: no drift from config/default.
	hack/verify-gofmt.sh
	$(GO) vet ./...
	@if [[ -x hack/verify-codegen.sh ]]; then hack/verify-codegen.sh; fi
	$(GO) run ./hack/schemagen -verify
	GO=$(GO) hack/verify-docs.sh
	GO=$(GO) hack/verify-chart.sh

.PHONY: chart-crds
chart-crds: ## Rewrite the Helm chart's crds/ from config/default (after make manifests) and its files/alerts.yaml from config/prometheus; make verify fails while they differ.
	$(GO) run ./hack/chartdiff -write-crds charts/controller-manager/crds -write-rules charts/controller-manager/files/alerts.yaml

.PHONY: test
test: tools verify ## Run every check, unit and integration test (real kube-apiserver + etcd, real Keystone + Neutron), the fuzz targets briefly, and test-e2e.
	@# What test-e2e needs builds meanwhile at the lowest priority, on the CPU the
	@# tests leave idle; test-e2e's own build-tools call waits for it (one build
	@# of a tool at a time: bin/.lock.<tool>) and, should it have failed, builds in the open.
	nice -n 19 hack/build-tools.sh $(E2E_TOOLS) >$(BIN)/.e2e-tools.log 2>&1 &
	hack/with-openstack.sh $(GO) test $(TEST_FLAGS) $$(hack/test-packages.sh)
	@# The fuzz targets run at the lowest priority beside test-e2e, which mostly
	@# waits on its node (load under 1 on 2 CPUs); their output follows it.
	@nice -n 19 hack/fuzz.sh $(FUZZTIME) >$(BIN)/.fuzz.log 2>&1 & fuzz=$$!; \
	  e2e=0; $(MAKE) test-e2e || e2e=$$?; \
	  f=0; wait $$fuzz || f=$$?; \
	  echo ">> hack/fuzz.sh $(FUZZTIME) (beside test-e2e; $(BIN)/.fuzz.log):"; cat $(BIN)/.fuzz.log; \
	  if [[ $$f -ne 0 ]]; then echo ">> hack/fuzz.sh failed" >&2; exit 1; fi; exit $$e2e

# E2E_NODE names the state directory of a node that hack/node-up.sh started;
# without it, test-e2e starts one of its own and stops it afterwards.
# E2E_RELEASES names the dist/ directories of two releases (`make release`),
# the one to install first; without it, test-e2e builds two of this commit
# into bin/e2e-release/.
E2E_NODE     ?=
E2E_RELEASES ?=
E2E_FLAGS    ?= -count=1 -timeout=30m -v
# The tools test-e2e builds into bin/ (hack/build-tools.sh).
E2E_TOOLS    := node helm cyclonedx-gomod prometheus

.PHONY: test-e2e
test-e2e: ## On a real one-node Kubernetes (hack/node-up.sh; needs root): build two releases, install the first from its install.yaml, test what a user sees, upgrade to the second by install.yaml and by the packaged chart (install, upgrade, uninstall).
	hack/build-tools.sh $(E2E_TOOLS)
	E2E_NODE=$(if $(E2E_NODE),$(abspath $(E2E_NODE))) E2E_RELEASES="$(foreach d,$(E2E_RELEASES),$(abspath $(d)))" $(GO) test $(E2E_FLAGS) ./test/e2e/...

.PHONY: node-up
node-up: ## Start a one-node Kubernetes in .run/node (hack/node-up.sh; needs root), and load the image into it when `make image` has built it.
	hack/node-up.sh .run/node
	@if [[ -f $(IMAGE_ARCHIVE) ]]; then hack/node-load-image.sh .run/node $(IMAGE_ARCHIVE); fi

.PHONY: node-down
node-down: ## Stop the node of `make node-up`.
	hack/node-down.sh .run/node

# Objects per phase of `make bench`; BENCH_ARGS passes more flags to the
# harness (`go run ./test/bench/cmd/bench -h` lists them).
N          ?= 1000
BENCH_ARGS ?=

.PHONY: bench
bench: ## Measure the controllers against the API server's own limit on a fresh local control plane, and the network controller against real Neutron (N=1000; `make bench N=10000`); table on stdout, JSON in bench-results/<timestamp>-<commit>.json (`make docs` renders them).
	hack/build-tools.sh kube-apiserver etcd traefik
	hack/with-openstack.sh $(GO) run ./test/bench/cmd/bench -n $(N) $(BENCH_ARGS)

# Scale points (docs/benchmarks.md#scale-points): too long for `make bench`,
# each run writes its own result.
SCALE_N      ?= 1000 10000 100000
SCALE_PODS   ?= 150000
SCALE_NETS   ?= 10000

.PHONY: bench-scale
bench-scale: ## Scale curve of ingress-manager: one `-scale` run (cold starts against the informer floor, memory per Service) at each N of SCALE_N (1000 10000 100000; hours on two cores).
	hack/build-tools.sh kube-apiserver etcd
	set -e; for n in $(SCALE_N); do $(GO) run ./test/bench/cmd/bench -n $$n -scale $(BENCH_ARGS); done

.PHONY: bench-pods
bench-pods: ## Scale point of pod-logger at SCALE_PODS Pods (150000): cache sync, memory per Pod, update -> log line lag, CPU per update.
	hack/build-tools.sh kube-apiserver etcd
	$(GO) run ./test/bench/cmd/bench -only podlogger -pods $(SCALE_PODS) $(BENCH_ARGS)

.PHONY: bench-networks
bench-networks: ## Scale point of the network controller at SCALE_NETS Networks (10000) on the memory backend: time to Ready, RSS, restart.
	hack/build-tools.sh kube-apiserver etcd
	$(GO) run ./test/bench/cmd/bench -only network-scale -scale-networks $(SCALE_NETS) $(BENCH_ARGS)

.PHONY: openstack-up
openstack-up: ## Start the local Keystone + Neutron (installs Debian's packages when missing; needs root for that).
	hack/openstack-up.sh

.PHONY: openstack-down
openstack-down: ## Stop the local Keystone + Neutron that openstack-up started.
	hack/openstack-down.sh

.PHONY: clean
clean: openstack-down node-down ## Remove built binaries and local run state.
	rm -rf $(BIN) .run
