# shellcheck shell=bash
# The instance commands of the hack/ scripts that run a test server per directory
# (freeradius.sh, slapd.sh): instance NAME lives in $INSTANCE_HOME/NAME and its server is
# started and stopped by PID with lib/proc.sh, sourced here. The sourcing script sets
# INSTANCE_HOME and defines die(), usage(), pid_of DIR and the commands cmd_install,
# cmd_config NAME [options], cmd_start NAME and cmd_stop NAME.

# shellcheck source=lib/proc.sh
source "$(dirname "${BASH_SOURCE[0]}")/proc.sh"

# instance_dir NAME: print the instance's directory; NAME must be a plain file name.
instance_dir() {
	[[ -n ${1:-} ]] || die "missing instance NAME"
	[[ $1 =~ ^[A-Za-z0-9._-]+$ ]] || die "bad instance name: $1"
	echo "$INSTANCE_HOME/$1"
}

# instance_command COMMAND [ARGS]: the commands every such script has (install, config, start,
# stop, pid, status, dir, clean, help); any other prints the usage and exits 2.
instance_command() {
	local cmd=$1 pid
	shift
	case $cmd in
	install) cmd_install ;;
	config) cmd_config "$@" ;;
	start) cmd_start "$@" ;;
	stop) cmd_stop "$@" ;;
	pid) pid_of "$(instance_dir "${1:-}")" || exit 1 ;;
	status)
		if pid=$(pid_of "$(instance_dir "${1:-}")"); then echo "running $pid"; else echo stopped; exit 1; fi
		;;
	dir) instance_dir "${1:-}" ;;
	clean)
		cmd_stop "$@"
		rm -rf "$(instance_dir "${1:-}")"
		;;
	help | -h | --help) usage ;;
	*) usage >&2; exit 2 ;;
	esac
}
