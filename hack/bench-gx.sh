#!/usr/bin/env bash
# make bench-gx (docs/benchmarks.md, "Gx"): the Gx policy server under aaa-loadgen's PCEF
# (`aaa-loadgen gx`: per session CCR-I → BENCH_UPDATES × CCR-U with a usage report → CCR-T,
# closed loop), side by side with the seed PCRF's figure and issue 15's targets:
#   builtin         embedded store, the data policy alone (diameter.dispatch auto: inline)
#   builtin-workers the same on the worker pool (diameter.dispatch=workers): what auto picks
#                   with a Lua policy, so the baseline of what Lua adds on the wire
#   lua             the same + a Lua gx hook (testdata/throttle.lua), memoization off
#   lua-memoized    the same, memoized
#   cassandra       builtin on the Cassandra store, one local Cassandra 5 node (BENCH_CASSANDRA=1)
# The embedded variants alternate in each of BENCH_ROUNDS rounds; the report gives medians of
# TPS, p99, server CPU µs per Gx request and what Lua adds per request.
#
# Knobs (environment):
#   BENCH_DURATION=10s BENCH_WARMUP=3s BENCH_ROUNDS=3 BENCH_CONCURRENCY=64 BENCH_UPDATES=5
#   BENCH_SUBSCRIBERS=10000 BENCH_CASSANDRA=1 BENCH_PIN=none (all: server on CPU 1, generator
#   on CPU 0) BENCH_OUT=$CACHE/bench-gx/<timestamp> BENCH_BASE_PORT=28320
#   BENCH_VARIANTS="builtin builtin-workers lua lua-memoized" (the embedded variants run;
#   builtin is required, and builtin-workers for the Lua rows' difference)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CACHE:-$HOME/.cache/openaaa}
BIN=${BIN:-$ROOT/bin}
DURATION=${BENCH_DURATION:-10s}
WARMUP=${BENCH_WARMUP:-3s}
ROUNDS=${BENCH_ROUNDS:-3}
CONC=${BENCH_CONCURRENCY:-64}
UPDATES=${BENCH_UPDATES:-5}
SUBS=${BENCH_SUBSCRIBERS:-10000}
WITH_CASSANDRA=${BENCH_CASSANDRA:-1}
PIN=${BENCH_PIN:-none}
OUT=${BENCH_OUT:-$CACHE/bench-gx/$(date +%Y%m%d-%H%M%S)}
BASE=${BENCH_BASE_PORT:-28320}
ADMIN_PORT=$((BASE + 10))
GX_PORT=$((BASE + 2))
LOADGEN=$BIN/aaa-loadgen
POLICING=$BIN/policing
SCRIPT=$ROOT/services/policing/internal/gx/testdata/throttle.lua
CASS="$ROOT/hack/cassandra.sh"
export CASSANDRA_DIR=$OUT/cassandra CASSANDRA_CQL_PORT=29042 CASSANDRA_STORAGE_PORT=27000 CASSANDRA_JMX_PORT=27199
CQL=127.0.0.1:$CASSANDRA_CQL_PORT
BENCH_NAME=bench-gx

[[ -x $LOADGEN && -x $POLICING ]] || { echo "bench-gx: build first (make build)" >&2; exit 1; }
[[ $ROUNDS -ge 1 ]] || { echo "bench-gx: BENCH_ROUNDS must be ≥ 1" >&2; exit 1; }
command -v jq >/dev/null || { echo "bench-gx: needs jq" >&2; exit 1; }
mkdir -p "$OUT"
echo "bench-gx: reports in $OUT"

POL_PID=""
CASS_STARTED=0
cleanup() {
	if [[ -n $POL_PID ]] && kill -0 "$POL_PID" 2>/dev/null; then
		kill "$POL_PID" 2>/dev/null || true
		wait "$POL_PID" 2>/dev/null || true
	fi
	if ((CASS_STARTED)); then "$CASS" stop || true; fi
}
trap cleanup EXIT INT TERM

# shellcheck source=hack/bench-lib.sh
source "$ROOT/hack/bench-lib.sh"
if [[ $PIN == all ]]; then pin on; else pin off; fi

# config STORE-BLOCK: policing.yaml with Diameter on GX_PORT allowing the generator.
config() {
	"$LOADGEN" subscribers --users 1 --gx-subscribers "$SUBS" --policing "$OUT/subscribers.yaml" >/dev/null
	printf 'bench-secret-%s\n' "$$" >"$OUT/secret"
	cat >"$OUT/policing.yaml" <<EOF
log: {level: warn, format: json}
radius: {authAddress: "127.0.0.1:$BASE", acctAddress: "127.0.0.1:$((BASE + 1))"}
clients:
  - {name: loadgen, address: 127.0.0.0/8, secretFile: $OUT/secret}
subscribers: {source: file, file: $OUT/subscribers.yaml}
session: $1
admin: {address: "127.0.0.1:$ADMIN_PORT"}
diameter:
  enabled: true
  address: 127.0.0.1:$GX_PORT
  originHost: pcrf.bench
  originRealm: bench
  maxInFlight: 4096
  peers: [{originHost: pcef.loadgen, address: 127.0.0.0/8}]
EOF
}

machine() {
	echo "machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -sr); policing: $("$POLICING" version 2>/dev/null | head -1)"
	echo "load: aaa-loadgen gx, CCR-I + $UPDATES CCR-U + CCR-T per session, $CONC sessions in progress, $DURATION per run (+$WARMUP warm-up), $ROUNDS rounds, $SUBS subscribers; pinning: $PIN; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
}
machine | tee "$OUT/machine.txt"

run() { # LABEL FILE
	local label=$1 file=$2 before after r0 u0 r1 u1
	wait_port "$GX_PORT" 30 "the Diameter port is not open" # the admin port opens before the store
	"${GEN_PIN[@]}" "$LOADGEN" gx --target "127.0.0.1:$GX_PORT" --subscribers "$SUBS" --updates "$UPDATES" \
		--concurrency "$CONC" --duration "$WARMUP" --quiet >/dev/null
	before=$(lua_counters)
	"${GEN_PIN[@]}" "$LOADGEN" gx --target "127.0.0.1:$GX_PORT" --subscribers "$SUBS" --updates "$UPDATES" \
		--concurrency "$CONC" --duration "$DURATION" --label "$label" --quiet --server-pid "$POL_PID" \
		--json-out "$OUT/$file.json" --text-out "$OUT/$file.txt" >/dev/null
	after=$(lua_counters)
	read -r r0 u0 _ <<<"$before"
	read -r r1 u1 _ <<<"$after"
	echo "$((r1 - r0)) $((u1 - u0))" >"$OUT/$file.lua"
	echo "bench-gx: $label: $(jq -r '"\(.tps | floor) req/s, p99 \(.total.p99Ms) ms, \(.serverCpuMicrosPerTx // 0 | . * 10 | floor / 10) µs/req, codes \(.total.resultCodes)"' "$OUT/$file.json"), lua runs $((r1 - r0)), reuses $((u1 - u0))"
}

flags() {
	case $1 in
	builtin | cassandra) ;;
	builtin-workers) echo "--set diameter.dispatch=workers" ;;
	lua) echo "--set policy.lua.file=$SCRIPT --set policy.lua.memoize=false" ;;
	lua-memoized) echo "--set policy.lua.file=$SCRIPT --set policy.lua.memoize=true" ;;
	esac
}

read -r -a VARIANTS <<<"${BENCH_VARIANTS:-builtin builtin-workers lua lua-memoized}"
config "{store: embedded}"
for i in $(seq 1 "$ROUNDS"); do
	for v in "${VARIANTS[@]}"; do
		# shellcheck disable=SC2046 # flags are words
		start_policing $(flags "$v")
		run "$v" "$v-$i"
		stop_policing
	done
done

if [[ $WITH_CASSANDRA == 1 ]]; then
	# One test cluster at a time on this machine (internal/cassandratest uses the same lock).
	exec 9>"${TMPDIR:-/tmp}/openaaa-cassandra-test.lock"
	if ! flock -n 9; then
		echo "bench-gx: waiting for the Cassandra test lock (a test cluster is running)"
		flock 9
	fi
	t0=$SECONDS
	CASS_STARTED=1
	"$CASS" start 1
	echo "bench-gx: Cassandra up in $((SECONDS - t0)) s"
	"$POLICING" migrate --contact-points "$CQL" --local-dc dc1 --keyspace bench --replication dc1:1 >"$OUT/migrate.log"
	config "{store: cassandra, cassandra: {contactPoints: [\"$CQL\"], localDC: dc1, keyspace: bench, spool: {dir: $OUT/spool}}}"
	start_policing
	run cassandra cassandra-1
	stop_policing
	VARIANTS+=(cassandra)
fi

# The Lua hooks alone, in-process (BenchmarkGxSession: gx_initial + 5 × gx_update of a session
# of 7 Gx requests, testdata/throttle.lua), 3 runs: what Lua adds per Gx request without the
# wire's noise, which on two shared cores is larger than the difference measured above.
# A failed hook fails the benchmark with the engine's reason in the file; the wire figures
# above are reported all the same, and bench-gx exits 1 at the end.
LUA_FAILED=0
if ! (cd "$ROOT" && CGO_ENABLED=0 "${GO:-go}" test -run '^$' -bench BenchmarkGxSession -benchtime 2s -count 3 \
	./services/policing/internal/policy/luapolicy/) >"$OUT/lua-inprocess.txt" 2>&1; then
	LUA_FAILED=1
	echo "bench-gx: the in-process Lua benchmark failed (load average $(cut -d' ' -f1-3 /proc/loadavg)):" >&2
	grep -E 'level=WARN|FAIL|failed' "$OUT/lua-inprocess.txt" | head -5 >&2
fi
inprocess() { # VARIANT: median ns per session
	awk -v v="BenchmarkGxSession/$1-" 'index($1, v) == 1 {print $3}' "$OUT/lua-inprocess.txt" | median
}

stat() { # VARIANT JQ-EXPR
	local n=$ROUNDS
	[[ $1 == cassandra ]] && n=1
	for i in $(seq 1 "$n"); do jq -r "$2" "$OUT/$1-$i.json"; done | median
}
total() { # VARIANT JQ-EXPR: the sum over the rounds
	local n=$ROUNDS
	[[ $1 == cassandra ]] && n=1
	for i in $(seq 1 "$n"); do jq -r "$2" "$OUT/$1-$i.json"; done | awk '{s += $1} END {print s + 0}'
}
lua_stat() { # VARIANT COLUMN(1 runs, 2 reuses)
	local n=$ROUNDS
	[[ $1 == cassandra ]] && n=1
	for i in $(seq 1 "$n"); do awk -v c="$2" '{print $c}' "$OUT/$1-$i.lua"; done | median
}

{
	echo
	machine
	echo
	echo "Medians of $ROUNDS rounds (cassandra: one run). A Gx session is CCR-I + $UPDATES CCR-U + CCR-T: $((UPDATES + 2)) requests."
	echo
	echo "| variant | Gx req/s | vs target 20,000 | p99 ms | server CPU µs/req (target ≤ 30) | Lua runs | Lua reuses | Lua µs/req vs builtin-workers | non-2001 answers (all rounds) |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
	base_cpu=$(stat builtin '.serverCpuMicrosPerTx // 0')
	# A Lua policy runs on the worker pool (diameter.dispatch auto): its rows are compared
	# with the built-in policy there, not with the inline one.
	workers_cpu=$base_cpu
	[[ " ${VARIANTS[*]} " != *" builtin-workers "* ]] || workers_cpu=$(stat builtin-workers '.serverCpuMicrosPerTx // 0')
	for v in "${VARIANTS[@]}"; do
		tps=$(stat "$v" '.tps')
		p99=$(stat "$v" '.total.p99Ms')
		cpu=$(stat "$v" '.serverCpuMicrosPerTx // 0')
		bad=$(total "$v" '[.total.resultCodes // {} | to_entries[] | select(.key != "2001") | .value] | add // 0')
		runs=$(lua_stat "$v" 1)
		reuses=$(lua_stat "$v" 2)
		awk -v v="$v" -v tps="$tps" -v p99="$p99" -v cpu="$cpu" -v bc="$workers_cpu" -v runs="$runs" -v reuses="$reuses" -v bad="$bad" 'BEGIN {
			lua = (v ~ /^lua/) ? sprintf("%+.1f (%.0f %%)", cpu - bc, 100 * (cpu - bc) / bc) : "—"
			printf "| %s | %.0f | %.0f %% | %.2f | %.1f | %d | %d | %s | %d |\n", v, tps, 100 * tps / 20000, p99, cpu, runs, reuses, lua, bad
		}'
	done
	echo "| seed PCRF (field notes) | 3000 | 15 % | — | — | | | | |"
	echo
	echo "Server CPU per request: policing's utime+stime during the run / Gx requests answered. The generator shares the machine: it is not charged."
	echo
	echo "Lua in-process (BenchmarkGxSession, median of 3; a session's hooks / 7 requests), against the built-in's server CPU per request above ($(printf %.1f "$base_cpu") µs):"
	echo
	echo "| variant | Lua ns per session | Lua µs per Gx request | share of the built-in's CPU (target ≤ 10 %) |"
	echo "|---|---:|---:|---:|"
	for v in lua lua-memoized; do
		[[ -n $(inprocess "$v") ]] || continue
		awk -v v="$v" -v ns="$(inprocess "$v")" -v bc="$base_cpu" 'BEGIN {
			printf "| %s | %.0f | %.2f | %.1f %% |\n", v, ns, ns / 7 / 1000, 100 * ns / 7 / 1000 / bc
		}'
	done
} | tee "$OUT/report.md"
((LUA_FAILED == 0)) || { echo "bench-gx: the in-process Lua benchmark failed: $OUT/lua-inprocess.txt" >&2; exit 1; }
