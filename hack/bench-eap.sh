#!/usr/bin/env bash
# make bench-eap (docs/benchmarks.md, "EAP"): EAP-TLS and PEAP-MSCHAPv2 authentications per
# second, policing against FreeRADIUS 3.2 (Debian, its eap module), both on loopback with the
# same certificates (generated here with openssl), the same subscribers and TLS 1.2 without
# session resumption (every authentication is a full handshake). aaa-loadgen's EAP peer
# (--auth eap-tls | peap-mschapv2) runs the conversations, closed loop; each authentication
# is one transaction. Per method: one eapol_test conversation against each server (the real
# supplicant agrees with both), then BENCH_ROUNDS rounds alternating policing and FreeRADIUS;
# the table gives the medians, the ratio and the target (≥ 1.5 × FreeRADIUS). Every report is
# kept in $BENCH_OUT.
#
# Knobs (environment):
#   BENCH_DURATION=15s     every measured run
#   BENCH_WARMUP=3s        unmeasured run against each server before its method's rounds
#   BENCH_ROUNDS=3         A/B rounds per method (policing, FreeRADIUS, policing, ...)
#   BENCH_CONCURRENCY=16   conversations in flight (closed loop)
#   BENCH_USERS=1000       subscribers (user%05d / pass%05d, in both servers)
#   BENCH_METHODS="eap-tls peap-mschapv2"
#   BENCH_EAP_KEY=rsa2048  key of the CA, server and client certificates: rsa2048, rsa3072 or ec256
#   BENCH_FR_THREADS=4     FreeRADIUS worker threads (hack/freeradius.sh)
#   BENCH_SANITY=1         0: skip the eapol_test conversations
#   BENCH_PIN=all          all: each server on CPU 1, the generator on CPU 0 (taskset): both
#                          servers get the same one core and the generator's handshakes do not
#                          take from it; none: all three share the cores
#   BENCH_PROFILE=0        1: CPU profile of policing during its last run of each method
#                          ($BENCH_OUT/policing-<method>.cpu.pprof)
#   BENCH_OUT=$CACHE/bench-eap/<timestamp>
#   BENCH_BASE_PORT=28420  FreeRADIUS auth BASE; policing auth BASE+10; policing admin BASE+20
# About 5 minutes with the defaults: 2 methods × 3 rounds × 2 servers × 15 s, and the starts.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CACHE:-$HOME/.cache/openaaa}
BIN=${BIN:-$ROOT/bin}
DURATION=${BENCH_DURATION:-15s}
WARMUP=${BENCH_WARMUP:-3s}
ROUNDS=${BENCH_ROUNDS:-3}
CONC=${BENCH_CONCURRENCY:-16}
USERS=${BENCH_USERS:-1000}
METHODS=${BENCH_METHODS:-eap-tls peap-mschapv2}
KEY=${BENCH_EAP_KEY:-rsa2048}
FR_THREADS=${BENCH_FR_THREADS:-4}
SANITY=${BENCH_SANITY:-1}
PROFILE=${BENCH_PROFILE:-0}
PIN=${BENCH_PIN:-all}
OUT=${BENCH_OUT:-$CACHE/bench-eap/$(date +%Y%m%d-%H%M%S)}
BASE=${BENCH_BASE_PORT:-28420}
FR_PORT=$BASE
BASE_POL=$((BASE + 10))
ADMIN_PORT=$((BASE + 20))
SECRET=bench-secret-$$
BENCH_NAME=bench-eap
SERVER_NAME=radius.bench
CERT_USER=user00001 # the client certificate's CN: a subscriber of both servers

LOADGEN=$BIN/aaa-loadgen
POLICING=$BIN/policing
FR="$ROOT/hack/freeradius.sh"
export FREERADIUS_HOME=$OUT/freeradius
# shellcheck source=hack/bench-lib.sh
source "$ROOT/hack/bench-lib.sh"
# shellcheck source=hack/lib/admin-token.sh
source "$ROOT/hack/lib/admin-token.sh"
# shellcheck source=hack/lib/eap-certs.sh
source "$ROOT/hack/lib/eap-certs.sh"

die() { echo "$BENCH_NAME: $*" >&2; exit 1; }
[[ -x $LOADGEN && -x $POLICING ]] || die "build first (make build)"
[[ $ROUNDS -ge 1 ]] || die "BENCH_ROUNDS must be ≥ 1"
case $KEY in
rsa2048) NEWKEY=(-newkey rsa:2048) ;;
rsa3072) NEWKEY=(-newkey rsa:3072) ;;
ec256) NEWKEY=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1) ;;
*) die "BENCH_EAP_KEY: rsa2048, rsa3072 or ec256" ;;
esac
for m in $METHODS; do
	[[ $m == eap-tls || $m == peap-mschapv2 ]] || die "BENCH_METHODS: eap-tls and/or peap-mschapv2"
done
"$FR" install >/dev/null
EAPOL=""
if [[ $SANITY == 1 ]]; then
	EAPOL=$("$ROOT/hack/eapol.sh" path) || die "eapol_test missing (make eapoltest), or BENCH_SANITY=0"
fi

mkdir -p "$OUT/certs"
echo "$BENCH_NAME: reports in $OUT"
POL_PID="" FR_PID=""
# bench-lib's pin: both servers start under SERVER_PIN, the generator under GEN_PIN.
case $PIN in
all) pin on ;;
none) pin off ;;
*) die "BENCH_PIN: all or none" ;;
esac
[[ $PIN == none || ${#SERVER_PIN[@]} -gt 0 ]] || die "BENCH_PIN=all needs 2 cores and taskset (BENCH_PIN=none)"
cleanup() {
	[[ -z $POL_PID ]] || stop_policing
	"$FR" stop bench >/dev/null 2>&1 || true
}
trap cleanup EXIT INT TERM

# Certificates: a CA, the servers' certificate (both servers use it) and one client
# certificate for EAP-TLS, sent for every user.
C=$OUT/certs
eap_certs "$C" "$SERVER_NAME" "$CERT_USER" "${NEWKEY[@]}"

# Same subscribers in both servers.
BASE=$BASE_POL write_bench_config "{store: embedded}" "tokenFile: $OUT/admin-token, pprof: $([[ $PROFILE == 1 ]] && echo true || echo false)"
admin_token "$OUT"
"$LOADGEN" subscribers --users "$USERS" --freeradius "$OUT/users" >/dev/null
cp "$OUT/policing.yaml" "$OUT/policing-base.yaml"

machine() {
	echo "machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -sr); load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "freeradius: $(/usr/sbin/freeradius -v 2>/dev/null | sed -n '1s/.*Version \([0-9.]*\).*/\1/p') ($(openssl version | cut -d' ' -f1-2)), $FR_THREADS threads, eap module; policing: $("$POLICING" version 2>/dev/null | head -1) ($(go version "$POLICING" 2>/dev/null | awk '{print $2}'))"
	echo "load: aaa-loadgen --mode auth, closed loop, concurrency $CONC, $DURATION per run (+$WARMUP warm-up per server and method), $ROUNDS rounds, $USERS users; TLS 1.2, no resumption, $KEY certificates; pinning: $([[ $PIN == all ]] && echo "servers on CPU 1, generator on CPU 0" || echo none)"
}
machine | tee "$OUT/machine.txt"

# method_type METHOD: the EAP type's name in both servers' configurations.
method_type() { [[ $1 == eap-tls ]] && echo tls || echo peap; }

# configure METHOD: both servers propose METHOD first (no Nak round).
configure() {
	local t; t=$(method_type "$1")
	cp "$OUT/policing-base.yaml" "$OUT/policing.yaml"
	cat >>"$OUT/policing.yaml" <<EOF
eap:
  methods: [$t, $([[ $t == tls ]] && echo peap || echo tls)]
  certFile: $C/server.pem
  keyFile: $C/server.key
  caFile: $C/ca.pem
  tlsMaxVersion: "1.2"
  nodeID: bench
  maxConversations: 100000
EOF
	"$FR" config bench --port "$FR_PORT" --users "$OUT/users" --secret "$SECRET" --threads "$FR_THREADS" \
		--eap-cert "$C/server.pem" --eap-key "$C/server.key" --eap-ca "$C/ca.pem" --eap-default "$t" >/dev/null
}

# sanity METHOD SERVER PORT: one eapol_test conversation; the bench stops if it fails.
sanity() {
	local conf=$OUT/eapol-$1.conf
	if [[ $1 == eap-tls ]]; then
		printf 'network={\n key_mgmt=WPA-EAP\n eap=TLS\n identity="%s"\n ca_cert="%s"\n client_cert="%s"\n private_key="%s"\n}\n' \
			"$CERT_USER" "$C/ca.pem" "$C/client.pem" "$C/client.key" >"$conf"
	else
		printf 'network={\n key_mgmt=WPA-EAP\n eap=PEAP\n identity="user00002"\n password="pass00002"\n ca_cert="%s"\n phase2="auth=MSCHAPV2"\n}\n' \
			"$C/ca.pem" >"$conf"
	fi
	if timeout 60 "$EAPOL" -c "$conf" -a 127.0.0.1 -p "$3" -s "$SECRET" -t 20 -r 0 >"$OUT/eapol-$1-$2.log" 2>&1 &&
		grep -q '^SUCCESS' "$OUT/eapol-$1-$2.log"; then
		echo "$BENCH_NAME: eapol_test $1 against $2: SUCCESS"
	else
		tail -20 "$OUT/eapol-$1-$2.log" >&2
		die "eapol_test $1 against $2 failed ($OUT/eapol-$1-$2.log)"
	fi
}

lg() { # METHOD PORT ARGS...
	local m=$1 port=$2; shift 2
	"${GEN_PIN[@]}" "$LOADGEN" run --target "127.0.0.1:$port" --secret-file "$OUT/secret" --mode auth --auth "$m" --users "$USERS" \
		--require-reply-ma --eap-ca "$C/ca.pem" --eap-server-name "$SERVER_NAME" --eap-cert "$C/client.pem" --eap-key "$C/client.key" \
		--concurrency "$CONC" --timeout 2s --quiet "$@"
}

for m in $METHODS; do
	configure "$m"
	start_policing
	FR_PID=$("${SERVER_PIN[@]}" "$FR" start bench)
	if [[ $SANITY == 1 ]]; then
		sanity "$m" policing "$BASE_POL"
		sanity "$m" freeradius "$FR_PORT"
	fi
	lg "$m" "$BASE_POL" --duration "$WARMUP" >/dev/null
	lg "$m" "$FR_PORT" --duration "$WARMUP" >/dev/null
	for r in $(seq 1 "$ROUNDS"); do
		prof=""
		if [[ $PROFILE == 1 && $r == "$ROUNDS" ]]; then
			secs=${DURATION%s}
			curl -fsS -H @"$OUT/admin-header" -o "$OUT/policing-$m.cpu.pprof" "http://127.0.0.1:$ADMIN_PORT/debug/pprof/profile?seconds=${secs%.*}" &
			prof=$!
		fi
		lg "$m" "$BASE_POL" --duration "$DURATION" --label "policing-$m" --server-pid "$POL_PID" \
			--json-out "$OUT/policing-$m-$r.json" --text-out "$OUT/policing-$m-$r.txt" >/dev/null
		[[ -z $prof ]] || wait "$prof" || true
		echo "$BENCH_NAME: $("$LOADGEN" summary "$OUT/policing-$m-$r.json")"
		lg "$m" "$FR_PORT" --duration "$DURATION" --label "freeradius-$m" --server-pid "$FR_PID" \
			--json-out "$OUT/freeradius-$m-$r.json" --text-out "$OUT/freeradius-$m-$r.txt" >/dev/null
		echo "$BENCH_NAME: $("$LOADGEN" summary "$OUT/freeradius-$m-$r.json")"
	done
	curl -fsS "http://127.0.0.1:$ADMIN_PORT/metrics" | grep -E '^openaaa_eap_' >"$OUT/policing-$m-metrics.txt" || true
	stop_policing
	"$FR" stop bench >/dev/null
	FR_PID=""
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/machine.txt"

python3 - "$OUT" "$METHODS" <<'EOF' | tee "$OUT/report.md"
import glob, json, statistics, sys
out, methods = sys.argv[1], sys.argv[2].split()
def runs(server, m):
    return [json.load(open(p)) for p in sorted(glob.glob(f"{out}/{server}-{m}-*.json"))]
def med(rs, f):
    v = [f(r) for r in rs]
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None
def fmt(x, spec):
    return "–" if x is None else format(x, spec)
print()
print(open(f"{out}/machine.txt").read().rstrip())
print()
print("| method | server | auth/s (median) | rounds/s | rounds/auth | avg auth ms | p99 ms | server CPU µs/auth | failures | ratio | target |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for m in methods:
    res = {}
    for s in ("policing", "freeradius"):
        rs = runs(s, m)
        res[s] = dict(
            tps=med(rs, lambda r: r["accepts"] / r["seconds"] if r["seconds"] else 0),
            rounds=med(rs, lambda r: r.get("eapRoundsPerSecond", 0)),
            per=med(rs, lambda r: r.get("eapRounds", 0) / max(r["sent"], 1)),
            avg=med(rs, lambda r: r["avgAuthMs"]),
            p99=med(rs, lambda r: r["latency"]["all"]["p99Ms"]),
            cpu=med(rs, lambda r: r.get("cpuMicrosPerTransaction")),
            fail=sum(r["rejects"] + r["errors"] + r["timeouts"] for r in rs),
            n=len(rs))
    p, f = res["policing"], res["freeradius"]
    ratio = p["tps"] / f["tps"] if f["tps"] else None
    for s, x in (("policing", p), ("FreeRADIUS 3.2", f)):
        last = s == "policing"
        print(f"| {m} | {s} | {fmt(x['tps'], ',.0f')} | {fmt(x['rounds'], ',.0f')} | {fmt(x['per'], '.1f')} | {fmt(x['avg'], '.1f')} | {fmt(x['p99'], '.1f')} | {fmt(x['cpu'], ',.0f')} | {x['fail']} |"
              + (f" **{fmt(ratio, '.2f')}×** | ≥ 1.5× {'met' if ratio and ratio >= 1.5 else 'missed'} |" if last else " | |"))
print()
print("auth/s: accepted authentications per second (each a full EAP conversation); CPU: the server process's CPU per authentication; failures: rejects + errors + timeouts over all rounds. Anchor: an appliance of a leading vendor does ~300 EAP-TLS auth/s.")
EOF
