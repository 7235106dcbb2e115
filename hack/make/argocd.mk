# Argo CD v3.2.11 (issue 36), the real one: one static multi-call binary built from the Go module
# proxy by hack/argocd.sh (module hack/argocd), cached under $(CACHE)/argocd with a stamp of its
# version, the Go version, the flags and hack/argocd's files. Cold: about 11 min of compiling on
# 2 cores; warm: a second. test/argocdcli runs our AAACluster health check through it
# (docs/argocd.md). Part of PROVISION, built in make test's add-ons lane once the add-ons are
# (PROVISION_CLUSTER in the Makefile; hack/test.sh): no cluster test waits for it.

PROVISION    += argocd
ADDONS_TESTS += ./test/argocdcli/...

##@ Argo CD
.PHONY: argocd
argocd: ## Build Argo CD v3.2.11 into $(CACHE)/argocd/bin/argocd (cached; hack/argocd/go.mod).
	GO=$(GO) hack/argocd.sh build

.PHONY: argocd-test
argocd-test: argocd ## The AAACluster health check through Argo CD itself (test/argocdcli).
	$(TEST_ENV) $(GO) test -count=1 -timeout 5m ./test/argocdcli/...

# A local Argo CD (hack/argocd.sh up): redis, the repo server and the application controller as
# host processes against the cluster of KUBECONFIG, state and logs in ARGOCD_STATE.
ARGOCD_STATE ?= $(CACHE)/argocd/state

.PHONY: argocd-up
argocd-up: argocd helm ## Start a local Argo CD against KUBECONFIG (state and logs in ARGOCD_STATE).
	hack/argocd.sh install-redis
	HELM=$(BIN)/helm GO=$(GO) hack/argocd.sh up "$${KUBECONFIG:?set KUBECONFIG}" $(ARGOCD_STATE)

.PHONY: argocd-down
argocd-down: ## Stop the local Argo CD of ARGOCD_STATE (its Kubernetes objects stay).
	hack/argocd.sh down $(ARGOCD_STATE)

# Not in make test yet (test/argocdenv): about 40 s, most of it envtest and Argo CD starting.
.PHONY: argocd-env-test
argocd-env-test: argocd helm envtest-assets ## Argo CD syncs the operator chart from a file:// git repository into envtest (test/argocdenv).
	hack/argocd.sh install-redis
	OPENAAA_ARGOCD_ENV=1 HELM=$(BIN)/helm $(TEST_ENV) $(GO) test -count=1 -timeout 5m ./test/argocdenv/...
