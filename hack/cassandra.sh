#!/usr/bin/env bash
# Real Apache Cassandra 5.0.x on loopback, for tests, the demo and benchmarks.
#
# The download site is unreachable here, so the jars come from Maven Central
# (org.apache.cassandra:cassandra-all and its runtime dependencies, ~67 MB) into a cache that
# survives fresh clones:
#   $CACHE/cassandra/<version>/lib/*.jar
# Each node lives in $CASSANDRA_DIR/node<i> (conf/, data/, logs/, pid) and listens on
# 127.0.0.<i>; node <i> is alone in datacenter dc<i> (GossipingPropertyFileSnitch), rack r1.
# Every node is a seed, so a fresh cluster forms without bootstrap streaming. Nodes start one
# after another (all at once is ~3x slower on 2 cores).
#
# Usage: hack/cassandra.sh COMMAND
#   fetch              download the jars into the cache (idempotent; ~25 s cold, instant warm)
#   start [N]          start N nodes (default 1): fetch, write configs, start one after another,
#                      wait for each CQL port and for nodetool to show every node UN.
#                      Nodes already running are left alone (idempotent).
#   stop               stop every node of CASSANDRA_DIR by PID (TERM, then KILL after 30 s)
#   kill I             SIGKILL node I (fault tests)
#   pause I | resume I SIGSTOP / SIGCONT node I: a stall (a long GC pause, a frozen VM)
#   restart I          start node I again with its data and wait for its CQL port
#   status             nodetool status (through node 1, or the first node up)
#   nodetool I ARGS    run nodetool against node I
#   pids               print the PIDs of the running nodes
#   print-lib          print the jar directory
#   check              exit 0 when Java 17+ and the jars are there (no download)
#
# Environment:
#   CACHE                  cache root (default ~/.cache/openaaa)
#   CASSANDRA_VERSION      5.0.9
#   CASSANDRA_DIR          state directory (default /tmp/openaaa-cassandra)
#   CASSANDRA_CQL_PORT     9042   (same port on every node's address)
#   CASSANDRA_STORAGE_PORT 7000
#   CASSANDRA_JMX_PORT     7199   (node i uses CASSANDRA_JMX_PORT + 10*(i-1), on 127.0.0.1)
#   CASSANDRA_ADDRESSES    the nodes' addresses, space-separated (default 127.0.0.1 .. 127.0.0.N)
#   CASSANDRA_BROADCAST_ADDRESSES  the addresses the nodes tell each other (one per node, e.g.
#                          a TCP proxy in front of each node's storage port: make bench-geo's
#                          inter-DC latency); the seeds are these. Clients still connect to
#                          CASSANDRA_ADDRESSES (broadcast_rpc_address). Unset: no broadcast lines
#   CASSANDRA_HEAP         512M
#   CASSANDRA_JVM_OPTS     extra JVM flags, space-separated (e.g. -XX:ActiveProcessorCount=1 for
#                          a node under a CPU quota: the JVM and Cassandra size their pools by it)
#   CASSANDRA_COMMITLOG_SYNC periodic (fast; a SIGKILLed node loses up to 10 s of acknowledged
#                          writes, like production without replicas) or group (fsync before
#                          the acknowledgement, 10 ms window: what the fault tests use)
#   CASSANDRA_START_TIMEOUT seconds to wait for one node's CQL port (default 180)
#   CASSANDRA_HINTS        true (default) or false: hinted handoff (make bench-geo measures what
#                          storing hints for a lost DC costs the survivors)
#   VERBOSE=1              say what happens (default: quiet unless something fails)
set -euo pipefail

CASSANDRA_VERSION="${CASSANDRA_VERSION:-5.0.9}"
CACHE="${CACHE:-${HOME}/.cache/openaaa}"
LIB="${CACHE}/cassandra/${CASSANDRA_VERSION}/lib"
DIR="${CASSANDRA_DIR:-/tmp/openaaa-cassandra}"
CQL_PORT="${CASSANDRA_CQL_PORT:-9042}"
STORAGE_PORT="${CASSANDRA_STORAGE_PORT:-7000}"
JMX_BASE="${CASSANDRA_JMX_PORT:-7199}"
HEAP="${CASSANDRA_HEAP:-512M}"
COMMITLOG_SYNC="${CASSANDRA_COMMITLOG_SYNC:-periodic}"
HINTS="${CASSANDRA_HINTS:-true}"
[[ $HINTS == true || $HINTS == false ]] || { echo "cassandra.sh: CASSANDRA_HINTS must be true or false, not $HINTS" >&2; exit 2; }
START_TIMEOUT="${CASSANDRA_START_TIMEOUT:-180}"
JAVA="${JAVA:-java}"

say() { if [[ "${VERBOSE:-0}" == 1 ]]; then echo "cassandra: $*" >&2; fi; }
die() { echo "cassandra: $*" >&2; exit 1; }

node_dir() { echo "${DIR}/node$1"; }
# CASSANDRA_ADDRESSES (space-separated, one per node) replaces 127.0.0.<i>: the local
# Kubernetes cluster's tests run a node on the node's address, which pods can reach.
node_ip() {
  if [[ -n "${CASSANDRA_ADDRESSES:-}" ]]; then
    local a=(${CASSANDRA_ADDRESSES})
    [[ -n "${a[$(($1 - 1))]:-}" ]] || die "CASSANDRA_ADDRESSES has no address for node $1"
    echo "${a[$(($1 - 1))]}"
  else
    echo "127.0.0.$1"
  fi
}
# broadcast_ip i: node i's CASSANDRA_BROADCAST_ADDRESSES entry, or its own address.
broadcast_ip() {
  if [[ -z "${CASSANDRA_BROADCAST_ADDRESSES:-}" ]]; then node_ip "$1"; return; fi
  local a=(${CASSANDRA_BROADCAST_ADDRESSES})
  [[ -n "${a[$(($1 - 1))]:-}" ]] || die "CASSANDRA_BROADCAST_ADDRESSES has no address for node $1"
  echo "${a[$(($1 - 1))]}"
}
jmx_port() { echo $((JMX_BASE + 10 * ($1 - 1))); }

java_ok() {
  command -v "$JAVA" >/dev/null 2>&1 || return 1
  local v
  v=$("$JAVA" -version 2>&1 | awk -F'"' '/version/ {print $2; exit}')
  [[ "${v%%.*}" -ge 17 ]] 2>/dev/null
}

fetch() {
  if [[ -f "${LIB}/.complete" ]]; then return 0; fi
  command -v mvn >/dev/null 2>&1 || die "mvn not found (apt-get install maven)"
  local work
  work=$(mktemp -d)
  cat >"${work}/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>org.openaaa</groupId><artifactId>cassandra-fetch</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.cassandra</groupId><artifactId>cassandra-all</artifactId>
      <version>${CASSANDRA_VERSION}</version>
    </dependency>
  </dependencies>
</project>
EOF
  say "fetching cassandra-all ${CASSANDRA_VERSION} and its dependencies from Maven Central"
  rm -rf "${LIB}.tmp" && mkdir -p "${LIB}.tmp"
  if ! (cd "$work" && mvn -q -B dependency:copy-dependencies -DincludeScope=runtime \
        -DoutputDirectory="${LIB}.tmp" >"${work}/mvn.log" 2>&1); then
    tail -n 40 "${work}/mvn.log" >&2
    rm -rf "$work" "${LIB}.tmp"
    die "maven could not fetch cassandra-all ${CASSANDRA_VERSION}"
  fi
  rm -rf "$work" "$LIB"
  mv "${LIB}.tmp" "$LIB"
  touch "${LIB}/.complete"
}

# The --add-exports/--add-opens of conf/jvm17-clients.options; the server's options hold them
# all, and a few more (server_flags).
module_flags() {
  cat <<'EOF'
--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED
--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED
--add-exports=java.base/sun.nio.ch=ALL-UNNAMED
--add-exports=java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED
--add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED
--add-exports=java.rmi/sun.rmi.server=ALL-UNNAMED
--add-exports=java.sql/java.sql=ALL-UNNAMED
--add-opens=java.base/java.lang.module=ALL-UNNAMED
--add-opens=java.base/jdk.internal.loader=ALL-UNNAMED
--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED
--add-opens=java.base/jdk.internal.reflect=ALL-UNNAMED
--add-opens=java.base/jdk.internal.math=ALL-UNNAMED
--add-opens=java.base/jdk.internal.module=ALL-UNNAMED
--add-opens=java.base/jdk.internal.util.jar=ALL-UNNAMED
--add-opens=jdk.management/com.sun.management.internal=ALL-UNNAMED
--add-opens=java.base/sun.nio.ch=ALL-UNNAMED
--add-opens=java.base/java.io=ALL-UNNAMED
--add-opens=java.base/java.nio=ALL-UNNAMED
--add-opens=java.base/java.util.concurrent=ALL-UNNAMED
--add-opens=java.base/java.util=ALL-UNNAMED
--add-opens=java.base/java.lang=ALL-UNNAMED
EOF
}

# Flags of Cassandra's conf/jvm-server.options + conf/jvm17-server.options (5.0).
server_flags() {
  local jamm
  jamm=$(ls "${LIB}"/jamm-*.jar | head -n1)
  cat <<EOF
-ea
-da:net.openhft...
-XX:+UseThreadPriorities
-XX:+HeapDumpOnOutOfMemoryError
-Xss256k
-XX:+UseTLAB
-XX:+ResizeTLAB
-XX:+UseNUMA
-XX:+PerfDisableSharedMem
-Djava.net.preferIPv4Stack=true
-XX:+UseG1GC
-XX:+ParallelRefProcEnabled
-XX:MaxTenuringThreshold=1
-XX:G1HeapRegionSize=16m
-XX:+UnlockExperimentalVMOptions
-XX:G1NewSizePercent=50
-XX:MaxGCPauseMillis=300
-XX:InitiatingHeapOccupancyPercent=70
-XX:+UnlockDiagnosticVMOptions
-XX:+DebugNonSafepoints
-XX:CICompilerCount=2
-Djdk.attach.allowAttachSelf=true
$(module_flags)
--add-exports=java.base/java.lang.ref=ALL-UNNAMED
--add-exports=jdk.unsupported/sun.misc=ALL-UNNAMED
--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED
--add-opens=java.base/java.math=ALL-UNNAMED
--add-opens=java.base/java.lang.reflect=ALL-UNNAMED
--add-opens=java.base/java.net=ALL-UNNAMED
-javaagent:${jamm}
EOF
}

# Flags of conf/jvm17-clients.options (nodetool).
client_flags() {
  cat <<'EOF'
-Djava.net.preferIPv4Stack=true
-XX:+UseSerialGC
-XX:TieredStopAtLevel=1
-Xmx128m
EOF
  module_flags
}

write_config() { # i seeds
  local i=$1 seeds=$2 d
  d=$(node_dir "$i")
  mkdir -p "$d/conf" "$d/data" "$d/logs" "$d/tmp"
  cat >"$d/conf/cassandra.yaml" <<EOF
# Written by hack/cassandra.sh: a test node, not a production configuration.
cluster_name: openaaa
num_tokens: 16
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
$(if [[ "$COMMITLOG_SYNC" == group ]]; then
  printf 'commitlog_sync: group\ncommitlog_sync_group_window: 10ms\n'
else
  printf 'commitlog_sync: periodic\ncommitlog_sync_period: 10000ms\n'
fi)
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "${seeds}"
listen_address: $(node_ip "$i")
rpc_address: $(node_ip "$i")
$(if [[ -n "${CASSANDRA_BROADCAST_ADDRESSES:-}" ]]; then
  printf 'broadcast_address: %s\nbroadcast_rpc_address: %s\n' "$(broadcast_ip "$i")" "$(node_ip "$i")"
fi)
storage_port: ${STORAGE_PORT}
native_transport_port: ${CQL_PORT}
endpoint_snitch: GossipingPropertyFileSnitch
data_file_directories: [ "$d/data/data" ]
commitlog_directory: $d/data/commitlog
saved_caches_directory: $d/data/saved_caches
hints_directory: $d/data/hints
cdc_raw_directory: $d/data/cdc_raw
authenticator: AllowAllAuthenticator
authorizer: AllowAllAuthorizer
auto_snapshot: false
snapshot_before_compaction: false
hinted_handoff_enabled: ${HINTS}
max_hint_window: 3h
concurrent_compactors: 1
compaction_throughput: 64MiB/s
materialized_views_enabled: false
read_request_timeout: 5000ms
write_request_timeout: 2000ms
request_timeout: 10000ms
EOF
  cat >"$d/conf/cassandra-rackdc.properties" <<EOF
dc=dc${i}
rack=r1
prefer_local=true
EOF
  cat >"$d/conf/logback.xml" <<EOF
<configuration scan="false">
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>$d/logs/system.log</file>
    <encoder><pattern>%-5level [%thread] %date{ISO8601} %F:%L - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
  <logger name="org.apache.cassandra" level="INFO"/>
</configuration>
EOF
}

pid_of() { # i -> pid if alive
  local f
  f="$(node_dir "$1")/pid"
  [[ -f "$f" ]] || return 1
  local p
  p=$(cat "$f")
  [[ -n "$p" ]] && kill -0 "$p" 2>/dev/null && grep -q CassandraDaemon "/proc/$p/cmdline" 2>/dev/null && echo "$p"
}

cql_up() { (exec 3<>"/dev/tcp/$(node_ip "$1")/${CQL_PORT}") 2>/dev/null; }

log_tail() { # i
  local d
  d=$(node_dir "$1")
  echo "---- node $1 ($(node_ip "$1")) log tail ----" >&2
  tail -n 40 "$d/logs/system.log" 2>/dev/null >&2 || true
  tail -n 20 "$d/logs/stdout.log" 2>/dev/null >&2 || true
}

start_node() { # i
  local i=$1 d pid
  d=$(node_dir "$i")
  if pid=$(pid_of "$i"); then
    say "node $i already running (pid $pid)"
  else
    if cql_up "$i"; then
      die "$(node_ip "$i"):${CQL_PORT} is taken by another process (set CASSANDRA_CQL_PORT)"
    fi
    local -a flags
    mapfile -t flags < <(server_flags)
    flags+=(${CASSANDRA_JVM_OPTS:-})
    say "starting node $i on $(node_ip "$i") (dc$i)"
    # setsid: the node survives the shell that started it and gets its own process group.
    # java.io.tmpdir: the native libraries (lz4, snappy) a node unpacks go with its directory,
    # not into /tmp, where a killed node would leave them.
    setsid "$JAVA" "${flags[@]}" \
      "-Xms${HEAP}" "-Xmx${HEAP}" \
      "-Dcassandra.config=file://$d/conf/cassandra.yaml" \
      "-Dcassandra-rackdc.properties=file://$d/conf/cassandra-rackdc.properties" \
      "-Dlogback.configurationFile=$d/conf/logback.xml" \
      "-Dcassandra.logdir=$d/logs" \
      "-Dcassandra.storagedir=$d/data" \
      "-Djava.io.tmpdir=$d/tmp" \
      "-Dcassandra.jmx.local.port=$(jmx_port "$i")" \
      "-Dcassandra-foreground=yes" \
      "-Dcassandra.skip_wait_for_gossip_to_settle=0" \
      "-Dcassandra.ring_delay_ms=1000" \
      "-Dcassandra.superuser_setup_delay_ms=0" \
      -cp "$d/conf:${LIB}/*" \
      org.apache.cassandra.service.CassandraDaemon \
      >"$d/logs/stdout.log" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$d/pid"
  fi
  local deadline=$((SECONDS + START_TIMEOUT))
  until cql_up "$i"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      log_tail "$i"
      die "node $i exited while starting"
    fi
    if ((SECONDS >= deadline)); then
      log_tail "$i"
      die "node $i: CQL port $(node_ip "$i"):${CQL_PORT} not open after ${START_TIMEOUT}s"
    fi
    sleep 0.5
  done
  say "node $i up (pid $pid)"
}

nodetool() { # i args...
  local i=$1
  shift
  local -a flags
  mapfile -t flags < <(client_flags)
  "$JAVA" "${flags[@]}" -cp "${LIB}/*" -Dlogback.configurationFile=/dev/null \
    org.apache.cassandra.tools.NodeTool -h 127.0.0.1 -p "$(jmx_port "$i")" "$@"
}

wait_all_un() { # n
  local n=$1 deadline=$((SECONDS + 120)) out=""
  while ((SECONDS < deadline)); do
    if out=$(nodetool 1 status 2>&1) && [[ $(grep -c '^UN ' <<<"$out") -eq $n ]]; then
      return 0
    fi
    sleep 2
  done
  echo "$out" >&2
  for ((i = 1; i <= n; i++)); do log_tail "$i"; done
  die "nodetool does not show $n nodes UN after 120s"
}

count_nodes() {
  local n=0
  for d in "$DIR"/node*; do [[ -d "$d" ]] && n=$((n + 1)); done
  echo "$n"
}

cmd_start() {
  local n=${1:-1}
  [[ "$n" =~ ^[1-9]$ ]] || die "start: N must be 1..9"
  java_ok || die "Java 17 or newer is required ($JAVA)"
  fetch
  mkdir -p "$DIR"
  local seeds="" i
  for ((i = 1; i <= n; i++)); do seeds+="${seeds:+,}$(broadcast_ip "$i"):${STORAGE_PORT}"; done
  for ((i = 1; i <= n; i++)); do
    [[ -f "$(node_dir "$i")/conf/cassandra.yaml" ]] || write_config "$i" "$seeds"
    start_node "$i"
  done
  # One node: its CQL port is the readiness (a nodetool JVM costs seconds of CPU).
  if ((n > 1)); then wait_all_un "$n"; fi
}

# cpu_seconds PID: the CPU a node has used (user + system), said when it stops: what the
# tests' nodes cost the machine (issue 12's budget; cassandratest.TestJVMOpts).
cpu_seconds() {
  local -a st
  read -r -a st <"/proc/$1/stat" 2>/dev/null || return 0
  echo $(((st[13] + st[14]) / $(getconf CLK_TCK)))
}

# wait_gone PID SECONDS: wait until the process has exited, at most SECONDS; fails if it has not.
wait_gone() {
  local deadline=$((SECONDS + $2))
  while kill -0 "$1" 2>/dev/null; do
    ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
}

stop_node() { # i
  local pid
  pid=$(pid_of "$1") || { rm -f "$(node_dir "$1")/pid"; return 0; }
  say "stopping node $1 (pid $pid, $(cpu_seconds "$pid") s of CPU)"
  kill -TERM "$pid" 2>/dev/null || true
  kill -CONT "$pid" 2>/dev/null || true # a paused node handles TERM only once continued
  wait_gone "$pid" 30 || kill -KILL "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  rm -f "$(node_dir "$1")/pid"
}

cmd_stop() {
  local n i
  n=$(count_nodes)
  for ((i = n; i >= 1; i--)); do stop_node "$i"; done
}

cmd_kill() {
  local i=$1 pid
  pid=$(pid_of "$i") || die "node $i is not running"
  # A node that skips the flush of each schema change (the tests' nodes: cassandratest's
  # TestJVMOpts) flushes its schema first, as every production node has it on disk: a power
  # cut loses unflushed data, never the tables (their schema loads before the commit log
  # replays, and mutations of tables it does not know are dropped).
  # Not a paused node's (state T: its JMX would not answer); bounded, as every wait here.
  if tr '\0' ' ' <"/proc/${pid}/cmdline" 2>/dev/null | grep -q -- '-Dcassandra.test.flush_local_schema_changes=false' &&
    [[ "$(awk '{print $3}' "/proc/${pid}/stat" 2>/dev/null)" != T ]]; then
    nodetool "$i" flush system_schema >/dev/null 2>&1 &
    local flush=$!
    wait_gone "$flush" 60 || kill "$flush" 2>/dev/null || true
    wait "$flush" 2>/dev/null || say "node $i: flush system_schema failed before the kill"
  fi
  say "killing node $i (pid $pid, $(cpu_seconds "$pid") s of CPU)"
  kill -KILL "$pid"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  rm -f "$(node_dir "$i")/pid"
}

cmd_signal() { # node signal
  local pid
  pid=$(pid_of "$1") || die "node $1 is not running"
  kill "-$2" "$pid"
}

case "${1:-}" in
  fetch) fetch ;;
  check) java_ok && [[ -f "${LIB}/.complete" ]] ;;
  print-lib) echo "$LIB" ;;
  start) cmd_start "${2:-1}" ;;
  stop) cmd_stop ;;
  kill) cmd_kill "${2:?node}" ;;
  pause) cmd_signal "${2:?node}" STOP ;;
  resume) cmd_signal "${2:?node}" CONT ;;
  restart)
    java_ok || die "Java 17 or newer is required"
    [[ -f "$(node_dir "${2:?node}")/conf/cassandra.yaml" ]] || die "node $2 was never started"
    start_node "$2"
    ;;
  status) nodetool 1 status ;;
  nodetool) i=${2:?node}; shift 2; nodetool "$i" "$@" ;;
  pids) for ((i = 1; i <= $(count_nodes); i++)); do pid_of "$i" || true; done ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
