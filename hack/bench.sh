#!/usr/bin/env bash
# The side-by-side benchmark of docs/benchmarks.md: FreeRADIUS 3.2 (Debian, files + detail)
# against policing (embedded store), same flow, concurrency and duration, alternating A/B
# BENCH_ROUNDS times; then the ceiling (policing with the no-op store) and the overload run
# (open loop at 2× the measured policing maximum). Prints one table (aaa-loadgen compare) and
# keeps every JSON and text report in $BENCH_OUT.
#
# Knobs (environment):
#   BENCH_DURATION=20s     length of every measured run
#   BENCH_WARMUP=3s        unmeasured warm-up against each freshly started server
#   BENCH_ROUNDS=3         A/B rounds (FreeRADIUS, policing) — at least 3 for a median
#   BENCH_CONCURRENCY=16   closed-loop workers (the reference figures use 16)
#   BENCH_MODE=flow        flow | auth | acct
#   BENCH_INTERIMS=5       Interim-Updates per session
#   BENCH_USERS=10000      subscribers (same population in both servers)
#   BENCH_FR_THREADS=4     FreeRADIUS worker threads (see hack/freeradius.sh)
#   BENCH_OVERLOAD=2       overload factor × the median policing TPS (0: skip the run)
#   BENCH_OVERLOAD_DURATION=$BENCH_DURATION
#   BENCH_OVERLOAD_WARMUP=60s  unmeasured overload before the measured one (0: none): the store's
#                          steady state, so that the RSS of the measured run tells growth from filling
#   BENCH_OVERLOAD_CONCURRENCY=32768  most sessions in progress in the overload run
#   BENCH_OVERLOAD_USERS=50000        subscribers of the overload phase (its own population, at
#                          least BENCH_OVERLOAD_CONCURRENCY: a subscriber is in one session at a time)
#   BENCH_OVERLOAD_ROUNDS=3  measured rounds of the overload phase, each a closed-loop maximum on
#                          the populated store, the open loop at 1×, then the overload run; the
#                          goodput targets on the medians
#   BENCH_OVERLOAD_REWARM=20s  unmeasured overload before each measured one (0: none), refilling
#                          the store the closed loop and the 1× run emptied
#   BENCH_CEILING=1        0: skip the no-op store run
#   BENCH_PIN=overload     overload | all | none: pin the server to CPU 1 and the generator to CPU 0
#                          (taskset) for the overload phase, for every run, or never. See below.
#   BENCH_PROFILE=0        1: CPU profile of policing during its last closed-loop run ($BENCH_OUT/policing.cpu.pprof)
#   BENCH_OUT=$CACHE/bench/<timestamp>
#   BENCH_BASE_PORT=28120  FreeRADIUS auth/acct on BASE, BASE+1; policing on BASE+10, +11; admin BASE+20
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CACHE:-$HOME/.cache/openaaa}
BIN=${BIN:-$ROOT/bin}
DURATION=${BENCH_DURATION:-20s}
WARMUP=${BENCH_WARMUP:-3s}
ROUNDS=${BENCH_ROUNDS:-3}
CONC=${BENCH_CONCURRENCY:-16}
MODE=${BENCH_MODE:-flow}
INTERIMS=${BENCH_INTERIMS:-5}
USERS=${BENCH_USERS:-10000}
FR_THREADS=${BENCH_FR_THREADS:-4}
OVERLOAD=${BENCH_OVERLOAD:-2}
OVERLOAD_DURATION=${BENCH_OVERLOAD_DURATION:-$DURATION}
OVERLOAD_WARMUP=${BENCH_OVERLOAD_WARMUP:-60s}
OVERLOAD_CONC=${BENCH_OVERLOAD_CONCURRENCY:-32768}
OVERLOAD_USERS=${BENCH_OVERLOAD_USERS:-50000}
OVERLOAD_ROUNDS=${BENCH_OVERLOAD_ROUNDS:-3}
OVERLOAD_REWARM=${BENCH_OVERLOAD_REWARM:-20s}
CEILING=${BENCH_CEILING:-1}
PROFILE=${BENCH_PROFILE:-0}
PIN=${BENCH_PIN:-overload}
OUT=${BENCH_OUT:-$CACHE/bench/$(date +%Y%m%d-%H%M%S)}
BASE=${BENCH_BASE_PORT:-28120}
FR_PORT=$BASE
POL_PORT=$((BASE + 10))
ADMIN_PORT=$((BASE + 20))
SECRET=bench-secret-$$

LOADGEN=$BIN/aaa-loadgen
POLICING=$BIN/policing
FR="$ROOT/hack/freeradius.sh"
export FREERADIUS_HOME=$OUT/freeradius

[[ -x $LOADGEN && -x $POLICING ]] || { echo "bench: build first (make build)" >&2; exit 1; }
[[ $ROUNDS -ge 1 ]] || { echo "bench: BENCH_ROUNDS must be ≥ 1" >&2; exit 1; }
[[ $OVERLOAD_ROUNDS -ge 1 ]] || { echo "bench: BENCH_OVERLOAD_ROUNDS must be ≥ 1" >&2; exit 1; }
if [[ $OVERLOAD != 0 && $OVERLOAD_USERS -lt $OVERLOAD_CONC ]]; then
	echo "bench: BENCH_OVERLOAD_USERS ($OVERLOAD_USERS) below BENCH_OVERLOAD_CONCURRENCY ($OVERLOAD_CONC): the population, not the concurrency, would bound the offered rate" >&2
fi
"$FR" install >/dev/null

mkdir -p "$OUT"
echo "bench: reports in $OUT"
POL_PID=""
cleanup() {
	if [[ -n $POL_PID ]] && kill -0 "$POL_PID" 2>/dev/null; then
		kill "$POL_PID" 2>/dev/null || true
		wait "$POL_PID" 2>/dev/null || true
	fi
	"$FR" stop bench >/dev/null 2>&1 || true
}
trap cleanup EXIT INT TERM

BENCH_NAME=bench
# shellcheck source=hack/bench-lib.sh
source "$ROOT/hack/bench-lib.sh"

# pprof is behind the admin API's token; curl reads the header from a file.
# shellcheck source=hack/lib/admin-token.sh
source "$ROOT/hack/lib/admin-token.sh"
admin_token "$OUT"

# Same subscribers in both servers.
BASE=$POL_PORT write_bench_config "{store: embedded}" "tokenFile: $OUT/admin-token, pprof: $([[ $PROFILE == 1 ]] && echo true || echo false)"
"$LOADGEN" subscribers --users "$USERS" --freeradius "$OUT/users" >/dev/null
POP=(--users "$USERS") # the population of the runs (the overload phase has its own)

machine() {
	echo "machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -sr)"
	echo "freeradius: $(/usr/sbin/freeradius -v 2>/dev/null | sed -n '1s/.*Version \([0-9.]*\).*/\1/p'), $FR_THREADS threads, files + detail; policing: $("$POLICING" version 2>/dev/null | head -1)"
	echo "load: aaa-loadgen $MODE, $INTERIMS interims, concurrency $CONC, $DURATION per run (+$WARMUP warm-up), $ROUNDS rounds, $USERS users (overload: $OVERLOAD_USERS users, up to $OVERLOAD_CONC sessions in progress, $OVERLOAD_WARMUP warm-up, $OVERLOAD_ROUNDS rounds with $OVERLOAD_REWARM re-warm); pinning: $PIN; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
}
machine | tee "$OUT/machine.txt"

start_fr() {
	"$FR" config bench --port "$FR_PORT" --users "$OUT/users" --secret "$SECRET" --threads "$FR_THREADS" >/dev/null
	FR_PID=$("${SERVER_PIN[@]}" "$FR" start bench)
}
stop_fr() { "$FR" stop bench; }

# Pinning (bench-lib's pin). On 2 cores the generator (~10 µs of CPU per message) and the
# server share the CPUs; at 2× the maximum the generator's own work would take the CPU the
# server needs to shed load, and the overload run would measure the generator. Pinned, the
# server has one core to itself and the maximum and the overload are measured in that same
# setup.
if [[ $PIN == all ]]; then pin on; else pin off; fi

# run LABEL FILE TARGET PID [extra aaa-loadgen flags]
run() {
	local label=$1 file=$2 target=$3 pid=$4
	shift 4
	"${GEN_PIN[@]}" "$LOADGEN" run --target "$target" --secret-file "$OUT/secret" --mode "$MODE" --interims "$INTERIMS" \
		"${POP[@]}" --concurrency "$CONC" --duration "$WARMUP" --quiet >/dev/null
	"${GEN_PIN[@]}" "$LOADGEN" run --target "$target" --secret-file "$OUT/secret" --mode "$MODE" --interims "$INTERIMS" \
		"${POP[@]}" --concurrency "$CONC" --duration "$DURATION" --label "$label" --quiet \
		--server-pid "$pid" --json-out "$OUT/$file.json" --text-out "$OUT/$file.txt" "$@" >/dev/null
	echo "bench: $("$LOADGEN" summary "$OUT/$file.json")"
}

RUNS=()
for i in $(seq 1 "$ROUNDS"); do
	start_fr
	run freeradius "freeradius-$i" "127.0.0.1:$FR_PORT" "$FR_PID"
	stop_fr
	RUNS+=("$OUT/freeradius-$i.json")

	start_policing
	if [[ $PROFILE == 1 && $i == "$ROUNDS" ]]; then
		secs=${DURATION%s}
		(curl -fsS -H @"$OUT/admin-header" -o "$OUT/policing.cpu.pprof" "http://127.0.0.1:$ADMIN_PORT/debug/pprof/profile?seconds=${secs%.*}" || echo "bench: no pprof on the admin port" >&2) &
		PROF_PID=$!
	fi
	run policing "policing-$i" "127.0.0.1:$POL_PORT" "$POL_PID" --metrics "127.0.0.1:$ADMIN_PORT" --require-reply-ma
	[[ -n ${PROF_PID:-} ]] && { wait "$PROF_PID" || true; PROF_PID=""; }
	stop_policing
	RUNS+=("$OUT/policing-$i.json")
done

COMPARE=()
if [[ $CEILING == 1 ]]; then
	start_policing --set session.store=none
	run policing-noop-store "policing-noop" "127.0.0.1:$POL_PORT" "$POL_PID" --metrics "127.0.0.1:$ADMIN_PORT" --require-reply-ma
	stop_policing
	COMPARE+=(--ceiling "$OUT/policing-noop.json")
fi

if [[ $OVERLOAD != 0 ]]; then
	[[ $PIN == overload ]] && pin on
	# Its own, larger population. A subscriber is in one session at a time, so the population
	# bounds the sessions in progress. At 2× about half of the requests time out after 300 ms:
	# a session in progress sends only ~5 messages/s, and offering ~90k msg/s takes some 20k
	# sessions in progress, more than the A/B runs' 10,000 subscribers (which stay, for the
	# comparison with FreeRADIUS). With more subscribers than OVERLOAD_CONC, the concurrency
	# bounds the run, and each subscriber's next session starts seconds after its last one
	# (Event-Timestamp has 1 s resolution: a new Start then supersedes the session whose Stop
	# policing shed). The closed-loop maxima of the rounds run on USERS more subscribers
	# (numbered after the overload's): a subscriber of the overload would have its stale
	# sessions closed by its next closed-loop session, and the maximum would be measured on a
	# store being emptied.
	"$LOADGEN" subscribers --users "$((OVERLOAD_USERS + USERS))" --policing "$OUT/subscribers-overload.yaml" >/dev/null
	awk -v from="$((OVERLOAD_USERS + 1))" -v to="$((OVERLOAD_USERS + USERS))" \
		'BEGIN { for (i = from; i <= to; i++) printf "user%05d pass%05d\n", i, i }' >"$OUT/users-max.txt"
	OVERLOAD_POP=(--users "$OVERLOAD_USERS")
	POP=(--users-file "$OUT/users-max.txt")
	# The overload client gives up on a request after 300 ms (below); as docs/configuration.md
	# says of a real NAS, radius.maxQueueWait must be below that, or policing spends its CPU
	# on answers no one waits for.
	start_policing --set radius.maxQueueWait=250ms --set "subscribers.file=$OUT/subscribers-overload.yaml"
	# The offered rate: OVERLOAD × the maximum, in the pinned setup measured here on the fresh
	# store (a closed-loop run like the A/B ones), else the A/B median.
	if [[ $PIN == overload && ${#SERVER_PIN[@]} -gt 0 ]]; then
		run policing-pinned "policing-pinned" "127.0.0.1:$POL_PORT" "$POL_PID" --metrics "127.0.0.1:$ADMIN_PORT" --require-reply-ma
		max=$("$LOADGEN" summary --median-tps "$OUT/policing-pinned.json")
		COMPARE+=(--rate-base "$OUT/policing-pinned.json")
	else
		max=$("$LOADGEN" summary --median-tps "$OUT"/policing-[0-9]*.json)
	fi
	rate=$(awk -v m="$max" -v f="$OVERLOAD" 'BEGIN{printf "%d", m*f}')
	# Open loop (asynchronous, no retransmission): up to OVERLOAD_CONC sessions in progress and a
	# short timeout, so that sessions whose requests the server dropped are soon free to send
	# again and the offered rate really reaches the server.
	openloop() { # RATE, extra aaa-loadgen flags
		local r=$1
		shift
		"${GEN_PIN[@]}" "$LOADGEN" run --target "127.0.0.1:$POL_PORT" --secret-file "$OUT/secret" --mode "$MODE" --interims "$INTERIMS" \
			"${OVERLOAD_POP[@]}" --rate "$r" --concurrency "$OVERLOAD_CONC" --timeout 300ms --require-reply-ma --quiet "$@" >/dev/null
	}
	overload() { openloop "$rate" "$@"; }
	measured() { # RATE FILE LABEL NOTE: an open-loop run with its reports
		openloop "$1" --duration "$OVERLOAD_DURATION" --label "$3" --server-pid "$POL_PID" --metrics "127.0.0.1:$ADMIN_PORT" \
			--json-out "$OUT/$2.json" --text-out "$OUT/$2.txt"
		echo "bench: $("$LOADGEN" summary "$OUT/$2.json") ($4)"
	}
	zero() { [[ $1 =~ ^0+(\.0*)?(s|ms)?$ ]]; } # 0, 0s, 0ms
	# From a cold start the store fills for about a minute at 2×: the sessions in progress,
	# and per subscriber the sessions whose Stop was shed, until a later Start of the
	# subscriber gets through and supersedes them (when its Start was shed too, a session is
	# created by its first Interim, and a subscriber can hold a few). The Go heap's target
	# follows. The warm-up reaches that steady state, so that the measured runs' RSS shows
	# growth, not filling.
	zero "$OVERLOAD_WARMUP" || overload --duration "$OVERLOAD_WARMUP"
	# Rounds: the maximum on the store as the overload leaves it (its sessions, a full
	# duplicate cache), the same open loop as the overload at 1× (the workload of the
	# overload — tens of thousands of sessions in progress, no retransmission — at the
	# maximum), then the overload. Pairing each overload run with references measured just
	# before on the same store keeps a drift of the shared machine's speed out of the ratios;
	# the targets are on the medians of the rounds.
	for i in $(seq 1 "$OVERLOAD_ROUNDS"); do
		run "policing-max-$i" "policing-max-$i" "127.0.0.1:$POL_PORT" "$POL_PID" --metrics "127.0.0.1:$ADMIN_PORT" --require-reply-ma
		measured "$max" "policing-open-1x-$i" "policing-open-1x-$i" "offered 1× $max/s"
		# At 1× most sessions complete, and their Starts supersede the stale ones: the store
		# shrinks. Refill it before measuring, or the RSS of the run would show the refill.
		zero "$OVERLOAD_REWARM" || overload --duration "$OVERLOAD_REWARM"
		measured "$rate" "policing-overload-$i" "policing-overload-${OVERLOAD}x-$i" "offered ${OVERLOAD}× $max/s"
		COMPARE+=(--overload-max "$OUT/policing-max-$i.json" --overload-1x "$OUT/policing-open-1x-$i.json" --overload "$OUT/policing-overload-$i.json")
	done
	stop_policing
fi

echo
{
	machine
	echo
	"$LOADGEN" compare "${COMPARE[@]}" "${RUNS[@]}"
} | tee "$OUT/report.md"
