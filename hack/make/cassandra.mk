# Cassandra session store (issue 4): real Apache Cassandra 5.0 for tests, demo and benchmarks.
# The jars come from Maven Central into $(CACHE)/cassandra (~67 MB, ~25 s cold, instant warm);
# the tests start and stop their own node(s) with hack/cassandra.sh (by PID). docs/cassandra.md.

##@ Cassandra
PROVISION += cassandra-jars
CASSANDRA_NODES ?= 1

.PHONY: cassandra-jars
cassandra-jars: ## Java 17 + Maven (Debian, if missing) and the Cassandra 5.0 jars (idempotent).
	@if ! command -v java >/dev/null 2>&1 || ! command -v mvn >/dev/null 2>&1; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless maven >/dev/null; \
	fi
	@hack/cassandra.sh fetch

.PHONY: cassandra-start
cassandra-start: cassandra-jars ## Start CASSANDRA_NODES node(s) on 127.0.0.1..N, one DC each (dc1..dcN).
	hack/cassandra.sh start $(CASSANDRA_NODES)

.PHONY: cassandra-stop
cassandra-stop: ## Stop the nodes started by cassandra-start (by PID).
	hack/cassandra.sh stop

.PHONY: cassandra-status
cassandra-status: ## nodetool status of the nodes started by cassandra-start.
	hack/cassandra.sh status

.PHONY: test-cassandra
test-cassandra: cassandra-jars ## The Cassandra store, spool, hybrid and migration tests only (~4-6 min).
	$(TEST_ENV) $(GO) test -count=1 -timeout 30m ./services/policing/internal/store/cassandra/... ./services/policing/internal/spool/... ./services/policing/internal/migrate/... ./services/policing/config/...

.PHONY: bench-cassandra
bench-cassandra: build cassandra-jars ## policing + Cassandra store vs the raw driver ceiling, 0.8× max open loop (~4 min).
	$(GO) build -o $(BIN)/cassandra-raw ./hack/cassandra-raw
	GO=$(GO) hack/bench-cassandra.sh

.PHONY: bench-stores
bench-stores: build cassandra-jars ## Embedded vs cassandra vs hybrid store on the field flow, one local Cassandra node (~4 min).
	hack/bench-stores.sh

# `make demo STORE=cassandra` (hack/demo.sh) runs on one local node: it needs the jars.
demo: $(if $(filter cassandra,$(STORE)),cassandra-jars)
