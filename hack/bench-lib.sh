# Shared by hack/bench.sh and hack/bench-policy.sh (sourced): starting and stopping the
# policing server under test. The caller sets POLICING, OUT (holding policing.yaml),
# ADMIN_PORT, SERVER_PIN (a command prefix, e.g. taskset, or empty) and BENCH_NAME (for
# messages); start_policing sets POL_PID.

start_policing() { # extra --set flags
	"${SERVER_PIN[@]}" "$POLICING" serve --config "$OUT/policing.yaml" "$@" >>"$OUT/policing.log" 2>&1 &
	POL_PID=$!
	local i
	for i in $(seq 1 100); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$ADMIN_PORT") 2>/dev/null; then
			return 0
		fi
		kill -0 "$POL_PID" 2>/dev/null || { tail -20 "$OUT/policing.log" >&2; echo "$BENCH_NAME: policing exited" >&2; exit 1; }
		sleep 0.1
	done
	echo "$BENCH_NAME: policing not ready after 10 s" >&2
	exit 1
}

stop_policing() {
	kill "$POL_PID" 2>/dev/null || true
	wait "$POL_PID" 2>/dev/null || true
	POL_PID=""
}
