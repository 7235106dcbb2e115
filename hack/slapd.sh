#!/usr/bin/env bash
# OpenLDAP slapd 2.5 (Debian) as a test peer for the LDAP subscriber source, on loopback,
# without touching /etc/ldap/slapd.d: every instance is a self-contained directory under
# $SLAPD_HOME/<name> (default $CACHE/slapd/<name>) with a hand-written slapd.conf (back_mdb),
# started and stopped by PID.
#
#   hack/slapd.sh install                     apt-get install slapd ldap-utils (idempotent; no default database)
#   hack/slapd.sh config NAME [options]       write the instance: slapd.conf, schema, TLS files, passwords
#   hack/slapd.sh start NAME                  start slapd in the background, wait until it answers; prints its PID
#   hack/slapd.sh load NAME COUNT             add the base entries (once) and subscribers user00001..COUNT with ldapadd
#   hack/slapd.sh stop NAME                   stop it (by the PID it was started with)
#   hack/slapd.sh pid NAME | status NAME      print the PID / "running PID" or "stopped"
#   hack/slapd.sh url NAME                    print ldap://127.0.0.1:PORT (and ldaps://... on a second line)
#   hack/slapd.sh dir NAME                    print the instance directory
#   hack/slapd.sh clean NAME                  stop and remove the instance directory
#
# config options:
#   --port N         ldap:// port (plain and StartTLS), default 3890
#   --ldaps-port N   ldaps:// port, default: none
#
# The directory (suffix dc=openaaa,dc=test):
#   cn=admin,dc=openaaa,dc=test              rootdn, password in DIR/root-password
#   cn=policing,ou=services,dc=openaaa,...   the service account policing binds as (password in
#                                            DIR/bind-password); the only one allowed to read userPassword
#   uid=userNNNNN,ou=subscribers,...         inetOrgPerson + openaaaSubscriber (DIR/openaaa.schema):
#                                            userPassword pwNNNNN, a fixed Framed-IP, rate limit,
#                                            Session-Timeout, Class and a Framed-MTU reply attribute;
#                                            every 100th subscriber is disabled
# TLS: DIR/tls/ca.crt signs DIR/tls/server.crt (SAN 127.0.0.1, localhost), used for StartTLS and
# LDAPS; clients verify with --ca-file DIR/tls/ca.crt.
set -euo pipefail

CACHE=${CACHE:-$HOME/.cache/openaaa}
SLAPD_HOME=${SLAPD_HOME:-$CACHE/slapd}
SLAPD_BIN=${SLAPD_BIN:-/usr/sbin/slapd}
SUFFIX="dc=openaaa,dc=test"

die() { echo "slapd.sh: $*" >&2; exit 1; }
# shellcheck source=lib/apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/apt.sh"
INSTANCE_HOME=$SLAPD_HOME
# shellcheck source=lib/instance.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/instance.sh"
usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }

pid_of() { proc_pid "$1/run/slapd.pid"; }

cmd_install() {
	if [[ -x $SLAPD_BIN ]] && command -v ldapadd >/dev/null && command -v ldapsearch >/dev/null; then
		echo "slapd: installed ($(dpkg-query -W -f '${Version}' slapd 2>/dev/null || echo '?'))"
		return 0
	fi
	[[ $(id -u) -eq 0 ]] || die "installing slapd needs root (apt-get)"
	# No default database: every test instance has its own slapd.conf.
	echo "slapd slapd/no_configuration boolean true" | debconf-set-selections
	apt_install slapd ldap-utils
	# Services do not start on install here; make sure no system slapd holds a port anyway.
	if [[ -f /run/slapd/slapd.pid ]]; then
		kill "$(cat /run/slapd/slapd.pid)" 2>/dev/null || true
	fi
	echo "slapd: installed ($(dpkg-query -W -f '${Version}' slapd))"
}

write_schema() {
	# A small auxiliary class for the RADIUS profile. OIDs are under OpenLDAP's experimental
	# arc (1.3.6.1.4.1.4203.666): fine for tests; a production directory uses its own arc.
	cat >"$1" <<'EOF'
attributetype ( 1.3.6.1.4.1.4203.666.11.70.1.1 NAME 'openaaaFramedIPAddress'
	DESC 'Framed-IP-Address (IPv4)' EQUALITY caseIgnoreIA5Match
	SYNTAX 1.3.6.1.4.1.1466.115.121.1.26 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.666.11.70.1.2 NAME 'openaaaFramedPool'
	DESC 'Framed-Pool' EQUALITY caseExactMatch
	SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.666.11.70.1.3 NAME 'openaaaSessionTimeout'
	DESC 'Session-Timeout (s)' EQUALITY integerMatch
	SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.666.11.70.1.4 NAME 'openaaaIdleTimeout'
	DESC 'Idle-Timeout (s)' EQUALITY integerMatch
	SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.666.11.70.1.5 NAME 'openaaaAcctInterimInterval'
	DESC 'Acct-Interim-Interval (s)' EQUALITY integerMatch
	SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.666.11.70.1.6 NAME 'openaaaClass'
	DESC 'Class' EQUALITY caseExactMatch
	SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.666.11.70.1.7 NAME 'openaaaFilterId'
	DESC 'Filter-Id' EQUALITY caseExactMatch
	SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.666.11.70.1.8 NAME 'openaaaRateLimit'
	DESC 'rate limit sent in policy.rateLimitAttribute' EQUALITY caseExactMatch
	SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.666.11.70.1.9 NAME 'openaaaQuotaOctets'
	DESC 'quota in octets (input+output)' EQUALITY integerMatch
	SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.666.11.70.1.10 NAME 'openaaaReplyAttribute'
	DESC 'extra reply attribute, Name=value' EQUALITY caseExactMatch
	SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )
attributetype ( 1.3.6.1.4.1.4203.666.11.70.1.11 NAME 'openaaaDisabled'
	DESC 'TRUE: access rejected' EQUALITY booleanMatch
	SYNTAX 1.3.6.1.4.1.1466.115.121.1.7 SINGLE-VALUE )
objectclass ( 1.3.6.1.4.1.4203.666.11.70.2.1 NAME 'openaaaSubscriber'
	DESC 'OpenAAA subscriber RADIUS profile' SUP top AUXILIARY
	MAY ( openaaaFramedIPAddress $ openaaaFramedPool $ openaaaSessionTimeout $
	      openaaaIdleTimeout $ openaaaAcctInterimInterval $ openaaaClass $ openaaaFilterId $
	      openaaaRateLimit $ openaaaQuotaOctets $ openaaaReplyAttribute $ openaaaDisabled ) )
EOF
}

write_tls() {
	local tls=$1
	[[ -f $tls/server.crt && -f $tls/ca.crt ]] && return 0
	mkdir -p "$tls"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 -subj "/CN=OpenAAA test CA" \
		-keyout "$tls/ca.key" -out "$tls/ca.crt" \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=localhost" \
		-keyout "$tls/server.key" -out "$tls/server.csr" 2>/dev/null
	printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n' >"$tls/ext.cnf"
	openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.crt" -CAkey "$tls/ca.key" -CAcreateserial \
		-days 3650 -extfile "$tls/ext.cnf" -out "$tls/server.crt" 2>/dev/null
	chmod 600 "$tls"/*.key
}

cmd_config() {
	local name=${1:-}; shift || true
	local dir; dir=$(instance_dir "$name")
	local port=3890 ldaps_port=""
	while [[ $# -gt 0 ]]; do
		case $1 in
		--port) port=$2; shift 2 ;;
		--ldaps-port) ldaps_port=$2; shift 2 ;;
		*) die "config: unknown option $1" ;;
		esac
	done
	[[ $port =~ ^[0-9]+$ ]] || die "config: bad --port $port"
	[[ -z $ldaps_port || $ldaps_port =~ ^[0-9]+$ ]] || die "config: bad --ldaps-port $ldaps_port"
	mkdir -p "$dir/data" "$dir/run" "$dir/log"
	[[ -f $dir/root-password ]] || head -c 12 /dev/urandom | base64 | tr -d '/+=\n' >"$dir/root-password"
	[[ -f $dir/bind-password ]] || head -c 12 /dev/urandom | base64 | tr -d '/+=\n' >"$dir/bind-password"
	chmod 600 "$dir/root-password" "$dir/bind-password"
	write_schema "$dir/openaaa.schema"
	write_tls "$dir/tls"
	local rootpw; rootpw=$(cat "$dir/root-password")
	cat >"$dir/slapd.conf" <<EOF
# Written by hack/slapd.sh: a test instance on loopback.
include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
include $dir/openaaa.schema

pidfile  $dir/run/slapd-self.pid
argsfile $dir/run/slapd.args
modulepath /usr/lib/ldap
moduleload back_mdb

TLSCACertificateFile  $dir/tls/ca.crt
TLSCertificateFile    $dir/tls/server.crt
TLSCertificateKeyFile $dir/tls/server.key

sizelimit 500
timelimit 10

database mdb
suffix   "$SUFFIX"
rootdn   "cn=admin,$SUFFIX"
rootpw   $rootpw
directory $dir/data
maxsize  1073741824
# Test data: no fsync per write (a 3,000-entry ldapadd takes 12 s with it, ~1 s without).
dbnosync
index objectClass eq
index uid eq

# Only the service account reads passwords (clear text: CHAP needs them).
access to attrs=userPassword
	by dn.exact="cn=policing,ou=services,$SUFFIX" read
	by anonymous auth
	by * none
access to *
	by dn.exact="cn=policing,ou=services,$SUFFIX" read
	by users read
	by * none
EOF
	local urls="ldap://127.0.0.1:$port/"
	[[ -n $ldaps_port ]] && urls="$urls ldaps://127.0.0.1:$ldaps_port/"
	printf 'PORT=%s\nLDAPS_PORT=%s\nURLS="%s"\n' "$port" "$ldaps_port" "$urls" >"$dir/env"
	"$SLAPD_BIN" -T test -f "$dir/slapd.conf" -u >/dev/null 2>"$dir/log/config-test.log" ||
		{ cat "$dir/log/config-test.log" >&2; die "config: slaptest rejected $dir/slapd.conf"; }
	echo "$dir"
}

cmd_start() {
	local dir; dir=$(instance_dir "${1:-}")
	[[ -f $dir/slapd.conf ]] || die "start: no config in $dir (run: $0 config ${1:-})"
	[[ -x $SLAPD_BIN ]] || die "start: $SLAPD_BIN not installed (run: $0 install)"
	if pid=$(pid_of "$dir"); then
		echo "$pid"
		return 0
	fi
	# shellcheck disable=SC1091
	source "$dir/env"
	# -d 0: stay in the foreground (so $! is slapd itself) and log nothing but errors.
	"$SLAPD_BIN" -d 0 -f "$dir/slapd.conf" -h "$URLS" </dev/null >>"$dir/log/slapd.log" 2>&1 &
	local pid=$!
	echo "$pid" >"$dir/run/slapd.pid"
	proc_wait_ready "$pid" "$dir/run/slapd.pid" slapd "$dir/log/slapd.log" -- \
		ldapsearch -x -LLL -o nettimeout=1 -H "ldap://127.0.0.1:$PORT" -b "" -s base namingContexts
}

cmd_stop() {
	local dir; dir=$(instance_dir "${1:-}")
	proc_stop "$dir/run/slapd.pid" 100
}

# gen_ldif FROM TO: subscribers userFROM..userTO (5 digits).
gen_ldif() {
	awk -v from="$1" -v to="$2" -v suffix="$SUFFIX" 'BEGIN {
		for (i = from; i <= to; i++) {
			u = sprintf("user%05d", i)
			printf "dn: uid=%s,ou=subscribers,%s\n", u, suffix
			printf "objectClass: inetOrgPerson\nobjectClass: openaaaSubscriber\n"
			printf "uid: %s\ncn: %s\nsn: subscriber\n", u, u
			printf "userPassword: pw%05d\n", i
			printf "openaaaFramedIPAddress: 10.%d.%d.%d\n", 64 + int(i / 65536), int(i / 256) % 256, i % 256
			printf "openaaaRateLimit: %dM/%dM\n", 10 * (1 + i % 4), 10 * (1 + i % 4)
			printf "openaaaSessionTimeout: 3600\nopenaaaAcctInterimInterval: 300\n"
			printf "openaaaClass: ldap-%s\n", (i % 2 ? "gold" : "silver")
			printf "openaaaReplyAttribute: Framed-MTU=1492\n"
			if (i % 100 == 0) printf "openaaaDisabled: TRUE\n"
			printf "\n"
		}
	}'
}

cmd_load() {
	local dir; dir=$(instance_dir "${1:-}")
	local count=${2:-}
	[[ $count =~ ^[0-9]+$ ]] || die "load: COUNT must be a number"
	pid_of "$dir" >/dev/null || die "load: slapd ${1:-} is not running (run: $0 start ${1:-})"
	# shellcheck disable=SC1091
	source "$dir/env"
	local auth=(-x -H "ldap://127.0.0.1:$PORT" -D "cn=admin,$SUFFIX" -y "$dir/root-password")
	if ! ldapsearch "${auth[@]}" -LLL -b "$SUFFIX" -s base dn >/dev/null 2>&1; then
		local bindpw; bindpw=$(cat "$dir/bind-password")
		ldapadd "${auth[@]}" >/dev/null <<EOF
dn: $SUFFIX
objectClass: dcObject
objectClass: organization
dc: openaaa
o: OpenAAA test

dn: ou=subscribers,$SUFFIX
objectClass: organizationalUnit
ou: subscribers

dn: ou=services,$SUFFIX
objectClass: organizationalUnit
ou: services

dn: cn=policing,ou=services,$SUFFIX
objectClass: organizationalRole
objectClass: simpleSecurityObject
cn: policing
userPassword: $bindpw
EOF
	fi
	# Add only what is missing (a second load with a larger COUNT adds the rest).
	local have
	have=$(ldapsearch "${auth[@]}" -LLL -z 0 -b "ou=subscribers,$SUFFIX" -s one '(uid=*)' 1.1 2>/dev/null | grep -c '^dn:' || true)
	if ((have >= count)); then
		echo "slapd: $have subscribers loaded"
		return 0
	fi
	gen_ldif $((have + 1)) "$count" >"$dir/subscribers.ldif"
	ldapadd "${auth[@]}" -f "$dir/subscribers.ldif" >/dev/null
	echo "slapd: $count subscribers loaded"
}

cmd=${1:-help}
shift || true
case $cmd in
load) cmd_load "$@" ;;
url)
	dir=$(instance_dir "${1:-}")
	[[ -f $dir/env ]] || die "url: no config in $dir"
	# shellcheck disable=SC1091
	source "$dir/env"
	echo "ldap://127.0.0.1:$PORT"
	if [[ -n $LDAPS_PORT ]]; then echo "ldaps://127.0.0.1:$LDAPS_PORT"; fi
	;;
*) instance_command "$cmd" "$@" ;;
esac
