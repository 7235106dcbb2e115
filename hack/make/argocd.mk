# Argo CD v3.2.11 (issue 36), the real one: static multi-call binaries built from the Go module
# proxy by hack/argocd.sh (module hack/argocd), cached under $(CACHE)/argocd with a stamp of their
# version, the Go version, the flags and hack/argocd's files: argocd-gitops (the components a
# local Argo CD runs, and the offline health check; 4.5-5.5 min after the add-ons in a cold make
# test) and, for users, argocd (the CLI too, 2-3 min more); warm: a second. test/argocdhealth runs
# our AAACluster health check through the components' binary (docs/argocd.md). Part of
# PROVISION, built in make test's add-ons lane once the add-ons are (PROVISION_CLUSTER in the
# Makefile; hack/test.sh): the cluster's Argo CD test waits for it. make test does not build the
# CLI: nothing it runs needs it.

PROVISION    += argocd-gitops redis
ADDONS_TESTS += ./test/argocdhealth/... ./test/argocdenv/...

.PHONY: redis
redis: ## Install redis-server from Debian, not started (idempotent): the local Argo CD's cache.
	hack/argocd.sh install-redis

##@ Argo CD
.PHONY: argocd
argocd: argocd-gitops ## Build Argo CD v3.2.11's CLI into $(CACHE)/argocd/bin/argocd, after argocd-gitops (cached; hack/argocd/go.mod).
	GO=$(GO) hack/argocd.sh build cli

.PHONY: argocd-gitops
argocd-gitops: ## Build Argo CD's components (application controller, repo server, offline health check) into $(CACHE)/argocd/bin/argocd-gitops.
	GO=$(GO) hack/argocd.sh build gitops

.PHONY: argocd-test
argocd-test: argocd-gitops ## The AAACluster health check through Argo CD itself (test/argocdhealth).
	$(TEST_ENV) $(GO) test -count=1 -timeout 5m ./test/argocdhealth/...

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
