#!/usr/bin/env bash
# The Cassandra test image and its two helper images (issue 31), as OCI archives, built here
# without a Docker engine and without any upstream Cassandra or Management API image (none can
# be obtained on these machines). They exist so that our tests can run the real cass-operator
# and k8ssandra-operator offline; production uses the upstream images. hack/cassandra-mgmt/README.md.
#
#   ghcr.io/openaaa/cassandra-mgmt:5.0.9     server: Debian bookworm (minbase) + OpenJDK 17 JRE,
#                                            curl, procps; Cassandra's jars in /opt/cassandra/lib;
#                                            our base config in /etc/cassandra; entrypoint
#                                            /usr/local/bin/cassandra-mgmt (mgmtapi); user 999
#   ghcr.io/openaaa/cassandra-config:5.0.9   entrypoint cassandra-mgmt, no CMD: cass-operator's
#                                            server-config-init passes the args `config build`
#   ghcr.io/openaaa/cassandra-logger:5.0.9   entrypoint cassandra-mgmt, CMD [logger]
#
# Output (idempotent; a stamp over the inputs makes a warm run take seconds):
#   $CACHE/cassandra-image/{cassandra-mgmt,cassandra-config,cassandra-logger}.oci.tar
#   $CACHE/cassandra-image/rootfs-bookworm.tar       the debootstrapped root, kept across runs
# Import: hack/cluster.sh import $CACHE/cassandra-image/cassandra-mgmt.oci.tar=ghcr.io/openaaa/cassandra-mgmt
#
# Usage: hack/cassandra-image.sh [build|print-dir|clean]
# Environment: CACHE (~/.cache/openaaa), CASSANDRA_VERSION (5.0.9), GO (go),
#   DEBIAN_MIRROR (default: the Debian mirror of this machine's apt sources), VERBOSE=1.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${CACHE:-${HOME}/.cache/openaaa}"
CASSANDRA_VERSION="${CASSANDRA_VERSION:-5.0.9}"
SUITE=bookworm
PACKAGES=openjdk-17-jre-headless,curl,procps
OUT="${CACHE}/cassandra-image"
GO="${GO:-go}"
ROOTFS="${OUT}/rootfs-${SUITE}.tar"

say() { if [[ "${VERBOSE:-0}" == 1 ]]; then echo "cassandra-image: $*" >&2; fi; }
die() { echo "cassandra-image: $*" >&2; exit 1; }
# shellcheck source=hack/lib/apt.sh
source "${ROOT}/hack/lib/apt.sh"

# mirror: DEBIAN_MIRROR, or the first Debian (not -security) URI of this machine's apt sources.
mirror() {
	if [[ -n "${DEBIAN_MIRROR:-}" ]]; then echo "$DEBIAN_MIRROR"; return; fi
	local m
	m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
		grep -oE 'https?://[^ ]*/debian/?( |$)' | head -n1 | tr -d ' ')
	echo "${m:-http://deb.debian.org/debian}"
}

# rootfs: debootstrap once into $ROOTFS (an uncompressed tar: it becomes a gzip layer anyway).
# The user cassandra (999:999) and the directories the pod mounts are made here.
rootfs() {
	if [[ -f "${ROOTFS}" && -f "${ROOTFS}.complete" ]]; then return 0; fi
	[[ $(id -u) -eq 0 ]] || die "debootstrap needs root"
	command -v debootstrap >/dev/null || apt_install debootstrap
	local work="${OUT}/rootfs.tmp"
	rm -rf "$work" && mkdir -p "$work"
	say "debootstrap ${SUITE} (minbase + ${PACKAGES}) from $(mirror)"
	if ! debootstrap --variant=minbase --include="${PACKAGES}" "${SUITE}" "$work" "$(mirror)" >"${OUT}/debootstrap.log" 2>&1; then
		tail -n 30 "${OUT}/debootstrap.log" >&2
		die "debootstrap failed (log: ${OUT}/debootstrap.log)"
	fi
	# Nothing a container needs: package caches and lists, documentation, locales.
	rm -rf "$work"/var/cache/apt/* "$work"/var/lib/apt/lists/* "$work"/usr/share/doc/* \
		"$work"/usr/share/man/* "$work"/usr/share/info/* "$work"/usr/share/locale/* \
		"$work"/var/log/* "$work"/debootstrap
	grep -q '^cassandra:' "$work/etc/group" || echo 'cassandra:x:999:' >>"$work/etc/group"
	grep -q '^cassandra:' "$work/etc/passwd" ||
		echo 'cassandra:x:999:999:Cassandra:/var/lib/cassandra:/usr/sbin/nologin' >>"$work/etc/passwd"
	mkdir -p "$work"/var/lib/cassandra "$work"/var/log/cassandra "$work"/config "$work"/opt/cassandra/lib
	chown 999:999 "$work"/var/lib/cassandra "$work"/var/log/cassandra "$work"/config
	tar --numeric-owner --xattrs -C "$work" -cf "${ROOTFS}.tmp" .
	mv "${ROOTFS}.tmp" "${ROOTFS}"
	touch "${ROOTFS}.complete"
	rm -rf "$work"
}

case "${1:-build}" in
rootfs) mkdir -p "$OUT" && rootfs ;;
*) die "unknown command $1" ;;
esac
