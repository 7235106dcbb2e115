# shellcheck shell=bash
# Process helpers for the hack/ scripts that run a server in the background: the server runs
# in the foreground of a background job (so $! is the server itself), its PID is kept in a
# file, and it is stopped by that PID only. The sourcing script defines die().

# proc_pid PIDFILE: print the PID if that process is alive; fail otherwise.
proc_pid() {
	local pid
	[[ -f $1 ]] || return 1
	pid=$(cat "$1")
	[[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 1
	echo "$pid"
}

# proc_wait_ready PID PIDFILE NAME LOG... -- CHECK...: run CHECK every 0.1 s for up to 10 s
# (PROC_READY_TENTHS × 0.1 s) and print PID once it succeeds. If the process exits first, or the
# time runs out, print the logs and die (the process is stopped on time-out).
proc_wait_ready() {
	local pid=$1 pidfile=$2 name=$3 i tenths=${PROC_READY_TENTHS:-100}
	shift 3
	local logs=()
	while [[ $1 != -- ]]; do
		logs+=("$1")
		shift
	done
	shift
	for i in $(seq 1 "$tenths"); do
		if "$@" >/dev/null 2>&1; then
			echo "$pid"
			return 0
		fi
		if ! kill -0 "$pid" 2>/dev/null; then
			rm -f "$pidfile"
			cat "${logs[@]}" >&2 2>/dev/null || true
			die "start: $name exited during start-up (log above)"
		fi
		sleep 0.1
	done
	kill "$pid" 2>/dev/null || true
	die "start: $name not ready after $((tenths / 10)) s (see ${logs[0]})"
}

# proc_stop PIDFILE [TENTHS]: SIGTERM (and SIGCONT, so that a paused process sees it), wait up
# to TENTHS × 0.1 s (default 50), then SIGKILL; remove the PID file. Nothing running is fine.
proc_stop() {
	local pidfile=$1 tenths=${2:-50} pid i
	if ! pid=$(proc_pid "$pidfile"); then
		rm -f "$pidfile"
		return 0
	fi
	kill "$pid" 2>/dev/null || true
	kill -CONT "$pid" 2>/dev/null || true
	for ((i = 0; i < tenths; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$pidfile"
}
