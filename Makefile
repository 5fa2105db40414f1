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
# helm is pinned in hack/tools/helm/go.mod.
HELM := bin/helm
# make deploy/undeploy talk to the cluster of the current kubeconfig, with the
# kubectl make control-plane builds when it is there, else the one on PATH.
KUBECTL ?= $(if $(wildcard $(K8S_BIN)/kubectl),$(K8S_BIN)/kubectl,kubectl)
# Builds a kustomization as kubectl kustomize does, with the kustomize library
# go.mod pins: make deploy and make release-manifests need no kubectl for it.
KUSTOMIZE ?= $(GO) run ./hack/kustomize
# The teardown-controller image make deploy sets in the Deployment.
IMG ?= teardown-controller:latest
# The image repository make release-manifests pins by digest, with the
# digest make image writes to IMAGE_DIGEST_FILE.
IMG_REPO ?= teardown-controller
IMAGE_DIGEST_FILE ?= bin/image/teardown-controller.digest
# make image: the OCI image layout it writes (and IMAGE_TARBALL, a tar of it,
# if set), the platforms, and the version, commit and date stamped into the
# binary and the labels. DATE is the commit's time, not the clock's, so two
# builds of a commit are the same image (docs/install-image.md).
IMAGE_DIR ?= bin/image/teardown-controller
IMAGE_TARBALL ?=
IMAGE_PLATFORMS ?= linux/amd64,linux/arm64
# This machine's platform: make test and make e2e build and check the image
# for it alone (each platform more compiles every dependency again); the
# release targets (make image, make image-test) build IMAGE_PLATFORMS.
HOST_PLATFORM := linux/$(shell $(GO) env GOARCH)
VERSION ?= $(or $(shell git describe --tags --always --dirty 2>/dev/null),v0.0.0-dev)
COMMIT ?= $(or $(shell git rev-parse HEAD 2>/dev/null),unknown)
DATE ?= $(or $(shell TZ=UTC0 git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null),1970-01-01T00:00:00Z)
# Where make release-manifests writes install.yaml and the chart package.
RELEASE_DIR ?= bin/release
# make release (docs/install-image.md#releasing): the registry it pushes to
# (REGISTRY/teardown-controller, oci://REGISTRY/charts/teardown), the
# cosign-format key it signs with (password in COSIGN_PASSWORD; make
# release-key writes a pair), the image's and the plugin archives'
# platforms, and where the krew manifest says the archives are downloaded
# from (empty: the GitHub release of VERSION).
REGISTRY ?=
SIGN_KEY ?=
RELEASE_PLATFORMS ?= linux/amd64,linux/arm64
PLUGIN_PLATFORMS ?= linux/amd64,linux/arm64,darwin/amd64,darwin/arm64,windows/amd64
PLUGIN_URL ?=
# The chart's version and appVersion in the package; Chart.yaml's when empty.
CHART_VERSION ?=
RELEASE_TOOL := $(GO) -C hack/tools/release run .
# How long make undeploy waits for the policies to release what they guard.
UNDEPLOY_TIMEOUT ?= 5m
# How long make fuzz runs each Fuzz function.
FUZZTIME ?= 30s

.DEFAULT_GOAL := help

##@ General

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} \
		/^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2 } \
		/^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Main jobs

.PHONY: demo
demo: control-plane ## Start a local control plane; watch a guarded Service deleted, then a policy keeping an agent's RBAC until its pods are gone.
	$(GO) run ./hack/demo

.PHONY: test-unit
test-unit: ## Run the unit tier: the tests that need no control plane (go test -short; suites that need one are skipped whole), in about a minute.
	$(GO) test -short -count=1 ./...

.PHONY: test
test: control-plane $(HELM) ## Run every test against a real local control plane.
	$(GO) test $(TEST_FLAGS) ./...
	IMAGE_TEST_PLATFORMS=$(HOST_PLATFORM) $(GO) -C hack/tools/image test $(TEST_FLAGS) ./...
	$(GO) -C hack/tools/release test $(TEST_FLAGS) ./...
	$(GO) -C bench/plot test $(TEST_FLAGS) ./...
	$(GO) -C test/gitops test $(TEST_FLAGS) ./...

# make test-compat: the suites that hold the versions the chart's kubeVersion
# claims (UPGRADING.md, "Tested versions"). For each Kubernetes minor in
# COMPAT_K8S, hack/control-plane.sh MINOR builds that release's control plane
# (pinned in hack/tools/k8s-MINOR, 1.36 in hack/tools) and COMPAT_PKGS run
# against it with helm 3; then the chart tests run again with helm 4
# (hack/tools/helm4) on the newest. Every run goes to the end; each one's log
# is bin/compat/<label>.log and the matrix bin/compat/matrix.txt.
COMPAT_K8S ?= 1.30 1.33 1.36
COMPAT_PKGS ?= ./internal/controller ./test/admission ./test/apitest ./internal/chart

.PHONY: test-compat
test-compat: $(HELM) ## Run the controller, admission, API and chart suites on each Kubernetes of COMPAT_K8S (1.30 1.33 1.36, built from Go modules), and the chart tests with helm 4; matrix in bin/compat/matrix.txt (UPGRADING.md). Not part of make test: about 16 minutes once built.
	@mkdir -p bin/compat; matrix=bin/compat/matrix.txt; start=$$(date +%s); failed=0; \
	echo "# make test-compat, $$(date -u +%Y-%m-%dT%H:%MZ), $$($(GO) env GOVERSION)" > $$matrix; \
	run() { \
		label=$$1; shift; t0=$$(date +%s); \
		if "$$@" > bin/compat/$$label.log 2>&1; then r=pass; else r=FAIL; failed=1; fi; \
		echo "$$label: $$r in $$(( $$(date +%s) - t0 ))s" | tee -a $$matrix; \
		grep -E '^(ok|FAIL|---)' bin/compat/$$label.log | sed 's/^/    /' | tee -a $$matrix || true; \
	}; \
	echo "helm3: $$($(HELM) version --short)" | tee -a $$matrix; \
	for v in $(COMPAT_K8S); do \
		echo "building the control plane of Kubernetes $$v (hack/control-plane.sh $$v)"; \
		assets=$$(nice -n 10 hack/control-plane.sh $$v | tail -n 1); \
		assets=$$(cd "$$assets" && pwd -P); \
		echo "k8s-$$v: $$("$$assets/kube-apiserver" --version)" | tee -a $$matrix; \
		run k8s-$$v-helm3 env KUBEBUILDER_ASSETS=$$assets $(GO) test $(TEST_FLAGS) $(COMPAT_PKGS); \
	done; \
	hack/tools/helm4/build.sh; \
	echo "helm4: $$(bin/helm4/helm version --short)" | tee -a $$matrix; \
	run k8s-$(lastword $(COMPAT_K8S))-helm4 env KUBEBUILDER_ASSETS=$$assets TEARDOWN_HELM=bin/helm4/helm $(GO) test $(TEST_FLAGS) ./internal/chart; \
	echo "total: $$(( $$(date +%s) - start ))s" | tee -a $$matrix; \
	exit $$failed

##@ Controller

.PHONY: controller
controller: ## Build the teardown-controller into bin/teardown-controller.
	CGO_ENABLED=0 $(GO) build -o bin/teardown-controller ./cmd/teardown-controller

# hack/tools/image: go-containerregistry, no container engine, no base image
# pulled; the base (CA certificates, nonroot user, /tmp) is made from scratch.
.PHONY: image
image: ## Build the teardown-controller OCI image (IMAGE_PLATFORMS, static, nonroot, SPDX SBOM) into IMAGE_DIR without a container engine; its digest goes to IMAGE_DIGEST_FILE.
	$(GO) -C hack/tools/image run . -repo $(CURDIR) -out $(abspath $(IMAGE_DIR)) -digest-file $(abspath $(IMAGE_DIGEST_FILE)) \
		-platforms $(IMAGE_PLATFORMS) -version $(VERSION) -commit $(COMMIT) -date $(DATE) $(if $(IMAGE_TARBALL),-tarball $(abspath $(IMAGE_TARBALL)))

.PHONY: image-test
image-test: ## Test make image: two builds give one digest; each platform's config, files, static binary and SBOM, for IMAGE_PLATFORMS (make test runs it for this machine's platform only).
	IMAGE_TEST_PLATFORMS=$(IMAGE_PLATFORMS) $(GO) -C hack/tools/image test $(TEST_FLAGS) ./...

.PHONY: deploy
deploy: ## Install the CRDs, RBAC and teardown-controller (config/default, image IMG) into the current kubeconfig's cluster (KUBECTL, default the one on PATH).
	@command -v $(firstword $(KUBECTL)) >/dev/null || { echo "deploy: no kubectl ($(firstword $(KUBECTL))): put one on PATH or set KUBECTL" >&2; exit 1; }
	$(KUSTOMIZE) config/default | sed 's|image: teardown-controller:latest$$|image: $(IMG)|' | $(KUBECTL) apply -f -

# The documented safe uninstall (docs/controller.md, Uninstalling): deleting
# a policy releases every object it guards, which needs the controller; only
# once no policy is left do the controller and the CRDs go.
# `teardown-controller uninstall` deletes the policies and waits for them.
.PHONY: undeploy
undeploy: ## Delete every policy, wait until they released what they guard (teardown-controller uninstall), then remove config/default.
	$(GO) run ./cmd/teardown-controller uninstall --timeout=$(UNDEPLOY_TIMEOUT)
	$(KUSTOMIZE) config/default | $(KUBECTL) delete --ignore-not-found -f -

.PHONY: release-manifests
release-manifests: ## Write RELEASE_DIR/install.yaml (config/default, image IMG_REPO@digest after make image, else IMG) and package charts/teardown beside it.
	@mkdir -p $(RELEASE_DIR)
	@if [[ -s $(IMAGE_DIGEST_FILE) ]]; then image="$(IMG_REPO)@$$(tr -d '[:space:]' < $(IMAGE_DIGEST_FILE))"; else image="$(IMG)"; fi; \
	$(KUSTOMIZE) config/default | sed "s|image: teardown-controller:latest\$$|image: $$image|" > $(RELEASE_DIR)/install.yaml.tmp; \
	grep -q "image: $$image\$$" $(RELEASE_DIR)/install.yaml.tmp || { echo "release-manifests: the Deployment's image was not set to $$image" >&2; exit 1; }; \
	mv $(RELEASE_DIR)/install.yaml.tmp $(RELEASE_DIR)/install.yaml; \
	echo "$(RELEASE_DIR)/install.yaml: image $$image"
	@if [[ -d charts/teardown ]]; then $(MAKE) --no-print-directory release-chart; fi

# The chart package, with the same image pin as install.yaml: a copy of
# charts/teardown whose values name IMG_REPO@digest after make image, else IMG.
.PHONY: release-chart
release-chart: $(HELM)
	@tmp=$(RELEASE_DIR)/chart.tmp; rm -rf $$tmp; mkdir -p $$tmp; cp -R charts/teardown $$tmp/; \
	values=$$tmp/teardown/values.yaml; \
	if [[ -s $(IMAGE_DIGEST_FILE) ]]; then \
		repo="$(IMG_REPO)"; digest=$$(tr -d '[:space:]' < $(IMAGE_DIGEST_FILE)); tag=""; \
	elif [[ "$(IMG)" == *@* ]]; then \
		img="$(IMG)"; repo="$${img%@*}"; digest="$${img#*@}"; tag=""; \
	else \
		repo="$(IMG)"; tag=""; digest=""; \
		if [[ "$${repo##*/}" == *:* ]]; then tag="$${repo##*:}"; repo="$${repo%:*}"; fi; \
	fi; \
	sed -i -e "s|^  repository: .*|  repository: $$repo|" -e "s|^  tag: \"\"|  tag: \"$$tag\"|" -e "s|^  digest: \"\"|  digest: \"$$digest\"|" $$values; \
	grep -q "^  repository: $$repo\$$" $$values || { echo "release-chart: the chart's image was not set to $$repo" >&2; exit 1; }; \
	if [[ -n "$$digest" ]]; then sed -i "s|^      image: .*/teardown-controller:.*|      image: $$repo@$$digest|" $$tmp/teardown/Chart.yaml; fi; \
	$(HELM) lint $$tmp/teardown >/dev/null; \
	$(HELM) package $$tmp/teardown -d $(RELEASE_DIR) $(if $(CHART_VERSION),--version $(CHART_VERSION) --app-version $(CHART_VERSION)) | sed 's|^|release-chart: |'; \
	rm -rf $$tmp; \
	echo "release-chart: image $$repo$${digest:+@$$digest}$${tag:+:$$tag}"

# make release: check the inputs first (VERSION given, the key loads, the
# registry answers), then build (image, install.yaml, chart, plugin
# archives) and push, sign and record (bin/release/release.json).
.PHONY: release
release: $(HELM) ## Publish release VERSION to REGISTRY, signed with SIGN_KEY: the multi-arch image by digest with its SBOMs, the chart as oci://REGISTRY/charts/teardown, install.yaml, the plugin archives, checksums.txt and the krew manifest, in RELEASE_DIR (docs/install-image.md#releasing).
	@case "$(origin VERSION)" in "command line"|environment) ;; *) echo "release: set VERSION=vX.Y.Z, the tag to release (it is $(VERSION) from git describe)" >&2; exit 2;; esac
	@[[ -n "$(REGISTRY)" ]] || { echo "release: set REGISTRY, the registry to push to (REGISTRY/teardown-controller, oci://REGISTRY/charts/teardown)" >&2; exit 2; }
	$(RELEASE_TOOL) check -registry $(REGISTRY) -version $(VERSION) -key "$(if $(SIGN_KEY),$(abspath $(SIGN_KEY)))"
	$(MAKE) --no-print-directory image IMAGE_PLATFORMS=$(RELEASE_PLATFORMS)
	@rm -f $(RELEASE_DIR)/teardown-*.tgz $(RELEASE_DIR)/kubectl-teardown_*
	$(MAKE) --no-print-directory release-manifests IMG_REPO=$(REGISTRY)/teardown-controller CHART_VERSION=$(VERSION)
	$(RELEASE_TOOL) plugins -repo $(CURDIR) -version $(VERSION) -commit $(COMMIT) -date $(DATE) -platforms $(PLUGIN_PLATFORMS) \
		-krew $(CURDIR)/.krew.yaml -out $(abspath $(RELEASE_DIR)) -also install.yaml,teardown-$(VERSION).tgz $(if $(PLUGIN_URL),-url $(PLUGIN_URL))
	$(RELEASE_TOOL) push -registry $(REGISTRY) -version $(VERSION) -key $(abspath $(SIGN_KEY)) -image $(abspath $(IMAGE_DIR)) \
		-chart $(abspath $(RELEASE_DIR))/teardown-$(VERSION).tgz -helm $(abspath $(HELM)) -out $(abspath $(RELEASE_DIR))

.PHONY: release-key
release-key: ## Write a cosign-format signing key pair, SIGN_KEY (default bin/release-key/cosign.key, password from COSIGN_PASSWORD) and its .pub, for make release.
	@key="$(abspath $(or $(SIGN_KEY),bin/release-key/cosign.key))"; mkdir -p "$$(dirname $$key)"; \
	$(RELEASE_TOOL) keygen -out "$${key%.key}"

.PHONY: release-test
release-test: ## Test hack/tools/release: signature round trip against an in-process registry, SBOM referrers, archives, checksums, the krew manifest (make test runs it).
	$(GO) -C hack/tools/release test $(TEST_FLAGS) ./...

##@ Development

.PHONY: control-plane
control-plane: ## Build etcd, kube-apiserver, kube-controller-manager and kubectl into bin/k8s (only what is missing).
	hack/control-plane.sh

.PHONY: cluster
cluster: control-plane ## Run a local control plane until Ctrl-C and print the KUBECONFIG to use.
	$(GO) run ./hack/devcluster

.PHONY: node
node: control-plane ## Build kubelet, kube-scheduler and kube-proxy into bin/k8s, and apt-get install containerd, runc and the CNI plugins (only what is missing).
	hack/node.sh

# The one-node cluster runs this machine's platform: its image alone is built.
node-cluster e2e: IMAGE_PLATFORMS = $(HOST_PLATFORM)
.PHONY: node-cluster
node-cluster: node image ## Run a real one-node cluster (kubelet, containerd, kube-proxy, a local registry holding make image's image) until Ctrl-C; print its KUBECONFIG and REGISTRY (docs/local-cluster.md).
	$(GO) -C hack/cluster run . -repo $(CURDIR)

.PHONY: e2e
e2e: node image helm ## Run the end-to-end tests (test/e2e, build tag e2e; needs root) in a real one-node cluster, installed from the release make release publishes to its registry (this machine's platform): the README quick start, seed 004's agent pods, a leader killed, a drain, metrics and the webhook (log: bin/e2e.log, cluster logs: bin/e2e/).
	@mkdir -p bin; $(GO) test -tags e2e $(TEST_FLAGS) -v ./test/e2e/ 2>&1 | tee bin/e2e.log

.PHONY: plugin
plugin: ## Build the kubectl plugin into bin/kubectl-teardown, with its completion script bin/kubectl_complete-teardown (put bin/ on PATH for `kubectl teardown`).
	$(GO) build -o bin/kubectl-teardown ./cmd/kubectl-teardown
	install -m 0755 cmd/kubectl-teardown/kubectl_complete-teardown bin/kubectl_complete-teardown

.PHONY: bench-cli
bench-cli: control-plane plugin ## Time `kubectl teardown status` against the kubectl api-resources + get loop (100 CRDs, 20,000 objects).
	$(GO) run ./hack/bench-cli $(BENCH_FLAGS)

.PHONY: bench
bench: control-plane ## Measure Teardown against the API server's raw limit and a kubebuilder-style controller (docs/performance.md; BENCH_ARGS=-quick for a short run).
	$(GO) run ./bench/cmd/bench $(BENCH_ARGS)

.PHONY: bench-scale
bench-scale: control-plane ## Measure the controller at scale: 100,000 guarded objects in 1,000 namespaces with a policy each, 20,000 pods, policy growth, a 10,000-object namespace drain (docs/performance.md, Scale; results in _out/bench-scale; SCALE_ARGS for a smaller run). Not part of make test.
	$(GO) run ./bench/cmd/scale $(SCALE_ARGS)

.PHONY: fuzz
fuzz: ## Run every Fuzz function of the module for FUZZTIME (default 30s) each, one after another; failing inputs are kept in the package's testdata/fuzz.
	@failed=; packages=$$($(GO) list -e -f '{{.ImportPath}}:{{.Dir}}' ./...); \
	for entry in $$packages; do \
		pkg=$${entry%%:*}; dir=$${entry#*:}; \
		for fn in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do \
			echo "=== $$fn in $$pkg"; \
			$(GO) test "$$pkg" -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) || failed="$$failed $$pkg.$$fn"; \
		done; \
	done; \
	if [ -n "$$failed" ]; then echo "Failed:$$failed"; exit 1; fi

# How many guarded objects make chaos deletes.
CHAOS_N ?= 1000

.PHONY: chaos
chaos: control-plane ## Delete CHAOS_N (default 1,000) guarded objects through 20+ controller kills, a kube-apiserver restart, a leader failover and mid-teardown edits; print kills, restarts, webhook calls per object and drain times (TEARDOWN_CHAOS_SEED replays a run; log in bin/chaos.log).
	@mkdir -p bin; status=0; \
	TEARDOWN_CHAOS_N=$(CHAOS_N) $(GO) test -count=1 -timeout=30m -run '^TestChaos$$' -v ./test/chaos/ 2>&1 | tee bin/chaos.log || status=$$?; \
	echo; grep -A14 'CHAOS FIGURES' bin/chaos.log || true; \
	exit $$status

# The model test's first seed, how many seeds from it, and the steps of each.
SEED ?= 1
SEEDS ?= 1
STEPS ?= 1000

.PHONY: model
model: control-plane ## Run the randomized model test of the contract (TestModel): SEEDS seeds from SEED (default 1), STEPS steps each (default 1,000); print steps run, removals checked and violations by rule (step logs and controller logs in bin/model/).
	@mkdir -p bin/model; status=0; \
	TEARDOWN_MODEL_SEED=$(SEED) TEARDOWN_MODEL_SEEDS=$(SEEDS) TEARDOWN_MODEL_STEPS=$(STEPS) TEARDOWN_CHAOS_LOGS=$(CURDIR)/bin/model \
		$(GO) test -count=1 -timeout=0 -run '^TestModel$$' -v ./test/chaos/ 2>&1 | tee bin/model/model.log || status=$$?; \
	echo; grep -A3 'MODEL FIGURES' bin/model/model.log || true; \
	exit $$status

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
manifests: $(CONTROLLER_GEN) ## Generate the CRDs (config/crd/bases) and the controller's ClusterRole (config/rbac/role.yaml).
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=teardown-controller paths="./internal/controller/...;./internal/steps/..." output:rbac:artifacts:config=config/rbac

# Rebuilt only when missing or when its pin in go.mod changes.
$(CONTROLLER_GEN): hack/tools/controller-gen/go.mod hack/tools/controller-gen/go.sum
	cd hack/tools/controller-gen && $(GO) build -o $(CURDIR)/$(CONTROLLER_GEN) sigs.k8s.io/controller-tools/cmd/controller-gen

# Rebuilt only when missing or when its pin in go.mod changes.
$(HELM): hack/tools/helm/go.mod hack/tools/helm/go.sum hack/helm.sh
	hack/helm.sh

# golangci-lint is pinned in hack/tools/golangci-lint/go.mod.
GOLANGCI_LINT := bin/golangci-lint
$(GOLANGCI_LINT): hack/tools/golangci-lint/go.mod hack/tools/golangci-lint/go.sum
	$(GO) -C hack/tools/golangci-lint build -o $(CURDIR)/$(GOLANGCI_LINT) github.com/golangci/golangci-lint/v2/cmd/golangci-lint

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint (.golangci.yml: the standard linters, errorlint, loggercheck, importas); make verify runs it too.
	$(GOLANGCI_LINT) run ./...

.PHONY: helm
helm: $(HELM) ## Build helm (pinned in hack/tools/helm/go.mod) into bin/helm.

.PHONY: chart
chart: ## Write the generated part of charts/teardown (CRDs, RBAC, admission policies, monitoring, dashboard) from config/, and its values.schema.json.
	$(GO) run ./hack/chart >/dev/null
	$(GO) -C hack/tools/chartschema run . -out $(CURDIR)/charts/teardown/values.schema.json -readme $(CURDIR)/charts/teardown/README.md -values $(CURDIR)/charts/teardown/values.yaml

.PHONY: verify
verify: ## Fail if code is unformatted, vet or golangci-lint complains, go.mod is untidy or generated files are stale.
	hack/verify.sh
