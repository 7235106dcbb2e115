#!/usr/bin/env bash
# Diameter peers no one here wrote, for the Diameter/Gx tests (services/policing/internal/gx,
# docs/diameter-gx.md):
#   - python-diameter (PyPI, pinned) in a venv under $CACHE/python-diameter: the PCEF simulator
#   - freeDiameter (Debian freediameter): a base-protocol peer (CER/CEA, DWR/DWA)
#   - tshark (Debian, Wireshark 4.0): an independent decoder; the Diameter tests decode what
#     they exchange with it and fail on its expert-info warnings and errors
#
#   hack/diameter-peers.sh install    install all three (idempotent, cached)
#   hack/diameter-peers.sh python     print the venv's python (exit 1 when not installed)
#   hack/diameter-peers.sh freediameterd  print freeDiameterd's path (exit 1 when not installed)
#   hack/diameter-peers.sh tshark     print tshark's path (exit 1 when not installed)
set -euo pipefail

CACHE=${CACHE:-$HOME/.cache/openaaa}
VENV=$CACHE/python-diameter
PYTHON_DIAMETER_VERSION=0.9.0

die() { echo "diameter-peers.sh: $*" >&2; exit 1; }
# shellcheck source=lib/apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/apt.sh"

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

# tshark without the setuid dumpcap question (our tests read and write pcap files; they
# capture nothing).
install_tshark() {
	if ! command -v tshark >/dev/null; then
		[[ $(id -u) -eq 0 ]] || die "installing tshark needs root (apt-get)"
		echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
	fi
	apt_ensure tshark tshark
}

case ${1:-} in
install) install_python; apt_ensure freeDiameterd freediameter; install_tshark ;;
python) [[ -x $VENV/bin/python ]] || exit 1; echo "$VENV/bin/python" ;;
freediameterd) command -v freeDiameterd || exit 1 ;;
tshark) command -v tshark || exit 1 ;;
*) sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 2 ;;
esac
