# The real add-ons of the local cluster (issue 12): prometheus-operator with a Prometheus,
# metrics-server, cert-manager (our own controller main), built from the Go module proxy as
# static binaries and OCI images (hack/addons.sh, docs/addons.md). Cold: minutes of compiling
# on 2 cores the first time; warm (cached under $(CACHE)/addons, keyed by versions, Go version
# and flags): seconds. Part of PROVISION: test/addons and the cluster tests (monitoring,
# autoscaling, RadSec with cert-manager) need them. After cluster-provision, which builds the
# cluster's Kubernetes binaries first.

PROVISION += addons
ADDONS_TESTS += ./test/addons/... ./test/cassandraimage/...

##@ Add-ons of the local cluster
.PHONY: addons
addons: envtest-assets cluster-provision ## Build the add-ons' binaries, images and CRDs (cached; hack/addons/images.env).
	GO=$(GO) hack/addons.sh build

.PHONY: addons-test
addons-test: addons cassandra-image argocd-gitops ## make test's add-ons lane (ADDONS_TESTS): every add-on binary starts, every manifest passes a server-side dry-run; the Cassandra images; Argo CD's health check.
	$(TEST_ENV) $(GO) test -count=1 -timeout 15m $(ADDONS_TESTS)

.PHONY: addons-install
addons-install: addons ## Install the add-ons on the cluster of KUBECONFIG and wait until they work.
	hack/addons.sh install "$${KUBECONFIG:?set KUBECONFIG}" && hack/addons.sh verify "$$KUBECONFIG"

# Managed Cassandra on the local cluster (issue 31): cass-operator and k8ssandra-operator, with
# cert-manager for their webhooks. Built with the other add-ons (make addons); installed
# apart, on demand: they are not needed by the other cluster tests.
K8SSANDRA_ADDONS := cert-manager-controller cert-manager-webhook cert-manager-cainjector cass-operator k8ssandra-operator

.PHONY: addons-k8ssandra
addons-k8ssandra: envtest-assets cluster-provision ## Build only the add-ons managed Cassandra needs (cert-manager, cass-operator, k8ssandra-operator; cached).
	GO=$(GO) hack/addons.sh build $(K8SSANDRA_ADDONS)

.PHONY: cluster-k8ssandra
cluster-k8ssandra: addons-k8ssandra cassandra-image ## Install cass-operator, k8ssandra-operator and the Cassandra test images on the running local cluster (make cluster-up first).
	hack/addons.sh install-k8ssandra "$$(hack/cluster.sh kubeconfig)"

.PHONY: cluster-k8ssandra-uninstall
cluster-k8ssandra-uninstall: ## Remove them again (cert-manager stays).
	hack/addons.sh uninstall-k8ssandra "$$(hack/cluster.sh kubeconfig)"
