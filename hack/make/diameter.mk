# Diameter/Gx: peers no one here wrote (python-diameter and Erlang/OTP diameter as PCEFs,
# freeDiameter as a base peer, tshark as an independent decoder) for the tests of
# services/policing/internal/gx (docs/diameter-gx.md).
PROVISION += diameter-peers

##@ Diameter

.PHONY: diameter-peers
diameter-peers: ## Install python-diameter (venv, pinned), freeDiameter, tshark and Erlang/OTP diameter (Debian) for the Gx tests, build the Erlang PCEF (idempotent).
	hack/diameter-peers.sh install

.PHONY: bench-gx
bench-gx: build jq cassandra-jars ## Gx policy server under aaa-loadgen's PCEF: built-in vs Lua vs memoized Lua (embedded store), and the Cassandra store (~3 min).
	BENCH_DURATION=$(if $(filter command line environment,$(origin BENCH_DURATION)),$(BENCH_DURATION),10s) BENCH_ROUNDS=$(BENCH_ROUNDS) hack/bench-gx.sh
