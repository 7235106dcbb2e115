#!/usr/bin/env bash
# make bench-policy (docs/benchmarks.md, "Lua policy"): the field's flow on the embedded
# store with four variants, side by side, each in a policing process of its own — the
# built-in policy (inline dispatch, what auto picks without a script), the built-in policy on
# the worker pool (what auto picks with a Lua policy: no decision on a reader, issue 35), the
# same policy in Lua (services/policing/internal/policy/luapolicy/testdata/builtin.lua) with
# memoization off (every decision runs the script), and the same script memoized.
#
# Method: BENCH_ROUNDS short rounds; in each, every variant in turn gets a fresh policing
# process, a warm-up of BENCH_WARMUP, one measured run of BENCH_DURATION, and is stopped. The
# order rotates from round to round. Fresh processes because a process's cost grows with what
# it served (the embedded store keeps ended sessions 10 minutes: four processes kept alive
# over 15 rounds saw the baseline climb from 12 to 20 µs/tx, issue 35), so every run starts
# from the same state; short rounds because a difference of a microsecond per decision is
# smaller than the box's drift over a minute, so what Lua adds per decision is the median over
# the rounds of each round's difference against the built-in policy on the same dispatch
# (workers), measured seconds apart. Reported: medians of TPS, p99, server CPU µs per
# transaction (from /proc, outside the process), the Lua runs and reuses, what Lua adds per
# decision, and the engine's own mean run duration (openaaa_policy_lua_run_duration_seconds),
# all over the measured run alone. Each round's order and differences: rounds.txt.
#
# Knobs (environment), as in hack/bench.sh:
#   BENCH_DURATION=3s BENCH_WARMUP=2s (each fresh process, before its measured run)
#   BENCH_ROUNDS=15 BENCH_CONCURRENCY=16 BENCH_INTERIMS=5 BENCH_USERS=10000
#   BENCH_OUT=$CACHE/bench-policy/<timestamp> BENCH_BASE_PORT=28220 (RADIUS on BASE and
#   BASE+1, admin on BASE+20)
#   BENCH_VARIANTS="builtin builtin-workers lua lua-memoized" (a subset; builtin-workers is
#                      the baseline of the Lua rows and always needed)
#   BENCH_PIN=all      the servers on CPU 1, the generator on CPU 0 (taskset); none: unpinned
#   BENCH_RATE=0       closed loop (each variant as fast as it goes); N: open loop at N messages
#                      per second, the same load for every variant (below the slowest one's
#                      capacity): each run then serves the same sessions at the same pace
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CACHE:-$HOME/.cache/openaaa}
BIN=${BIN:-$ROOT/bin}
DURATION=${BENCH_DURATION:-3s}
WARMUP=${BENCH_WARMUP:-2s}
ROUNDS=${BENCH_ROUNDS:-15}
CONC=${BENCH_CONCURRENCY:-16}
INTERIMS=${BENCH_INTERIMS:-5}
USERS=${BENCH_USERS:-10000}
PIN=${BENCH_PIN:-all}
RATE=${BENCH_RATE:-0}
OUT=${BENCH_OUT:-$CACHE/bench-policy/$(date +%Y%m%d-%H%M%S)}
BASE=${BENCH_BASE_PORT:-28220}
ADMIN_PORT=$((BASE + 20))
SECRET=bench-secret-$$
LOADGEN=$BIN/aaa-loadgen
POLICING=$BIN/policing
SCRIPTS=$ROOT/services/policing/internal/policy/luapolicy/testdata

[[ -x $LOADGEN && -x $POLICING ]] || { echo "bench-policy: build first (make build)" >&2; exit 1; }
[[ $ROUNDS -ge 1 ]] || { echo "bench-policy: BENCH_ROUNDS must be ≥ 1" >&2; exit 1; }
[[ $RATE =~ ^[0-9]+$ ]] || { echo "bench-policy: BENCH_RATE must be a whole number of messages per second, not $RATE" >&2; exit 1; }
command -v jq >/dev/null || { echo "bench-policy: needs jq" >&2; exit 1; }
read -ra VARIANTS <<<"${BENCH_VARIANTS:-builtin builtin-workers lua lua-memoized}"
for v in "${VARIANTS[@]}"; do
	[[ $v =~ ^(builtin|builtin-workers|lua|lua-memoized)$ ]] || { echo "bench-policy: BENCH_VARIANTS: no variant $v (builtin builtin-workers lua lua-memoized)" >&2; exit 1; }
done
[[ " ${VARIANTS[*]} " == *" builtin-workers "* ]] || { echo "bench-policy: BENCH_VARIANTS must include builtin-workers (the Lua rows' baseline)" >&2; exit 1; }
mkdir -p "$OUT"
echo "bench-policy: reports in $OUT"

POL_PID=""
cleanup() { [[ -z $POL_PID ]] || stop_policing; }
# A signal ends the script (through the EXIT trap), not just the process under test: the
# next run would find no server.
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# shellcheck source=hack/bench-lib.sh
source "$ROOT/hack/bench-lib.sh"
if [[ $PIN == all ]]; then pin on; else pin off; fi
write_bench_config "{store: embedded}"

machine() {
	echo "machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -sr); policing: $("$POLICING" version 2>/dev/null | head -1)"
	echo "load: aaa-loadgen flow, $INTERIMS interims, concurrency $CONC, $(if ((RATE > 0)); then echo "open loop at $RATE messages/s"; else echo "closed loop"; fi), $ROUNDS rounds of a $DURATION run per variant, each in a fresh process warmed $WARMUP, $USERS users, embedded store; pinning: $PIN; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
}
machine | tee "$OUT/machine.txt"

BENCH_NAME=bench-policy

# loadgen DURATION [ARGS]: the flow against the policing process under test.
loadgen() {
	local d=$1
	shift
	"${GEN_PIN[@]}" "$LOADGEN" run --target "127.0.0.1:$BASE" --secret-file "$OUT/secret" --mode flow --interims "$INTERIMS" \
		--users "$USERS" --concurrency "$CONC" --rate "$RATE" --duration "$d" --quiet "$@" >/dev/null
}

run() { # VARIANT FILE: a fresh process, its warm-up, the measured run, the process stopped.
	local before after
	# shellcheck disable=SC2046 # flags are words
	start_policing $(flags "$1")
	loadgen "$WARMUP"
	before=$(lua_counters)
	loadgen "$DURATION" --label "$1" --server-pid "$POL_PID" --metrics "127.0.0.1:$ADMIN_PORT" --require-reply-ma \
		--json-out "$OUT/$2.json" --text-out "$OUT/$2.txt"
	after=$(lua_counters)
	stop_policing
	read -r r0 u0 s0 c0 <<<"$before"
	read -r r1 u1 s1 c1 <<<"$after"
	# The counters are read around the measured run: they include its last in-flight
	# requests, a few among tens of thousands. Columns: runs, reuses, mean run µs.
	awk -v r="$((r1 - r0))" -v u="$((u1 - u0))" -v s="$s0" -v t="$s1" -v c="$((c1 - c0))" \
		'BEGIN { printf "%d %d %.2f\n", r, u, c ? 1e6 * (t - s) / c : 0 }' >"$OUT/$2.lua"
	echo "bench-policy: $("$LOADGEN" summary "$OUT/$2.json"), lua runs $((r1 - r0)), reuses $((u1 - u0))"
}

flags() {
	case $1 in
	builtin) ;;
	builtin-workers) echo "--set radius.dispatch=workers" ;;
	lua) echo "--set policy.lua.file=$SCRIPTS/builtin.lua --set policy.lua.memoize=false" ;;
	lua-memoized) echo "--set policy.lua.file=$SCRIPTS/builtin.lua --set policy.lua.memoize=true" ;;
	esac
}
# order ROUND: the variants, rotated by ROUND − 1: each round starts one further, so that
# a machine slowing (or speeding up) within a round does not always charge the same variant.
order() {
	local n=${#VARIANTS[@]} k
	for ((k = 0; k < n; k++)); do echo "${VARIANTS[$(((($1 - 1) + k) % n))]}"; done
}
for i in $(seq 1 "$ROUNDS"); do
	mapfile -t ORDER < <(order "$i")
	echo "bench-policy: round $i: ${ORDER[*]}"
	for v in "${ORDER[@]}"; do
		run "$v" "$v-$i"
	done
done

stat() { # VARIANT JQ-EXPR
	for i in $(seq 1 "$ROUNDS"); do jq -r "$2" "$OUT/$1-$i.json"; done | median
}
lua_stat() { # VARIANT COLUMN(1 runs, 2 reuses, 3 mean run µs)
	for i in $(seq 1 "$ROUNDS"); do awk -v c="$2" '{print $c}' "$OUT/$1-$i.lua"; done | median
}
# per_decision VARIANT ROUND: what the variant's policy adds per decision in that round,
# (its server CPU µs/tx − builtin-workers' in the same round) × transactions / decisions.
per_decision() {
	awk -v a="$(jq -r '.cpuMicrosPerTransaction // 0' "$OUT/$1-$2.json")" \
		-v b="$(jq -r '.cpuMicrosPerTransaction // 0' "$OUT/builtin-workers-$2.json")" \
		-v tx="$((3 + INTERIMS))" -v dec="$((2 + INTERIMS))" 'BEGIN { printf "%.3f\n", (a - b) * tx / dec }'
}
# per_decisions VARIANT: per_decision of every round, a line each.
per_decisions() {
	for i in $(seq 1 "$ROUNDS"); do per_decision "$1" "$i"; done
}
# mean_ci: the mean of the numbers on stdin ± the half-width of its 95 % confidence interval
# (Student's t): whether a goal of a microsecond is shown, or within the box's noise.
mean_ci() {
	awk '
		{ x[NR] = $1; s += $1 }
		END {
			n = NR; m = s / n
			for (i = 1; i <= n; i++) v += (x[i] - m) ^ 2
			# t(0.975, n-1) for n-1 = 1..30, then 2.0
			split("12.71 4.30 3.18 2.78 2.57 2.45 2.36 2.31 2.26 2.23 2.20 2.18 2.16 2.14 2.13 2.12 2.11 2.10 2.09 2.09 2.08 2.07 2.07 2.06 2.06 2.06 2.05 2.05 2.05 2.04", t, " ")
			if (n < 2) { printf "%+.2f (one round)\n", m; exit }
			h = (n - 1 <= 30 ? t[n - 1] : 2.0) * sqrt(v / (n - 1) / n)
			printf "%+.2f ± %.2f\n", m, h
		}'
}
{
	echo "Per round: the order measured, then each variant's server CPU µs/tx and µs per decision against builtin-workers of the same round."
	for i in $(seq 1 "$ROUNDS"); do
		line="round $i ($(order "$i" | paste -sd' ' -)):"
		for v in "${VARIANTS[@]}"; do
			line+=" $v $(jq -r '.cpuMicrosPerTransaction // 0 | . * 10 | round / 10' "$OUT/$v-$i.json")"
			[[ $v == builtin* ]] || line+=" ($(per_decision "$v" "$i" | awk '{printf "%+.1f", $1}'))"
		done
		echo "$line"
	done
} >"$OUT/rounds.txt"

base=builtin
[[ " ${VARIANTS[*]} " == *" builtin "* ]] || base=builtin-workers
{
	echo
	machine
	echo
	echo "Medians of $ROUNDS rounds. A session is 1 Access-Request + Start + $INTERIMS Interims + Stop: $((1 + 1 + INTERIMS)) policy decisions (Stop runs none) in $((3 + INTERIMS)) transactions."
	echo
	echo "| policy | TPS | vs $base | p99 ms | server CPU µs/tx | Lua runs | Lua reuses | Lua CPU µs per decision (vs builtin-workers) | its mean ± 95 % CI | engine's mean run µs |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	base_tps=$(stat "$base" '.incomingTPS')
	for v in "${VARIANTS[@]}"; do
		tps=$(stat "$v" '.incomingTPS')
		p99=$(stat "$v" '.latency.all.p99Ms')
		cpu=$(stat "$v" '.cpuMicrosPerTransaction // 0')
		runs=$(lua_stat "$v" 1)
		reuses=$(lua_stat "$v" 2)
		mean=$(lua_stat "$v" 3)
		pair=0 ci="—"
		if [[ $v != builtin* ]]; then
			diffs=$(per_decisions "$v")
			pair=$(median <<<"$diffs") ci=$(mean_ci <<<"$diffs")
		fi
		awk -v v="$v" -v tps="$tps" -v bt="$base_tps" -v p99="$p99" -v cpu="$cpu" -v pair="$pair" -v mean="$mean" \
			-v runs="$runs" -v reuses="$reuses" -v ci="$ci" 'BEGIN {
			per = v ~ /^builtin/ ? "—" : sprintf("%+.1f", pair)
			m = v ~ /^builtin/ ? "—" : sprintf("%.2f", mean)
			printf "| %s | %.0f | %.1f %% | %.2f | %.1f | %d | %d | %s | %s | %s |\n", v, tps, 100 * tps / bt, p99, cpu, runs, reuses, per, ci, m
		}'
	done
	echo
	echo "Lua CPU per decision: the median over the rounds of (server CPU µs/tx − builtin-workers' in the same round) × transactions / decisions: a Lua policy runs on the worker pool, so the built-in policy on the pool is the baseline; the order of the variants rotates from round to round (each round's order and differences: rounds.txt)."
	echo "Engine's mean run: openaaa_policy_lua_run_duration_seconds sum / count over the measured run (reuses excluded). Each run is a fresh process: start, $WARMUP warm-up, the measured run, stop."
} | tee "$OUT/report.md"
