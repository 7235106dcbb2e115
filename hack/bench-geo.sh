#!/usr/bin/env bash
# make bench-geo (issue 17; docs/benchmarks.md, "Geo (bench-geo)"): the field's geo capacity
# table on one box. Three DCs on loopback, each one Cassandra 5 node (127.0.4.i, DC dci) and
# one policing on it, each DC in a cgroup with a fixed CPU quota; Cassandra's inter-node
# traffic goes through toxiproxy (127.0.5.i → 127.0.4.i) with a one-way latency; aaa-loadgen
# (its own quota) plays the field flow round-robin over the DCs as a NAS with failover. One
# run: 3 DCs → DC3 killed (SIGKILL, Cassandra and policing) → DC2 killed → both back. Then every
# acknowledged accounting record is looked for in Cassandra (hack/acct-check), and the table
# is printed with each target checked. Reports in $BENCH_OUT.
#
# Runs (aaa-loadgen, closed loop, one per phase; the JSON reports carry per-second timelines):
#   3dc        BENCH_GEO_PHASE   all three DCs
#   loss-dc3   BENCH_GEO_LOSS    three targets; DC3 killed BENCH_GEO_KILL_AT into the run
#   2dc        BENCH_GEO_PHASE   dc1, dc2 (a NAS that failed over sends nothing to dc3)
#   loss-dc2   BENCH_GEO_LOSS    dc1, dc2; DC2 killed BENCH_GEO_KILL_AT into the run
#   1dc        BENCH_GEO_PHASE   dc1
#   recovery   BENCH_GEO_PHASE   all three, once DC2 and DC3 are back (hints replay, spools drain)
#
# Knobs (environment):
#   BENCH_GEO_VARIANTS=base     space-separated: base, proxy (accounting forwarded to an
#                               upstream FreeRADIUS), ldap (subscribers from slapd: one LDAP
#                               search per auth); each repeats the phases on the same cluster
#   BENCH_GEO_PHASE=45s BENCH_GEO_LOSS=20s BENCH_GEO_KILL_AT=5s
#   BENCH_GEO_WARMUP=20s        unthrottled warm-up runs of this length, repeated (at most 8) until
#                               the nodes' JIT compilers are done, then 10 s under the quotas
#   BENCH_GEO_LATENCY_MS=2      one-way inter-DC latency (toxiproxy latency toxic)
#   BENCH_GEO_DC_CPU=0.45       CPU quota of each DC (its Cassandra and policing), in cores
#   BENCH_GEO_LOADGEN_CPU=0.3   the load generator's quota
#   BENCH_GEO_NET_CPU=0.15      toxiproxy's quota (the "network")
#   BENCH_GEO_EXT_CPU=0.2       the variants' outside servers (upstream FreeRADIUS, slapd)
#   BENCH_CONCURRENCY=24        closed-loop workers: enough to keep the DCs' quotas busy, few
#                               enough that replies stay well under the 1 s NAS timeout
#   BENCH_USERS=10000 BENCH_GEO_TIMEOUT=1s BENCH_GEO_RETRIES=2 BENCH_GEO_HOLD_DOWN=10s
#   BENCH_OUT=$CACHE/bench-geo/<timestamp>   BENCH_BASE_PORT=28300
#   CASSANDRA_HEAP=512M CASSANDRA_JVM_OPTS=-XX:ActiveProcessorCount=1
#   CASSANDRA_HINTS=true        false: no hinted handoff (what the hints cost the survivors; a DC
#                               that comes back then misses its downtime's writes until a repair)
# The nodes use CQL 39042, storage 37000, JMX 37199.. (127.0.0.1) and a lock of their own, so they
# never meet a test cluster (127.0.0.1, 127.0.1.x). Everything started here is stopped by PID,
# the cgroups removed and the nodes' data deleted at the end, even on failure.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CACHE:-$HOME/.cache/openaaa}
BIN=${BIN:-$ROOT/bin}
VARIANTS=${BENCH_GEO_VARIANTS:-base}
PHASE=${BENCH_GEO_PHASE:-45s}
LOSS=${BENCH_GEO_LOSS:-20s}
KILL_AT=${BENCH_GEO_KILL_AT:-5s}
WARMUP=${BENCH_GEO_WARMUP:-20s}
LATENCY_MS=${BENCH_GEO_LATENCY_MS:-2}
DC_CPU=${BENCH_GEO_DC_CPU:-0.45}
LOADGEN_CPU=${BENCH_GEO_LOADGEN_CPU:-0.3}
NET_CPU=${BENCH_GEO_NET_CPU:-0.15}
EXT_CPU=${BENCH_GEO_EXT_CPU:-0.2}
CONC=${BENCH_CONCURRENCY:-24}
USERS=${BENCH_USERS:-10000}
TIMEOUT=${BENCH_GEO_TIMEOUT:-1s}
RETRIES=${BENCH_GEO_RETRIES:-2}
HOLD_DOWN=${BENCH_GEO_HOLD_DOWN:-10s}
OUT=${BENCH_OUT:-$CACHE/bench-geo/$(date +%Y%m%d-%H%M%S)}
BASE=${BENCH_BASE_PORT:-28300}
TOXIPROXY=${TOXIPROXY:-}
KS=geo
# cgroup v1: the quota in the cpu controller, the usage in cpuacct (mounted apart here).
CG_ROOT=/sys/fs/cgroup/cpu
CG=$CG_ROOT/openaaa-bench-geo
ACCT=/sys/fs/cgroup/cpuacct/openaaa-bench-geo
GROUPS_=(dc1 dc2 dc3 loadgen net ext)
TOXI_API=127.0.0.1:$((BASE + 90))
UPSTREAM_PORT=$((BASE + 80))
LDAP_PORT=$((BASE + 85))

export CASSANDRA_DIR=$OUT/cassandra CASSANDRA_CQL_PORT=39042 CASSANDRA_STORAGE_PORT=37000 CASSANDRA_JMX_PORT=37199
export CASSANDRA_ADDRESSES="127.0.4.1 127.0.4.2 127.0.4.3" CASSANDRA_BROADCAST_ADDRESSES="127.0.5.1 127.0.5.2 127.0.5.3"
# A SIGKILLed node keeps what it acknowledged (fsync before the answer, 10 ms window), as the
# fault tests do: "acknowledged but lost" must measure policing, not a 10 s commit-log window.
export CASSANDRA_COMMITLOG_SYNC=group
# The JVM would size its GC and Cassandra its thread pools for the machine's 2 cores; a DC has
# a fraction of one.
export CASSANDRA_JVM_OPTS=${CASSANDRA_JVM_OPTS:--XX:ActiveProcessorCount=1}
LOADGEN=$BIN/aaa-loadgen
POLICING=$BIN/policing
CHECK=$BIN/acct-check
CASS="$ROOT/hack/cassandra.sh"
# shellcheck source=hack/bench-lib.sh
. "$ROOT/hack/bench-lib.sh"
# shellcheck source=hack/lib/admin-token.sh
. "$ROOT/hack/lib/admin-token.sh"

die() { echo "bench-geo: $*" >&2; exit 1; }
secs() { [[ $1 =~ ^([0-9]+)s$ ]] || die "$2=$1: want whole seconds, e.g. 45s"; echo "${BASH_REMATCH[1]}"; }
for v in PHASE LOSS KILL_AT WARMUP; do secs "${!v}" "BENCH_GEO_$v" >/dev/null; done
(($(secs "$KILL_AT" KILL_AT) < $(secs "$LOSS" LOSS))) || die "BENCH_GEO_KILL_AT must be shorter than BENCH_GEO_LOSS"
for v in DC_CPU LOADGEN_CPU NET_CPU EXT_CPU; do
	[[ ${!v} =~ ^[0-9]*\.?[0-9]+$ ]] && awk -v c="${!v}" 'BEGIN{exit !(c >= 0.05 && c <= 2)}' || die "BENCH_GEO_$v=${!v}: want cores in [0.05, 2]"
done
[[ $LATENCY_MS =~ ^[0-9]+$ ]] || die "BENCH_GEO_LATENCY_MS=$LATENCY_MS: want whole milliseconds"
for v in $VARIANTS; do [[ $v == base || $v == proxy || $v == ldap ]] || die "BENCH_GEO_VARIANTS: unknown variant $v (base, proxy, ldap)"; done
[[ -x $LOADGEN && -x $POLICING && -x $CHECK ]] || die "build first (make bench-geo builds)"
[[ -n $TOXIPROXY && -x $TOXIPROXY ]] || die "TOXIPROXY: no toxiproxy-server (make toxiproxy)"
[[ -w $CG_ROOT/cgroup.procs && -f $CG_ROOT/cpu.cfs_quota_us && -f ${ACCT%/*}/cpuacct.usage ]] ||
	die "needs root and the cgroup v1 cpu and cpuacct controllers at $CG_ROOT, ${ACCT%/*}"
"$CASS" check || die "Java 17 and the Cassandra jars are needed (make cassandra-jars)"
[[ " $VARIANTS " == *" proxy "* ]] && { command -v freeradius >/dev/null || die "the proxy variant needs FreeRADIUS (make freeradius)"; }
[[ " $VARIANTS " == *" ldap "* ]] && { command -v slapd >/dev/null || die "the ldap variant needs slapd (make slapd)"; }

mkdir -p "$OUT"
echo "bench-geo: reports in $OUT"

# ---- cleanup: every process by PID, the cgroups, the nodes' data ----
POL_PIDS=() # per DC (index 1..3)
BG_PIDS=()  # toxiproxy, the load generator, the nodes' restarts
EXT_STOP=() # the variants' servers: "script name" to stop
cleanup() {
	local rc=$? p g
	trap - EXIT INT TERM
	for p in "${BG_PIDS[@]}" "${POL_PIDS[@]}"; do
		[[ -n $p ]] && kill "$p" 2>/dev/null || true
	done
	for p in "${BG_PIDS[@]}" "${POL_PIDS[@]}"; do
		[[ -n $p ]] && wait "$p" 2>/dev/null || true
	done
	"$CASS" stop || true
	for p in "${EXT_STOP[@]}"; do "$ROOT/hack/$p" stop geo >/dev/null 2>&1 || true; done
	for top in "$CG" "$ACCT"; do
		[[ -d $top ]] || continue
		for g in "$top"/*/; do
			# Whatever is left goes back to the root group; an empty group can be removed.
			while read -r p; do echo "$p" >"${top%/*}/cgroup.procs" 2>/dev/null || true; done <"$g/cgroup.procs"
			rmdir "$g" 2>/dev/null || true
		done
		rmdir "$top" 2>/dev/null || echo "bench-geo: could not remove $top" >&2
	done
	rm -rf "$OUT"/cassandra/node*/data "$OUT"/cassandra/node*/tmp "$OUT"/*/dc*/spool-dc* "$OUT"/*/dc*/proxy-queue "$OUT/slapd"/geo/data
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# One bench-geo at a time on this machine (its ports and cgroups are fixed).
mkdir -p "$CACHE/bench-geo"
exec 9>"$CACHE/bench-geo/lock"
flock -n 9 || die "another bench-geo is running (lock $CACHE/bench-geo/lock)"

# ---- cgroups: a fixed CPU quota per DC, the load generator and the network ----
quota() { # GROUP CORES (-1: none)
	local period
	period=$(cat "$CG/$1/cpu.cfs_period_us")
	if [[ $2 == -1 ]]; then echo -1; else awk -v c="$2" -v p="$period" 'BEGIN{printf "%d", c * p}'; fi >"$CG/$1/cpu.cfs_quota_us"
}
for g in "${GROUPS_[@]}"; do mkdir -p "$CG/$g" "$ACCT/$g"; done
# quotas GROUP...: each at its configured quota.
quotas() {
	local g c
	for g in "$@"; do
		case $g in dc*) c=$DC_CPU ;; loadgen) c=$LOADGEN_CPU ;; net) c=$NET_CPU ;; ext) c=$EXT_CPU ;; esac
		quota "$g" "$c"
	done
}
quotas "${GROUPS_[@]}"
join_group() { echo "$2" >"$CG/$1/cgroup.procs" && echo "$2" >"$ACCT/$1/cgroup.procs"; } # GROUP PID
# in_group GROUP CMD...: CMD started in the background in cgroup GROUP (children inherit it).
in_group() {
	local g=$1
	shift
	(join_group "$g" "$BASHPID" && exec "$@") &
}
# cpu_sample: per group "nanoseconds-used periods throttled-periods", one line.
cpu_sample() {
	local g
	for g in "${GROUPS_[@]}"; do
		printf '%s %s %s ' "$(cat "$ACCT/$g/cpuacct.usage")" "$(awk '$1=="nr_periods"{print $2}' "$CG/$g/cpu.stat")" "$(awk '$1=="nr_throttled"{print $2}' "$CG/$g/cpu.stat")"
	done
	echo
}

# ---- the network: a toxiproxy listener per node, latency on every message ----
in_group net env LOG_LEVEL=warn "$TOXIPROXY" -host 127.0.0.1 -port "${TOXI_API#*:}" >"$OUT/toxiproxy.log" 2>&1
BG_PIDS+=($!)
for _ in $(seq 1 50); do curl -fsS "http://$TOXI_API/version" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fsS "http://$TOXI_API/version" >/dev/null || die "toxiproxy did not start ($(tail -3 "$OUT/toxiproxy.log"))"
for i in 1 2 3; do
	curl -fsS -X POST "http://$TOXI_API/proxies" -d "{\"name\":\"dc$i\",\"listen\":\"127.0.5.$i:$CASSANDRA_STORAGE_PORT\",\"upstream\":\"127.0.4.$i:$CASSANDRA_STORAGE_PORT\",\"enabled\":true}" >/dev/null
	# Cassandra 4+ sends messages one way per connection (each node dials its peers for what it
	# sends), so delaying the client→server stream delays every message once: one-way latency.
	curl -fsS -X POST "http://$TOXI_API/proxies/dc$i/toxics" -d "{\"name\":\"latency\",\"type\":\"latency\",\"stream\":\"upstream\",\"attributes\":{\"latency\":$LATENCY_MS,\"jitter\":0}}" >/dev/null
done

# ---- Cassandra: three nodes, one DC each, started and migrated unthrottled (not measured),
# then each put in its DC's group ----
t0=$SECONDS
"$CASS" start 3
"$POLICING" migrate --contact-points "127.0.4.1:$CASSANDRA_CQL_PORT" --local-dc dc1 --keyspace "$KS" --replication dc1:1,dc2:1,dc3:1 --timeout 3m >"$OUT/migrate.log" 2>&1 ||
	{ cat "$OUT/migrate.log" >&2; die "migrate failed"; }
echo "bench-geo: 3 Cassandra nodes up and migrated in $((SECONDS - t0)) s"
node_pid() { cat "$CASSANDRA_DIR/node$1/pid"; }
for i in 1 2 3; do join_group "dc$i" "$(node_pid "$i")"; done

machine() {
	echo "machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -sr), $(. /etc/os-release && echo "$PRETTY_NAME"), load average $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "cassandra: $(basename "$("$CASS" print-lib | xargs dirname)"), 3 nodes in 3 DCs (RF 1 per DC, LOCAL_QUORUM = 1 replica), heap ${CASSANDRA_HEAP:-512M}, $CASSANDRA_JVM_OPTS, commitlog group, hinted handoff ${CASSANDRA_HINTS:-true}; inter-DC one-way latency ${LATENCY_MS} ms (toxiproxy $(basename "$TOXIPROXY" | sed 's/.*-//'))"
	echo "CPU quotas: ${DC_CPU} core per DC (Cassandra + policing), loadgen ${LOADGEN_CPU}, network (toxiproxy) ${NET_CPU}, outside servers of the variants ${EXT_CPU}"
	echo "load: field flow (auth, start, 5 interims, stop) round-robin, closed loop, concurrency $CONC, $USERS users, timeout $TIMEOUT × $((RETRIES + 1)) transmissions, failover with hold-down $HOLD_DOWN; phases $PHASE, losses $LOSS (kill at $KILL_AT)"
}
machine | tee "$OUT/machine.txt"

# ---- policing per DC ----
admin_port() { echo $((BASE + 10 * ($1 - 1) + 5)); }
auth_port() { echo $((BASE + 10 * ($1 - 1))); }
# write_dc_config VARIANT I: $OUT/VARIANT/dcI/policing.yaml (bench-lib's write_bench_config).
write_dc_config() {
	local v=$1 i=$2 dir=$OUT/$1/dc$2 auth admin
	auth=$(auth_port "$i") admin=$(admin_port "$i")
	(
		OUT=$dir BASE=$auth ADMIN_PORT=$admin
		mkdir -p "$OUT"
		write_bench_config "{store: cassandra, cassandra: {contactPoints: [\"127.0.4.$i:$CASSANDRA_CQL_PORT\"], localDC: dc$i, keyspace: $KS, timeout: 2s, spool: {dir: $OUT/spool-dc$i, replayInterval: 1s}}}" "tokenFile: $ADMIN_DIR/admin-token, pprof: true"
	)
	case $v in
	proxy) # every accounting request forwarded (queued, docs/proxy.md): outgoing ≈ 2 × incoming
		echo "proxy: {mode: queue, queue: {dir: $dir/proxy-queue}, upstreams: [{name: billing, address: \"127.0.0.1:$UPSTREAM_PORT\", secretFile: $OUT/upstream-secret}]}" >>"$dir/policing.yaml" ;;
	ldap) # subscribers from slapd; a 1 ms cache: every Access-Request searches (docs/ldap.md)
		sed -i "s|^subscribers: .*|subscribers: {source: ldap, ldap: {urls: [\"ldap://127.0.0.1:$LDAP_PORT\"], bindDN: \"cn=policing,ou=services,dc=openaaa,dc=test\", bindPasswordFile: $OUT/slapd/geo/bind-password, baseDN: \"ou=subscribers,dc=openaaa,dc=test\", poolSize: 16, cache: {ttl: 1ms}}}|" "$dir/policing.yaml" ;;
	esac
}
start_dc_policing() { # VARIANT I
	local i=$2 port
	in_group "dc$i" "$POLICING" serve --config "$OUT/$1/dc$i/policing.yaml" >>"$OUT/$1/dc$i/policing.log" 2>&1
	POL_PIDS[i]=$!
	port=$(admin_port "$i")
	# Its start (the driver's pools, the schema check) runs inside the DC's quota: tens of seconds.
	for _ in $(seq 1 600); do
		curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && return 0
		kill -0 "${POL_PIDS[i]}" 2>/dev/null || { tail -20 "$OUT/$1/dc$i/policing.log" >&2; die "policing dc$i exited"; }
		sleep 0.2
	done
	die "policing dc$i not ready after 120 s ($(curl -sS "http://127.0.0.1:$port/readyz" 2>&1))"
}
stop_dc_policing() { # I
	local p=${POL_PIDS[$1]:-}
	[[ -n $p ]] || return 0
	kill "$p" 2>/dev/null || true
	wait "$p" 2>/dev/null || true
	POL_PIDS[$1]=""
}
kill_dc() { # I: SIGKILL its Cassandra and its policing, by PID, at once
	local p=${POL_PIDS[$1]} n
	n=$(node_pid "$1")
	kill -KILL "$p" "$n"
	wait "$p" 2>/dev/null || true
	POL_PIDS[$1]=""
	for _ in $(seq 1 100); do kill -0 "$n" 2>/dev/null || break; sleep 0.05; done
	date +%s.%N
}

SECRET=bench-secret-$$
ADMIN_DIR=$OUT
admin_token "$ADMIN_DIR"

# ---- the variants' outside servers, in their own group ----
export FREERADIUS_HOME=$OUT/freeradius SLAPD_HOME=$OUT/slapd
ext_start() { # SCRIPT: start instance "geo" of hack/SCRIPT in group ext
	EXT_STOP+=("$1")
	in_group ext "$ROOT/hack/$1" start geo >"$OUT/$1-start.log" 2>&1
	wait $! || { cat "$OUT/$1-start.log" >&2; die "hack/$1 start failed"; }
}
if [[ " $VARIANTS " == *" proxy "* ]]; then
	# The upstream accounting server (a billing system): FreeRADIUS, acct role, no detail files.
	printf 'upstream-%s\n' "$$" >"$OUT/upstream-secret"
	"$ROOT/hack/freeradius.sh" config geo --role acct --port "$UPSTREAM_PORT" --secret "upstream-$$" --no-detail >/dev/null
	ext_start freeradius.sh
fi
if [[ " $VARIANTS " == *" ldap "* ]]; then
	"$ROOT/hack/slapd.sh" config geo --port "$LDAP_PORT" >/dev/null
	ext_start slapd.sh
	"$ROOT/hack/slapd.sh" load geo "$USERS" >"$OUT/slapd-load.log" 2>&1 || { tail "$OUT/slapd-load.log" >&2; die "slapd load failed"; }
fi

# ---- the load ----
# counters PORT: policing's CQL requests by kind (bench-lib's cql_counts) and the accounting
# records it spooled (acknowledged from its disk because Cassandra was too slow or down).
counters() {
	cql_counts "$1"
	curl -fsS "http://127.0.0.1:$1/metrics" | awk '/^openaaa_spool_appended_total /{print "spooled", $2}'
}
DC_TARGETS=()
for i in 1 2 3; do DC_TARGETS[i]="dc$i=127.0.0.1:$(auth_port "$i")"; done
# loadgen_start VARIANT LABEL DURATION DCS...: one run over the DCs given (targets and metrics
# but VICTIM's),
# in the load generator's group; report in $OUT/VARIANT/LABEL.{json,txt}, acknowledged
# accounting in LABEL.acked. CQL requests per message: the DCs' statement counts around it.
loadgen_start() {
	local v=$1 label=$2 dur=$3 args=() i
	shift 3
	: >"$OUT/$v/$label.pids"
	for i in "$@"; do
		args+=(--target "${DC_TARGETS[i]}")
		# The loadgen reads /metrics after the run too: not from a DC that will be killed in it.
		[[ $i == "${VICTIM:-}" ]] || args+=(--metrics "dc$i=127.0.0.1:$(admin_port "$i")")
		counters "$(admin_port "$i")" | sed "s/^/dc$i /" >>"$OUT/$v/$label.counts-before"
	done
	# CPU per process (the report's "servers"): Cassandra's share of each DC's quota.
	for i in 1 2 3; do
		[[ -n ${POL_PIDS[i]:-} ]] || continue
		args+=(--server-pid "$(node_pid "$i")" --server-pid "${POL_PIDS[i]}")
		printf 'dc%s-cassandra %s\ndc%s-policing %s\n' "$i" "$(node_pid "$i")" "$i" "${POL_PIDS[i]}" >>"$OUT/$v/$label.pids"
	done
	cpu_sample >"$OUT/$v/$label.cpu-before"
	jit_cpu >"$OUT/$v/$label.jit-before"
	# slapd.sh's subscribers: userNNNNN / pwNNNNN (every 100th disabled: rejected, its session ends).
	[[ $v == ldap ]] && args+=(--password-pattern 'pw%05d')
	in_group loadgen "$LOADGEN" run "${args[@]}" --secret-file "$OUT/$v/dc1/secret" --mode flow --interims 5 --users "$USERS" \
		--distribution round-robin --concurrency "$CONC" --timeout "$TIMEOUT" --retries "$RETRIES" --failover --hold-down "$HOLD_DOWN" \
		--require-reply-ma --quiet --duration "$dur" --label "$label" --json-out "$OUT/$v/$label.json" --text-out "$OUT/$v/$label.txt" \
		--acked-out "$OUT/$v/$label.acked" >/dev/null 2>"$OUT/$v/$label.err"
	LG_PID=$!
	BG_PIDS+=("$LG_PID")
	LG_DCS=("$@")
}
loadgen_wait() { # VARIANT LABEL
	wait "$LG_PID" || { cat "$OUT/$1/$2.err" >&2; die "aaa-loadgen $2 failed"; }
	cpu_sample >"$OUT/$1/$2.cpu-after"
	jit_cpu >"$OUT/$1/$2.jit-after"
	local i
	for i in "${LG_DCS[@]}"; do
		[[ -n ${POL_PIDS[i]:-} ]] || continue # killed during the run
		counters "$(admin_port "$i")" | sed "s/^/dc$i /" >>"$OUT/$1/$2.counts-after"
	done
	echo "bench-geo: [$1] $("$LOADGEN" summary "$OUT/$1/$2.json")"
}
phase() { loadgen_start "$@" && loadgen_wait "$1" "$2"; } # VARIANT LABEL DURATION DCS...
# loss VARIANT LABEL DC DCS...: a run over DCS in which DC is killed KILL_AT into it.
loss() {
	local v=$1 label=$2 dc=$3
	shift 3
	VICTIM=$dc loadgen_start "$v" "$label" "$LOSS" "$@"
	sleep "$(secs "$KILL_AT" KILL_AT)"
	kill_dc "$dc" >"$OUT/$v/$label.killed-at"
	echo "bench-geo: [$v] dc$dc killed (Cassandra and policing, SIGKILL)"
	loadgen_wait "$v" "$label"
}

# jit_cpu: CPU ticks (1/100 s) the nodes' JIT compiler threads have used so far.
jit_cpu() {
	local i t n=0
	for i in 1 2 3; do
		[[ -f $CASSANDRA_DIR/node$i/pid ]] || continue
		for t in /proc/"$(node_pid "$i")"/task/*; do
			[[ $(cat "$t/comm" 2>/dev/null) == C[12]\ Compiler* ]] && n=$((n + $(sed 's/.*) //' "$t/stat" | awk '{print $12 + $13}')))
		done
	done
	echo "$n"
}

# wait_recovered: the spools of every DC empty and no hints pending on the nodes that kept
# them (bounded: 300 s), then the cluster's view written to $1.
wait_recovered() {
	local deadline=$((SECONDS + 300)) i n ok
	while ((SECONDS < deadline)); do
		ok=1
		for i in 1 2 3; do
			n=$(curl -fsS "http://127.0.0.1:$(admin_port "$i")/metrics" | awk '/^openaaa_spool_records /{print $2}')
			[[ ${n:-1} == 0 ]] || ok=0
		done
		for i in 1 2; do
			"$CASS" nodetool "$i" listpendinghints 2>/dev/null | grep -q 'does not have any pending hints' || ok=0
		done
		((ok)) && { echo "recovered $((SECONDS - deadline + 300)) s after the run: spools empty, no pending hints" >"$1"; return 0; }
		sleep 5
	done
	echo "NOT recovered 300 s after the run (spools or hints pending)" >"$1"
}

run_variant() {
	local v=$1 i
	mkdir -p "$OUT/$v"
	for i in 1 2 3; do write_dc_config "$v" "$i"; done
	local t=$SECONDS
	for i in 1 2 3; do start_dc_policing "$v" "$i"; done
	echo "bench-geo: [$v] policing ready in the 3 DCs in $((SECONDS - t)) s"
	# A JVM fresh from its start spends most of a small quota compiling (C2): warm-up runs go
	# without the DCs' quotas until the compilers settle, then one under them.
	for i in 1 2 3; do quota "dc$i" -1; done
	local w c0 c1
	for w in 1 2 3 4 5 6 7 8; do
		c0=$(jit_cpu)
		loadgen_start "$v" "warmup-$w" "$WARMUP" 1 2 3 && loadgen_wait "$v" "warmup-$w"
		c1=$(jit_cpu)
		echo "bench-geo: [$v] the nodes' JIT compilers used $(awk -v t=$((c1 - c0)) 'BEGIN{printf "%.1f", t / 100}') CPU-s in warm-up $w"
		(((c1 - c0) < 300)) && break # under 3 CPU-s for the three nodes: settled
	done
	quotas dc1 dc2 dc3
	phase "$v" warmup-quota 10s 1 2 3
	phase "$v" 3dc "$PHASE" 1 2 3
	loss "$v" loss-dc3 3 1 2 3
	phase "$v" 2dc "$PHASE" 1 2
	loss "$v" loss-dc2 2 1 2
	phase "$v" 1dc "$PHASE" 1
	# Both DCs back: each node restarts in its DC's group, then its policing (spool replay).
	t=$SECONDS
	local rs=()
	for i in 2 3; do
		in_group "dc$i" "$CASS" restart "$i" >"$OUT/$v/restart-dc$i.log" 2>&1
		rs[i]=$!
		BG_PIDS+=("${rs[i]}")
	done
	for i in 2 3; do wait "${rs[i]}" || die "Cassandra dc$i did not restart: $(tail -5 "$OUT/$v/restart-dc$i.log")"; done
	for i in 2 3; do start_dc_policing "$v" "$i"; done
	echo "bench-geo: [$v] dc2 and dc3 back in $((SECONDS - t)) s" | tee "$OUT/$v/restart.txt"
	phase "$v" recovery "$PHASE" 1 2 3
	wait_recovered "$OUT/$v/recovered.txt"
	cat "$OUT/$v/recovered.txt"
	# The check reads every row at ALL: not measured, so the quotas are lifted for it.
	for i in 1 2 3; do quota "dc$i" -1; done
	"$CHECK" -nodes "dc1=127.0.4.1:$CASSANDRA_CQL_PORT,dc2=127.0.4.2:$CASSANDRA_CQL_PORT,dc3=127.0.4.3:$CASSANDRA_CQL_PORT" \
		-keyspace "$KS" "$OUT/$v"/*.acked >"$OUT/$v/acct-check.json"
	quotas dc1 dc2 dc3
	for i in 1 2 3; do stop_dc_policing "$i"; done
}

for v in $VARIANTS; do run_variant "$v"; done

python3 - "$OUT" "$VARIANTS" <<'EOF' | tee "$OUT/report.md"
import datetime, json, os, statistics, sys
out, variants = sys.argv[1], sys.argv[2].split()
ROWS = [("3dc", "3 DCs"), ("loss-dc3", "DC3 lost at +{k} s"), ("2dc", "2 DCs"),
        ("loss-dc2", "DC2 lost at +{k} s"), ("1dc", "1 DC"), ("recovery", "DC2, DC3 back")]
GROUPS = ["dc1", "dc2", "dc3", "loadgen", "net", "ext"]

def lines(path):
    return [l.split() for l in open(path)] if os.path.exists(path) else []

def counts(base):
    # The DCs' policing counters over the run (a DC killed in it has no "after"): CQL requests
    # (statements and batches) and records spooled.
    before = {(dc, k): float(c) for dc, k, c in lines(base + ".counts-before")}
    after = {(dc, k): float(c) for dc, k, c in lines(base + ".counts-after")}
    d = {k: c - before.get(k, 0) for k, c in after.items()}
    return sum(c for (_, k), c in d.items() if k != "spooled"), sum(c for (_, k), c in d.items() if k == "spooled")

def groups(base, seconds):
    # Per cgroup: cores used, and the share of its quota periods it was throttled in.
    b = [float(x) for x in open(base + ".cpu-before").read().split()]
    a = [float(x) for x in open(base + ".cpu-after").read().split()]
    d = [y - x for x, y in zip(b, a)]
    return {g: (d[3 * i] / 1e9 / seconds, d[3 * i + 2] / d[3 * i + 1] if d[3 * i + 1] else 0) for i, g in enumerate(GROUPS)}

def procs(base, r):
    # Cores per process role (dcN-cassandra, dcN-policing); a process killed in the run is absent.
    role = {int(pid): name for name, pid in lines(base + ".pids")}
    return {role[p["pid"]]: p["cpuSeconds"] / r["seconds"] for p in r.get("servers", []) if p["pid"] in role}

def median_tps(r, skip):
    # The per-second answered counts, without the first `skip` seconds and the last (partial) one.
    s = [t["answered"] for t in r.get("timeline", [])][skip:-1]
    return statistics.median(s) if s else r["incomingTPS"]

print()
print(open(f"{out}/machine.txt").read().rstrip())
for v in variants:
    fig = {}
    print(f"\n#### {v}\n")
    print("| phase | incoming TPS | outgoing TPS | workers busy | avg auth ms | avg acct ms | p99 ms | timeouts | retransmissions | NAS-visible gap | CQL req/msg | spooled |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for label, name in ROWS:
        base = f"{out}/{v}/{label}"
        r = json.load(open(base + ".json"))
        loss = label.startswith("loss")
        gap = r["nasVisibleGapSeconds"]
        if loss:
            st = datetime.datetime.fromisoformat(r["started"].replace("Z", "+00:00")).timestamp()
            name = name.format(k=f"{float(open(base + '.killed-at').read()) - st:.1f}")
        tps = median_tps(r, 0 if loss else 2)
        fig[label] = dict(tps=tps, gap=len(gap), out=r.get("outgoingTPS") or 0, r=r, base=base, name=name)
        shown = f"{len(gap)} s" if loss or gap else "–"
        cql, spooled = counts(base)
        print(f"| {name} | {tps:,.0f} | {r.get('outgoingTPS') or 0:,.0f} | {r.get('workersBusyAvg') or 0:.1f} | "
              f"{r['avgAuthMs']:.2f} | {r['avgAcctMs']:.2f} | {r['latency']['all']['p99Ms']:.1f} | {r['timeouts']} | "
              f"{r['retransmissions']} | {shown} | {cql / r['answered'] if r['answered'] else 0:.2f} | {spooled:,.0f} |")
    print()
    print("| phase | cores used (throttled) dc1 · dc2 · dc3 | Cassandra cores (of which JIT) | policing cores | loadgen · net · ext cores | TPS per Cassandra core |")
    print("|---|---|---|---|---|---|")
    for label, _ in ROWS:
        f = fig[label]
        g, p = groups(f["base"], f["r"]["seconds"]), procs(f["base"], f["r"])
        cass = sum(c for k, c in p.items() if k.endswith("cassandra"))
        pol = sum(c for k, c in p.items() if k.endswith("policing"))
        jit = (float(open(f["base"] + ".jit-after").read()) - float(open(f["base"] + ".jit-before").read())) / 100 / f["r"]["seconds"]
        print(f"| {f['name']} | " + " · ".join(f"{g[d][0]:.2f} ({g[d][1]:.0%})" for d in GROUPS[:3]) +
              f" | {cass:.2f} ({max(jit, 0):.2f}) | {pol:.2f} | " + " · ".join(f"{g[d][0]:.2f}" for d in GROUPS[3:]) +
              f" | {f['tps'] / cass if cass else 0:,.0f} |")
    ck = json.load(open(f"{out}/{v}/acct-check.json"))
    rec = open(f"{out}/{v}/recovered.txt").read().strip()
    r2, r1 = fig["2dc"]["tps"] / fig["3dc"]["tps"], fig["1dc"]["tps"] / fig["3dc"]["tps"]
    g3, g2 = fig["loss-dc3"]["gap"], fig["loss-dc2"]["gap"]
    met = lambda ok: "met" if ok else "**NOT met**"
    print()
    print(f"- ratios: 2-DC / 3-DC **{r2:.2f}**, 1-DC / 3-DC **{r1:.2f}**; outgoing / incoming at 3 DCs {fig['3dc']['out'] / fig['3dc']['tps']:.2f}")
    print(f"- acknowledged accounting records: {ck['acknowledged']:,} in {ck['sessions']:,} sessions; missing at {ck['consistency']}: **{ck['missing']}**; "
          "in each DC alone (LOCAL_ONE): " + ", ".join(f"{d} {n}" for d, n in sorted(ck["missingByDC"].items())) + f" missing; {rec}")
    print(f"- targets: 2-DC ≥ 95 % of 3-DC {met(r2 >= 0.95)} ({r2:.0%}); 1-DC ≥ 50 % {met(r1 >= 0.5)} ({r1:.0%}); "
          f"zero acknowledged loss {met(ck['missing'] == 0)}; NAS-visible gap ≤ 3 s at each loss {met(g3 <= 3 and g2 <= 3)} ({g3} s, {g2} s)")
EOF
