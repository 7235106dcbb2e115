# Argo CD v3.2.11 (issue 36), the real one: static multi-call binaries built from the Go module
# proxy by hack/argocd.sh (module hack/argocd), cached under $(CACHE)/argocd with a stamp of their
# version, the Go version, the flags and hack/argocd's files: argocd-gitops (the components a
# local Argo CD runs; 4.5-5.5 min after the add-ons in a cold make test), then argocd (the CLI
# too, 2-3 min more); warm: a second. test/argocdcli runs our AAACluster health check through the CLI
# (docs/argocd.md). Part of PROVISION, built in make test's add-ons lane once the add-ons are
# (PROVISION_CLUSTER in the Makefile; hack/test.sh): the cluster's Argo CD test waits for the
# components alone.

PROVISION    += argocd redis
ADDONS_TESTS += ./test/argocdcli/... ./test/argocdenv/...

.PHONY: redis
redis: ## Install redis-server from Debian, not started (idempotent): the local Argo CD's cache.
	hack/argocd.sh install-redis

##@ Argo CD
.PHONY: argocd
argocd: argocd-gitops ## Build Argo CD v3.2.11 into $(CACHE)/argocd/bin/ (argocd and argocd-gitops; cached; hack/argocd/go.mod).
	GO=$(GO) hack/argocd.sh build cli

.PHONY: argocd-gitops
argocd-gitops: ## Build Argo CD's components alone (application controller, repo server) into $(CACHE)/argocd/bin/argocd-gitops.
	GO=$(GO) hack/argocd.sh build gitops

.PHONY: argocd-test
argocd-test: argocd ## The AAACluster health check through Argo CD itself (test/argocdcli).
	$(TEST_ENV) $(GO) test -count=1 -timeout 5m ./test/argocdcli/...

# A local Argo CD (hack/argocd.sh up): redis, the repo server and the application controller as
# host processes against the cluster of KUBECONFIG, state and logs in ARGOCD_STATE.
ARGOCD_STATE ?= $(CACHE)/argocd/state

.PHONY: argocd-up
argocd-up: argocd-gitops helm redis ## Start a local Argo CD against KUBECONFIG (state and logs in ARGOCD_STATE).
	HELM=$(BIN)/helm GO=$(GO) hack/argocd.sh up "$${KUBECONFIG:?set KUBECONFIG}" $(ARGOCD_STATE)

.PHONY: argocd-down
argocd-down: ## Stop the local Argo CD of ARGOCD_STATE (its Kubernetes objects stay).
	hack/argocd.sh down $(ARGOCD_STATE)

# test/argocdenv, in make test's add-ons lane after Argo CD is built: about 40 s, most of it
# envtest and Argo CD starting.
.PHONY: argocd-env-test
argocd-env-test: argocd-gitops helm envtest-assets redis ## Argo CD syncs the operator chart from a file:// git repository into envtest (test/argocdenv).
	HELM=$(BIN)/helm $(TEST_ENV) $(GO) test -count=1 -timeout 5m ./test/argocdenv/...
