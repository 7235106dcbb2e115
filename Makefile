# OpenAAA — build, test, demo. `make help` lists the targets.
#
# Each area of the project adds its own provisioning and targets in hack/make/<area>.mk
# (included below) so that `make test` stays one command: PROVISION collects what the
# test suite needs installed or built first (apt packages, Maven jars, Go tools), each
# step idempotent and cached.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

ROOT    := $(CURDIR)
BIN     := $(ROOT)/bin
# Downloads and builds that survive a fresh clone (jars, kube-apiserver, apt lists).
CACHE   ?= $(HOME)/.cache/openaaa
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/openaaa/openaaa/internal/version.Version=$(VERSION)
export CACHE BIN

# Pinned tools, installed into bin/ by the Makefile itself.
STATICCHECK_VERSION := v0.8.2

# Areas append to these.
PROVISION :=
# Go test flags: integration tests fail (instead of skipping) when a component is missing.
TEST_ENV  := OPENAAA_INTEGRATION=require
TEST_TIMEOUT ?= 60m

-include hack/make/*.mk

##@ General
.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z0-9_.-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Build
.PHONY: build
build: ## Build every binary into bin/ (policing, aaa-loadgen, openaaa-operator).
	@mkdir -p $(BIN)
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/policing ./services/policing
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/aaa-loadgen ./services/loadgen
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/openaaa-operator .

##@ Quality
.PHONY: lint
lint: $(BIN)/staticcheck ## gofmt check, go vet and staticcheck.
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(BIN)/staticcheck ./...

$(BIN)/staticcheck:
	GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

.PHONY: provision
provision: $(PROVISION) ## Install and build every component the tests need (idempotent, cached).

# `make test` provisions the base, then runs the other packages beside the local cluster's
# provisioning, the multi-DC end-to-end package (E2E_TESTS) and the cluster's packages
# (CLUSTER_TESTS), one after the other, and the add-ons' build and package (ADDONS_TESTS):
# hack/test.sh.
PROVISION_CLUSTER := cluster-provision addons cassandra-image argocd-gitops
# One package at a time (the cluster lock); the lifecycle's (a minute) first, while the add-ons
# the cluster package's tests wait for still compile, rather than last, after all of them.
CLUSTER_TESTS     := ./test/cluster/lifecycle ./test/cluster/...
E2E_TESTS         := ./test/e2e/...
# The end-to-end test the cluster's packages must not run beside (hack/test.sh).
E2E_GATE          := TestMultiDC
.PHONY: provision-base provision-cluster
provision-base: $(filter-out $(PROVISION_CLUSTER),$(PROVISION))
provision-cluster: cluster-provision
# provision-base in two streams, which hack/test.sh runs at once: the Go builds (bound by the
# compiler) and the rest (apt, Maven, pip: bound by the network and dpkg), which alone left a
# core idle on a cold machine. Only the second stream runs apt-get.
PROVISION_BUILDS := helm images envtest-assets
.PHONY: provision-base-builds provision-base-packages
provision-base-builds: $(filter $(PROVISION_BUILDS),$(PROVISION))
provision-base-packages: $(filter-out $(PROVISION_CLUSTER) $(PROVISION_BUILDS),$(PROVISION))

.PHONY: test
test: ## The whole test suite: unit and integration against real components (provisions first).
	GO=$(GO) TEST_ENV_VARS='$(TEST_ENV)' TEST_TIMEOUT=$(TEST_TIMEOUT) CLUSTER_TESTS='$(CLUSTER_TESTS)' ADDONS_TESTS='$(ADDONS_TESTS)' E2E_TESTS='$(E2E_TESTS)' E2E_GATE='$(E2E_GATE)' hack/test.sh

.PHONY: test-unit
test-unit: ## Unit tests only (integration tests skip when their component is absent).
	$(GO) test -count=1 -short ./...

FUZZTIME ?= 20s
.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME each (not part of `make test`).
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$f ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 2s $$pkg; \
	  done; done

##@ Run
.PHONY: demo
demo: build ## Start policing on loopback with the embedded store, drive sessions through it, report; then every EAP method (eapol_test) and MS-CHAPv2 (radclient).
	$(GO) build -o $(BIN)/eapol-usim ./hack/eapol-usim
	hack/demo.sh
