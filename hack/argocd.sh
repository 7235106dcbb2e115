#!/usr/bin/env bash
# Argo CD (issue 36) as static multi-call binaries, built from the Go module proxy by the module
# hack/argocd (its go.mod pins github.com/argoproj/argo-cd/v3 v3.2.11 and every dependency; its
# main.go picks the role from the name the binary runs as, or ARGOCD_BINARY_NAME): argocd-gitops,
# a local Argo CD's components (application controller, repo server) and the offline health
# check that `make test` runs our AAACluster fixtures through (argocd-resource-health:
# test/argocdhealth, docs/argocd.md); argocd, the same plus the CLI and the API server (build tag
# cli: nearly all of Argo CD), for users (`make argocd`), not built by `make test`.
#
# Cached like the add-ons (hack/addons.sh): each binary with a stamp of the version, the Go
# version, the flags and hack/argocd's files; a warm run takes a second.
#
#   $ARGOCD_CACHE/bin/argocd-gitops the components ($ARGOCD_CACHE default $CACHE/argocd, $CACHE
#                                   default ~/.cache/openaaa)
#   $ARGOCD_CACHE/bin/argocd        the CLI and every role
#   $ARGOCD_CACHE/build-times       seconds of each build (cold when the Go cache was cold)
#
# A local Argo CD (issue 36), as Argo CD's own e2e runs it: the components are host processes
# against a kubeconfig (ARGOCD_FAKE_IN_CLUSTER=true: the in-cluster destination
# https://kubernetes.default.svc is that kubeconfig's API server), on loopback ports picked
# free, with file:// repository URLs. No API server, UI or Dex: Applications are created with
# kubectl. `up` needs redis-server (install-redis), git, and helm ($HELM, default bin/helm:
# `make helm`); it applies into the namespace argocd Argo CD's CRDs (from the argo-cd module
# source, which the build downloaded), argocd-cm (config/argocd/argocd-cm.yaml, our health
# checks), argocd-rbac-cm, argocd-secret and the AppProject default. Kept in STATE_DIR:
#
#   STATE_DIR/{redis,repo-server,controller}.pid   the processes, stopped by these PIDs
#   STATE_DIR/log/*.log                            their logs (down keeps them)
#   STATE_DIR/env                                  ports and redis password, as shell variables
#   STATE_DIR/{bin,tmp,tls,ssh,gpg,redis}          the role links, helm, temporary clones
#
# Usage: hack/argocd.sh COMMAND
#   build [gitops|cli]       build both binaries (or one) unless the cached ones are up to date
#   path [gitops]            print the CLI's path (or the components'), built or not
#   version                  the Argo CD version the components' binary was built from
#   install-redis            apt-get install redis-server if missing (no system service left running)
#   up KUBECONFIG STATE_DIR  start redis, the repo server and the application controller (above)
#   down STATE_DIR           stop them by PID; remove STATE_DIR but its logs (not the Kubernetes objects)
#   gitrepo DIR              a git repository of charts/ and values/ (a commit per change), for file://DIR
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="${HERE}/argocd"
CACHE="${CACHE:-${HOME}/.cache/openaaa}"
ARGOCD_CACHE="${ARGOCD_CACHE:-${CACHE}/argocd}"
BIN="${ARGOCD_CACHE}/bin/argocd"
GITOPS_BIN="${ARGOCD_CACHE}/bin/argocd-gitops"
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

# bin_of / tags_of VARIANT: the binary and the build tags of gitops or cli.
bin_of() { if [[ $1 == cli ]]; then echo "$BIN"; else echo "$GITOPS_BIN"; fi; }
tags_of() { if [[ $1 == cli ]]; then echo cli; fi; }

stamp() { # VARIANT
  echo "argocd=${ARGOCD_VERSION} go=$(${GO} env GOVERSION) tags=$(tags_of "$1") ldflags=${LDFLAGS} src=$(cd "$SRC" && cat go.mod go.sum ./*.go | sha256sum | cut -c1-16)"
}

built() { # VARIANT
  local bin
  bin="$(bin_of "$1")"
  [[ -x "$bin" && -f "${bin}.stamp" && "$(cat "${bin}.stamp")" == "$(stamp "$1")" ]]
}

build_one() { # VARIANT
  local bin start=$SECONDS
  bin="$(bin_of "$1")"
  if built "$1"; then
    log "${bin} is up to date (Argo CD ${ARGOCD_VERSION})"
    return
  fi
  mkdir -p "$(dirname "$bin")"
  if [[ $1 == cli ]]; then
    log "building Argo CD ${ARGOCD_VERSION}'s CLI (after the components: 2-3 min on 2 cores)..."
  else
    log "building Argo CD ${ARGOCD_VERSION}'s components (cold, after the add-ons: 4.5-5.5 min on 2 cores)..."
  fi
  (cd "$SRC" && ${GO} build -trimpath -tags="$(tags_of "$1")" -ldflags="$LDFLAGS" -o "${bin}.tmp" .)
  mv -f "${bin}.tmp" "$bin"
  stamp "$1" >"${bin}.stamp"
  echo "$(date -u +%FT%TZ) argocd ${ARGOCD_VERSION} $1: $((SECONDS - start))s $(stat -c %s "$bin") bytes" >>"${ARGOCD_CACHE}/build-times"
  log "built ${bin} in $((SECONDS - start))s"
}

build() { # [gitops|cli]: the components first, whose packages the CLI's build then reuses
  case "${1:-}" in
    gitops | cli) build_one "$1" ;;
    "") build_one gitops && build_one cli ;;
    *) die "build: gitops or cli, not $1" ;;
  esac
}

ROOT="$(cd "${HERE}/.." && pwd)"
NS=argocd
REDIS_BIN="${REDIS_BIN:-/usr/bin/redis-server}"
# shellcheck source=lib/proc.sh
source "${HERE}/lib/proc.sh"
# shellcheck source=lib/apt.sh
source "${HERE}/lib/apt.sh"

install_redis() {
  if [[ -x "$REDIS_BIN" ]]; then
    echo "redis-server: installed ($(dpkg-query -W -f '${Version}' redis-server 2>/dev/null || echo '?'))"
    return
  fi
  apt_install redis-server
  # policy-rc.d keeps Debian's service from starting in containers; where a service manager
  # started it anyway, stop it: our instances run per STATE_DIR on ports of their own.
  if command -v systemctl >/dev/null && systemctl is-active --quiet redis-server 2>/dev/null; then
    systemctl disable --now redis-server >/dev/null 2>&1 || true
  elif [[ -f /run/redis/redis-server.pid ]]; then # an init script's
    kill "$(cat /run/redis/redis-server.pid)" 2>/dev/null || true
  fi
  echo "redis-server: installed ($(dpkg-query -W -f '${Version}' redis-server))"
}

# free_port [EXCEPT...]: a loopback TCP port nothing listens on, below the ephemeral range
# (so no client connection takes it before the server binds it) and the benchmarks' fixed
# ports and the local cluster's NodePorts (internal/testenv's range), not one of EXCEPT.
free_port() {
  local p
  for _ in $(seq 1 200); do
    p=$((20000 + RANDOM % 7000))
    [[ " $* " == *" $p "* ]] && continue
    if ! (exec 3<>"/dev/tcp/127.0.0.1/${p}") 2>/dev/null; then
      echo "$p"
      return
    fi
  done
  die "no free port"
}

# http_ok PORT PATH: GET http://127.0.0.1:PORT/PATH answers 200 (bash only: no curl needed).
http_ok() {
  local status
  exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
  printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$2" >&3
  read -r -t 5 _ status _ <&3 || status=""
  exec 3>&-
  [[ "$status" == 200 ]]
}

# redis_ok: redis answers PING with the password (redis-cli reads it from REDISCLI_AUTH).
redis_ok() { [[ "$(REDISCLI_AUTH="$REDIS_PASSWORD" redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping)" == PONG ]]; }

# kubectl_bin: $KUBECTL, else the envtest build's kubectl (the API server's version), else PATH's.
kubectl_bin() {
  local k
  k="$("${HERE}/envtest.sh" --print-assets)/kubectl"
  if [[ -n "${KUBECTL:-}" ]]; then
    echo "$KUBECTL"
  elif [[ -x "$k" ]]; then
    echo "$k"
  else
    command -v kubectl || die "no kubectl"
  fi
}

helm_bin() {
  local h="${HELM:-${ROOT}/bin/helm}"
  [[ -x "$h" ]] || h="$(command -v helm)" || die "no helm: make helm (or set HELM)"
  echo "$h"
}

crd_dir() { # Argo CD's CRDs, in the argo-cd module source the build downloaded
  local dir
  dir="$(cd "$SRC" && ${GO} mod download -json "github.com/argoproj/argo-cd/v3@${ARGOCD_VERSION}" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
  [[ -d "${dir}/manifests/crds" ]] || die "no manifests/crds in the argo-cd module (${dir:-not downloaded})"
  echo "${dir}/manifests/crds"
}

# apply_objects KUBECTL: what the components read at start-up. Server-side: the
# ApplicationSet CRD is too large for client-side apply's annotation.
apply_objects() {
  local k=("$1" --kubeconfig "$KCFG") crds
  local apply=("${k[@]}" apply --server-side --force-conflicts --field-manager=openaaa-argocd)
  crds="$(crd_dir)"
  "${apply[@]}" -f "${crds}/application-crd.yaml" -f "${crds}/appproject-crd.yaml" \
    -f "${crds}/applicationset-crd.yaml" >/dev/null
  "${k[@]}" wait --for condition=Established --timeout=60s \
    crd/applications.argoproj.io crd/appprojects.argoproj.io >/dev/null
  # Argo CD reads only the ConfigMaps and Secrets labelled part-of=argocd.
  "${apply[@]}" -f - >/dev/null <<YAML
apiVersion: v1
kind: Namespace
metadata: {name: ${NS}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-rbac-cm, namespace: ${NS}, labels: {app.kubernetes.io/part-of: argocd}}
YAML
  # argocd-secret's key signs the API server's tokens (none runs here); created once, so that a
  # second `up` keeps it.
  if ! "${k[@]}" -n "$NS" get secret argocd-secret >/dev/null 2>&1; then
    "${k[@]}" -n "$NS" create secret generic argocd-secret \
      --from-literal=server.secretkey="$(head -c 32 /dev/urandom | base64)" >/dev/null
    "${k[@]}" -n "$NS" label secret argocd-secret app.kubernetes.io/part-of=argocd >/dev/null
  fi
  # Our health checks: the snippet docs/argocd.md tells users to merge.
  "${apply[@]}" -f "${ROOT}/config/argocd/argocd-cm.yaml" >/dev/null
  # The API server creates the project default; none runs here.
  "${apply[@]}" -f - >/dev/null <<YAML
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: default, namespace: ${NS}}
spec:
  sourceRepos: ['*']
  destinations: [{server: '*', namespace: '*'}]
  clusterResourceWhitelist: [{group: '*', kind: '*'}]
YAML
}

# start NAME CHECK... -- COMMAND...: run COMMAND as NAME in the background, logging to
# STATE/log/NAME.log, its PID in STATE/NAME.pid; wait until CHECK succeeds (READY_SECONDS).
# A NAME still running is left as it is.
start() {
  local name=$1 pid pidfile="${STATE}/${1}.pid" check=()
  shift
  while [[ $1 != -- ]]; do check+=("$1"); shift; done
  shift
  if pid="$(proc_pid "$pidfile")"; then
    log "${name} already running (PID ${pid})"
    return
  fi
  "$@" >>"${STATE}/log/${name}.log" 2>&1 &
  echo $! >"$pidfile"
  PROC_READY_TENTHS=$((READY_SECONDS * 10)) proc_wait_ready $! "$pidfile" "$name" \
    "${STATE}/log/${name}.log" -- "${check[@]}" >/dev/null
}

up() {
  [[ $# -eq 2 ]] || die "usage: up KUBECONFIG STATE_DIR"
  [[ -f "$1" ]] || die "no kubeconfig $1"
  KCFG="$(realpath "$1")"
  mkdir -p "$2"
  STATE="$(realpath "$2")"
  [[ -x "$REDIS_BIN" ]] || die "no ${REDIS_BIN}: hack/argocd.sh install-redis"
  command -v git >/dev/null || die "no git"
  built gitops || die "${GITOPS_BIN} is not built or out of date: make argocd-gitops"
  READY_SECONDS="${READY_SECONDS:-120}" # the controller first syncs its caches of every API group
  local kubectl helm role
  kubectl="$(kubectl_bin)"
  helm="$(helm_bin)"
  mkdir -p "${STATE}"/{bin,tmp,tls,ssh,gpg/keys,gpg/source,redis,log}
  chmod 700 "${STATE}/gpg/keys" "${STATE}/redis"
  # The role follows argv[0] (hack/argocd/main.go): a link of each name, on the components'
  # PATH, where the repo server also finds argocd-git-ask-pass and helm.
  for role in argocd-repo-server argocd-application-controller argocd-git-ask-pass; do
    ln -sfn "$GITOPS_BIN" "${STATE}/bin/${role}"
  done
  ln -sfn "$helm" "${STATE}/bin/helm"
  # Ports and password are kept, so that a second `up` (some components running) agrees.
  if [[ ! -f "${STATE}/env" ]]; then
    local r p m c
    r="$(free_port)"
    p="$(free_port "$r")"
    m="$(free_port "$r" "$p")"
    c="$(free_port "$r" "$p" "$m")"
    (umask 077 && printf 'REDIS_PORT=%s\nREPO_PORT=%s\nREPO_METRICS_PORT=%s\nCONTROLLER_METRICS_PORT=%s\nREDIS_PASSWORD=%s\n' \
      "$r" "$p" "$m" "$c" "$(head -c 18 /dev/urandom | base64 | tr -d '/+=')" >"${STATE}/env")
  fi
  # shellcheck source=/dev/null
  source "${STATE}/env"
  apply_objects "$kubectl"

  # No persistence: Argo CD's cache is rebuilt from git and the API server.
  start redis redis_ok -- "$REDIS_BIN" --bind 127.0.0.1 --port "$REDIS_PORT" \
    --requirepass "$REDIS_PASSWORD" --save '' --appendonly no --dir "${STATE}/redis" --daemonize no
  export REDIS_PASSWORD KUBECONFIG="$KCFG" ARGOCD_FAKE_IN_CLUSTER=true PATH="${STATE}/bin:${PATH}" \
    TMPDIR="${STATE}/tmp" ARGOCD_TLS_DATA_PATH="${STATE}/tls" ARGOCD_SSH_DATA_PATH="${STATE}/ssh" \
    ARGOCD_GNUPGHOME="${STATE}/gpg/keys" ARGOCD_GPG_DATA_PATH="${STATE}/gpg/source" ARGOCD_GPG_ENABLED=false
  # Plaintext gRPC on loopback, as Argo CD's e2e: no certificates to make.
  start repo-server http_ok "$REPO_METRICS_PORT" /healthz -- "${STATE}/bin/argocd-repo-server" \
    --address 127.0.0.1 --port "$REPO_PORT" --metrics-address 127.0.0.1 \
    --metrics-port "$REPO_METRICS_PORT" --redis "127.0.0.1:${REDIS_PORT}" --disable-tls \
    --loglevel "${ARGOCD_LOGLEVEL:-info}"
  # The controller's metrics server has no address flag: it listens on every interface.
  # --persist-resource-health: each object's health and message in the Application's
  # status.resources, where kubectl shows them. Argo CD 3 otherwise keeps them in its cache
  # for the API server and UI, which this local Argo CD does not run.
  start controller http_ok "$CONTROLLER_METRICS_PORT" /healthz -- \
    "${STATE}/bin/argocd-application-controller" --kubeconfig "$KCFG" --namespace "$NS" \
    --metrics-port "$CONTROLLER_METRICS_PORT" --redis "127.0.0.1:${REDIS_PORT}" \
    --repo-server "127.0.0.1:${REPO_PORT}" --repo-server-plaintext --persist-resource-health \
    --status-processors 2 --operation-processors 2 --loglevel "${ARGOCD_LOGLEVEL:-info}"
  echo "Argo CD ${ARGOCD_VERSION} up against ${KCFG} (namespace ${NS}):"
  echo "  redis        PID $(cat "${STATE}/redis.pid")  127.0.0.1:${REDIS_PORT} (password in ${STATE}/env)"
  echo "  repo-server  PID $(cat "${STATE}/repo-server.pid")  127.0.0.1:${REPO_PORT}, /healthz on :${REPO_METRICS_PORT}"
  echo "  controller   PID $(cat "${STATE}/controller.pid")  /healthz on :${CONTROLLER_METRICS_PORT}"
  echo "  logs         ${STATE}/log"
}

down() {
  [[ $# -eq 1 ]] || die "usage: down STATE_DIR"
  local state=$1 name
  if [[ ! -d "$state" ]]; then
    log "no ${state}: nothing to stop"
    return
  fi
  # The controller first, so that it does not log the others' going.
  for name in controller repo-server redis; do
    proc_stop "${state}/${name}.pid"
  done
  rm -rf "${state:?}"/{bin,tmp,tls,ssh,gpg,redis,env}
  log "stopped; logs kept in ${state}/log"
}

# gitrepo DIR: a repository Argo CD reads as file://DIR: charts/ (the work tree's) and
# values/aaacluster.yaml. Run again, it commits what changed in charts/ (nothing: no commit).
gitrepo() {
  [[ $# -eq 1 ]] || die "usage: gitrepo DIR"
  local dir=$1
  mkdir -p "$dir"
  # A fixed identity and no user or system configuration: the same commits on every machine.
  local git=(env GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
    GIT_AUTHOR_NAME="OpenAAA test" GIT_AUTHOR_EMAIL=test@openaaa.invalid
    GIT_COMMITTER_NAME="OpenAAA test" GIT_COMMITTER_EMAIL=test@openaaa.invalid git -C "$dir")
  [[ -d "${dir}/.git" ]] || "${git[@]}" init -q -b main
  rm -rf "${dir}/charts"
  cp -R "${ROOT}/charts" "${dir}/charts"
  if [[ ! -f "${dir}/values/aaacluster.yaml" ]]; then
    mkdir -p "${dir}/values"
    cat >"${dir}/values/aaacluster.yaml" <<'YAML'
# Values of the aaacluster chart (charts/aaacluster) for this repository's AAACluster.
name: radius
datacenters:
  - name: dc1
    replicas: 1
YAML
  fi
  "${git[@]}" add -A
  if "${git[@]}" rev-parse -q --verify HEAD >/dev/null && "${git[@]}" diff --cached --quiet; then
    log "${dir}: up to date at $("${git[@]}" rev-parse --short HEAD)"
  else
    "${git[@]}" commit -q -m "charts and values of OpenAAA $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
    log "${dir}: committed $("${git[@]}" rev-parse --short HEAD)"
  fi
  echo "file://$(realpath "$dir")"
}

case "${1:-build}" in
  build) build "${2:-}" ;;
  path) bin_of "${2:-cli}" ;;
  version) ARGOCD_BINARY_NAME=argocd-resource-health "$GITOPS_BIN" version ;;
  install-redis) install_redis ;;
  up) shift; up "$@" ;;
  down) shift; down "$@" ;;
  gitrepo) shift; gitrepo "$@" ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
esac
