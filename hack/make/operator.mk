# The operator (issue 6): envtest assets, controller-gen, manifests, running it locally.
#
# `make provision` builds kube-apiserver v1.34.4 and etcd v3.6.4 from the Go module proxy into
# $(CACHE)/envtest (cold 7-12 min on 2 cores, warm well under a second); `make manifests` and
# `make generate` install controller-gen into $(BIN). `go test ./controllers/...` finds the assets in the cache by
# itself; KUBEBUILDER_ASSETS (exported below) says where they are for other tools.

CONTROLLER_GEN_VERSION := v0.19.0
CONTROLLER_GEN         := $(BIN)/controller-gen
ENVTEST_K8S_VERSION    := 1.34.4
ENVTEST_DIR            := $(CACHE)/envtest/k8s-$(ENVTEST_K8S_VERSION)
KUBEBUILDER_ASSETS     ?= $(ENVTEST_DIR)/bin
OPENAAA_THIRD_PARTY_CRDS ?= $(ENVTEST_DIR)/crds
export KUBEBUILDER_ASSETS OPENAAA_THIRD_PARTY_CRDS

# controller-gen is not in PROVISION: no test runs it, and its compile (controller-tools and
# its own Kubernetes libraries) only lengthened the cold `make test`.
PROVISION += envtest-assets

##@ Operator
.PHONY: envtest-assets
envtest-assets: ## Build kube-apiserver and etcd for envtest and fetch third-party CRDs (cached).
	K8S_VERSION=$(ENVTEST_K8S_VERSION) GO=$(GO) hack/envtest.sh >/dev/null

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN) ## Install controller-gen into bin/.

$(CONTROLLER_GEN):
	@mkdir -p $(BIN)
	GOBIN=$(BIN) $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate the AAACluster CRD and the operator's RBAC into config/.
	$(CONTROLLER_GEN) rbac:roleName=openaaa-operator crd paths=./api/... paths=./controllers/... \
	  output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	@$(MAKE) --no-print-directory chart-sync # the operator chart ships copies of both

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate the deepcopy functions of the API types.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...

.PHONY: build-operator
build-operator: ## Build the operator into bin/openaaa-operator.
	@mkdir -p $(BIN)
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/openaaa-operator .

.PHONY: test-operator
test-operator: envtest-assets ## API and controller tests on a real kube-apiserver and etcd (envtest).
	OPENAAA_INTEGRATION=require $(GO) test -count=1 -timeout 15m ./api/... ./controllers/... 

.PHONY: run-operator
run-operator: ## Run the operator against the current kubeconfig (no leader election).
	$(GO) run -ldflags '$(LDFLAGS)' . --leader-elect=false --metrics-bind-address=:8080 --health-probe-bind-address=:8081

.PHONY: run
run: run-operator ## Same as run-operator.

.PHONY: operator-local
operator-local: envtest-assets ## Try it without a cluster: local API server, CRDs, operator, the 3-DC sample.
	hack/operator-local.sh
