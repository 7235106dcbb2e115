# Helm charts, container images, Grafana dashboards, PrometheusRules and the Argo CD health
# check (issue 7): docs/helm.md, docs/monitoring.md, docs/argocd.md.
#
# `make provision` installs helm (built from the Go module proxy into bin/, KubeVersion 1.34),
# promtool (Debian's prometheus package), umoci (Debian; an independent OCI unpacker for the
# image test) and builds the images; the tests live in test/{charts,monitoring,argocd,images}.

# helm is a tool of our own module (go.mod's `tool` line pins its version): built with the
# images' flags in the same module graph, the Kubernetes client packages compiled for it serve
# our builds and tests too, instead of a compile of their own (issue 12's cold budget).
HELM_VERSION   := $(shell awk '$$1 == "helm.sh/helm/v3" { print $$2 }' go.mod)
HELM           := $(BIN)/helm
# helm built from source reports KubeVersion v1.20 unless these are linked in.
HELM_LDFLAGS   := -s -w -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=34 \
                  -X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION)
CHARTS         := charts/openaaa-operator charts/aaacluster
IMAGE_DIR      := $(BIN)/images
IMAGE_TAG      ?= $(VERSION)
CHART_TESTS    := ./test/charts/... ./test/monitoring/... ./test/argocd/... ./test/images/...

PROVISION += helm promtool umoci images

##@ Charts, images and monitoring
.PHONY: helm
helm: $(BIN)/.helm-$(HELM_VERSION) ## Install helm into bin/ (Go module proxy; KubeVersion 1.34).

$(BIN)/.helm-$(HELM_VERSION):
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(HELM_LDFLAGS)' -o $(BIN)/helm helm.sh/helm/v3/cmd/helm
	@touch $@

# Debian packages, installed when missing (apt-get update at most once a day).
define apt_install
	@if ! command -v $(1) >/dev/null 2>&1; then \
	  stamp=$(CACHE)/apt-updated; mkdir -p $(CACHE); \
	  if [ ! -f $$stamp ] || [ -n "$$(find $$stamp -mmin +1440 2>/dev/null)" ]; then apt-get update -qq && touch $$stamp; fi; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(2) >/dev/null; \
	fi
endef

.PHONY: promtool
promtool: ## Install promtool (Debian's prometheus package) for the alert tests.
	$(call apt_install,promtool,prometheus)

.PHONY: umoci
umoci: ## Install umoci (Debian) and the CA certificates the images ship.
	$(call apt_install,umoci,umoci ca-certificates)
	@test -f /etc/ssl/certs/ca-certificates.crt || { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ca-certificates >/dev/null; }

.PHONY: images
images: ## Build the OCI images of the operator, policing and aaa-loadgen into bin/images (no Docker engine).
	@mkdir -p $(IMAGE_DIR)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(IMAGE_DIR)/policing.bin ./services/policing
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(IMAGE_DIR)/openaaa-operator.bin .
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(IMAGE_DIR)/aaa-loadgen.bin ./services/loadgen
	$(GO) run ./internal/tools/ocibuild -name policing -binary $(IMAGE_DIR)/policing.bin -tag $(IMAGE_TAG) -out $(IMAGE_DIR) -args serve
	$(GO) run ./internal/tools/ocibuild -name openaaa-operator -binary $(IMAGE_DIR)/openaaa-operator.bin -tag $(IMAGE_TAG) -out $(IMAGE_DIR)
	$(GO) run ./internal/tools/ocibuild -name aaa-loadgen -binary $(IMAGE_DIR)/aaa-loadgen.bin -tag $(IMAGE_TAG) -out $(IMAGE_DIR)
	@rm -f $(IMAGE_DIR)/*.bin

.PHONY: chart-sync
chart-sync: ## Copy the CRD, RBAC, dashboards and alerts from config/ into the operator chart.
	cp config/crd/bases/*.yaml charts/openaaa-operator/files/crds/
	cp config/rbac/role.yaml charts/openaaa-operator/files/rbac/role.yaml
	cp config/grafana/openaaa-*.json charts/openaaa-operator/files/dashboards/
	cp config/prometheus/prometheusrule.yaml charts/openaaa-operator/files/prometheus/prometheusrule.yaml

.PHONY: argocd-snippet
argocd-snippet: ## Regenerate config/argocd/argocd-cm.yaml from config/argocd/health.lua.
	@{ sed -n '1,/^  resource.customizations.health.aaa.openaaa.io_AAACluster: |$$/p' config/argocd/argocd-cm.yaml; \
	   sed 's/^/    /; s/^    $$//' config/argocd/health.lua; } > config/argocd/argocd-cm.yaml.tmp
	mv config/argocd/argocd-cm.yaml.tmp config/argocd/argocd-cm.yaml

.PHONY: helm-lint
helm-lint: helm ## helm lint --strict of both charts, with default and full values.
	@for c in $(CHARTS); do \
	  $(HELM) lint --strict $$c && $(HELM) lint --strict $$c -f $$c/ci/full-values.yaml; \
	done

.PHONY: chart-test
chart-test: helm promtool umoci images envtest-assets ## Chart, image, dashboard, alert and Argo CD tests.
	$(TEST_ENV) $(GO) test -count=1 -timeout 15m $(CHART_TESTS)

.PHONY: chart-golden
chart-golden: helm ## Rewrite the golden files of the rendered charts and the chart READMEs.
	$(GO) test -count=1 ./test/charts/... -update

.PHONY: chart-package
chart-package: helm ## Package both charts into bin/charts.
	@mkdir -p $(BIN)/charts
	$(HELM) package $(CHARTS) -d $(BIN)/charts
