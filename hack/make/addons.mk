# The real add-ons of the local cluster (issue 12): prometheus-operator with a Prometheus,
# metrics-server, cert-manager (our own controller main), built from the Go module proxy as
# static binaries and OCI images (hack/addons.sh, docs/addons.md). Cold: minutes of compiling
# on 2 cores the first time; warm (cached under $(CACHE)/addons, keyed by versions, Go version
# and flags): seconds. Part of PROVISION: test/addons and the cluster tests (monitoring,
# autoscaling, RadSec with cert-manager) need them. After cluster-provision, which builds the
# cluster's Kubernetes binaries first.

PROVISION += addons
ADDONS_TESTS := ./test/addons/...

##@ Add-ons of the local cluster
.PHONY: addons
addons: envtest-assets cluster-provision ## Build the add-ons' binaries, images and CRDs (cached; hack/addons/images.env).
	GO=$(GO) hack/addons.sh build

.PHONY: addons-test
addons-test: addons ## Every add-on binary starts; every manifest passes a server-side dry-run.
	$(TEST_ENV) $(GO) test -count=1 -timeout 15m $(ADDONS_TESTS)

.PHONY: addons-install
addons-install: addons ## Install the add-ons on the cluster of KUBECONFIG and wait until they work.
	hack/addons.sh install "$${KUBECONFIG:?set KUBECONFIG}" && hack/addons.sh verify "$$KUBECONFIG"
