#!/usr/bin/env bash
# make bench-cassandra (docs/benchmarks.md, "Cassandra store"): the field flow against policing
# with the Cassandra store on one local Cassandra 5.0 node, next to the raw ceiling — the same
# reads and writes sent straight through the driver at the same concurrency
# (hack/cassandra-raw) — and the field notes' reference (insert+select of a 20-column row at 64
# goroutines, hack/cassandra-raw -mode ref). Then an open-loop run at 0.8 × the measured
# policing maximum for avg auth / acct ms. Prints one table and keeps every report in
# $BENCH_OUT.
#
# Knobs (environment):
#   BENCH_DURATION=20s      every measured run
#   BENCH_WARMUP=5s         unmeasured warm-up before the policing and raw runs
#   BENCH_CONCURRENCY=64    closed-loop workers, policing and raw alike
#   BENCH_USERS=10000       subscribers
#   BENCH_LOAD_FACTOR=0.8   open-loop rate as a fraction of the policing maximum (0: skip)
#   BENCH_PROFILE=0         1: CPU profile of policing during its closed-loop run
#   BENCH_OUT=$CACHE/bench-cassandra/<timestamp>
#   BENCH_BASE_PORT=28220   policing auth/acct BASE, BASE+1; admin BASE+10
#   CASSANDRA_HEAP=512M     (hack/cassandra.sh)
#   BENCH_BASELINE=<git rev> A/B instead: BENCH_ROUNDS rounds, each a run (fresh node, no open
#                           loop) of that commit's policing, aaa-loadgen and cassandra-raw (built
#                           from `git archive` into $CACHE/bench-cassandra/build-<rev>), then one
#                           of this checkout's ($BIN); prints both side by side and the ratio.
#   BENCH_ROUNDS=2          A/B rounds
# A/B runs want a longer warm-up (BENCH_WARMUP=30s BENCH_DURATION=30s; a fresh Cassandra JVM
# compiles its hot paths for about half a minute) and 3 rounds or more: single runs of one
# build differ by up to a third here (docs/benchmarks.md), so only the rounds' means compare.
# The node uses CQL 29042, storage 27000, JMX 27199 and the machine-wide test lock, so it never
# runs next to a test cluster; it is stopped by PID at the end.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CACHE:-$HOME/.cache/openaaa}
BIN=${BIN:-$ROOT/bin}
DURATION=${BENCH_DURATION:-20s}
WARMUP=${BENCH_WARMUP:-5s}
CONC=${BENCH_CONCURRENCY:-64}
USERS=${BENCH_USERS:-10000}
FACTOR=${BENCH_LOAD_FACTOR:-0.8}
PROFILE=${BENCH_PROFILE:-0}
OUT=${BENCH_OUT:-$CACHE/bench-cassandra/$(date +%Y%m%d-%H%M%S)}
BASE=${BENCH_BASE_PORT:-28220}
ADMIN_PORT=$((BASE + 10))
SECRET=bench-secret-$$

export CASSANDRA_DIR=$OUT/cassandra CASSANDRA_CQL_PORT=29042 CASSANDRA_STORAGE_PORT=27000 CASSANDRA_JMX_PORT=27199
CQL=127.0.0.1:$CASSANDRA_CQL_PORT
LOADGEN=$BIN/aaa-loadgen
POLICING=$BIN/policing
RAW=$BIN/cassandra-raw
CASS="$ROOT/hack/cassandra.sh"
# shellcheck source=hack/bench-lib.sh
. "$ROOT/hack/bench-lib.sh"

[[ -x $LOADGEN && -x $POLICING && -x $RAW ]] || { echo "bench-cassandra: build first (make bench-cassandra builds)" >&2; exit 1; }
mkdir -p "$OUT"
echo "bench-cassandra: reports in $OUT"

# A/B: this script once per build and round, alternated, then the table.
if [[ -n ${BENCH_BASELINE:-} && -z ${BENCH_AB_RUN:-} ]]; then
	rev=$(git -C "$ROOT" rev-parse --short=7 "$BENCH_BASELINE^{commit}") || { echo "bench-cassandra: BENCH_BASELINE=$BENCH_BASELINE is not a commit of $ROOT" >&2; exit 1; }
	base=$CACHE/bench-cassandra/build-$rev
	if [[ ! -x $base/cassandra-raw ]]; then
		src=$(mktemp -d)
		trap 'rm -rf "$src"' EXIT
		echo "bench-cassandra: building $rev into $base"
		git -C "$ROOT" archive "$rev" | tar -x -C "$src"
		mkdir -p "$base"
		(cd "$src" && for p in policing:./services/policing aaa-loadgen:./services/loadgen cassandra-raw:./hack/cassandra-raw; do
			CGO_ENABLED=0 "${GO:-go}" build -trimpath -o "$base/${p%%:*}" "${p#*:}" || exit 1
		done) || { rm -rf "$base"; echo "bench-cassandra: building $rev failed" >&2; exit 1; }
		rm -rf "$src"
	fi
	for r in $(seq 1 "${BENCH_ROUNDS:-2}"); do
		for build in "$rev:$base" "current:$BIN"; do
			run=$OUT/$r-${build%%:*}
			echo "bench-cassandra: round $r, ${build%%:*} (log $run.log)"
			BENCH_AB_RUN=1 BIN=${build#*:} BENCH_OUT=$run BENCH_LOAD_FACTOR=0 "$0" >"$run.log" 2>&1 ||
				{ tail -20 "$run.log" >&2; echo "bench-cassandra: round $r, ${build%%:*} failed" >&2; exit 1; }
		done
	done
	python3 - "$OUT" "$rev" "${BENCH_ROUNDS:-2}" <<'EOF' | tee "$OUT/report.md"
import json, sys
out, rev, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
print(open(f"{out}/1-current/machine.txt").read().rstrip())
print(f"A/B: {rounds} rounds, each a run of {rev} then one of this checkout (current), a fresh node per run")
print()
print("| round, build | messages/s | CQL requests per message | policing CPU µs per message | avg acct ms | p99 ms | timeouts / errors | raw ceiling msgs/s (its own statements) |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
mean = {}
for r in range(1, rounds + 1):
    for b in (rev, "current"):
        s = json.load(open(f"{out}/{r}-{b}/summary.json"))
        mean.setdefault(b, []).append(s["messagesPerSecond"])
        print(f"| {r}, {b} | {s['messagesPerSecond']:.0f} | {s['cqlPerMessage']:.2f} | {s['cpuMicrosPerMessage']:.0f} | {s['avgAcctMs']:.1f} | {s['p99Ms']:.1f} | {s['timeouts']} / {s['errors']} | {s['rawMessagesPerSecond']:.0f} |")
a, b = sum(mean[rev]) / rounds, sum(mean["current"]) / rounds
per = ", ".join(f"{c / o:.2f}×" for o, c in zip(mean[rev], mean["current"]))
print()
print(f"messages/s, mean of the rounds: {rev} {a:.0f}, current {b:.0f}: **{b / a:.2f}×** (per round {per}; issue 17's target ≥ 1.8× against 4be78ea)")
EOF
	exit 0
fi

POL_PID=""
cleanup() {
	if [[ -n $POL_PID ]] && kill -0 "$POL_PID" 2>/dev/null; then
		kill "$POL_PID" 2>/dev/null || true
		wait "$POL_PID" 2>/dev/null || true
	fi
	"$CASS" stop || true
}
trap cleanup EXIT INT TERM

# One test cluster at a time on this machine (internal/cassandratest uses the same lock).
exec 9>"${TMPDIR:-/tmp}/openaaa-cassandra-test.lock"
if ! flock -n 9; then
	echo "bench-cassandra: waiting for the Cassandra test lock (a test cluster is running)"
	flock 9
fi

t0=$SECONDS
"$CASS" start 1
echo "bench-cassandra: Cassandra up in $((SECONDS - t0)) s (pid $("$CASS" pids))"
for ks in bench bench_raw; do
	"$POLICING" migrate --contact-points "$CQL" --local-dc dc1 --keyspace "$ks" --replication dc1:1 >"$OUT/migrate-$ks.log"
done

# pprof is behind the admin API's token; curl reads the header from a file.
# shellcheck source=hack/lib/admin-token.sh
source "$ROOT/hack/lib/admin-token.sh"
admin_token "$OUT"
write_bench_config "{store: cassandra, cassandra: {contactPoints: [\"$CQL\"], localDC: dc1, keyspace: bench, spool: {dir: $OUT/spool}}}" "tokenFile: $OUT/admin-token, pprof: true"

machine() {
	echo "machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -sr), load average $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "cassandra: $(basename "$("$CASS" print-lib | xargs dirname)") one node, heap ${CASSANDRA_HEAP:-512M}, commitlog ${CASSANDRA_COMMITLOG_SYNC:-periodic}; policing: $("$POLICING" version 2>/dev/null | head -1), store cassandra (LOCAL_QUORUM / LOCAL_ONE)"
	echo "load: field flow (auth, start, 5 interims, stop), closed loop, concurrency $CONC, $DURATION per run (+$WARMUP warm-up), $USERS users"
}
machine | tee "$OUT/machine.txt"

"$POLICING" serve --config "$OUT/policing.yaml" >>"$OUT/policing.log" 2>&1 &
POL_PID=$!
for _ in $(seq 1 300); do
	curl -fsS "http://127.0.0.1:$ADMIN_PORT/readyz" >/dev/null 2>&1 && break
	kill -0 "$POL_PID" 2>/dev/null || { tail -20 "$OUT/policing.log" >&2; echo "bench-cassandra: policing exited" >&2; exit 1; }
	sleep 0.1
done

lg() { "$LOADGEN" run --target "127.0.0.1:$BASE" --secret-file "$OUT/secret" --mode flow --interims 5 --users "$USERS" --require-reply-ma --quiet "$@"; }

# policing, closed loop
lg --concurrency "$CONC" --duration "$WARMUP" >/dev/null
if [[ $PROFILE == 1 ]]; then
	secs=${DURATION%s}
	curl -fsS -H @"$OUT/admin-header" -o "$OUT/policing.cpu.pprof" "http://127.0.0.1:$ADMIN_PORT/debug/pprof/profile?seconds=${secs%.*}" &
	PROF_PID=$!
fi
# CQL requests per message (issue 17's currency), read before and after the run (bench-lib.sh).
cql_counts >"$OUT/cql-before.txt"
lg --concurrency "$CONC" --duration "$DURATION" --label policing-cassandra --server-pid "$POL_PID" \
	--metrics "127.0.0.1:$ADMIN_PORT" --json-out "$OUT/policing.json" --text-out "$OUT/policing.txt" >/dev/null
cql_counts >"$OUT/cql-after.txt"
[[ -n ${PROF_PID:-} ]] && { wait "$PROF_PID" || true; }
echo "bench-cassandra: $("$LOADGEN" summary "$OUT/policing.json")"
max=$("$LOADGEN" summary --median-tps "$OUT/policing.json")

# policing, open loop at FACTOR × max
if [[ $FACTOR != 0 ]]; then
	rate=$(awk -v m="$max" -v f="$FACTOR" 'BEGIN{printf "%d", m*f}')
	lg --rate "$rate" --concurrency 4096 --timeout 1s --duration "$DURATION" --label "policing-cassandra-${FACTOR}x" \
		--server-pid "$POL_PID" --metrics "127.0.0.1:$ADMIN_PORT" --json-out "$OUT/policing-open.json" --text-out "$OUT/policing-open.txt" >/dev/null
	echo "bench-cassandra: $("$LOADGEN" summary "$OUT/policing-open.json") (open loop at $rate/s = $FACTOR × $max)"
fi
curl -fsS "http://127.0.0.1:$ADMIN_PORT/metrics" | grep -E '^openaaa_(store_errors_total|spool_appended_total|store_auth_log_dropped_total|store_writes_skipped_total|store_row_cache_total)' >"$OUT/policing-metrics.txt" || true
kill "$POL_PID"
wait "$POL_PID" 2>/dev/null || true
POL_PID=""

# raw ceiling: the same statements, same concurrency; then the reference
"$RAW" -contact-points "$CQL" -keyspace bench_raw -concurrency "$CONC" -duration "$WARMUP" >/dev/null
"$RAW" -contact-points "$CQL" -keyspace bench_raw -concurrency "$CONC" -duration "$DURATION" -json >"$OUT/raw.json"
"$RAW" -contact-points "$CQL" -keyspace bench_raw -mode ref -concurrency 64 -duration "$DURATION" -json >"$OUT/ref.json"

python3 - "$OUT" "$CONC" "$FACTOR" <<'EOF' | tee "$OUT/report.md"
import json, os, sys
out, conc, factor = sys.argv[1], sys.argv[2], sys.argv[3]
pol = json.load(open(f"{out}/policing.json"))
raw = json.load(open(f"{out}/raw.json"))
ref = json.load(open(f"{out}/ref.json"))
opn = json.load(open(f"{out}/policing-open.json")) if os.path.exists(f"{out}/policing-open.json") else None
cpu = pol.get("cpuMicrosPerTransaction")
print()
print(open(f"{out}/machine.txt").read().rstrip())
print()
print(f"| run | messages/s | CQL ops/s | avg auth ms | avg acct ms | p99 all ms | timeouts / errors |")
print(f"|---|---|---|---|---|---|---|")
lat = pol["latency"]["all"]
print(f"| policing + Cassandra store, closed loop c={conc} | {pol['incomingTPS']:.0f} | – | {pol['avgAuthMs']:.2f} | {pol['avgAcctMs']:.2f} | {lat['p99Ms']:.1f} | {pol['timeouts']} / {pol['errors']} |")
if opn:
    l = opn["latency"]["all"]
    print(f"| policing + Cassandra store, open loop at {factor} × max ({opn.get('offeredRate', 0):.0f}/s) | {opn['incomingTPS']:.0f} | – | **{opn['avgAuthMs']:.2f}** | **{opn['avgAcctMs']:.2f}** | {l['p99Ms']:.1f} | {opn['timeouts']} / {opn['errors']} |")
print(f"| raw ceiling: same statements via the driver, c={conc} | {raw['messagesPerSecond']:.0f} | {raw['opsPerSecond']:.0f} | {raw['avgAuthMs']:.2f} | {raw['avgAcctMs']:.2f} | – | – / {raw['errors']} |")
print(f"| reference run here: insert+select, 20 columns, c=64 | {ref['messagesPerSecond']:.0f} iterations | {ref['opsPerSecond']:.0f} | – | – | {ref['p99Ms'].get('insert+select', 0):.1f} | – / {ref['errors']} |")
print(f"| field notes' reference (Cassandra 5.0.9, 512M, 2 cores), c=64 | – | ~4,000 | – | – | ~80 | |")
print()
ratio = pol['incomingTPS'] / raw['messagesPerSecond'] if raw['messagesPerSecond'] else 0
print(f"ratio policing / raw ceiling: **{ratio:.2f}** (target ≥ 0.8); field targets at 80% load: auth 2.5 ms, acct 4 ms (104 vCPU)")
if cpu:
    print(f"policing CPU: {cpu:.0f} µs per transaction")
def counts(name):
    n = {}
    for line in open(f"{out}/{name}"):
        k, v = line.split()
        n[k] = float(v)
    return n
before, after = counts("cql-before.txt"), counts("cql-after.txt")
per = {k: after[k] - before.get(k, 0) for k in after if after[k] - before.get(k, 0) > 0}
msgs = pol.get("answered", 0)
cql_per_msg = sum(per.values()) / msgs if msgs else 0
if msgs:
    detail = ", ".join(f"{k} {v / msgs:.2f}" for k, v in sorted(per.items()))
    print(f"CQL requests per message (closed loop, {msgs} messages answered): **{cql_per_msg:.2f}** (target ≤ 2.5) — {detail}")
# What an A/B run (BENCH_BASELINE) puts side by side.
json.dump({"messagesPerSecond": pol["incomingTPS"], "cqlPerMessage": cql_per_msg,
           "cpuMicrosPerMessage": cpu or 0, "avgAcctMs": pol["avgAcctMs"], "p99Ms": lat["p99Ms"],
           "timeouts": pol["timeouts"], "errors": pol["errors"], "rawMessagesPerSecond": raw["messagesPerSecond"]},
          open(f"{out}/summary.json", "w"))
EOF
