# shellcheck shell=bash
# apt_install PKG...: install Debian packages for a hack/ script's `install` command, with one
# `apt-get update` per day at most (a fresh machine has no lists; the first package is the one
# whose candidate version is checked). Needs root; the sourcing script defines die() and CACHE.
apt_install() {
	[[ $(id -u) -eq 0 ]] || die "installing $* needs root (apt-get)"
	export DEBIAN_FRONTEND=noninteractive
	local stamp="$CACHE/apt-updated"
	mkdir -p "$CACHE"
	if [[ ! -f $stamp ]] || [[ -n $(find "$stamp" -mmin +1440 2>/dev/null) ]] || ! apt-cache policy "$1" 2>/dev/null | grep -q 'Candidate: [0-9]'; then
		apt-get update -qq -o DPkg::Lock::Timeout=600
		touch "$stamp"
	fi
	# Another installer may hold the dpkg lock (several provisioning scripts at once): wait for it.
	apt-get install -y -qq -o DPkg::Lock::Timeout=600 --no-install-recommends "$@" >/dev/null
}

# apt_ensure CMD PKG...: unless the command CMD is already there, apt_install PKG...; then say
# which version of the first package is installed.
apt_ensure() {
	local cmd=$1
	shift
	if ! command -v "$cmd" >/dev/null; then
		apt_install "$@"
	fi
	echo "$1: installed ($(dpkg-query -W -f '${Version}' "$1" 2>/dev/null || echo '?'))"
}
