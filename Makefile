# Teardown: safe, ordered, explainable deletion for Kubernetes.
# `make help` lists the targets.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
GO ?= go
# bin/k8s links to the per-version cache folder that hack/control-plane.sh fills.
K8S_BIN := bin/k8s
export KUBEBUILDER_ASSETS ?= $(CURDIR)/$(K8S_BIN)
TEST_FLAGS ?= -count=1 -timeout=30m
# controller-gen is pinned in hack/tools/controller-gen/go.mod.
CONTROLLER_GEN := bin/controller-gen

.DEFAULT_GOAL := help

##@ General

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} \
		/^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2 } \
		/^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Main jobs

.PHONY: demo
demo: control-plane ## Start a local control plane and watch a guarded Service being deleted.
	$(GO) run ./hack/demo

.PHONY: test
test: control-plane ## Run every test against a real local control plane.
	$(GO) test $(TEST_FLAGS) ./...

##@ Development

.PHONY: control-plane
control-plane: ## Build etcd, kube-apiserver, kube-controller-manager and kubectl into bin/k8s (only what is missing).
	hack/control-plane.sh

.PHONY: cluster
cluster: control-plane ## Run a local control plane until Ctrl-C and print the KUBECONFIG to use.
	$(GO) run ./hack/devcluster

.PHONY: plugin
plugin: ## Build the kubectl plugin into bin/kubectl-teardown (put bin/ on PATH for `kubectl teardown`).
	$(GO) build -o bin/kubectl-teardown ./cmd/kubectl-teardown

.PHONY: bench-cli
bench-cli: control-plane plugin ## Time `kubectl teardown status` against the kubectl api-resources + get loop (100 CRDs, 20,000 objects).
	$(GO) run ./hack/bench-cli $(BENCH_FLAGS)

.PHONY: build
build: ## Build every package.
	$(GO) build ./...

.PHONY: fmt
fmt: ## Format the code.
	gofmt -w $$(git ls-files '*.go')

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate the deepcopy code of the API types (api/.../zz_generated.deepcopy.go).
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate the CRDs from the API types into config/crd/bases.
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases

# Rebuilt only when missing or when its pin in go.mod changes.
$(CONTROLLER_GEN): hack/tools/controller-gen/go.mod hack/tools/controller-gen/go.sum
	cd hack/tools/controller-gen && $(GO) build -o $(CURDIR)/$(CONTROLLER_GEN) sigs.k8s.io/controller-tools/cmd/controller-gen

.PHONY: verify
verify: ## Fail if code is unformatted, vet complains, go.mod is untidy or generated files are stale.
	hack/verify.sh
