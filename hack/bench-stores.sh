#!/usr/bin/env bash
# make bench-stores (docs/cassandra.md, "What the hybrid cache buys"): the field flow against
# policing with session.store embedded, cassandra and hybrid, one after another on the same
# local Cassandra 5.0 node, BENCH_ROUNDS rounds interleaved so that the machine's load hits
# every store alike. Each run: closed loop (the maximum), then open loop at BENCH_RATE (the
# latency at equal load). Reports, from policing's /metrics, the session rows each store read
# from Cassandra per accounting request (read_session), the hybrid cache's look-ups and hits,
# and the records spooled (a Cassandra that timed out: that run measured the spool).
#
# Knobs (environment):
#   BENCH_STORES="embedded cassandra hybrid"
#   BENCH_ROUNDS=2  BENCH_DURATION=15s  BENCH_WARMUP=3s  BENCH_CONCURRENCY=64
#   BENCH_RATE=500          open-loop messages/s (0: skip)
#   BENCH_USERS=10000  BENCH_OUT=$CACHE/bench-stores/<timestamp>  BENCH_BASE_PORT=28240
# The node uses CQL 29042, storage 27000, JMX 27199 and the machine-wide test lock (as
# hack/bench-cassandra.sh), and is stopped by PID at the end.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CACHE:-$HOME/.cache/openaaa}
BIN=${BIN:-$ROOT/bin}
STORES=${BENCH_STORES:-embedded cassandra hybrid}
ROUNDS=${BENCH_ROUNDS:-2}
DURATION=${BENCH_DURATION:-15s}
WARMUP=${BENCH_WARMUP:-3s}
CONC=${BENCH_CONCURRENCY:-64}
RATE=${BENCH_RATE:-500}
USERS=${BENCH_USERS:-10000}
OUT=${BENCH_OUT:-$CACHE/bench-stores/$(date +%Y%m%d-%H%M%S)}
BASE=${BENCH_BASE_PORT:-28240}
ADMIN_PORT=$((BASE + 10))
SECRET=bench-secret-$$
BENCH_NAME=bench-stores
SERVER_PIN=()
POLICING=$BIN/policing
LOADGEN=$BIN/aaa-loadgen
CASS="$ROOT/hack/cassandra.sh"
export CASSANDRA_DIR=$OUT/cassandra CASSANDRA_CQL_PORT=29042 CASSANDRA_STORAGE_PORT=27000 CASSANDRA_JMX_PORT=27199
CQL=127.0.0.1:$CASSANDRA_CQL_PORT
# shellcheck source=hack/bench-lib.sh
. "$ROOT/hack/bench-lib.sh"

[[ -x $LOADGEN && -x $POLICING ]] || { echo "$BENCH_NAME: build first (make bench-stores builds)" >&2; exit 1; }
mkdir -p "$OUT"
echo "$BENCH_NAME: reports in $OUT"

POL_PID=""
cleanup() {
	stop_policing || true
	"$CASS" stop || true
}
trap cleanup EXIT INT TERM

exec 9>"${TMPDIR:-/tmp}/openaaa-cassandra-test.lock"
if ! flock -n 9; then
	echo "$BENCH_NAME: waiting for the Cassandra test lock (a test cluster is running)"
	flock 9
fi
"$CASS" start 1
"$POLICING" migrate --contact-points "$CQL" --local-dc dc1 --keyspace bench --replication dc1:1 >"$OUT/migrate.log"

write_bench_config "{store: cassandra, cassandra: {contactPoints: [\"$CQL\"], localDC: dc1, keyspace: bench, spool: {dir: $OUT/spool}}}"
{
	echo "machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(free -g | awk '/Mem:/{print $2}') GiB, load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "cassandra: one node, heap ${CASSANDRA_HEAP:-512M}; load: field flow (auth, start, 5 interims, stop), $USERS users, closed loop c=$CONC and open loop at $RATE/s, $DURATION each (+$WARMUP warm-up), $ROUNDS rounds"
} | tee "$OUT/machine.txt"

lg() { "$LOADGEN" run --target "127.0.0.1:$BASE" --secret-file "$OUT/secret" --mode flow --interims 5 --users "$USERS" --require-reply-ma --quiet "$@"; }

for r in $(seq 1 "$ROUNDS"); do
	for s in $STORES; do
		start_policing --set "session.store=$s"
		lg --concurrency "$CONC" --duration "$WARMUP" >/dev/null
		lg --concurrency "$CONC" --duration "$DURATION" --label "$s" --server-pid "$POL_PID" \
			--metrics "127.0.0.1:$ADMIN_PORT" --json-out "$OUT/$s-closed-$r.json" >/dev/null
		if [[ $RATE != 0 ]]; then
			lg --rate "$RATE" --concurrency 4096 --timeout 1s --duration "$DURATION" --label "$s" --server-pid "$POL_PID" \
				--metrics "127.0.0.1:$ADMIN_PORT" --json-out "$OUT/$s-open-$r.json" >/dev/null
		fi
		curl -fsS "http://127.0.0.1:$ADMIN_PORT/metrics" |
			grep -E '^openaaa_(store_statement_duration_seconds_count|cache_requests_total|radius_requests_total|spool_appended_total)' >"$OUT/$s-metrics-$r.txt" || true
		stop_policing
		echo "$BENCH_NAME: round $r $s: $("$LOADGEN" summary "$OUT/$s-closed-$r.json")"
	done
done

python3 - "$OUT" "$ROUNDS" "$STORES" <<'EOF' | tee "$OUT/report.md"
import glob, json, os, re, statistics, sys
out, rounds, stores = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
def load(p):
    return json.load(open(p)) if os.path.exists(p) else None
def metric(s, r, name, label):
    tot = 0.0
    p = f"{out}/{s}-metrics-{r}.txt"
    if not os.path.exists(p):
        return 0
    for line in open(p):
        if line.startswith(name) and label in line:
            tot += float(line.rsplit(" ", 1)[1])
    return tot
print()
print(open(f"{out}/machine.txt").read().rstrip())
print()
print("| store | closed loop msg/s (median) | avg auth ms | avg acct ms | open loop avg auth ms | avg acct ms | p99 ms | Cassandra row reads per accounting request | cache look-ups / hits | records spooled |")
print("|---|---|---|---|---|---|---|---|---|---|")
for s in stores:
    cl = [load(f"{out}/{s}-closed-{r}.json") for r in range(1, rounds + 1)]
    op = [x for x in (load(f"{out}/{s}-open-{r}.json") for r in range(1, rounds + 1)) if x]
    med = lambda xs: statistics.median(xs) if xs else float("nan")
    reads = sum(metric(s, r, "openaaa_store_statement_duration_seconds_count", 'kind="read_session"') for r in range(1, rounds + 1))
    accts = sum(metric(s, r, "openaaa_radius_requests_total", 'kind="acct"') for r in range(1, rounds + 1))
    looks = sum(metric(s, r, "openaaa_cache_requests_total", "") for r in range(1, rounds + 1))
    hits = sum(metric(s, r, "openaaa_cache_requests_total", 'result="hit"') for r in range(1, rounds + 1))
    per = f"{reads / accts:.2f}" if accts else "–"
    spooled = sum(metric(s, r, "openaaa_spool_appended_total", "") for r in range(1, rounds + 1))
    print(f"| {s} | {med([c['incomingTPS'] for c in cl]):.0f} | {med([c['avgAuthMs'] for c in cl]):.2f} | {med([c['avgAcctMs'] for c in cl]):.2f} | "
          f"{med([o['avgAuthMs'] for o in op]):.2f} | {med([o['avgAcctMs'] for o in op]):.2f} | {med([o['latency']['all']['p99Ms'] for o in op]):.1f} | {per} | {looks:.0f} / {hits:.0f} | {spooled:.0f} |")
print()
print("A store with records spooled met an unavailable Cassandra: its figures are the spool's, not the store's.")
EOF
