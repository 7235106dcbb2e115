#!/usr/bin/env bash
# Diameter peers no one here wrote, for the Diameter/Gx tests (services/policing/internal/gx,
# docs/diameter-gx.md):
#   - python-diameter (PyPI, pinned) in a venv under $CACHE/python-diameter: the PCEF simulator
#   - freeDiameter (Debian freediameter): a base-protocol peer (CER/CEA, DWR/DWA)
#
#   hack/diameter-peers.sh install    install both (idempotent, cached)
#   hack/diameter-peers.sh python     print the venv's python (exit 1 when not installed)
#   hack/diameter-peers.sh freediameterd  print freeDiameterd's path (exit 1 when not installed)
set -euo pipefail

CACHE=${CACHE:-$HOME/.cache/openaaa}
VENV=$CACHE/python-diameter
PYTHON_DIAMETER_VERSION=0.9.0

die() { echo "diameter-peers.sh: $*" >&2; exit 1; }

install_python() {
	if [[ -x $VENV/bin/python ]] && "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('python-diameter') != '$PYTHON_DIAMETER_VERSION')" 2>/dev/null; then
		echo "python-diameter: installed ($PYTHON_DIAMETER_VERSION)"
		return 0
	fi
	command -v python3 >/dev/null || die "python3 is needed"
	python3 -m venv "$VENV" || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
	"$VENV/bin/pip" install -q --disable-pip-version-check "python-diameter==$PYTHON_DIAMETER_VERSION"
	echo "python-diameter: installed ($PYTHON_DIAMETER_VERSION)"
}

install_freediameter() {
	if command -v freeDiameterd >/dev/null; then
		echo "freediameter: installed ($(dpkg-query -W -f '${Version}' freediameter 2>/dev/null || echo '?'))"
		return 0
	fi
	[[ $(id -u) -eq 0 ]] || die "installing freediameter needs root (apt-get)"
	export DEBIAN_FRONTEND=noninteractive
	local stamp="$CACHE/apt-updated"
	mkdir -p "$CACHE"
	if [[ ! -f $stamp ]] || [[ -n $(find "$stamp" -mmin +1440 2>/dev/null) ]] || ! apt-cache policy freediameter 2>/dev/null | grep -q 'Candidate: [0-9]'; then
		apt-get update -qq
		touch "$stamp"
	fi
	apt-get install -y -qq --no-install-recommends freediameter >/dev/null
	echo "freediameter: installed ($(dpkg-query -W -f '${Version}' freediameter))"
}

case ${1:-} in
install) install_python; install_freediameter ;;
python) [[ -x $VENV/bin/python ]] || exit 1; echo "$VENV/bin/python" ;;
freediameterd) command -v freeDiameterd || exit 1 ;;
*) sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 2 ;;
esac
