#!/usr/bin/env bash
# Builds the envtest assets (kube-apiserver, etcd, optionally kubectl) from the Go module proxy
# and fetches the third-party CRDs the operator tests load (k8ssandra-operator, cert-manager,
# prometheus-operator) from their pinned module zips. setup-envtest cannot download here.
#
# Everything goes into a cache directory that survives fresh clones, never into the repo:
#   $CACHE/envtest/k8s-<version>/bin/{kube-apiserver,etcd[,kubectl]}   (KUBEBUILDER_ASSETS)
#   $CACHE/envtest/k8s-<version>/crds/*.yaml                            (OPENAAA_THIRD_PARTY_CRDS)
#   $CACHE/envtest/src/{kube-apiserver,etcd}/go.mod                     (wrapper modules,
#                                                  hack/lib/kube-build.sh, shared with cluster.sh)
#
# Idempotent: a second run with the same versions and flags returns in well under a second.
# Cold: 7-12 min on 2 cores (kube-apiserver), warm with a Go build cache: seconds.
#
# Usage: hack/envtest.sh [--kubectl] [--print-assets|--print-crds]
#   --kubectl       also build kubectl (used by hack/operator-local.sh)
#   --print-assets  only print the asset directory (no build)
#   --print-crds    only print the CRD directory (no build)
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-1.34.4}"         # k8s.io/kubernetes v1.34.4, staging modules v0.34.4
K8SSANDRA_OPERATOR_VERSION="v1.26.0"
CERT_MANAGER_VERSION="v1.18.5"
PROMETHEUS_OPERATOR_VERSION="v0.89.0"

CACHE="${CACHE:-${HOME}/.cache/openaaa}"
ROOT_DIR="${CACHE}/envtest"
ASSETS="${ROOT_DIR}/k8s-${K8S_VERSION}/bin"
CRDS="${ROOT_DIR}/k8s-${K8S_VERSION}/crds"

WANT_KUBECTL=0
for arg in "$@"; do
  case "$arg" in
    --kubectl) WANT_KUBECTL=1 ;;
    --print-assets) echo "$ASSETS"; exit 0 ;;
    --print-crds) echo "$CRDS"; exit 0 ;;
    *) echo "unknown argument: $arg" >&2; exit 2 ;;
  esac
done

# The wrapper module, flags and stamps are shared with hack/cluster.sh (kubelet & co.), so
# one Go build cache serves every Kubernetes binary.
# shellcheck source=lib/kube-build.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/kube-build.sh"
# shellcheck source=lib/cert-manager-crds.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/cert-manager-crds.sh"

log() { echo "envtest: $*" >&2; }

module_dir() { # module@version
  local out dir
  out="$(${GO} mod download -json "$1")"
  dir="$(sed -n 's/.*"Dir": "\(.*\)".*/\1/p' <<<"$out")"
  if [[ -z "$dir" || ! -d "$dir" ]]; then
    echo "envtest: cannot download $1: $out" >&2
    exit 1
  fi
  echo "$dir"
}

fetch_crds() {
  local stamp="k8ssandra=${K8SSANDRA_OPERATOR_VERSION} cert-manager=${CERT_MANAGER_VERSION} prometheus-operator=${PROMETHEUS_OPERATOR_VERSION}"
  if [[ -f "${CRDS}/.stamp" && "$(cat "${CRDS}/.stamp")" == "$stamp" ]]; then return; fi
  log "fetching third-party CRDs from module zips..."
  local tmp="${CRDS}.tmp"
  rm -rf "$tmp" && mkdir -p "$tmp"
  local d
  d="$(module_dir "github.com/k8ssandra/k8ssandra-operator@${K8SSANDRA_OPERATOR_VERSION}")"
  cp "$d/config/crd/bases/k8ssandra.io_k8ssandraclusters.yaml" "$tmp/"
  d="$(module_dir "github.com/cert-manager/cert-manager@${CERT_MANAGER_VERSION}")"
  local f
  for f in certificates issuers clusterissuers; do
    cert_manager_crd "$d" "$f" "$tmp" || exit 1
  done
  d="$(module_dir "github.com/prometheus-operator/prometheus-operator@${PROMETHEUS_OPERATOR_VERSION}")"
  cp "$d/example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml" \
     "$d/example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml" "$tmp/"
  chmod 0644 "$tmp"/*.yaml
  echo "$stamp" >"$tmp/.stamp"
  rm -rf "$CRDS" && mv "$tmp" "$CRDS"
}

mkdir -p "$ASSETS"
fetch_crds
etcd_build_bin "$ASSETS"
kube_build_bin kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$ASSETS"
if [[ "$WANT_KUBECTL" == 1 ]]; then
  kubectl_build_bin "$ASSETS"
fi
log "assets in ${ASSETS} ($(cd "$ASSETS" && ls | tr '\n' ' '))"
log "third-party CRDs in ${CRDS}"
echo "$ASSETS"
