# The local single-node Kubernetes cluster (issue 12): docs/local-cluster.md.
#
# `make provision` installs containerd, runc, the CNI plugins, iptables and nftables (Debian),
# builds kubelet, kube-controller-manager, kube-scheduler, kube-proxy and kubectl from the same
# wrapper module and flags as envtest's kube-apiserver (one Go build cache), CoreDNS, the pause
# and CoreDNS images, and a PKI, all into $(CACHE)/cluster (idempotent, cached). The tests in
# test/cluster start and stop their own cluster (test/cluster/clustertest); `make cluster-up`
# starts one by hand.

PROVISION += cluster-provision

##@ Local cluster
.PHONY: cluster-provision
cluster-provision: envtest-assets ## Install and build what the local cluster needs (cached; root for apt-get).
	hack/cluster.sh provision

.PHONY: cluster-up
cluster-up: cluster-provision ## Start the local single-node cluster (prints the kubeconfig path).
	hack/cluster.sh up

.PHONY: cluster-down
cluster-down: ## Stop the local cluster and leave the host as it was (idempotent).
	hack/cluster.sh down

.PHONY: cluster-status
cluster-status: ## Processes, node and pods of the local cluster.
	hack/cluster.sh status

.PHONY: cluster-import
cluster-import: images ## Import bin/images/*.oci.tar into the running cluster (ghcr.io/openaaa/<name>:<tag>).
	hack/cluster.sh import $(IMAGE_DIR)/*.oci.tar

.PHONY: test-cluster test-cluster-geo
test-cluster: cluster-provision addons cassandra-image images helm cassandra-jars freeradius ## The tests on the local cluster only (test/cluster; about 15-20 min warm).
	$(TEST_ENV) $(GO) test -p 1 -count=1 -v -timeout 45m ./test/cluster/... # one package at a time (test/cluster, then lifecycle: each holds the cluster lock); may first wait up to 30 min for the lock

# Three managed data centers, one lost under traffic and back (issue 31): beside `make test`,
# whose two-data-center test covers the rest (docs/local-cluster.md says why).
test-cluster-geo: cluster-provision addons cassandra-image images helm ## Three managed Cassandra data centers on the local cluster, one lost under traffic and back (~15 min warm).
	$(TEST_ENV) OPENAAA_GEO=1 $(GO) test -count=1 -v -timeout 60m -run '^TestGeoThreeDatacenters$$' ./test/cluster

# make cluster-demo (issue 32): the Kubernetes path in one command (hack/cluster-demo.sh). It
# provisions what is missing itself (the targets of test-cluster, so that each step is timed),
# with managed Cassandra (k8ssandra-operator) unless CLUSTER_DEMO_CASSANDRA=external.
.PHONY: cluster-demo cluster-demo-down
cluster-demo: ## From a fresh clone: the local cluster, add-ons, k8ssandra-operator, the operator and an AAACluster with managed Cassandra; RADIUS from the NAS, the admin API, an AAALoadTest, Prometheus (CLUSTER_DEMO_KEEP=0: tear down at the end; CLUSTER_DEMO_CASSANDRA=external: a host Cassandra, quicker).
	hack/cluster-demo.sh

cluster-demo-down: ## Remove what a kept `make cluster-demo` left: the releases, the managed (or host) Cassandra, and the cluster if the demo started it.
	hack/cluster-demo.sh down
