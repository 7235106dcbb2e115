#!/usr/bin/env bash
# Diameter peers no one here wrote, for the Diameter/Gx tests (services/policing/internal/gx,
# docs/diameter-gx.md):
#   - python-diameter (PyPI, pinned) in a venv under $CACHE/python-diameter: the PCEF simulator
#   - freeDiameter (Debian freediameter): a base-protocol peer (CER/CEA, DWR/DWA)
#   - tshark (Debian, Wireshark 4.0): an independent decoder; the Diameter tests decode what
#     they exchange with it and fail on its expert-info warnings and errors
#   - Erlang/OTP's diameter application (Debian erlang-diameter, erlang-dev for its headers):
#     a strict PCEF (hack/erlang-pcef) decoding our answers with its own compiled Gx dictionary
#
#   hack/diameter-peers.sh install    install them all, build the Erlang PCEF (idempotent, cached)
#   hack/diameter-peers.sh python     print the venv's python (exit 1 when not installed)
#   hack/diameter-peers.sh freediameterd  print freeDiameterd's path (exit 1 when not installed)
#   hack/diameter-peers.sh tshark     print tshark's path (exit 1 when not installed)
#   hack/diameter-peers.sh erlang-pcef  build the Erlang PCEF once per change of its sources and
#                                     print its directory (exit 1 when Erlang is not installed)
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

ERLANG_PCEF=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/erlang-pcef
DIAMETER_HRL='/usr/lib/erlang/lib/diameter-*/include/diameter.hrl' # a glob: the version's directory

install_erlang() {
	if ! command -v erlc >/dev/null || ! compgen -G "$DIAMETER_HRL" >/dev/null; then
		apt_install erlang-base erlang-diameter erlang-dev
	fi
	echo "erlang-diameter: installed ($(dpkg-query -W -f '${Version}' erlang-diameter 2>/dev/null || echo '?'))"
}

# The PCEF's beams (the dictionary compiled by diameterc, then erlc) in a directory named by a
# hash of the sources: built once per change, by whichever test or install comes first.
build_erlang_pcef() {
	command -v erlc >/dev/null && compgen -G "$DIAMETER_HRL" >/dev/null || return 1
	local hash out tmp diameterc
	hash=$(cat "$ERLANG_PCEF"/pcef_gx.dia "$ERLANG_PCEF"/pcef.erl | sha256sum | cut -c1-16)
	out=$CACHE/erlang-pcef/$hash
	if [[ ! -f $out/pcef.beam ]]; then
		mkdir -p "$CACHE/erlang-pcef"
		tmp=$(mktemp -d "$CACHE/erlang-pcef/.build.XXXXXX")
		diameterc=$(erl -noshell -eval 'io:format("~s", [code:lib_dir(diameter)]), halt().')/bin/diameterc
		if ! { escript "$diameterc" -o "$tmp" "$ERLANG_PCEF/pcef_gx.dia" && erlc -o "$tmp" "$tmp/pcef_gx.erl" "$ERLANG_PCEF/pcef.erl"; } >&2; then
			rm -rf "$tmp"
			return 2
		fi
		mv -T "$tmp" "$out" 2>/dev/null || rm -rf "$tmp" # another build won the race
	fi
	echo "$out"
}

case ${1:-} in
install) install_python; apt_ensure freeDiameterd freediameter; install_tshark; install_erlang; build_erlang_pcef >/dev/null ;;
erlang-pcef) build_erlang_pcef ;;
python) [[ -x $VENV/bin/python ]] || exit 1; echo "$VENV/bin/python" ;;
freediameterd) command -v freeDiameterd || exit 1 ;;
tshark) command -v tshark || exit 1 ;;
*) sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 2 ;;
esac
