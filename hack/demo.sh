#!/usr/bin/env bash
# make demo: start policing on loopback with the embedded store and the bundled sample
# subscribers, drive a few hundred sessions of the field's flow through it with aaa-loadgen
# (Access-Request → Start → 5 × Interim-Update → Stop), print the report and one
# subscriber's session lookups, then stop everything this script started.
# STORE=cassandra: the same on one local Cassandra 5.0 node (hack/cassandra.sh, stopped by PID
# at the end) with the Cassandra session store instead of the embedded one.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-$PWD/bin}
SESSIONS=${SESSIONS:-300}
AUTH_PORT=${AUTH_PORT:-21812}
ACCT_PORT=${ACCT_PORT:-21813}
ADMIN_PORT=${ADMIN_PORT:-29812}
STORE=${STORE:-embedded}

work=$(mktemp -d)
pid=""
cleanup() {
	if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid"
		wait "$pid" 2>/dev/null || true
	fi
	if [[ $STORE == cassandra ]]; then hack/cassandra.sh stop || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

umask 077
echo "demo-secret-$RANDOM$RANDOM" >"$work/nas-secret"
# The admin API's bearer token; curl reads the header from a file (hack/lib/admin-token.sh).
# shellcheck source=hack/lib/admin-token.sh
source hack/lib/admin-token.sh
admin_token "$work"

store_flags=(--set session.embedded.snapshotFile="$work/sessions.jsonl")
if [[ $STORE == cassandra ]]; then
	export CASSANDRA_DIR="$work/cassandra" CASSANDRA_CQL_PORT=${CASSANDRA_CQL_PORT:-39042} \
		CASSANDRA_STORAGE_PORT=${CASSANDRA_STORAGE_PORT:-37000} CASSANDRA_JMX_PORT=${CASSANDRA_JMX_PORT:-37199}
	echo "==> starting one Cassandra node on 127.0.0.1:$CASSANDRA_CQL_PORT (dc1; 20-60 s) and migrating keyspace openaaa_demo"
	hack/cassandra.sh start 1
	"$BIN/policing" migrate --contact-points "127.0.0.1:$CASSANDRA_CQL_PORT" --local-dc dc1 --keyspace openaaa_demo --replication dc1:1
	store_flags=(--set session.store=cassandra --set "session.cassandra.contactPoints=[127.0.0.1:$CASSANDRA_CQL_PORT]"
		--set session.cassandra.localDC=dc1 --set session.cassandra.keyspace=openaaa_demo
		--set session.cassandra.spool.dir="$work/spool")
elif [[ $STORE != embedded ]]; then
	echo "demo: STORE=$STORE: want embedded or cassandra" >&2
	exit 2
fi

echo "==> starting policing ($STORE store) on 127.0.0.1:$AUTH_PORT/$ACCT_PORT, admin :$ADMIN_PORT"
"$BIN/policing" serve --config config/samples/policing/policing.yaml \
	--set log.format=text --set log.level=warn \
	--set radius.authAddress=127.0.0.1:$AUTH_PORT --set radius.acctAddress=127.0.0.1:$ACCT_PORT \
	--set admin.address=127.0.0.1:$ADMIN_PORT --set admin.tokenFile="$work/admin-token" \
	--set clients.0.address=127.0.0.0/8 --set clients.0.secretFile="$work/nas-secret" \
	--set clients.1.secretFile="$work/nas-secret" \
	--set subscribers.file=config/samples/policing/subscribers.yaml \
	"${store_flags[@]}" \
	2>"$work/policing.log" &
pid=$!

for _ in $(seq 1 100); do
	curl -fsS "http://127.0.0.1:$ADMIN_PORT/readyz" >/dev/null 2>&1 && break
	kill -0 "$pid" 2>/dev/null || { echo "policing exited:"; cat "$work/policing.log"; exit 1; }
	sleep 0.1
done
curl -fsS "http://127.0.0.1:$ADMIN_PORT/readyz" >/dev/null || { echo "policing not ready"; cat "$work/policing.log"; exit 1; }

# The sample file lacks every tenth user00NNN: about one session in ten is rejected.
echo "==> driving $SESSIONS sessions of the field flow with aaa-loadgen (every tenth user is unknown: rejects)"
"$BIN/aaa-loadgen" run --target "127.0.0.1:$AUTH_PORT/$ACCT_PORT" --secret-file "$work/nas-secret" \
	--mode flow --interims 5 --sessions "$SESSIONS" --users 450 --concurrency 8 --duration 60s \
	--nas-id "" --require-reply-ma \
	--metrics "127.0.0.1:$ADMIN_PORT" --server-pid "$pid" --quiet --label demo

echo
echo "==> the admin API without its token: refused, nothing shown"
code=$(curl -sS -o "$work/unauth" -w '%{http_code}' "http://127.0.0.1:$ADMIN_PORT/api/v1/history?user=user00003")
echo "HTTP $code $(cat "$work/unauth")"
[[ $code == 401 ]] || { echo "demo: the admin API answered $code without a token, want 401" >&2; exit 1; }
echo "==> sessions of user00003 with the token (closed by their Stop: history, newest first)"
curl -fsS -H @"$work/admin-header" "http://127.0.0.1:$ADMIN_PORT/api/v1/history?user=user00003&limit=2"
echo "==> active sessions of user00003 (none: every session was stopped)"
curl -fsS -H @"$work/admin-header" "http://127.0.0.1:$ADMIN_PORT/api/v1/sessions?user=user00003"
echo "==> RADIUS counters"
curl -fsS "http://127.0.0.1:$ADMIN_PORT/metrics" | grep -E '^openaaa_radius_(requests_total|accounting_requests_total|requests_dropped_total)' || true
echo "==> stopping policing (SIGTERM: drain, snapshot)"
