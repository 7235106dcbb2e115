# Load generator and the side-by-side benchmark against FreeRADIUS (issue 3).
# See docs/benchmarks.md. hack/freeradius.sh also serves other areas' tests (radclient, an
# upstream accounting server, a CoA receiver), so its install step is part of `provision`.

##@ Benchmarks
BENCH_DURATION ?= 20s
BENCH_ROUNDS   ?= 3

.PHONY: bench
bench: build freeradius ## FreeRADIUS vs policing A/B (BENCH_ROUNDS × BENCH_DURATION), ceiling, 3 overload rounds (pinned: maximum, open loop at 1×, at 2×); ~10 min.
	BENCH_DURATION=$(BENCH_DURATION) BENCH_ROUNDS=$(BENCH_ROUNDS) hack/bench.sh

.PHONY: bench-quick
bench-quick: build freeradius ## The same benchmark with 5 s runs (~2.5 min; the overload's RSS is not settled): a smoke test of the numbers.
	BENCH_DURATION=5s BENCH_WARMUP=1s BENCH_OVERLOAD_WARMUP=10s BENCH_OVERLOAD_REWARM=5s BENCH_ROUNDS=3 hack/bench.sh

##@ Components
PROVISION += freeradius

.PHONY: freeradius
freeradius: ## Install FreeRADIUS 3.2 and radclient from Debian (idempotent).
	hack/freeradius.sh install

.PHONY: bench-policy
bench-policy: build jq ## Built-in vs Lua vs memoized Lua policy on the field flow, embedded store: BENCH_ROUNDS short rounds, a fresh process per variant and round (default 15 × (2 s warm-up + 3 s) per variant, pinned; ~6 min).
	BENCH_DURATION=$(if $(filter command line environment,$(origin BENCH_DURATION)),$(BENCH_DURATION),3s) BENCH_ROUNDS=$(if $(filter command line environment,$(origin BENCH_ROUNDS)),$(BENCH_ROUNDS),15) hack/bench-policy.sh

# hack/bench-policy.sh reads its reports with jq, which a new machine does not have.
.PHONY: jq
jq:
	$(call apt_install,jq,jq)

.PHONY: bench-eap
bench-eap: build freeradius eapoltest ## EAP-TLS and PEAP-MSCHAPv2 auth/s, policing vs FreeRADIUS 3.2 A/B (BENCH_ROUNDS × 15 s per method and server), eapol_test sanity first; ~5 min.
	BENCH_ROUNDS=$(BENCH_ROUNDS) BENCH_DURATION=$(if $(filter command line environment,$(origin BENCH_DURATION)),$(BENCH_DURATION),15s) hack/bench-eap.sh

# make bench-geo (issue 17): three DCs on loopback, inter-DC latency through toxiproxy, per-DC
# CPU quotas (cgroup v1), 3 → 2 → 1 DCs → recovery. docs/benchmarks.md, "Geo (bench-geo)".
TOXIPROXY_VERSION := v2.5.0
TOXIPROXY         := $(CACHE)/bench-geo/bin/toxiproxy-server-$(TOXIPROXY_VERSION)

# The versioned file name is the stamp: a new version installs beside it.
$(TOXIPROXY):
	@mkdir -p $(@D)/gobin
	GOBIN=$(@D)/gobin GOFLAGS=-mod=mod $(GO) install github.com/Shopify/toxiproxy/v2/cmd/server@$(TOXIPROXY_VERSION)
	mv $(@D)/gobin/server $@ && rmdir $(@D)/gobin

.PHONY: toxiproxy
toxiproxy: $(TOXIPROXY) ## toxiproxy-server (Shopify/toxiproxy, pinned) from the Go module proxy into the cache (idempotent).

.PHONY: bench-geo
bench-geo: build cassandra-jars toxiproxy ## Geo capacity table: 3 DCs (Cassandra + policing each, own CPU quota), 2 ms inter-DC; 3 → 2 → 1 DCs → recovery, zero acknowledged loss (~12 min).
	$(GO) build -o $(BIN)/acct-check ./hack/acct-check
	TOXIPROXY=$(TOXIPROXY) hack/bench-geo.sh
