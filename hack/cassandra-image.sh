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
# Usage: hack/cassandra-image.sh [build|smoke|print-dir|clean]
#   smoke: run the built server image with runc on loopback (root; see cmd_smoke)
# Environment: CACHE (~/.cache/openaaa), CASSANDRA_IMAGE_DIR ($CACHE/cassandra-image),
#   CASSANDRA_VERSION (5.0.9), GO (go),
#   DEBIAN_MIRROR (default: the Debian mirror of this machine's apt sources), VERBOSE=1.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${CACHE:-${HOME}/.cache/openaaa}"
CASSANDRA_VERSION="${CASSANDRA_VERSION:-5.0.9}"
SUITE=bookworm
PACKAGES=openjdk-17-jre-headless,curl,procps
OUT="${CASSANDRA_IMAGE_DIR:-${CACHE}/cassandra-image}"
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

# The three images' inputs: a change to any of them rebuilds (the rootfs is kept).
stamp_of() { # binary lib
	{
		sha256sum "$0" "$1" "${ROOT}"/hack/cassandra-mgmt/etc/* "${OUT}/bin/ocibuild"
		ls -l "$2" | sha256sum
		echo "${ROOTFS}" "$(stat -c %s "${ROOTFS}")" "${CASSANDRA_VERSION}"
	} | sha256sum | cut -d' ' -f1
}

# deterministic_tar DIR OUT: a layer tar of DIR's contents, root-owned unless said otherwise.
deterministic_tar() {
	tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$1" -cf "$2" .
}

# server_image BINARY LIB: ghcr.io/openaaa/cassandra-mgmt:$VERSION with umoci, three layers
# (Debian root; Cassandra's jars; our binary and base config).
server_image() {
	local bin=$1 lib=$2 work="${OUT}/server.tmp" tag="${CASSANDRA_VERSION}"
	rm -rf "$work" && mkdir -p "$work/jars/opt/cassandra/lib" "$work/app/usr/local/bin" "$work/app/etc/cassandra"
	cp "$lib"/*.jar "$work/jars/opt/cassandra/lib/"
	chmod 0644 "$work"/jars/opt/cassandra/lib/*.jar
	install -m 0755 "$bin" "$work/app/usr/local/bin/cassandra-mgmt"
	ln -s cassandra-mgmt "$work/app/usr/local/bin/nodetool" # kubectl exec … nodetool, as upstream
	install -m 0644 "${ROOT}"/hack/cassandra-mgmt/etc/* "$work/app/etc/cassandra/"
	deterministic_tar "$work/jars" "$work/jars.tar"
	deterministic_tar "$work/app" "$work/app.tar"
	local img="$work/layout:${tag}"
	umoci init --layout "$work/layout"
	umoci new --image "$img"
	umoci raw add-layer --image "$img" --history.created_by "debootstrap --variant=minbase --include=${PACKAGES} ${SUITE}" "${ROOTFS}"
	umoci raw add-layer --image "$img" --history.created_by "cassandra-all ${CASSANDRA_VERSION} and its runtime dependencies (Maven Central)" "$work/jars.tar"
	umoci raw add-layer --image "$img" --history.created_by "cassandra-mgmt and the base config in /etc/cassandra" "$work/app.tar"
	umoci config --image "$img" --no-history \
		--config.user 999:999 \
		--config.entrypoint /usr/local/bin/cassandra-mgmt \
		--config.workingdir /var/lib/cassandra \
		--config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		--config.env CASSANDRA_LIB=/opt/cassandra/lib \
		--config.env CASSANDRA_VERSION="${CASSANDRA_VERSION}" \
		--config.exposedports 7000/tcp --config.exposedports 9042/tcp --config.exposedports 8080/tcp \
		--config.label org.opencontainers.image.title=cassandra-mgmt \
		--config.label org.opencontainers.image.version="${CASSANDRA_VERSION}" \
		--config.label org.opencontainers.image.description="OpenAAA's Cassandra test image: not for production" \
		--config.label org.opencontainers.image.source=https://github.com/openaaa/openaaa
	umoci gc --layout "$work/layout"
	(cd "$work/layout" && tar --sort=name --owner=0 --group=0 --numeric-owner -cf "${OUT}/cassandra-mgmt.oci.tar.tmp" .)
	mv "${OUT}/cassandra-mgmt.oci.tar.tmp" "${OUT}/cassandra-mgmt.oci.tar"
	rm -rf "$work"
}

cmd_build() {
	mkdir -p "$OUT/bin"
	command -v umoci >/dev/null || apt_install umoci
	"${ROOT}/hack/cassandra.sh" fetch
	local lib
	lib=$("${ROOT}/hack/cassandra.sh" print-lib)
	rootfs
	# One static binary for all three images.
	(cd "$ROOT" && CGO_ENABLED=0 "$GO" build -trimpath -ldflags '-s -w' -o "${OUT}/bin/cassandra-mgmt" ./hack/cassandra-mgmt)
	(cd "$ROOT" && "$GO" build -o "${OUT}/bin/ocibuild" ./internal/tools/ocibuild)
	local stamp
	stamp=$(stamp_of "${OUT}/bin/cassandra-mgmt" "$lib")
	if [[ -f "${OUT}/stamp" && $(cat "${OUT}/stamp") == "$stamp" ]] &&
		[[ -f "${OUT}/cassandra-mgmt.oci.tar" && -f "${OUT}/cassandra-config.oci.tar" && -f "${OUT}/cassandra-logger.oci.tar" ]]; then
		say "up to date (${OUT})"
		return 0
	fi
	rm -f "${OUT}/stamp"
	say "server image"
	server_image "${OUT}/bin/cassandra-mgmt" "$lib"
	# The helper images: the same binary on ocibuild's distroless base. cass-operator gives the
	# config image the args `config build` and the logger image nothing: ENTRYPOINT is the
	# binary, the logger's CMD is `logger`.
	say "config and logger images"
	"${OUT}/bin/ocibuild" -name cassandra-config -binary "${OUT}/bin/cassandra-mgmt" -tag "${CASSANDRA_VERSION}" -out "${OUT}/oci"
	"${OUT}/bin/ocibuild" -name cassandra-logger -binary "${OUT}/bin/cassandra-mgmt" -tag "${CASSANDRA_VERSION}" -args logger -out "${OUT}/oci"
	mv "${OUT}/oci/cassandra-config.oci.tar" "${OUT}/oci/cassandra-logger.oci.tar" "${OUT}/"
	rm -rf "${OUT}/oci"
	echo "$stamp" >"${OUT}/stamp"
}

# smoke: run the server image in a real OCI runtime (runc, host network, uid 999) as the pod
# would: the init containers' flow (cp /etc/cassandra; config build), then the server; POST
# lifecycle/start, wait for readiness, read the endpoints, drain, SIGTERM. Loopback only
# (SMOKE_ADDR, ports 23242/23200/23399/23280); about 1-2 min. Needs root and runc.
SMOKE_ADDR="${SMOKE_ADDR:-127.0.31.3}"
cmd_smoke() {
	[[ $(id -u) -eq 0 ]] || die "smoke needs root (umoci unpack with owners, runc)"
	command -v runc >/dev/null || die "smoke needs runc"
	[[ -f "${OUT}/cassandra-mgmt.oci.tar" ]] || die "no image: hack/cassandra-image.sh build"
	local work id="openaaa-cassandra-smoke-$$" api="http://${SMOKE_ADDR}:23280"
	work=$(mktemp -d /tmp/openaaa-cassandra-smoke.XXXXXX)
	# shellcheck disable=SC2064
	trap "runc --root '$work/state' kill '$id' KILL >/dev/null 2>&1 || true; runc --root '$work/state' delete -f '$id' >/dev/null 2>&1 || true; rm -rf '$work'" EXIT
	mkdir -p "$work/layout"
	tar -xf "${OUT}/cassandra-mgmt.oci.tar" -C "$work/layout"
	umoci unpack --image "$work/layout:${CASSANDRA_VERSION}" "$work/bundle" >/dev/null
	local rootfs="$work/bundle/rootfs"
	# server-config-init-base and server-config-init, with the operator's data.
	mkdir -p "$rootfs/cassandra-base-config" && chown 999:999 "$rootfs/cassandra-base-config"
	chroot --userspec=999:999 "$rootfs" /bin/sh -c "cp -rf /etc/cassandra/* /cassandra-base-config/"
	chroot --userspec=999:999 "$rootfs" env -i \
		CONFIG_FILE_DATA='{"cluster-info":{"name":"smoke","seeds":"'"${SMOKE_ADDR}"'"},"datacenter-info":{"name":"dc1"},"cassandra-yaml":{"authenticator":"PasswordAuthenticator","authorizer":"CassandraAuthorizer","num_tokens":16,"native_transport_port":23242,"storage_port":23200},"jvm-server-options":{"initial_heap_size":"512M","max_heap_size":"512M"}}' \
		POD_IP="${SMOKE_ADDR}" HOST_IP="${SMOKE_ADDR}" RACK_NAME=r1 PRODUCT_VERSION="${CASSANDRA_VERSION}" POD_NAME=smoke-0 \
		USE_HOST_IP_FOR_BROADCAST=false /usr/local/bin/cassandra-mgmt config build >/dev/null 2>&1
	python3 - "$work/bundle/config.json" "${SMOKE_ADDR}" <<'PY'
import json, sys
path, addr = sys.argv[1], sys.argv[2]
c = json.load(open(path))
c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"] if n["type"] != "network"]
c["process"]["terminal"] = False
c["process"]["env"] += ["USE_MGMT_API=true", "MGMT_API_EXPLICIT_START=true", "MGMT_API_NO_KEEP_ALIVE=true",
    "MGMT_API_LISTEN_TCP_PORT=23280", "MGMT_API_LISTEN_HOST=" + addr, "JMX_PORT=23399", "POD_NAME=smoke-0",
    "CASSANDRA_JVM_OPTS=-XX:TieredStopAtLevel=1 -XX:ActiveProcessorCount=1"]
c["mounts"].append({"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev", "mode=1777"]})
c["root"]["readonly"] = False
json.dump(c, open(path, "w"))
PY
	runc --root "$work/state" run -d --pid-file "$work/pid" -b "$work/bundle" "$id" >"$work/container.log" 2>&1
	local i code=000
	for ((i = 0; i < 50; i++)); do
		code=$(curl -s -o /dev/null -w '%{http_code}' "$api/api/v0/probes/liveness" || true)
		[[ $code == 200 ]] && break
		sleep 0.2
	done
	[[ $code == 200 ]] || { cat "$work/container.log" >&2; die "smoke: liveness $code"; }
	local t0=$SECONDS
	code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$api/api/v0/lifecycle/start")
	[[ $code == 201 ]] || die "smoke: lifecycle/start $code"
	for ((i = 0; i < 600; i++)); do
		code=$(curl -s -o /dev/null -w '%{http_code}' "$api/api/v0/probes/readiness" || true)
		[[ $code == 200 ]] && break
		sleep 0.5
	done
	[[ $code == 200 ]] || { tail -n 30 "$work/container.log" >&2; die "smoke: not ready after 300 s"; }
	echo "smoke: lifecycle/start → readiness 200 in $((SECONDS - t0)) s"
	curl -sf "$api/api/v0/metadata/endpoints" | grep -q '"STATUS":"NORMAL' || die "smoke: endpoints do not show the node NORMAL"
	curl -sf -X POST "$api/api/v0/ops/auth/role?username=smoke-superuser&password=smoke&can_login=true&is_superuser=true" >/dev/null || die "smoke: create role"
	curl -sf -X POST "$api/api/v0/ops/node/drain" >/dev/null || die "smoke: drain"
	t0=$SECONDS
	kill -TERM "$(cat "$work/pid")"
	for ((i = 0; i < 600; i++)); do kill -0 "$(cat "$work/pid")" 2>/dev/null || break; sleep 0.2; done
	kill -0 "$(cat "$work/pid")" 2>/dev/null && die "smoke: the container did not exit 120 s after SIGTERM"
	echo "smoke: SIGTERM → exit in $((SECONDS - t0)) s; ok"
}

case "${1:-build}" in
smoke) cmd_smoke ;;
build) cmd_build; ls -l "${OUT}"/*.oci.tar | awk '{printf "%s %d MB\n", $NF, $5/1048576}' ;;
rootfs) mkdir -p "$OUT" && rootfs ;;
print-dir) echo "$OUT" ;;
clean) rm -rf "${OUT:?}"/*.oci.tar "${OUT}/stamp" "${OUT}/bin" ;;
*) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
