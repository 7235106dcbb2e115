#!/usr/bin/env bash
# eapol_test (Debian eapoltest, wpa_supplicant 2.10's RADIUS-side test client) as the EAP peer
# of the EAP tests (services/policing/internal/app/eap_test.go, docs/eap.md): it runs one EAP
# conversation (EAP-TLS, PEAP, TTLS, MD5, ...) against a RADIUS server and exits 0 on success.
#
#   hack/eapol.sh install     apt-get install eapoltest (idempotent)
#   hack/eapol.sh path        print eapol_test's path (exit 1 when not installed)
set -euo pipefail

CACHE=${CACHE:-$HOME/.cache/openaaa}

die() { echo "eapol.sh: $*" >&2; exit 1; }
# shellcheck source=lib/apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/apt.sh"

case ${1:-} in
install) apt_ensure eapol_test eapoltest ;;
path) command -v eapol_test || exit 1 ;;
*) sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 2 ;;
esac
