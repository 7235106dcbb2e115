#!/usr/bin/env bash
# make cluster-demo: what `make demo` is for the embedded store, on Kubernetes. From a fresh
# clone, one command: provision what is missing (the targets `make test-cluster` uses), start
# the local single-node cluster (docs/local-cluster.md; or use the one `make cluster-up`
# started), import the images, install the add-ons (Prometheus and its operator,
# metrics-server, cert-manager: hack/addons.sh install), install cass-operator and
# k8ssandra-operator with the Cassandra test images (hack/addons.sh install-k8ssandra), install
# the operator chart and an AAACluster with managed Cassandra (the aaacluster chart,
# config/samples/cluster-demo-values.yaml and config/samples/cluster-demo-managed-values.yaml:
# one Cassandra node run by k8ssandra-operator), wait for Ready, then show:
#   - an Access-Accept and an accounting session (Start, Interim-Update, Stop) sent with
#     radclient from the NAS namespace through the data center's NodePort;
#   - the session in policing's admin API (with the token of the Secret the operator makes),
#     and gone after the Stop;
#   - Prometheus scraping the AAACluster's ServiceMonitor (targets up), through the API
#     server's service proxy;
#   - an AAALoadTest (config/samples/cluster-demo-loadtest.yaml) and its report, from the
#     object's status;
#   - one query of the policing dashboard showing the load test's traffic;
# then how to look around and how to tear down. Each step prints its time; the total at the
# end. A step that does not end as expected fails the script (non-zero) naming the step; every
# wait is bounded.
#
# Usage: hack/cluster-demo.sh [run]   the demo (make cluster-demo)
#        hack/cluster-demo.sh down    remove what a kept demo left (make cluster-demo-down)
# Environment:
#   CLUSTER_DEMO_KEEP=1 (default)  leave everything running at the end, to look around
#   CLUSTER_DEMO_KEEP=0            tear down at the end (and after a failure): helm uninstall
#                                  (and the managed Cassandra waited out) or the host's Cassandra
#                                  stopped, `hack/cluster.sh down` when the demo started the
#                                  cluster: the host is left as it was
#   CLUSTER_DEMO_DIR               the demo's state (external: Cassandra's data and log), default
#                                  /tmp/openaaa-cluster-demo (outside the cluster's directory)
#   CLUSTER_DEMO_CASSANDRA=managed (default): the AAACluster's own Cassandra, made by
#                                  k8ssandra-operator and cass-operator in namespace aaa
#   CLUSTER_DEMO_CASSANDRA=external  quicker: Cassandra 5 as a host process on 198.18.0.1:9042,
#                                  config/samples/cluster-demo-values.yaml alone
#   CLUSTER_DEMO_READY_TIMEOUT     seconds to wait for the AAACluster's Ready (managed 480, external 300)
#   CLUSTER_DEMO_GONE_TIMEOUT      seconds the tear down waits for the managed Cassandra to go (180)
#   CLUSTER_DEMO_PROVISION=0       skip the provisioning step (everything is already built)
#   CASSANDRA_IMAGES               managed: the Cassandra test images (make cassandra-image),
#                                  default $CACHE/cassandra-image
# Needs root (the cluster: network namespaces, iptables, cgroups).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MAKE=${MAKE:-make}
KEEP=${CLUSTER_DEMO_KEEP:-1}
DEMO_DIR=${CLUSTER_DEMO_DIR:-/tmp/openaaa-cluster-demo}
CASSANDRA_MODE=${CLUSTER_DEMO_CASSANDRA:-managed}
HELM=$ROOT/bin/helm
NS=aaa
OPERATOR_NS=openaaa-system
RELEASE=edge
NODE_IP=198.18.0.1
NAS_IP=198.18.0.2
NAS_SECRET=change-me # config/samples/cluster-demo-values.yaml, client "nas"
VALUES=config/samples/cluster-demo-values.yaml
MANAGED_VALUES=config/samples/cluster-demo-managed-values.yaml # over VALUES: managed Cassandra
OBJECTS=config/samples/cluster-demo-objects.yaml
LOADTEST=config/samples/cluster-demo-loadtest.yaml
LOADTEST_NAME=demo
CLUSTER_DIR=${CLUSTER_DIR:-/tmp/openaaa-cluster}
CLUSTER_LOCK=${CLUSTER_LOCK:-/tmp/openaaa-cluster.lock}
export CLUSTER_DIR CLUSTER_LOCK
# Cassandra on the node's address with hack/cassandra.sh's default ports (the contact point of
# the values file), its files under DEMO_DIR; the tests' lean JVM flags (2 cores).
export CASSANDRA_DIR=$DEMO_DIR/cassandra CASSANDRA_ADDRESSES=$NODE_IP CASSANDRA_CQL_PORT=9042
export CASSANDRA_JVM_OPTS=${CASSANDRA_JVM_OPTS:--XX:TieredStopAtLevel=1 -XX:ActiveProcessorCount=1}
# Managed: what `make cassandra-image` builds, which hack/addons.sh install-k8ssandra imports.
CASSANDRA_IMAGES=${CASSANDRA_IMAGES:-${CACHE:-$HOME/.cache/openaaa}/cassandra-image}
export CASSANDRA_IMAGES
case $CASSANDRA_MODE in
managed)
	VALUES_ARGS=(-f "$VALUES" -f "$MANAGED_VALUES")
	VALUES_SHOWN="$VALUES + $(basename "$MANAGED_VALUES")"
	# kubectl apply -l: all of OBJECTS but the Secret cassandra-credentials, which only the
	# external Cassandra needs (k8ssandra-operator makes the managed one's: $RELEASE-superuser).
	OBJECTS_SELECTOR=(-l 'openaaa.io/cassandra!=external')
	READY_TIMEOUT=${CLUSTER_DEMO_READY_TIMEOUT:-480} # one Cassandra node: ~1-3 min to Ready here
	PROVISION_TARGETS="cluster-provision addons cassandra-image images helm freeradius"
	CASSANDRA_STEP="k8ssandra-operator and cass-operator (managed Cassandra)"
	;;
external)
	VALUES_ARGS=(-f "$VALUES")
	VALUES_SHOWN=$VALUES
	OBJECTS_SELECTOR=()
	READY_TIMEOUT=${CLUSTER_DEMO_READY_TIMEOUT:-300}
	PROVISION_TARGETS="cluster-provision addons images helm cassandra-jars freeradius"
	CASSANDRA_STEP="Cassandra 5 on $NODE_IP:9042 (a host process)"
	;;
*)
	echo "cluster-demo: CLUSTER_DEMO_CASSANDRA=$CASSANDRA_MODE: want managed or external" >&2
	exit 2
	;;
esac

STEP="start"
STEP_T0=$SECONDS
T0=$SECONDS
TIMINGS=()

say() { echo "cluster-demo: $*"; }
fail() { echo "cluster-demo: FAILED in step \"$STEP\": $*" >&2; exit 1; }
step() { # NAME FUNCTION: run one step, timed
	STEP=$1
	STEP_T0=$SECONDS
	echo
	echo "==> [$((${#TIMINGS[@]} + 1))] $1"
	"$2"
	TIMINGS+=("$(printf '  %-58s %5d s' "$1" $((SECONDS - STEP_T0)))")
}
timings() {
	echo "==> timings"
	printf '%s\n' "${TIMINGS[@]}"
	printf '  %-58s %5d s\n' "total" $((SECONDS - T0))
}
# until_ok SECONDS WHAT CMD...: run CMD every 2 s until it succeeds; fail naming WHAT after SECONDS.
until_ok() {
	local deadline=$((SECONDS + $1)) what=$2
	shift 2
	until "$@" >/dev/null 2>&1; do
		((SECONDS < deadline)) || fail "timed out after $1 s waiting for $what"
		sleep 2
	done
}
k() { hack/cluster.sh kubectl "$@"; }
helm_() { "$HELM" --kubeconfig "$KUBECONFIG" "$@"; }

# --------------------------------------------------------------------------------------------
# Steps

provision() {
	if [[ ${CLUSTER_DEMO_PROVISION:-1} == 0 ]]; then
		say "CLUSTER_DEMO_PROVISION=0: skipped"
		return
	fi
	# What `make test-cluster` needs, idempotent and cached: cold, the Kubernetes binaries and
	# the add-ons (cass-operator and k8ssandra-operator among them) take minutes to compile and
	# the Cassandra test images minutes to build (docs/local-cluster.md, docs/addons.md); warm,
	# seconds. External Cassandra needs Cassandra's jars instead of the images.
	# shellcheck disable=SC2086 # the targets' words
	"$MAKE" --no-print-directory $PROVISION_TARGETS || fail "provisioning (make $PROVISION_TARGETS)"
}

holder_alive() { [[ -f $CLUSTER_DIR/run/lock-holder.pid ]] && kill -0 "$(cat "$CLUSTER_DIR/run/lock-holder.pid")" 2>/dev/null; }

cluster_up() {
	if k get --raw /readyz >/dev/null 2>&1; then
		# A cluster answers. `make cluster-up` leaves a lock holder process: that one is ours
		# to use. Without one a test package holds the lock for its own run: not ours.
		holder_alive || fail "a local cluster is up but a test holds it (no lock holder in $CLUSTER_DIR/run): wait for it to end, or stop it"
		say "using the cluster already up (started by make cluster-up; it stays up at the end)"
		return
	fi
	if ! flock -n "$CLUSTER_LOCK" true; then
		fail "$CLUSTER_LOCK is held (a test's cluster is starting or stopping): try again when it is free"
	fi
	hack/cluster.sh up >/dev/null || fail "hack/cluster.sh up (logs: $CLUSTER_DIR/logs)"
	mkdir -p "$DEMO_DIR"
	touch "$DEMO_DIR/started-cluster"
	say "cluster up; kubeconfig $KUBECONFIG"
}

TAG=""
import_images() {
	# The tag `make images` gave them (the Makefile's VERSION), as docs/kubernetes.md says.
	TAG=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
	local out
	out=$(hack/cluster.sh import bin/images/policing.oci.tar bin/images/openaaa-operator.oci.tar bin/images/aaa-loadgen.oci.tar) ||
		fail "importing bin/images/*.oci.tar (make images)"
	for img in policing openaaa-operator aaa-loadgen; do
		grep -qx "ghcr.io/openaaa/$img:$TAG" <<<"$out" ||
			fail "ghcr.io/openaaa/$img:$TAG is not in the node after the import (bin/images built at another commit? make images)"
	done
	hack/addons.sh import hack/cluster.sh import >/dev/null || fail "importing the add-ons' images (make addons)"
	say "images ghcr.io/openaaa/{policing,openaaa-operator,aaa-loadgen}:$TAG and the add-ons' imported"
}

addons_install() {
	ADDONS_TIMEOUT=${ADDONS_TIMEOUT:-300} hack/addons.sh install "$KUBECONFIG" || fail "hack/addons.sh install"
}

# Managed (the default): cass-operator and k8ssandra-operator, as `make cluster-k8ssandra` and
# TestManagedCassandra install them (hack/addons.sh install-k8ssandra: their images and the
# Cassandra test images imported, cert-manager, the CRDs, StorageClass openaaa-local and its
# static volumes; both operators Available and their webhooks answering). Cassandra itself comes
# with the AAACluster: the operator makes a K8ssandraCluster of it. External: Cassandra 5 as a
# host process on the node's address (stopped by PID at the tear down).
cassandra_up() {
	# An AAACluster cannot switch between managed and external Cassandra (the CRD refuses it):
	# a kept demo of the other kind has to go first.
	local kept
	kept=$(k -n "$NS" get aaacluster "$RELEASE" --ignore-not-found -o 'jsonpath={.kind} {.spec.cassandra.external}' 2>/dev/null) || kept=""
	if [[ -n $kept ]]; then
		if [[ $kept == "AAACluster " ]]; then kept=managed; else kept=external; fi
		[[ $kept == "$CASSANDRA_MODE" ]] ||
			fail "AAACluster $RELEASE of a kept demo has $kept Cassandra and cannot switch to $CASSANDRA_MODE: make cluster-demo-down first, or CLUSTER_DEMO_CASSANDRA=$kept"
	fi
	case $CASSANDRA_MODE in
	managed)
		local img
		for img in cassandra-mgmt cassandra-config cassandra-logger; do
			[[ -f $CASSANDRA_IMAGES/$img.oci.tar ]] || fail "no $CASSANDRA_IMAGES/$img.oci.tar (make cassandra-image)"
		done
		ADDONS_TIMEOUT=${ADDONS_TIMEOUT:-300} hack/addons.sh install-k8ssandra "$KUBECONFIG" ||
			fail "hack/addons.sh install-k8ssandra (cass-operator, k8ssandra-operator, the Cassandra images)"
		say "cass-operator and k8ssandra-operator running in namespace k8ssandra-operator, the images ghcr.io/openaaa/cassandra-{mgmt,config,logger} imported; the Cassandra node comes with the AAACluster"
		;;
	external)
		hack/cassandra.sh start 1 || fail "Cassandra on $NODE_IP:9042 did not start (log: $CASSANDRA_DIR/node1/logs)"
		say "Cassandra 5 on $NODE_IP:9042 (PID $(hack/cassandra.sh pids | head -1); data in $CASSANDRA_DIR)"
		;;
	esac
}

operator_install() {
	helm_ upgrade --install openaaa-operator charts/openaaa-operator -n "$OPERATOR_NS" --create-namespace \
		--set-string image.tag="$TAG" --set-string policingImage.tag="$TAG" --set-string loadgenImage.tag="$TAG" \
		--set replicaCount=1 --set metrics.serviceMonitor.enabled=true --wait --timeout 3m ||
		fail "helm install of charts/openaaa-operator"
	k -n "$OPERATOR_NS" get deploy
}

# ready_state: the AAACluster's Ready condition as "STATUS REASON: MESSAGE" (Ready mirrors the
# first condition that is not true yet: what it waits for).
ready_state() {
	k -n "$NS" get aaacluster "$RELEASE" -o 'jsonpath={range .status.conditions[?(@.type=="Ready")]}{.status} {.reason}: {.message}{end}' 2>/dev/null
}

# wait_ready SECONDS: until the AAACluster is Ready, printing each new state on the way (the
# managed Cassandra's bring-up takes minutes: K8ssandraCluster, CassandraDatacenter, the pod,
# the superuser, then the schema Job and policing).
wait_ready() {
	local deadline=$((SECONDS + $1)) t0=$SECONDS state last=""
	while :; do
		state=$(ready_state) || state=""
		[[ $state != True\ * ]] || return 0
		if [[ -n $state && $state != "$last" ]]; then
			say "+$((SECONDS - t0)) s: Ready=$state"
			last=$state
		fi
		((SECONDS < deadline)) || return 1
		sleep 2
	done
}

aaacluster_install() {
	k apply -f "$OBJECTS" "${OBJECTS_SELECTOR[@]}" >/dev/null || fail "kubectl apply -f $OBJECTS ${OBJECTS_SELECTOR[*]}"
	helm_ upgrade --install "$RELEASE" charts/aaacluster -n "$NS" "${VALUES_ARGS[@]}" || fail "helm install of charts/aaacluster ${VALUES_ARGS[*]}"
	if ! wait_ready "$READY_TIMEOUT"; then
		k -n "$NS" get aaacluster "$RELEASE" -o jsonpath='{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}' >&2 || true
		fail "AAACluster $RELEASE not Ready within $READY_TIMEOUT s"
	fi
	k -n "$NS" get aaaclusters
	if [[ $CASSANDRA_MODE == managed ]]; then
		k -n "$NS" get k8ssandraclusters,cassandradatacenters,pods || true
	fi
	AUTH_PORT=$(k -n "$NS" get svc "$RELEASE-dc1-radius" -o jsonpath='{.spec.ports[?(@.name=="radius-auth")].nodePort}')
	ACCT_PORT=$(k -n "$NS" get svc "$RELEASE-dc1-radius" -o jsonpath='{.spec.ports[?(@.name=="radius-acct")].nodePort}')
	[[ -n $AUTH_PORT && -n $ACCT_PORT ]] || fail "no NodePorts on Service $RELEASE-dc1-radius"
	say "dc1's RADIUS: auth $NODE_IP:$AUTH_PORT, accounting $NODE_IP:$ACCT_PORT (NodePorts; status.datacenters[0].endpoint: $(k -n "$NS" get aaacluster "$RELEASE" -o jsonpath='{.status.datacenters[0].endpoint}'))"
}

# radclient_nas KIND PORT SECRET ATTR...: one request from the NAS namespace (source 198.18.0.2).
radclient_nas() {
	local kind=$1 port=$2 secret=$3
	shift 3
	printf '%s\n' "$@" | timeout 30 hack/cluster.sh nas-exec radclient -x -r 3 -t 2 "$NODE_IP:$port" "$kind" "$secret" 2>&1
}

SESSION_ID=""
admin_get() { # PATH: GET on dc1's policing pod with the operator's token (from the host: the node reaches pod IPs)
	curl -sS --max-time 5 -H "Authorization: Bearer $ADMIN_TOKEN" "http://$POD_IP:9812$1"
}

radius_session() {
	local out
	out=$(radclient_nas auth "$AUTH_PORT" "$NAS_SECRET" 'User-Name = "alice"' 'User-Password = "wonderland"' 'Message-Authenticator = 0x00') || true
	grep -q 'Received Access-Accept' <<<"$out" || { echo "$out" >&2; fail "no Access-Accept for alice from $NODE_IP:$AUTH_PORT"; }
	say "Access-Request alice (PAP, Message-Authenticator) from the NAS $NAS_IP: Access-Accept"
	SESSION_ID="demo-$(date +%s)"
	local st t=0
	for st in Start Interim-Update; do
		out=$(radclient_nas acct "$ACCT_PORT" "$NAS_SECRET" 'User-Name = "alice"' "Acct-Session-Id = \"$SESSION_ID\"" \
			"Acct-Status-Type = $st" "NAS-IP-Address = $NAS_IP" "Acct-Session-Time = $t" 'Framed-IP-Address = 198.18.200.9') || true
		grep -q 'Received Accounting-Response' <<<"$out" || { echo "$out" >&2; fail "no Accounting-Response to the $st"; }
		say "Accounting-Request $st ($SESSION_ID): Accounting-Response"
		t=60
	done
}

admin_api() {
	POD_IP=$(k -n "$NS" get pods -l "aaa.openaaa.io/cluster=$RELEASE,aaa.openaaa.io/datacenter=dc1,app.kubernetes.io/component=radius" \
		--field-selector=status.phase=Running -o jsonpath='{.items[0].status.podIP}')
	[[ -n $POD_IP ]] || fail "no running policing pod of dc1"
	ADMIN_TOKEN=$(k -n "$NS" get secret "$RELEASE-admin-token" -o jsonpath='{.data.token}' | base64 -d)
	[[ -n $ADMIN_TOKEN ]] || fail "no token in Secret $RELEASE-admin-token (the operator makes it)"
	local code body
	code=$(curl -sS --max-time 5 -o /dev/null -w '%{http_code}' "http://$POD_IP:9812/api/v1/sessions?user=alice") || true
	[[ $code == 401 ]] || fail "the admin API answered HTTP $code without a token; want 401"
	say "admin API of pod $POD_IP without the token: HTTP 401"
	body=$(admin_get "/api/v1/sessions?user=alice") || fail "GET /api/v1/sessions?user=alice"
	say "alice's active sessions (token from Secret $RELEASE-admin-token):"
	echo "$body"
	if ! grep -q "$SESSION_ID" <<<"$body" || ! grep -q "\"$NAS_IP\"" <<<"$body"; then
		fail "session $SESSION_ID from NAS $NAS_IP not in the admin API"
	fi
	local out
	out=$(radclient_nas acct "$ACCT_PORT" "$NAS_SECRET" 'User-Name = "alice"' "Acct-Session-Id = \"$SESSION_ID\"" \
		'Acct-Status-Type = Stop' "NAS-IP-Address = $NAS_IP" 'Acct-Session-Time = 120' 'Framed-IP-Address = 198.18.200.9') || true
	grep -q 'Received Accounting-Response' <<<"$out" || { echo "$out" >&2; fail "no Accounting-Response to the Stop"; }
	say "Accounting-Request Stop ($SESSION_ID): Accounting-Response"
	body=$(admin_get "/api/v1/sessions?user=alice") || fail "GET /api/v1/sessions?user=alice"
	! grep -q "$SESSION_ID" <<<"$body" || fail "session $SESSION_ID still active after its Stop: $body"
	say "after the Stop: $SESSION_ID is no longer active ($body)"
}

loadtest_phase() { k -n "$NS" get aaaloadtest "$LOADTEST_NAME" -o jsonpath='{.status.phase}'; }
loadtest_done() { [[ $(loadtest_phase) == Succeeded || $(loadtest_phase) == Failed ]]; }

loadtest() {
	k -n "$NS" delete aaaloadtest "$LOADTEST_NAME" --ignore-not-found --wait=true --timeout=60s >/dev/null # a kept demo run again
	k apply -f "$LOADTEST" >/dev/null || fail "kubectl apply -f $LOADTEST"
	say "AAALoadTest $LOADTEST_NAME: 20 s of the field's flow (8 workers, 200 users), aaa-loadgen as a Job..."
	until_ok 240 "AAALoadTest $LOADTEST_NAME to end (Succeeded or Failed)" loadtest_done
	k -n "$NS" get aaaloadtest "$LOADTEST_NAME" -o wide
	echo "  report (status.report):"
	local r=.status.report
	k -n "$NS" get aaaloadtest "$LOADTEST_NAME" -o jsonpath="    sessions {$r.sessions}, completed {$r.sessionsCompleted}, sent {$r.sent}, answered {$r.answered}, timeouts {$r.timeouts}, errors {$r.errors}
    accepts {$r.accepts}, rejects {$r.rejects}; incoming TPS {$r.incomingTPS}, outgoing TPS {$r.outgoingTPS}
    avg auth {$r.avgAuthMs} ms, avg acct {$r.avgAcctMs} ms, p99 {$r.p99Ms} ms; policing workers busy {$r.workersBusy} of {$r.workers}; {$r.seconds} s
"
	local drops
	drops=$(k -n "$NS" get aaaloadtest "$LOADTEST_NAME" -o jsonpath="{$r.droppedByReason}")
	echo "    dropped by policing, by reason: ${drops:-none}"
	echo "  per data center (status.datacenters): $(k -n "$NS" get aaaloadtest "$LOADTEST_NAME" -o jsonpath='{range .status.datacenters[*]}{.name}: {.answered} answered, {.incomingTPS} TPS; {end}')"
	[[ $(loadtest_phase) == Succeeded ]] ||
		fail "AAALoadTest $LOADTEST_NAME Failed: $(k -n "$NS" get aaaloadtest "$LOADTEST_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].message}')"
}

prom() { # PATH?QUERY: Prometheus's HTTP API through the API server's service proxy
	k get --raw "/api/v1/namespaces/monitoring/services/prometheus-operated:web/proxy$1"
}
urlq() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
# prom_has QUERY: the instant query returns at least one sample.
# (Captured first: grep -q ending early would SIGPIPE the writer, a failure under pipefail.)
prom_has() {
	local out
	out=$(prom "/api/v1/query?query=$(urlq "$1")") || return 1
	grep -q '"result":\[{' <<<"$out"
}

prometheus_targets() {
	local up="up{namespace=\"$NS\",service=\"$RELEASE-dc1-admin\"} == 1"
	until_ok 180 "Prometheus to scrape the AAACluster's ServiceMonitor ($up)" prom_has "$up"
	until_ok 120 "Prometheus to scrape the operator (up{namespace=\"$OPERATOR_NS\"} == 1)" prom_has "up{namespace=\"$OPERATOR_NS\"} == 1"
	echo "  active targets of ours (Prometheus /api/v1/targets):"
	prom "/api/v1/targets?state=active" | python3 -c '
import json, sys
for t in json.load(sys.stdin)["data"]["activeTargets"]:
    ns = t["labels"].get("namespace", "")
    if ns in ("'"$NS"'", "'"$OPERATOR_NS"'"):
        print("    %-45s %-34s %s" % (t["scrapePool"], t["scrapeUrl"], t["health"]))'
}

# The policing dashboard's "Incoming TPS" panel (config/grafana/openaaa-policing.json), its
# variables filled in ($namespace, $datacenter) and a 2m rate window. The targets were up
# before the load test, so a scrape after it shows the load: the query must answer with
# more than 0 (a target that came up after the load would answer 0.0, a panel showing nothing).
dashboard_query() {
	local q="sum(rate(openaaa_radius_requests_total{namespace=~\"$NS\", aaa_openaaa_io_datacenter=~\"dc1\"}[2m]))"
	until_ok 90 "the dashboard query $q to answer with the load test's traffic (> 0)" prom_has "$q > 0"
	echo "  dashboard OpenAAA policing, panel Incoming TPS: $q"
	prom "/api/v1/query?query=$(urlq "$q")" | python3 -c '
import json, sys
for r in json.load(sys.stdin)["data"]["result"]:
    print("    = %.1f requests/s" % float(r["value"][1]))'
}

look_around() {
	cat <<EOF
  kubeconfig: $KUBECONFIG   (export KUBECONFIG=$KUBECONFIG)
  kubectl:    hack/cluster.sh kubectl ...   (the 1.34 kubectl built here), e.g.
              hack/cluster.sh kubectl -n $NS get aaaclusters,aaaloadtests,pods,svc
              hack/cluster.sh kubectl -n $NS describe aaacluster $RELEASE
              hack/cluster.sh kubectl -n $NS logs deploy/$RELEASE-dc1
  helm:       bin/helm --kubeconfig $KUBECONFIG list -A
  RADIUS:     echo 'User-Name = "alice", User-Password = "wonderland", Message-Authenticator = 0x00' |
                hack/cluster.sh nas-exec radclient -x $NODE_IP:$AUTH_PORT auth $NAS_SECRET
  admin API:  the token is in Secret $RELEASE-admin-token (docs/security.md)
  Prometheus: hack/cluster.sh kubectl get --raw '/api/v1/namespaces/monitoring/services/prometheus-operated:web/proxy/api/v1/targets'
$(cassandra_around)
  tear down:  make cluster-demo-down   (hack/cluster-demo.sh down: the releases, $([[ $CASSANDRA_MODE == managed ]] && echo 'the managed Cassandra' || echo 'Cassandra')$([[ -f $DEMO_DIR/started-cluster ]] && echo ', the cluster'))
EOF
}

cassandra_around() {
	if [[ $CASSANDRA_MODE == managed ]]; then
		cat <<EOF
  Cassandra:  managed by k8ssandra-operator: K8ssandraCluster $RELEASE, CassandraDatacenter dc1, pod $RELEASE-dc1-default-sts-0;
              CQL at Service $RELEASE-dc1-service:9042, its superuser in Secret $RELEASE-superuser (docs/operator.md)
              hack/cluster.sh kubectl -n $NS get k8ssandraclusters,cassandradatacenters,pvc
EOF
	else
		echo "  Cassandra:  $NODE_IP:9042, PID $(hack/cassandra.sh pids | head -1 || true), files in $CASSANDRA_DIR"
	fi
}

# --------------------------------------------------------------------------------------------
# Tear down: only what the demo made. The cluster goes only if the demo started it; the
# add-ons, cass-operator and k8ssandra-operator among them, stay on a cluster that was up
# before (make cluster-k8ssandra-uninstall, hack/addons.sh uninstall).

# The managed Cassandra left in the namespace: K8ssandraClusters and CassandraDatacenters, by
# name (nothing when their CRDs are not installed).
cassandra_left() {
	k -n "$NS" get k8ssandraclusters.k8ssandra.io,cassandradatacenters.cassandra.datastax.com -o name 2>/dev/null || true
}
cassandra_gone() { [[ -z $(cassandra_left) ]]; }

# managed_cassandra_down: after the AAACluster's uninstall its K8ssandraCluster is collected,
# k8ssandra-operator removes the CassandraDatacenter and cass-operator the pod and its claim
# (9 s when measured): waited for while both operators still run, bounded
# (CLUSTER_DEMO_GONE_TIMEOUT s). A CassandraDatacenter left behind then is deleted as its owner
# would (as test/cluster/managed_test.go does). Fails naming what is left.
managed_cassandra_down() {
	cassandra_gone && return 0
	local deadline=$((SECONDS + ${CLUSTER_DEMO_GONE_TIMEOUT:-180})) t0=$SECONDS
	say "waiting for the managed Cassandra to go: $(cassandra_left | tr '\n' ' ')"
	until cassandra_gone || ((SECONDS >= deadline)); do sleep 3; done
	if ! cassandra_gone; then
		say "still there after $((SECONDS - t0)) s: $(cassandra_left | tr '\n' ' '); deleting the CassandraDatacenters"
		k -n "$NS" delete cassandradatacenters.cassandra.datastax.com --all --timeout=120s >/dev/null 2>&1 || true
	fi
	if ! cassandra_gone; then
		say "the managed Cassandra did not go: $(cassandra_left | tr '\n' ' ')"
		return 1
	fi
	say "the managed Cassandra is gone (K8ssandraCluster, CassandraDatacenter, its pod and claim) after $((SECONDS - t0)) s"
}

teardown() {
	local ok=0
	echo "==> tearing down"
	if [[ -x $HELM ]] && k get --raw /readyz >/dev/null 2>&1; then
		k -n "$NS" delete aaaloadtest "$LOADTEST_NAME" --ignore-not-found --timeout=60s >/dev/null 2>&1 || true
		helm_ uninstall "$RELEASE" -n "$NS" --wait --timeout 2m >/dev/null 2>&1 || true
		managed_cassandra_down || [[ -f $DEMO_DIR/started-cluster ]] || ok=1 # the cluster goes anyway
		helm_ uninstall openaaa-operator -n "$OPERATOR_NS" --wait --timeout 2m >/dev/null 2>&1 || true
		k delete -f "$OBJECTS" --ignore-not-found --timeout=120s >/dev/null 2>&1 || true
		k delete namespace "$OPERATOR_NS" --ignore-not-found --timeout=120s >/dev/null 2>&1 || true
		say "releases $RELEASE and openaaa-operator uninstalled, namespaces $NS and $OPERATOR_NS deleted"
	fi
	if [[ -d $CASSANDRA_DIR ]]; then
		hack/cassandra.sh stop || ok=1 # by PID
		say "Cassandra stopped"
	fi
	if [[ -f $DEMO_DIR/started-cluster ]]; then
		hack/cluster.sh down || ok=1
		say "cluster down"
	elif k get --raw /readyz >/dev/null 2>&1; then
		say "the cluster was up before the demo: it stays up, with its add-ons (make cluster-down)"
	fi
	if [[ $ok == 0 ]]; then rm -rf "$DEMO_DIR"; fi
	return $ok
}

on_exit() {
	local rc=$?
	trap - EXIT
	if [[ $rc != 0 ]]; then
		echo >&2
		echo "cluster-demo: FAILED in step \"$STEP\" after $((SECONDS - STEP_T0)) s (exit $rc)" >&2
		if k get --raw /readyz >/dev/null 2>&1; then
			{
				echo "--- pods"
				k get pods -A -o wide
				if [[ $CASSANDRA_MODE == managed ]]; then
					echo "--- managed Cassandra"
					k -n "$NS" get k8ssandraclusters,cassandradatacenters -o wide 2>/dev/null
				fi
				echo "--- events in $NS"
				k -n "$NS" get events --sort-by=.lastTimestamp 2>/dev/null | tail -20
				echo "--- policing logs"
				k -n "$NS" logs -l app.kubernetes.io/component=radius --tail=15 --prefix 2>/dev/null
			} >&2 || true
		fi
		((${#TIMINGS[@]} == 0)) || timings >&2
		if [[ $KEEP == 0 ]]; then
			teardown >&2 || echo "cluster-demo: the teardown failed too" >&2
		else
			echo "cluster-demo: everything is left as it was for a look (make cluster-demo-down removes it)" >&2
		fi
	fi
	exit "$rc"
}

# --------------------------------------------------------------------------------------------

[[ $(id -u) == 0 ]] || { echo "cluster-demo: needs root (the local cluster: network namespaces, iptables, cgroups)" >&2; exit 1; }
KUBECONFIG=$(hack/cluster.sh kubeconfig)
export KUBECONFIG

case ${1:-run} in
down)
	T0=$SECONDS
	teardown
	say "down in $((SECONDS - T0)) s"
	exit 0
	;;
run) ;;
*)
	sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
	exit 2
	;;
esac

trap on_exit EXIT
step "provision (make cluster-provision addons ...)" provision
step "local cluster up" cluster_up
step "images imported" import_images
step "add-ons (Prometheus, metrics-server, cert-manager)" addons_install
step "$CASSANDRA_STEP" cassandra_up
step "operator chart" operator_install
step "AAACluster $RELEASE (charts/aaacluster, $VALUES_SHOWN) Ready" aaacluster_install
step "Access-Accept and accounting from the NAS namespace" radius_session
step "the session in the admin API, gone after its Stop" admin_api
step "Prometheus scrapes our targets" prometheus_targets
step "AAALoadTest $LOADTEST_NAME and its report" loadtest
step "a dashboard query shows the load test" dashboard_query
echo
timings
if [[ $KEEP == 0 ]]; then
	STEP="tear down (CLUSTER_DEMO_KEEP=0)"
	STEP_T0=$SECONDS
	teardown || fail "the teardown did not complete"
	printf '  %-58s %5d s\n' "tear down" $((SECONDS - STEP_T0))
	printf '  %-58s %5d s\n' "total with the tear down" $((SECONDS - T0))
else
	echo
	echo "==> look around (CLUSTER_DEMO_KEEP=0 tears down by itself)"
	look_around
fi
