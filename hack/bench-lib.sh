# Shared by the hack/bench*.sh scripts (sourced): the configuration, starting and stopping the
# policing server under test. The caller sets POLICING, OUT (holding policing.yaml),
# ADMIN_PORT, SERVER_PIN (a command prefix, e.g. taskset, or empty: pin sets it) and
# BENCH_NAME (for messages); start_policing sets POL_PID.

# pin on|off: SERVER_PIN runs a server on CPU 1 and GEN_PIN the generator on CPU 0 (on, with
# 2 cores or more and taskset), or both unpinned.
pin() {
	if [[ $1 == on && $(nproc) -ge 2 ]] && command -v taskset >/dev/null; then
		SERVER_PIN=(taskset -c 1)
		GEN_PIN=(taskset -c 0)
	else
		SERVER_PIN=()
		GEN_PIN=()
	fi
}

start_policing() { # extra --set flags
	"${SERVER_PIN[@]}" "$POLICING" serve --config "$OUT/policing.yaml" "$@" >>"$OUT/policing.log" 2>&1 &
	POL_PID=$!
	wait_port "$ADMIN_PORT" 10 "policing not ready"
}

# wait_port PORT SECONDS WHAT: until policing (POL_PID) takes TCP connections on PORT; exits
# with WHAT when it does not within SECONDS, or when policing exits.
wait_port() {
	local i
	for i in $(seq 1 $(($2 * 10))); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
			return 0
		fi
		kill -0 "$POL_PID" 2>/dev/null || { tail -20 "$OUT/policing.log" >&2; echo "$BENCH_NAME: policing exited" >&2; exit 1; }
		sleep 0.1
	done
	echo "$BENCH_NAME: $3 after $2 s" >&2
	exit 1
}

stop_policing() {
	kill "$POL_PID" 2>/dev/null || true
	wait "$POL_PID" 2>/dev/null || true
	POL_PID=""
}

# write_bench_config SESSION [ADMIN_EXTRA]: the shared secret, USERS subscribers and
# policing.yaml in OUT — the loadgen client (Message-Authenticator required), file
# subscribers, auth/acct on BASE and BASE+1, the session block SESSION (flow-style YAML) and
# the admin port ADMIN_PORT (plus ADMIN_EXTRA, e.g. "pprof: true"). The caller sets LOADGEN,
# OUT, SECRET, USERS, BASE and ADMIN_PORT.
write_bench_config() {
	printf '%s\n' "$SECRET" >"$OUT/secret"
	"$LOADGEN" subscribers --users "$USERS" --policing "$OUT/subscribers.yaml" >/dev/null
	cat >"$OUT/policing.yaml" <<EOF
log: {level: warn, format: json}
radius:
  authAddress: 127.0.0.1:$BASE
  acctAddress: 127.0.0.1:$((BASE + 1))
clients:
  - {name: loadgen, address: 127.0.0.0/8, secretFile: $OUT/secret, requireMessageAuthenticator: true}
subscribers: {source: file, file: $OUT/subscribers.yaml}
session: $1
admin: {address: 127.0.0.1:$ADMIN_PORT${2:+, $2}}
EOF
}

# lua_counters: the Lua runs and reuses so far on ADMIN_PORT's /metrics (sum over hooks), and
# the sum and count of the runs' durations, from one scrape: "runs reuses seconds count".
lua_counters() {
	curl -fsS "http://127.0.0.1:$ADMIN_PORT/metrics" | awk '
		/^openaaa_policy_lua_runs_total/ { r += $NF }
		/^openaaa_policy_lua_reuses_total/ { u += $NF }
		/^openaaa_policy_lua_run_duration_seconds_sum/ { s += $NF }
		/^openaaa_policy_lua_run_duration_seconds_count/ { c += $NF }
		END { printf "%d %d %.9f %d\n", r, u, s, c }'
}

# cql_counts [PORT]: the CQL requests policing on admin PORT (default ADMIN_PORT) has sent so
# far, by kind, "kind count" a line: it counts every statement and batch
# (openaaa_store_statement_duration_seconds_count). Issue 17's currency: CQL requests per message.
cql_counts() {
	curl -fsS "http://127.0.0.1:${1:-$ADMIN_PORT}/metrics" | awk -F'[{}" ]+' '/^openaaa_store_statement_duration_seconds_count/ {for (i = 2; i < NF; i++) if ($i == "kind=") k = $(i + 1); n[k] += $NF} END {for (k in n) print k, n[k]}' | sort
}

# median of the numbers on stdin, one per line.
median() { sort -g | awk '{a[NR]=$1} END { if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'; }
