#!/usr/bin/env bash
# make demo: start policing on loopback with the embedded store and the bundled sample
# subscribers, drive a few hundred sessions of the field's flow through it with aaa-loadgen
# (Access-Request → Start → 5 × Interim-Update → Stop), print the report and one
# subscriber's session lookups; then every EAP method with the real supplicant (eapol_test:
# EAP-TLS 1.2 and 1.3, PEAP-MSCHAPv2 over TLS 1.2 and 1.3, TTLS-PAP, TTLS-MSCHAPv2, EAP-MD5,
# EAP-SIM, EAP-AKA, EAP-AKA', and one wrong password) and MS-CHAPv2 without EAP (radclient),
# one line each; then stop everything this script started. Exits non-zero when one of them
# ends otherwise.
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

# EAP's peers: eapol_test (hack/eapol.sh) and radclient (hack/freeradius.sh), installed by
# their scripts when missing (idempotent; the first time needs root, for apt-get).
hack/eapol.sh install >/dev/null
hack/freeradius.sh install >/dev/null
EAPOL=$(hack/eapol.sh path)
[[ -x $BIN/eapol-usim ]] || { echo "demo: $BIN/eapol-usim missing (make demo builds it)" >&2; exit 1; }
# A CA, the server's certificate and alice's client certificate (EC P-256: made in no time).
# shellcheck source=hack/lib/eap-certs.sh
source hack/lib/eap-certs.sh
eap_certs "$work/eap" radius.demo alice -newkey ec -pkeyopt ec_paramgen_curve:prime256v1
# The sample subscribers and two more: the USIM of 3GPP TS 35.208 test set 1 (the Go tests'
# card, services/policing/internal/app/eap_aka_test.go; quoted: YAML reads 8000 as a number)
# and RFC 2759 §9.2's MS-CHAPv2 user, stored as the NT hash of "clientPass".
cat config/samples/policing/subscribers.yaml - >"$work/subscribers.yaml" <<'YAML'
  - {username: "001010000000001", ki: "465b5ce8b199b49faa5f0a2ee238a6bc", opc: "cd63cb71954a9f4e48a5994e37a02baf", amf: "8000", sqn: "000000000020"}
  - {username: User, ntPassword: "44EBBA8D5312B8D611474411F56989AE"}
YAML

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
	--set subscribers.file="$work/subscribers.yaml" \
	--set "eap.methods=[peap,ttls,tls,md5,aka-prime,aka,sim]" --set eap.certFile="$work/eap/server.pem" \
	--set eap.keyFile="$work/eap/server.key" --set eap.caFile="$work/eap/ca.pem" --set eap.nodeID=demo \
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
# EAP (docs/eap.md) and MS-CHAPv2 with the real peers, one conversation each on the same node:
# alice (sample password "wonderland", and the client certificate CN=alice), User (RFC 2759's
# user, NT hash only) and the test card (hack/eapol-usim: the EAP tests' card and runner,
# internal/eapoltest, behind eapol_test's external SIM interface, Debian's eapol_test having no
# built-in USIM). The node proposes PEAP first; the other peers answer with a Nak naming theirs.
echo
echo "==> EAP with eapol_test (wpa_supplicant $(dpkg-query -W -f '${Version}' eapoltest 2>/dev/null || echo '?')) and MS-CHAPv2 with radclient"
secret=$(cat "$work/nas-secret")
ms_now() { echo $((${EPOCHREALTIME/./} / 1000)); }
eap_rejects() { curl -fsS "http://127.0.0.1:$ADMIN_PORT/metrics" | grep '^openaaa_eap_rejects_total' || true; }
failed=0
row() { printf '  %-30s %-48s %s\n' "$@"; }
row method result time
# network NAME LINE...: eapol_test's configuration $work/eapol-NAME.conf, one network block, and
# the block's body alone in $work/eapol-NAME.network (for eapol-usim).
network() {
	local name=$1
	shift
	printf '  %s\n' "$@" >"$work/eapol-$name.network"
	{ echo 'network={'; cat "$work/eapol-$name.network"; echo '}'; } >"$work/eapol-$name.conf"
}
# eapol LABEL NAME [keys|nokeys|refused] [TLS-VERSION]: one conversation; a success must carry
# the MSK as the MPPE keys (eapol_test compares them), except EAP-MD5's, which has none, and
# have negotiated TLS-VERSION if given (eapol_test's last report: its first is the highest
# offered); a refusal must end in FAILURE and count one
# openaaa_eap_rejects_total reason, wrong_password.
eapol() {
	local label=$1 name=$2 want=${3:-keys} tlsv=${4:-} log=$work/eapol-$2.log t0 before result="" args=()
	[[ $want == keys ]] || args+=(-n)
	before=$(eap_rejects)
	t0=$(ms_now)
	if [[ $name == aka* || $name == sim ]]; then
		# The card: TS 35.208 set 1's Ki and OPc, its last SQN 1 (behind the subscriber file's 0x20).
		"$BIN/eapol-usim" -server "127.0.0.1:$AUTH_PORT" -secret-file "$work/nas-secret" -dir "$work" \
			-ki 465b5ce8b199b49faa5f0a2ee238a6bc -opc cd63cb71954a9f4e48a5994e37a02baf -sqn 1 \
			"$work/eapol-$name.network" "${args[@]}" >"$log" 2>&1 || true
	else
		"$EAPOL" "${args[@]}" -c "$work/eapol-$name.conf" -a 127.0.0.1 -p "$AUTH_PORT" -s "$secret" -t 10 -r 0 >"$log" 2>&1 || true
	fi
	case $want in
	keys)
		grep -q '^SUCCESS' "$log" && grep -q 'MPPE keys OK: 1  mismatch: 0' "$log" &&
			{ [[ -z $tlsv ]] || grep 'Using TLS version' "$log" | tail -1 | grep -q " $tlsv\$"; } && result="SUCCESS, MPPE keys OK${tlsv:+ ($tlsv)}" ;;
	nokeys) grep -q '^SUCCESS' "$log" && result="SUCCESS (EAP-MD5 derives no keys)" ;;
	refused)
		local reason
		reason=$({ diff <(echo "$before") <(eap_rejects) || true; } | sed -n 's/^> openaaa_eap_rejects_total{reason="\([a-z_]*\)"}.*/\1/p')
		grep -q '^FAILURE' "$log" && [[ $reason == wrong_password ]] && result="refused: $reason (Access-Reject)" ;;
	esac
	row "$label" "${result:-FAILED}" "$(($(ms_now) - t0)) ms"
	if [[ -z $result ]]; then
		failed=1
		tail -25 "$log" | sed 's/^/    /' >&2
	fi
}

tunnel() { # NAME EAP PHASE2 USER PASSWORD [LINE...]: PEAP or TTLS with an outer identity of anonymous
	network "$1" key_mgmt=WPA-EAP "eap=$2" "identity=\"$4\"" 'anonymous_identity="anonymous"' "password=\"$5\"" \
		"ca_cert=\"$work/eap/ca.pem\"" "phase2=\"auth=$3\"" "${@:6}"
}
tls() { # NAME 0|1: EAP-TLS as alice, tls_disable_tlsv1_3=0 allowing TLS 1.3
	network "$1" key_mgmt=WPA-EAP eap=TLS 'identity="alice"' "ca_cert=\"$work/eap/ca.pem\"" \
		"client_cert=\"$work/eap/client.pem\"" "private_key=\"$work/eap/client.key\"" "phase1=\"tls_disable_tlsv1_3=$2\""
}
usim() { # NAME EAP IDENTITY
	network "$1" key_mgmt=WPA-EAP "eap=$2" "identity=\"$3@wlan.mnc001.mcc001.3gppnetwork.org\""
}
tls tls12 1
tls tls13 0
tunnel peap PEAP MSCHAPV2 alice wonderland
tunnel peap13 PEAP MSCHAPV2 alice wonderland 'phase1="tls_disable_tlsv1_3=0"'
tunnel ttls-pap TTLS PAP alice wonderland
tunnel ttls-mschapv2 TTLS MSCHAPV2 User clientPass
network md5 key_mgmt=IEEE8021X eap=MD5 'identity="alice"' 'password="wonderland"'
usim sim SIM 1001010000000001
usim aka AKA 0001010000000001
usim aka-prime "AKA'" 6001010000000001
tunnel peap-wrong PEAP MSCHAPV2 alice not-wonderland
eapol "EAP-TLS (TLS 1.2)" tls12 keys TLSv1.2
eapol "EAP-TLS (TLS 1.3)" tls13 keys TLSv1.3
eapol "PEAP-MSCHAPv2" peap keys TLSv1.2
eapol "PEAP-MSCHAPv2 (TLS 1.3)" peap13 keys TLSv1.3
eapol "EAP-TTLS-PAP" ttls-pap
eapol "EAP-TTLS-MSCHAPv2 (NT hash)" ttls-mschapv2
eapol "EAP-MD5" md5 nokeys
eapol "EAP-SIM (test USIM)" sim
eapol "EAP-AKA (test USIM)" aka
eapol "EAP-AKA' (test USIM)" aka-prime
eapol "PEAP-MSCHAPv2, wrong password" peap-wrong refused

# MS-CHAPv2 without EAP: RFC 2759 §9.2's challenge and response; the Accept must carry the
# RFC's authenticator response and, decrypted by radclient, RFC 3079 §3.5.3's send key.
t0=$(ms_now)
printf '%s\n' 'User-Name = "User"' 'MS-CHAP-Challenge = 0x5B5D7C7D7B3F2F3E3C2C602132262628' \
	'MS-CHAP2-Response = 0x070021402324255E262A28295F2B3A337C7E000000000000000082309ECD8D708B5EA08FAA3981CD83544233114A3D85D6DF' \
	'Message-Authenticator = 0x00' |
	radclient -x -r 1 -t 3 "127.0.0.1:$AUTH_PORT" auth "$secret" >"$work/radclient.log" 2>&1 || true
result=""
grep -q 'Received Access-Accept' "$work/radclient.log" &&
	grep -qi 'MS-CHAP2-Success = 0x07533d34303741353538393131354644304436323039463531304645394330343536363933324344413536' "$work/radclient.log" &&
	grep -qi 'MS-MPPE-Send-Key = 0x8b7cdc149b993a1ba118cb153f56dccb' "$work/radclient.log" &&
	grep -qi 'MS-MPPE-Recv-Key = 0x[0-9a-f]\{32\}$' "$work/radclient.log" && result="Access-Accept, MS-CHAP2-Success, MPPE keys OK"
row "MS-CHAPv2 (radclient, no EAP)" "${result:-FAILED}" "$(($(ms_now) - t0)) ms"
if [[ -z $result ]]; then
	failed=1
	sed 's/^/    /' "$work/radclient.log" >&2
fi
if [[ $failed != 0 ]]; then
	echo "demo: an EAP or MS-CHAPv2 conversation did not end as expected (above)" >&2
	exit 1
fi
echo "==> stopping policing (SIGTERM: drain, snapshot)"
