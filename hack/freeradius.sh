#!/usr/bin/env bash
# FreeRADIUS 3.2 (Debian) as a reference and test peer, on loopback, without touching
# /etc/freeradius: every instance is a self-contained config directory under
# $FREERADIUS_HOME/<name> (default $CACHE/freeradius/<name>) started and stopped by PID.
#
#   hack/freeradius.sh install                      apt-get install freeradius freeradius-utils (idempotent)
#   hack/freeradius.sh config NAME [options]        write the config directory of instance NAME
#   hack/freeradius.sh start NAME                   start it in the background; prints its PID
#   hack/freeradius.sh stop NAME                    stop it (by the PID it was started with)
#   hack/freeradius.sh pid NAME | status NAME       print the PID / "running PID" or "stopped"
#   hack/freeradius.sh check NAME                   freeradius -C on the config (syntax check)
#   hack/freeradius.sh dir NAME                     print the instance directory
#   hack/freeradius.sh clean NAME                   stop and remove the instance directory
#
# Roles (config --role):
#   server  (default) authentication with the `files` users file (PAP, CHAP, MS-CHAP) on PORT and
#           accounting into detail files on PORT+1: the reference for `make bench`.
#   acct    an upstream accounting server on PORT (detail files), for accounting-proxy tests.
#   coa     a NAS-side CoA/Disconnect receiver on PORT (default 3799): ACKs every CoA-Request
#           and Disconnect-Request and logs each one to $DIR/radacct/coa/detail, so a test can
#           read what it received. `--coa-nak` makes it answer NAK instead; `--coa-sessions RE`
#           makes it NAK (Error-Cause Session-Context-Not-Found) requests whose Acct-Session-Id
#           does not match the regular expression RE, as a NAS does for a session it lacks.
#   radsec-proxy  a proxy that takes auth on PORT and accounting on PORT+1 (UDP, e.g. from
#           radclient) and forwards everything over RADIUS/TLS (RadSec, RFC 6614) to the home
#           server --home HOST:PORT with client certificate --tls-cert/--tls-key, verifying the
#           home server against --tls-ca: a real RadSec client for policing's RadSec port.
#
# config options:
#   --role server|acct|coa|radsec-proxy   see above
#   --port N                 auth port (server, radsec-proxy), accounting port (acct), CoA port (coa);
#                            default 18120 / 18130 / 3799 / 18140
#   --address IP             listen address (default 127.0.0.1; only loopback addresses are used here)
#   --secret S               shared secret of the client (default testing123)
#   --client CIDR            client network allowed (default 127.0.0.0/8)
#   --users FILE             `files` users file to copy in (server role; default: empty)
#   --threads N              worker threads (default 4: see below)
#   --require-ma             require Message-Authenticator from the client (default no)
#   --no-detail              answer accounting without writing detail files
#   --coa-nak                coa role: NAK everything
#   --coa-sessions RE        coa role: NAK sessions whose Acct-Session-Id does not match RE
#   --home HOST:PORT         radsec-proxy role: the RadSec home server (e.g. 127.0.0.1:2083)
#   --tls-cert F --tls-key F --tls-ca F   radsec-proxy role: client certificate, key, CA (PEM)
#   --eap-cert F --eap-key F --eap-ca F   server role: also EAP (the eap module: EAP-TLS with
#                            client certificates chaining to the CA, PEAP with MS-CHAPv2 inside
#                            against the users file, in the inner-tunnel server), TLS 1.2, no
#                            session cache — hack/bench-eap.sh
#   --eap-default TYPE       server role: the EAP method proposed first (tls, peap; default tls)
#
# Threads: FreeRADIUS 3 reads every socket in one network thread and hands each request to a
# pool of worker threads. On 2 cores, 4 workers (2 per core) keep both cores busy while a
# worker waits on the detail file's write; more workers only add lock contention and context
# switches (measured in docs/benchmarks.md). max_requests is raised to 1,048,576: the default
# (16,384 = 1024 × threads) makes FreeRADIUS drop above ~3k requests/s, because requests are
# kept for cleanup_delay (5 s) to answer retransmissions.
set -euo pipefail

CACHE=${CACHE:-$HOME/.cache/openaaa}
FREERADIUS_HOME=${FREERADIUS_HOME:-$CACHE/freeradius}
FREERADIUS_BIN=${FREERADIUS_BIN:-/usr/sbin/freeradius}

die() { echo "freeradius.sh: $*" >&2; exit 1; }
# shellcheck source=lib/apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/apt.sh"
INSTANCE_HOME=$FREERADIUS_HOME
# shellcheck source=lib/instance.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/instance.sh"
usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }

cmd_install() {
	if command -v "$FREERADIUS_BIN" >/dev/null && command -v radclient >/dev/null; then
		echo "freeradius: installed ($("$FREERADIUS_BIN" -v 2>/dev/null | sed -n '1s/.*Version \([0-9.]*\).*/\1/p'))"
		return 0
	fi
	apt_install freeradius freeradius-utils
	# Debian enables the system service but does not start it in containers (policy-rc.d);
	# our instances listen on their own ports anyway, never 1812/1813 unless asked.
	echo "freeradius: installed"
}

# coa_session_check RE: unlang that NAKs a CoA/Disconnect whose Acct-Session-Id does not
# match RE (nothing when RE is empty).
coa_session_check() {
	[[ -n $1 ]] || return 0
	cat <<EOF
		if (!&Acct-Session-Id || &Acct-Session-Id !~ /$1/) {
			update reply {
				&Error-Cause := Session-Context-Not-Found
			}
			reject
		}
EOF
}

# listen_section TYPE ADDRESS PORT [SERVER]: a listen section that hands TYPE (auth, acct, coa)
# packets on ADDRESS:PORT to the virtual server SERVER (default "default").
listen_section() {
	cat <<EOF
listen {
	type = $1
	ipaddr = $2
	port = $3
	virtual_server = ${4:-default}
}
EOF
}

# radsec_proxy_config ADDRESS PORT HOME CERT KEY CA: listeners and a TLS home server.
radsec_proxy_config() {
	local address=$1 port=$2 home=$3 cert=$4 key=$5 ca=$6
	cat <<EOF

# Everything goes to the RadSec home server; FreeRADIUS is the TLS client.
proxy_requests = yes
proxy server {
	default_fallback = no
}
home_server radsec {
	ipaddr = ${home%:*}
	port = ${home##*:}
	type = auth+acct
	proto = tcp
	secret = radsec
	response_window = 10
	status_check = none
	tls {
		private_key_file = $key
		certificate_file = $cert
		ca_file = $ca
		random_file = /dev/urandom
		fragment_size = 8192
		check_crl = no
		tls_min_version = "1.2"
	}
}
home_server_pool radsec {
	type = fail-over
	home_server = radsec
}
realm radsec {
	auth_pool = radsec
	acct_pool = radsec
}

$(listen_section auth "$address" "$port")
$(listen_section acct "$address" $((port + 1)))

server default {
	authorize {
		update control {
			&Proxy-To-Realm := "radsec"
		}
	}
	authenticate {
	}
	preacct {
		update control {
			&Proxy-To-Realm := "radsec"
		}
	}
	accounting {
		ok
	}
	post-auth {
		ok
	}
}
EOF
}

# eap_module CERT KEY CA DEFAULT: the eap module (nothing without CERT), as Debian's
# mods-available/eap for tls and peap, without a session cache (every handshake is full).
eap_module() {
	[[ -n $1 ]] || return 0
	cat <<EOF
	eap {
		default_eap_type = $4
		timer_expire = 60
		ignore_unknown_eap_types = no
		cisco_accounting_username_bug = no
		max_sessions = \${max_requests}
		tls-config tls-common {
			private_key_file = $2
			certificate_file = $1
			ca_file = $3
			cipher_list = "DEFAULT"
			cipher_server_preference = no
			tls_min_version = "1.2"
			tls_max_version = "1.2"
			ecdh_curve = ""
			fragment_size = 1024
			cache {
				enable = no
			}
			verify {
			}
			ocsp {
				enable = no
			}
		}
		tls {
			tls = tls-common
		}
		peap {
			tls = tls-common
			default_eap_type = mschapv2
			copy_request_to_tunnel = no
			use_tunneled_reply = no
			virtual_server = "inner-tunnel"
		}
		mschapv2 {
		}
	}
EOF
}

# eap_inner_tunnel: PEAP's inner server — EAP-MSCHAPv2 against the users file.
eap_inner_tunnel() {
	cat <<EOF

server inner-tunnel {
	authorize {
		mschap
		files
		eap {
			ok = return
		}
	}
	authenticate {
		Auth-Type MS-CHAP {
			mschap
		}
		eap
	}
	post-auth {
		ok
	}
}
EOF
}

cmd_config() {
	local name=${1:-}; shift || true
	local dir; dir=$(instance_dir "$name")
	local role=server port="" address=127.0.0.1 secret=testing123 client=127.0.0.0/8 users="" threads=4
	local require_ma=no detail=yes coa_result=ok coa_sessions=""
	local home="" tls_cert="" tls_key="" tls_ca=""
	local eap_cert="" eap_key="" eap_ca="" eap_default=tls
	while [[ $# -gt 0 ]]; do
		case $1 in
		--role) role=$2; shift 2 ;;
		--port) port=$2; shift 2 ;;
		--address) address=$2; shift 2 ;;
		--secret) secret=$2; shift 2 ;;
		--client) client=$2; shift 2 ;;
		--users) users=$2; shift 2 ;;
		--threads) threads=$2; shift 2 ;;
		--require-ma) require_ma=yes; shift ;;
		--no-detail) detail=no; shift ;;
		--coa-nak) coa_result=reject; shift ;;
		--coa-sessions) coa_sessions=$2; shift 2 ;;
		--home) home=$2; shift 2 ;;
		--tls-cert) tls_cert=$2; shift 2 ;;
		--tls-key) tls_key=$2; shift 2 ;;
		--tls-ca) tls_ca=$2; shift 2 ;;
		--eap-cert) eap_cert=$2; shift 2 ;;
		--eap-key) eap_key=$2; shift 2 ;;
		--eap-ca) eap_ca=$2; shift 2 ;;
		--eap-default) eap_default=$2; shift 2 ;;
		*) die "config: unknown option $1" ;;
		esac
	done
	case $role in
	server) port=${port:-18120} ;;
	acct) port=${port:-18130} ;;
	coa) port=${port:-3799} ;;
	radsec-proxy)
		port=${port:-18140}
		[[ $home =~ ^[0-9.]+:[0-9]+$ ]] || die "config: radsec-proxy needs --home IP:PORT"
		[[ -f $tls_cert && -f $tls_key && -f $tls_ca ]] || die "config: radsec-proxy needs --tls-cert, --tls-key and --tls-ca files"
		;;
	*) die "config: unknown role $role (server, acct, coa, radsec-proxy)" ;;
	esac
	[[ $threads =~ ^[0-9]+$ && $threads -ge 1 ]] || die "config: bad --threads $threads"
	if [[ -n $eap_cert ]]; then
		[[ $role == server ]] || die "config: --eap-cert is for the server role"
		[[ -f $eap_cert && -f $eap_key && -f $eap_ca ]] || die "config: EAP needs --eap-cert, --eap-key and --eap-ca files"
		[[ $eap_default =~ ^(tls|peap)$ ]] || die "config: --eap-default tls or peap"
	fi
	if [[ -f $dir/run/radiusd.pid ]] && kill -0 "$(cat "$dir/run/radiusd.pid")" 2>/dev/null; then
		die "config: instance $name is running; stop it first"
	fi
	mkdir -p "$dir"/{log,run,radacct,mods-config}
	rm -rf "$dir/radacct"/* "$dir/log"/*
	: >"$dir/dictionary"
	if [[ -n $users ]]; then
		cp "$users" "$dir/users"
	elif [[ ! -f $dir/users ]]; then
		: >"$dir/users"
	fi
	local detail_call="detail"
	[[ $detail == yes ]] || detail_call="ok"

	cat >"$dir/radiusd.conf" <<EOF
# Generated by hack/freeradius.sh config $name (role $role). Self-contained: only the
# dictionaries and modules of the Debian package are used from outside this directory.
prefix = /usr
exec_prefix = /usr
sysconfdir = /etc
localstatedir = /var
sbindir = /usr/sbin
raddbdir = $dir
confdir = \${raddbdir}
modconfdir = \${confdir}/mods-config
logdir = \${raddbdir}/log
radacctdir = \${raddbdir}/radacct
run_dir = \${raddbdir}/run
db_dir = \${raddbdir}
certdir = \${confdir}
cadir = \${confdir}
libdir = /usr/lib/freeradius
name = radiusd
pidfile = \${run_dir}/radiusd.pid

max_request_time = 30
cleanup_delay = 5
# The default (1024 × threads) drops above ~3k requests/s: requests stay in memory for
# cleanup_delay seconds to answer retransmissions.
max_requests = 1048576
hostname_lookups = no

log {
	destination = files
	file = \${logdir}/radius.log
	colourise = no
	syslog_facility = daemon
	stripped_names = no
	auth = no
	auth_badpass = no
	auth_goodpass = no
}

security {
	allow_core_dumps = no
	max_attributes = 200
	reject_delay = 0
	status_server = yes
	allow_vulnerable_openssl = yes
}

thread pool {
	start_servers = $threads
	max_servers = $threads
	min_spare_servers = $threads
	max_spare_servers = $threads
	max_requests_per_server = 0
	auto_limit_acct = no
	max_queue_size = 65536
}

client loadgen {
	ipaddr = $client
	secret = $secret
	require_message_authenticator = $require_ma
	shortname = loadgen
	nas_type = other
}

modules {
	pap {
		normalise = yes
	}
	chap {
	}
	# MS-CHAPv2 (and v1) from Cleartext-Password, with MPPE keys: the reference for
	# policing's MS-CHAPv2 (rlm_mschap's defaults).
	mschap {
	}
	files {
		filename = \${confdir}/users
		acctusersfile = \${confdir}/acct_users
		preproxy_usersfile = \${confdir}/preproxy_users
	}
	# As Debian's mods-available/detail: one file per client address and day.
	detail {
		filename = \${radacctdir}/%{%{Packet-Src-IP-Address}:-%{Packet-Src-IPv6-Address}}/detail-%Y%m%d
		escape_filenames = no
		permissions = 0600
		header = "%t"
	}
	detail detail_coa {
		filename = \${radacctdir}/coa/detail
		permissions = 0600
		header = "%t"
		locking = yes
	}
	always ok {
		rcode = ok
	}
	always reject {
		rcode = reject
	}
$(eap_module "$eap_cert" "$eap_key" "$eap_ca" "$eap_default")
}
EOF
	: >"$dir/acct_users"
	: >"$dir/preproxy_users"

	case $role in
	server)
		cat >>"$dir/radiusd.conf" <<EOF

$(listen_section auth "$address" "$port")
$(listen_section acct "$address" $((port + 1)))

server default {
	authorize {
$([[ -z $eap_cert ]] || printf '\t\teap {\n\t\t\tok = return\n\t\t}\n')
		chap
		mschap
		files
		pap
	}
	authenticate {
		Auth-Type PAP {
			pap
		}
		Auth-Type CHAP {
			chap
		}
		Auth-Type MS-CHAP {
			mschap
		}
$([[ -z $eap_cert ]] || printf '\t\teap\n')
	}
	preacct {
		ok
	}
	accounting {
		$detail_call
	}
	post-auth {
		ok
	}
}
EOF
		[[ -z $eap_cert ]] || eap_inner_tunnel >>"$dir/radiusd.conf"
		;;
	acct)
		cat >>"$dir/radiusd.conf" <<EOF

$(listen_section acct "$address" "$port")

server default {
	preacct {
		ok
	}
	accounting {
		$detail_call
	}
}
EOF
		;;
	coa)
		cat >>"$dir/radiusd.conf" <<EOF

$(listen_section coa "$address" "$port" coa)

server coa {
	recv-coa {
		detail_coa
$(coa_session_check "$coa_sessions")
		$coa_result
	}
	send-coa {
		ok
	}
}
EOF
		;;
	radsec-proxy)
		radsec_proxy_config "$address" "$port" "$home" "$tls_cert" "$tls_key" "$tls_ca" >>"$dir/radiusd.conf"
		;;
	esac
	cat >"$dir/instance.env" <<EOF
ROLE=$role
ADDRESS=$address
PORT=$port
SECRET=$secret
THREADS=$threads
EOF
	echo "$dir"
}

pid_of() { proc_pid "$1/run/radiusd.pid"; }

cmd_start() {
	local dir; dir=$(instance_dir "${1:-}")
	[[ -f $dir/radiusd.conf ]] || die "start: no config in $dir (run: $0 config ${1:-})"
	command -v "$FREERADIUS_BIN" >/dev/null || die "start: $FREERADIUS_BIN not installed (run: $0 install)"
	if pid=$(pid_of "$dir"); then
		echo "$pid"
		return 0
	fi
	: >"$dir/log/radius.log"
	# -f: stay in the foreground so that $! is the server itself.
	"$FREERADIUS_BIN" -f -d "$dir" -n radiusd -l "$dir/log/radius.log" </dev/null >>"$dir/log/stdout.log" 2>&1 &
	local pid=$!
	echo "$pid" >"$dir/run/radiusd.pid"
	proc_wait_ready "$pid" "$dir/run/radiusd.pid" freeradius "$dir/log/radius.log" "$dir/log/stdout.log" -- \
		grep -q 'Ready to process requests' "$dir/log/radius.log"
}

cmd_stop() {
	local dir; dir=$(instance_dir "${1:-}")
	proc_stop "$dir/run/radiusd.pid"
}

cmd=${1:-help}
shift || true
case $cmd in
check)
	dir=$(instance_dir "${1:-}")
	"$FREERADIUS_BIN" -C -d "$dir" -n radiusd -l stdout
	;;
*) instance_command "$cmd" "$@" ;;
esac
