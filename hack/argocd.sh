#!/usr/bin/env bash
# Argo CD (issue 36) as one static multi-call binary, built from the Go module proxy by the module
# hack/argocd (its go.mod pins github.com/argoproj/argo-cd/v3 v3.2.11 and every dependency; its
# main.go picks the role from the name the binary runs as, or ARGOCD_BINARY_NAME). `make test`
# runs our AAACluster health check through it (test/argocd, docs/argocd.md).
#
# Cached like the add-ons (hack/addons.sh): the binary with a stamp of the version, the Go
# version, the flags and hack/argocd's files; a warm run takes a second.
#
#   $ARGOCD_CACHE/bin/argocd        the binary ($ARGOCD_CACHE default $CACHE/argocd, $CACHE
#                                   default ~/.cache/openaaa)
#   $ARGOCD_CACHE/build-times       seconds of each build (cold when the Go cache was cold)
#
# Usage: hack/argocd.sh COMMAND
#   build     build the binary unless the cached one is up to date
#   path      print the binary's path (built or not)
#   version   the binary's `argocd version --client --short`
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="${HERE}/argocd"
CACHE="${CACHE:-${HOME}/.cache/openaaa}"
ARGOCD_CACHE="${ARGOCD_CACHE:-${CACHE}/argocd}"
BIN="${ARGOCD_CACHE}/bin/argocd"
GO="${GO:-go}"

log() { echo "argocd: $*" >&2; }
die() { echo "argocd: $*" >&2; exit 1; }

ARGOCD_VERSION="$(awk '$1 == "github.com/argoproj/argo-cd/v3" { print $2 }' "${SRC}/go.mod")"
[[ -n "$ARGOCD_VERSION" ]] || die "no github.com/argoproj/argo-cd/v3 requirement in ${SRC}/go.mod"

# The images' and add-ons' build configuration (static, -trimpath, no toolchain switch or
# workspace), so that the packages this graph shares with theirs (k8s.io/api, apimachinery, grpc,
# protobuf, golang.org/x: go.mod requires the root module's versions of them) come from the Go
# build cache. -mod=readonly: the build never writes go.mod or go.sum into the work tree.
export GOTOOLCHAIN=local GOWORK=off GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0
# As hack/test.sh's BUILD_ENV: no garbage collection in the compiler below 3 GiB of heap (a
# quarter less compiler CPU), unless the caller chose otherwise.
export GOGC="${GOGC:-off}" GOMEMLIMIT="${GOMEMLIMIT:-3GiB}"
# -s -w: no symbol table or DWARF (a smaller binary, a shorter link); the version Argo CD reports.
LDFLAGS="-s -w -X github.com/argoproj/argo-cd/v3/common.version=${ARGOCD_VERSION#v}"

stamp() {
  echo "argocd=${ARGOCD_VERSION} go=$(${GO} env GOVERSION) ldflags=${LDFLAGS} src=$(cd "$SRC" && cat go.mod go.sum ./*.go | sha256sum | cut -c1-16)"
}

built() { [[ -x "$BIN" && -f "${BIN}.stamp" && "$(cat "${BIN}.stamp")" == "$(stamp)" ]]; }

build() {
  if built; then
    log "${BIN} is up to date (Argo CD ${ARGOCD_VERSION})"
    return
  fi
  local start=$SECONDS tmp="${BIN}.tmp"
  mkdir -p "$(dirname "$BIN")"
  log "building Argo CD ${ARGOCD_VERSION} (cold: about 11 min of compiling on 2 cores)..."
  (cd "$SRC" && ${GO} build -trimpath -ldflags="$LDFLAGS" -o "$tmp" .)
  mv -f "$tmp" "$BIN"
  stamp >"${BIN}.stamp"
  echo "$(date -u +%FT%TZ) argocd ${ARGOCD_VERSION}: $((SECONDS - start))s $(stat -c %s "$BIN") bytes" >>"${ARGOCD_CACHE}/build-times"
  log "built ${BIN} in $((SECONDS - start))s"
}

case "${1:-build}" in
  build) build ;;
  path) echo "$BIN" ;;
  version) "$BIN" version --client --short ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
esac
