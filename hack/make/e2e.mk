# End-to-end tests of the built binaries against real components (test/e2e/, issue 4).
# TestMultiDC: 3 Cassandra nodes in dc1..dc3 on loopback, `policing migrate`, one policing per
# DC with the Cassandra store, the field flow round-robin across the DCs, then one DC lost and
# back (zero accounting lost, the DC catches up). ~5-6 min on 2 cores (measured 5m27s with
# the box shared); docs/cassandra.md.
#
# `make test` runs it too: the test runs whenever OPENAAA_INTEGRATION=require (TEST_ENV), unless
# OPENAAA_E2E=0. A plain `go test ./...` skips it.

##@ End-to-end
.PHONY: test-e2e
test-e2e: cassandra-jars ## The end-to-end tests only (multi-DC Cassandra: 3 nodes, 3 policing; the spool drained to another DC at shutdown: 2 nodes; ~8-9 min).
	OPENAAA_E2E=1 $(TEST_ENV) $(GO) test -count=1 -v -timeout 30m ./test/e2e/...
