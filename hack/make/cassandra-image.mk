# The Cassandra test image and its helper images (issue 31): OCI archives for the local cluster,
# so that the real cass-operator and k8ssandra-operator can run Cassandra pods offline.
# hack/cassandra-image.sh builds them into $(CACHE)/cassandra-image (cold ~4-5 min with the
# debootstrap, ~1 min without; warm ~2 s); hack/cassandra-mgmt/README.md says what they are.
# Part of PROVISION, built in make test's add-ons lane (the managed-Cassandra cluster test and
# test/cassandraimage need them): PROVISION_CLUSTER in the Makefile. The debootstrap alone
# (cassandra-rootfs: downloads and dpkg, 68 s alone on this box) is in the base's packages stream, where a
# core is idle beside the Go builds, rather than on the add-ons' path.

PROVISION += cassandra-rootfs cassandra-image

##@ Cassandra test image
CASSANDRA_IMAGE_DIR := $(CACHE)/cassandra-image

.PHONY: cassandra-rootfs cassandra-image
cassandra-rootfs: ## Debootstrap the Cassandra test image's Debian root (root; cached in $(CASSANDRA_IMAGE_DIR)).
	hack/cassandra-image.sh rootfs

cassandra-image: cassandra-jars umoci cassandra-rootfs ## Build ghcr.io/openaaa/cassandra-{mgmt,config,logger}:5.0.9 as OCI archives (cached).
	GO=$(GO) hack/cassandra-image.sh build

.PHONY: test-cassandra-image
test-cassandra-image: cassandra-image ## The image tests (umoci unpack) and cassandra-mgmt's tests on a real node (~1 min).
	CASSANDRA_IMAGE_DIR=$(CASSANDRA_IMAGE_DIR) CASSANDRA_IMAGE_REQUIRE=1 OPENAAA_INTEGRATION=require $(GO) test -count=1 -timeout 10m ./test/cassandraimage/... ./hack/cassandra-mgmt/...

.PHONY: cassandra-image-smoke
cassandra-image-smoke: cassandra-image ## Run the server image with runc on loopback: start, readiness, endpoints, drain, SIGTERM (root, ~2 min).
	hack/cassandra-image.sh smoke
