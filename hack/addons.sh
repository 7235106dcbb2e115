#!/usr/bin/env bash
# The real add-ons of the local cluster (issue 12), built from the Go module proxy, no Docker:
# prometheus-operator and its prometheus-config-reloader, Prometheus, metrics-server, and
# cert-manager's controller, webhook and cainjector (our own mains against its library:
# hack/addons/cert-manager, since upstream's cmd/* modules are not on the module proxy;
# docs/addons.md); and for managed Cassandra (issue 31) cass-operator and k8ssandra-operator,
# built with the others but installed apart (install-k8ssandra).
# Versions and image names are in hack/addons/images.env; manifests in hack/addons/manifests.
#
# Static binaries (CGO_ENABLED=0, -trimpath) and OCI archives (internal/tools/ocibuild) are
# cached under $ADDONS_CACHE (default $CACHE/addons, $CACHE default ~/.cache/openaaa), each
# with a stamp of its version, the Go version and the flags: a warm run takes seconds.
#
#   $ADDONS_CACHE/src/...             wrapper modules (go.mod, go.sum), and the patched
#                                     copies of Prometheus and metrics-server (patched_src)
#   $ADDONS_CACHE/bin/NAME            binaries
#   $ADDONS_CACHE/images/NAME.oci.tar images (and their OCI layouts)
#   $ADDONS_CACHE/crds/*.yaml         the CRDs the add-ons need beyond OPENAAA_THIRD_PARTY_CRDS
#   $ADDONS_CACHE/crds-cert-manager/  cert-manager's CRDs (certificates, certificaterequests, issuers)
#   $ADDONS_CACHE/build-times         seconds of each build (cold when the Go cache was cold)
#
# Usage: hack/addons.sh COMMAND
#   build [NAME...]        binaries, images and CRDs (default: all)
#   list                   NAME IMAGE ARCHIVE, one line each
#   smoke                  run every binary with --version or --help
#   crds                   print the CRD files to apply, one a line (fetched when missing)
#   render                 the manifests with images and versions filled in, on stdout
#   import CMD...          import every image: runs `CMD... ARCHIVE=REPO...` once, e.g.
#                          `hack/addons.sh import hack/cluster.sh import` (REPO: the image without tag)
#   install KUBECONFIG     apply CRDs and manifests, wait (bounded) until every add-on works
#   install-cert-manager KUBECONFIG   only cert-manager and its CA ClusterIssuer (also part of install)
#   install-k8ssandra KUBECONFIG      managed Cassandra, not part of install: imports the images
#                          (K8SSANDRA_IMPORT, default `hack/cluster.sh import`; Cassandra's from
#                          $CACHE/cassandra-image/*.oci.tar when present), cert-manager, the CRDs,
#                          cass-operator and k8ssandra-operator, StorageClass openaaa-local and
#                          K8SSANDRA_PVS (4) static volumes; waits until both operators are
#                          Available and both webhooks answer
#   uninstall-k8ssandra KUBECONFIG    delete what install-k8ssandra applied (not cert-manager)
#   k8ssandra-storage KUBECONFIG      only the StorageClass and volumes (remakes Released ones)
#   crds-k8ssandra         print the CRD files of cass-operator and k8ssandra-operator
#   verify KUBECONFIG      a ServiceMonitor target up in Prometheus, a PrometheusRule
#                          evaluated, pod metrics from metrics.k8s.io
#   uninstall KUBECONFIG   delete what install applied; fails naming anything left behind
# Environment: KUBECTL (default: the envtest kubectl, else PATH), ADDONS_TIMEOUT (s, 300).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
ADDONS="${HERE}/addons"
CACHE="${CACHE:-${HOME}/.cache/openaaa}"
ADDONS_CACHE="${ADDONS_CACHE:-${CACHE}/addons}"
GO="${GO:-go}"
TIMEOUT="${ADDONS_TIMEOUT:-300}"

# shellcheck source=lib/cert-manager-crds.sh
source "${HERE}/lib/cert-manager-crds.sh"

log() { echo "addons: $*" >&2; }
die() { echo "addons: $*" >&2; exit 1; }

# images.env holds KEY=value lines only; read them without executing the file.
while IFS='=' read -r k v; do
  [[ "$k" =~ ^[A-Z_][A-Z0-9_]*$ ]] && printf -v "$k" '%s' "$v" && export "${k?}"
done < <(grep -E '^[A-Z_][A-Z0-9_]*=' "${ADDONS}/images.env")

# The same flags and environment as the cluster's Kubernetes binaries (hack/lib/kube-build.sh:
# GOTOOLCHAIN, GOWORK, GOFLAGS, CGO_ENABLED=0; -trimpath below), and its K8S_VERSION: the
# add-ons are built against the same k8s.io/* v0.<minor>.<patch> as the cluster and the root
# go.mod.
# shellcheck source=hack/lib/kube-build.sh
source "${HERE}/lib/kube-build.sh"
K8S_MODULE_VERSION="v0.${K8S_VERSION#*.}"
# GONOSUMDB comes from images.env (exported above, as every key there).
GOVERSION_TEXT="$(${GO} env GOVERSION)"

# The path of hack/addons/cert-manager's module: under cert-manager's own prefix, so that the
# webhook may import the library's internal/ packages (docs/addons.md).
CM_MODULE="$(sed -n 's/^module //p' "${ADDONS}/cert-manager/go.mod")"

# name | wrapper module (under $ADDONS_CACHE/src) | package | image | bin dir in the image
# The binaries of one wrapper module are built by one `go build` (one module graph: every
# shared package compiled once, both cores busy).
COMPONENTS=(
  "prometheus-operator|monitoring|github.com/prometheus-operator/prometheus-operator/cmd/operator|${IMAGE_PROMETHEUS_OPERATOR}|/usr/local/bin"
  # prometheus-operator runs the reloader as /bin/prometheus-config-reloader (a fixed command).
  "prometheus-config-reloader|monitoring|github.com/prometheus-operator/prometheus-operator/cmd/prometheus-config-reloader|${IMAGE_PROMETHEUS_CONFIG_RELOADER}|/bin"
  "prometheus|monitoring|github.com/prometheus/prometheus/cmd/prometheus|${IMAGE_PROMETHEUS}|/bin"
  "metrics-server|monitoring|sigs.k8s.io/metrics-server/cmd/metrics-server|${IMAGE_METRICS_SERVER}|/usr/local/bin"
  # Our mains (hack/addons/cert-manager/*), not upstream's: the controller with only the CA and
  # SelfSigned issuers, the webhook, the cainjector; one module, one build.
  "cert-manager-controller|cert-manager|${CM_MODULE}/controller|${IMAGE_CERT_MANAGER_CONTROLLER}|/usr/local/bin"
  "cert-manager-webhook|cert-manager|${CM_MODULE}/webhook|${IMAGE_CERT_MANAGER_WEBHOOK}|/usr/local/bin"
  "cert-manager-cainjector|cert-manager|${CM_MODULE}/cainjector|${IMAGE_CERT_MANAGER_CAINJECTOR}|/usr/local/bin"
  # Managed Cassandra (issue 31): cass-operator's manager (its cmd package) and
  # k8ssandra-operator's (its module's root package), one module graph, one build.
  "cass-operator|k8ssandra|github.com/k8ssandra/cass-operator/cmd|${IMAGE_CASS_OPERATOR}|/usr/local/bin"
  "k8ssandra-operator|k8ssandra|github.com/k8ssandra/k8ssandra-operator|${IMAGE_K8SSANDRA_OPERATOR}|/usr/local/bin"
)

field() { # component-line index
  local IFS='|'; local -a f; read -r -a f <<<"$1"; echo "${f[$2]}"
}

component() { # name -> its line
  local c
  for c in "${COMPONENTS[@]}"; do [[ "$(field "$c" 0)" == "$1" ]] && { echo "$c"; return; }; done
  die "unknown add-on binary $1 (one of: $(names | tr '\n' ' '))"
}

names() { local c; for c in "${COMPONENTS[@]}"; do field "$c" 0; done; }

ldflags() { # name
  local pcv="github.com/prometheus/common/version"
  case "$1" in
    prometheus-operator | prometheus-config-reloader)
      echo "-s -w -X ${pcv}.Version=${PROMETHEUS_OPERATOR_VERSION#v} -X ${pcv}.Branch=HEAD -X ${pcv}.BuildUser=openaaa" ;;
    prometheus)
      echo "-s -w -X ${pcv}.Version=${PROMETHEUS_VERSION#v} -X ${pcv}.Branch=HEAD -X ${pcv}.BuildUser=openaaa" ;;
    metrics-server)
      echo "-s -w -X k8s.io/client-go/pkg/version.gitVersion=${METRICS_SERVER_VERSION} -X k8s.io/component-base/version.gitVersion=${METRICS_SERVER_VERSION}" ;;
    cert-manager-*)
      echo "-s -w -X main.version=${CERT_MANAGER_VERSION}" ;;
    cass-operator | k8ssandra-operator) # neither has a version variable to set
      echo "-s -w" ;;
  esac
}

# Wrapper modules, generated under $ADDONS_CACHE/src so that go.sum updates stay out of the
# repository.
prepare_src() { # wrapper dir (relative)
  local rel="$1" dir="${ADDONS_CACHE}/src/$1"
  mkdir -p "$dir"
  case "$rel" in
    monitoring)
      # prometheus-operator, its reloader, Prometheus and metrics-server: the operator requires
      # github.com/prometheus/prometheus ${PROMETHEUS_MODULE_VERSION} as a library, so one
      # module graph compiles every shared package once. Prometheus and metrics-server come
      # from patched copies (patched_src): Prometheus with only the service discoveries the
      # local cluster uses, metrics-server calling that Prometheus's textparse.New.
      REPLACES="github.com/prometheus/prometheus => $(patched_src "github.com/prometheus/prometheus@${PROMETHEUS_MODULE_VERSION}" "sd=${PROMETHEUS_SD}" prometheus_plugins)
sigs.k8s.io/metrics-server => $(patched_src "sigs.k8s.io/metrics-server@${METRICS_SERVER_VERSION}" "textparse=${PROMETHEUS_MODULE_VERSION}" metrics_server_textparse)" \
      K8S_PINS="api apiextensions-apiserver apimachinery apiserver client-go component-base kms metrics" \
        k8s_wrapper_mod monitoring "prometheus-operator ${PROMETHEUS_OPERATOR_VERSION}, Prometheus ${PROMETHEUS_VERSION}, metrics-server ${METRICS_SERVER_VERSION}" \
        "github.com/prometheus-operator/prometheus-operator ${PROMETHEUS_OPERATOR_VERSION}" \
        "github.com/prometheus/prometheus ${PROMETHEUS_MODULE_VERSION}" \
        "sigs.k8s.io/metrics-server ${METRICS_SERVER_VERSION}" | write_if_changed "$dir/go.mod"
      ;;
    k8ssandra)
      # cass-operator and k8ssandra-operator, pinned together: k8ssandra-operator v1.26.0 (the
      # only version the module proxy serves) asks for cass-operator v1.26.0, whose checksum
      # lookup fails (404), and does not compile against v1.30.0 (`unknown field CDC`); it
      # builds against v1.28.0. Both ask for k8s.io v0.33 and controller-runtime v0.21; they
      # build with the root module's (v0.34.4, v0.22.5), so the graphs share those packages.
      K8S_PINS="api apiextensions-apiserver apimachinery apiserver client-go component-base" \
        k8s_wrapper_mod k8ssandra "cass-operator ${CASS_OPERATOR_VERSION}, k8ssandra-operator ${K8SSANDRA_OPERATOR_VERSION}" \
        "github.com/k8ssandra/cass-operator ${CASS_OPERATOR_VERSION}" \
        "github.com/k8ssandra/k8ssandra-operator ${K8SSANDRA_OPERATOR_VERSION}" | write_if_changed "$dir/go.mod"
      ;;
    cert-manager)
      # Our own module, kept in the repository (go.mod pins cert-manager and k8s.io v0.34.4);
      # copied so that the build never writes into the work tree.
      local f
      for f in go.mod go.sum $(cd "${ADDONS}/cert-manager" && ls -- */*.go); do
        mkdir -p "$dir/$(dirname "$f")"
        cmp -s "${ADDONS}/cert-manager/$f" "$dir/$f" || cp "${ADDONS}/cert-manager/$f" "$dir/$f"
      done
      # A source file the repository no longer has goes too (e.g. the old top-level main.go).
      for f in $(cd "$dir" && find . -name '*.go' | sed 's|^\./||'); do
        [[ -f "${ADDONS}/cert-manager/$f" ]] || rm -f "$dir/$f"
      done
      ;;
  esac
  echo "$dir"
}

# Prometheus's service discoveries: upstream registers all 23 of them (plugins/plugins.go,
# generated from its plugins.yml; AWS, Azure, GCE, OpenStack... SDKs: about a third of the
# monitoring graph's source); a build may keep a subset, as upstream documents. The local
# cluster's Prometheus discovers only Kubernetes targets (prometheus-operator's
# kubernetes_sd_configs); file and HTTP discovery are always in (plugins/minimum.go).
PROMETHEUS_SD="kubernetes"

# patched_src MODULE@VERSION STAMP EDIT: a writable copy of a module under $ADDONS_CACHE/src
# (the module cache is read-only, and go build's -overlay refuses its files), changed by the
# function EDIT (run in the copy); its path on stdout. Made again when STAMP changes.
patched_src() {
  local dir="${ADDONS_CACHE}/src/${1##*/}" stamp="$2 edit=$(declare -f "$3" | sha256sum | cut -c1-16)" tmp
  if [[ -f "${dir}/.openaaa-stamp" && "$(cat "${dir}/.openaaa-stamp")" == "$stamp" ]]; then
    echo "$dir"; return
  fi
  tmp="${dir}.tmp"
  rm -rf "$tmp" "$dir"
  cp -r "$(module_dir "$1")" "$tmp"
  chmod -R u+w "$tmp"
  (cd "$tmp" && "$3") || die "patching $1 ($3) failed"
  echo "$stamp" >"${tmp}/.openaaa-stamp"
  mv "$tmp" "$dir"
  echo "$dir"
}

prometheus_plugins() { # plugins/plugins.go registering PROMETHEUS_SD only
  local sd
  {
    echo "// Generated by hack/addons.sh: the service discoveries of the local cluster's Prometheus."
    echo
    echo "package plugins"
    echo
    echo "import ("
    for sd in ${PROMETHEUS_SD}; do echo "	_ \"github.com/prometheus/prometheus/discovery/${sd}\""; done
    echo ")"
  } >plugins/plugins.go
}

# metrics-server v0.8.0 parses the kubelet's resource metrics with textparse.New of Prometheus
# v0.304.2: New(b, contentType, fallbackType, parseClassicHistograms, skipOMCTSeries, st);
# the version prometheus-operator needs has New(b, contentType, st, ParserOptions): for
# "text/plain" the same parser, with the zero options. The one call, changed to that form
# (and checked that it was).
metrics_server_textparse() {
  local f=pkg/scraper/client/resource/decode.go
  sed -i 's|textparse.New(b, "text/plain", "", false, false, nil)|textparse.New(b, "text/plain", nil, textparse.ParserOptions{})|' "$f"
  grep -q 'textparse.New(b, "text/plain", nil, textparse.ParserOptions{})' "$f"
}

# REPLACES=LINES K8S_PINS=MODULES k8s_wrapper_mod NAME WHAT REQUIREMENT...: a wrapper go.mod with
# the add-ons' REQUIREMENTs, the k8s.io MODULES of their graph at the cluster's version
# (metrics-server v0.8.0 asks for v0.33.2, prometheus-operator v0.89.0 for v0.34.3), and every
# other module the root module compiles, at the root's version (root_requirements in
# hack/lib/kube-build.sh): the packages the add-ons share with the images, kubectl and the
# Kubernetes binaries (k8s.io/*, grpc, protobuf, golang.org/x...) then compile once
# (docs/addons.md, Cost).
k8s_wrapper_mod() {
  local name="$1" what="$2" r m; shift 2
  echo "// Generated by hack/addons.sh: ${what}; k8s.io/* ${K8S_MODULE_VERSION} as the cluster."
  echo "module openaaa.local/addons/${name}"
  echo
  echo "go 1.25.0"
  echo
  echo "require ("
  for r in "$@"; do echo "	${r}"; done
  for m in ${K8S_PINS}; do
    echo "	k8s.io/${m} ${K8S_MODULE_VERSION}"
  done
  echo ")"
  echo
  echo "// Every other module the root module compiles, at its version (root_requirements in"
  echo "// hack/lib/kube-build.sh): the packages shared with the images compile once."
  echo "require ("
  # shellcheck disable=SC2046 # one word per module path
  root_requirements $(for r in "$@"; do echo "${r%% *}"; done) $(for m in ${K8S_PINS}; do echo "k8s.io/${m}"; done)
  echo ")"
  if [[ -n "${REPLACES:-}" ]]; then
    echo
    echo "replace ("
    while IFS= read -r r; do echo "	${r}"; done <<<"${REPLACES}"
    echo ")"
  fi
}

src_hash() { # wrapper dir (relative): " src=HASH" of its sources kept in the repository, if any
  [[ -d "${ADDONS}/$1" ]] || return 0
  echo " src=$(cd "${ADDONS}/$1" && cat go.mod go.sum $(ls -- *.go */*.go 2>/dev/null) | sha256sum | cut -c1-16)"
}

write_if_changed() { # file; content on stdin. A changed go.mod gets the root's go.sum hashes too.
  local new; new="$(cat)"
  if [[ ! -f "$1" ]] || [[ "$(cat "$1")" != "$new" ]]; then
    printf '%s\n' "$new" >"$1"
    root_go_sum "$(dirname "$1")"
  fi
}

bin_stamp() { # name: what its binary is built from
  local c; c="$(component "$1")"
  echo "go=${GOVERSION_TEXT} k8s=${K8S_MODULE_VERSION} module=$(field "$c" 1) pkg=$(field "$c" 2)$(src_hash "$(field "$c" 1)")$([[ "$(field "$c" 1)" != monitoring ]] || echo " sd=${PROMETHEUS_SD} patches=$(declare -f prometheus_plugins metrics_server_textparse | sha256sum | cut -c1-16)") ldflags=$(ldflags "$1") $(grep -E '^[A-Z_]+_VERSION=' "${ADDONS}/images.env" | tr '\n' ' ')"
}

bin_ok() { # name
  local out="${ADDONS_CACHE}/bin/$1"
  [[ -x "$out" && -f "${out}.stamp" && "$(cat "${out}.stamp")" == "$(bin_stamp "$1")" ]]
}

# build_bins NAME...: the stale ones, one `go build` per wrapper module; each binary keeps its
# own link flags through go build's per-package form (-ldflags=PACKAGE=FLAGS).
build_bins() {
  local rel n c pkg dir tmp start
  local -a rels=() todo pkgs flags
  for n in "$@"; do
    rel="$(field "$(component "$n")" 1)"
    [[ " ${rels[*]} " == *" ${rel} "* ]] || rels+=("$rel")
  done
  # Every wrapper first, even when its binaries are up to date: its go.mod follows the root
  # module's versions (test/addons TestBuildsShareRootVersions reads it).
  for rel in "${rels[@]}"; do prepare_src "$rel" >/dev/null; done
  rels=()
  for n in "$@"; do
    bin_ok "$n" && continue
    rel="$(field "$(component "$n")" 1)"
    [[ " ${rels[*]} " == *" ${rel} "* ]] || rels+=("$rel")
  done
  for rel in "${rels[@]}"; do
    todo=() pkgs=() flags=()
    for n in "$@"; do
      c="$(component "$n")"
      [[ "$(field "$c" 1)" == "$rel" ]] && ! bin_ok "$n" || continue
      pkg="$(field "$c" 2)"
      todo+=("$n") pkgs+=("$pkg") flags+=("-ldflags=${pkg}=$(ldflags "$n")")
    done
    dir="$(prepare_src "$rel")"
    tmp="${ADDONS_CACHE}/bin/.build-${rel}"
    rm -rf "$tmp" && mkdir -p "$tmp" "${ADDONS_CACHE}/bin"
    log "building ${todo[*]} (module ${rel}; cold: minutes on 2 cores)..."
    start=$SECONDS
    (cd "$dir" && ${GO} build -trimpath "${flags[@]}" -o "${tmp}/" "${pkgs[@]}")
    for n in "${todo[@]}"; do
      pkg="$(field "$(component "$n")" 2)"
      mv -f "${tmp}/${pkg##*/}" "${ADDONS_CACHE}/bin/${n}" # go build names it after the package path's last element
      bin_stamp "$n" >"${ADDONS_CACHE}/bin/${n}.stamp"
    done
    rm -rf "$tmp"
    echo "$(date -u +%FT%TZ) ${rel}: ${todo[*]} $((SECONDS - start))s" >>"${ADDONS_CACHE}/build-times"
    log "built ${todo[*]} in $((SECONDS - start))s"
  done
}

build_image() { # name
  local c name image bindir repo tag stamp
  c="$(component "$1")"; name="$1"; image="$(field "$c" 3)"; bindir="$(field "$c" 4)"
  repo="${image%:*}"; tag="${image##*:}"
  local bin="${ADDONS_CACHE}/bin/${name}" dir="${ADDONS_CACHE}/images"
  stamp="bin=$(sha256sum "$bin" | cut -c1-16) ocibuild=$(sha256sum "${ROOT}/internal/tools/ocibuild/main.go" | cut -c1-16) image=${image} bindir=${bindir}"
  if [[ -f "${dir}/${name}.oci.tar" && -f "${dir}/.${name}.stamp" && "$(cat "${dir}/.${name}.stamp")" == "$stamp" ]]; then return; fi
  mkdir -p "$dir"
  (cd "$ROOT" && ${GO} run ./internal/tools/ocibuild -name "$name" -binary "$bin" -tag "$tag" \
    -version "$tag" -bindir "$bindir" -source "https://${repo#openaaa.local/}" -out "$dir") >&2
  echo "$stamp" >"${dir}/.${name}.stamp"
}

# CRDs: prometheus-operator's CRDs that envtest already fetches (OPENAAA_THIRD_PARTY_CRDS,
# hack/envtest.sh) are used from there; the other kinds the operator watches come from the
# same pinned module zip into $ADDONS_CACHE/crds.
envtest_crds() { echo "${OPENAAA_THIRD_PARTY_CRDS:-$("${HERE}/envtest.sh" --print-crds)}"; }

module_dir() { # module@version
  local out dir
  out="$(GOFLAGS=-mod=mod ${GO} mod download -json "$1")"
  dir="$(sed -n 's/.*"Dir": "\(.*\)".*/\1/p' <<<"$out")"
  [[ -n "$dir" && -d "$dir" ]] || die "cannot download $1: $out"
  echo "$dir"
}

fetch_crds() {
  local base; base="$(envtest_crds)"
  [[ -f "${base}/monitoring.coreos.com_servicemonitors.yaml" ]] ||
    die "third-party CRDs missing in ${base}: run \`make envtest-assets\` (hack/envtest.sh)"
  local dir="${ADDONS_CACHE}/crds" stamp="prometheus-operator=${PROMETHEUS_OPERATOR_VERSION} base=$(cd "$base" && ls | tr '\n' ' ')"
  if [[ -f "${dir}/.stamp" && "$(cat "${dir}/.stamp")" == "$stamp" ]]; then return; fi
  local tmp="${dir}.tmp" d f
  rm -rf "$tmp" && mkdir -p "$tmp"
  d="$(module_dir "github.com/prometheus-operator/prometheus-operator@${PROMETHEUS_OPERATOR_VERSION}")"
  for f in "$d"/example/prometheus-operator-crd/monitoring.coreos.com_*.yaml; do
    [[ -f "${base}/$(basename "$f")" ]] || cp "$f" "$tmp/"
  done
  chmod 0644 "$tmp"/*.yaml
  echo "$stamp" >"${tmp}/.stamp"
  rm -rf "$dir" && mv "$tmp" "$dir"
}

list_crds() {
  fetch_crds
  local base; base="$(envtest_crds)"
  ls "${base}"/monitoring.coreos.com_*.yaml "${ADDONS_CACHE}"/crds/*.yaml
  cert_manager_crds
}

# cert-manager's CRDs (those its controller here watches) from the pinned module zip, in a
# directory of their own (the stamps of crds/ stay as they were).
cert_manager_crds() {
  local dir="${ADDONS_CACHE}/crds-cert-manager" stamp="cert-manager=${CERT_MANAGER_VERSION}" d f
  if [[ ! -f "${dir}/.stamp" || "$(cat "${dir}/.stamp")" != "$stamp" ]]; then
    rm -rf "${dir}.tmp" && mkdir -p "${dir}.tmp"
    d="$(module_dir "github.com/cert-manager/cert-manager@${CERT_MANAGER_VERSION}")"
    for f in certificates certificaterequests issuers clusterissuers; do
      cert_manager_crd "$d" "$f" "${dir}.tmp" || die "cert-manager CRD $f"
    done
    chmod 0644 "${dir}.tmp"/*.yaml
    echo "$stamp" >"${dir}.tmp/.stamp"
    rm -rf "$dir" && mv "${dir}.tmp" "$dir"
  fi
  ls "${dir}"/cert-manager.io_*.yaml
}

# The CRDs of cass-operator (CassandraDatacenter, CassandraTask, ScheduledTask) and of
# k8ssandra-operator (all 15: it watches every kind it owns) from the pinned module zips'
# config/crd/bases, in a directory of their own: install-k8ssandra applies them, install does not.
# cass-operator's CassandraDatacenter gets the two JSON patches its config/crd kustomization
# applies (read from the module zip): without config_removal the API server rejects every
# CassandraDatacenter whose spec.config is an object ("spec.config in body must be of type
# byte"), i.e. every one k8ssandra-operator writes.
CASS_OPERATOR_CRD_PATCHES="config_removal remove_xkeys"
k8ssandra_crds() {
  local dir="${ADDONS_CACHE}/crds-k8ssandra" d f p
  local stamp="cass-operator=${CASS_OPERATOR_VERSION} k8ssandra-operator=${K8SSANDRA_OPERATOR_VERSION} patches=${CASS_OPERATOR_CRD_PATCHES}"
  if [[ ! -f "${dir}/.stamp" || "$(cat "${dir}/.stamp")" != "$stamp" ]]; then
    rm -rf "${dir}.tmp" && mkdir -p "${dir}.tmp"
    d="$(module_dir "github.com/k8ssandra/cass-operator@${CASS_OPERATOR_VERSION}")"
    for f in "$d"/config/crd/bases/*.yaml; do cp "$f" "${dir}.tmp/"; done
    f="${dir}.tmp/cassandra.datastax.com_cassandradatacenters.yaml"
    for p in ${CASS_OPERATOR_CRD_PATCHES}; do
      "$(kubectl_bin)" patch --local --type=json -f "$f" --patch-file "$d/config/crd/patches/${p}.yaml" -o yaml >"${f}.new" ||
        die "cass-operator CRD patch ${p} failed"
      mv -f "${f}.new" "$f"
    done
    d="$(module_dir "github.com/k8ssandra/k8ssandra-operator@${K8SSANDRA_OPERATOR_VERSION}")"
    for f in "$d"/config/crd/bases/*.yaml; do cp "$f" "${dir}.tmp/"; done
    [[ "$(ls "${dir}.tmp"/*.yaml | wc -l)" == 18 ]] || die "expected 3 + 15 CRDs of cass-operator and k8ssandra-operator, got: $(ls "${dir}.tmp")"
    chmod 0644 "${dir}.tmp"/*.yaml
    echo "$stamp" >"${dir}.tmp/.stamp"
    rm -rf "$dir" && mv "${dir}.tmp" "$dir"
  fi
  ls "${dir}"/*.yaml
}

render_file() { # manifest file name: its objects with images and versions filled in
  local sedargs=() k
  for k in $(grep -oE '^[A-Z_][A-Z0-9_]*' "${ADDONS}/images.env"); do sedargs+=(-e "s|@${k}@|${!k}|g"); done
  echo "---"
  echo "# Source: hack/addons/manifests/$1"
  sed "${sedargs[@]}" "${ADDONS}/manifests/$1"
}

render() {
  local f
  for f in "${ADDONS}"/manifests/*.yaml; do render_file "$(basename "$f")"; done
}

render_base() { # render without the k8ssandra manifests (install-k8ssandra's own)
  local f
  for f in "${ADDONS}"/manifests/*.yaml; do
    [[ " ${K8SSANDRA_MANIFESTS} " == *" $(basename "$f") "* ]] || render_file "$(basename "$f")"
  done
}

smoke_arg() { # name: the argument that makes it print its version, or its usage (exit 0)
  case "$1" in
    cass-operator | k8ssandra-operator) echo --help ;; # no --version flag
    *) echo --version ;;
  esac
}

smoke() {
  local n out
  for n in $(names); do
    out="$("${ADDONS_CACHE}/bin/$n" "$(smoke_arg "$n")" 2>&1)" || die "$n failed: $out"
    echo "$n: $(grep -m1 . <<<"$out")"
  done
}

# --- on a cluster ------------------------------------------------------------------------

kubectl_bin() { # $KUBECTL, else the kubectl built with envtest (the cluster's version), else PATH
  if [[ -n "${KUBECTL:-}" ]]; then echo "$KUBECTL"; return; fi
  local k="${CACHE}/envtest/k8s-1.34.4/bin/kubectl"
  if [[ -x "$k" ]]; then echo "$k"; return; fi
  command -v kubectl || die "no kubectl: set KUBECTL, or run hack/envtest.sh --kubectl"
}

k() { "$(kubectl_bin)" --kubeconfig "$KCFG" "$@"; }

# until SECONDS-deadline what cmd...: run cmd every 2 s until it succeeds, or fail naming what.
until_ok() {
  local deadline=$1 what=$2; shift 2
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || { log "timed out waiting for ${what}"; "$@" >&2 || true; return 1; }
    sleep 2
  done
}

rollout() { # namespace deployment|statefulset/name deadline
  local left=$(($3 - SECONDS)); ((left > 0)) || left=1
  k -n "$1" rollout status "$2" --timeout="${left}s" >&2 || { diagnose "$1" "$2"; return 1; }
}

# What a stuck rollout needs to be understood: the object, its pods with their events, and on
# the local cluster the kubelet's last complaints about them (its log is in the cluster dir).
diagnose() { # namespace kind/name
  k -n "$1" describe "$2" >&2 || true
  k -n "$1" get pods -o wide >&2 || true
  k -n "$1" describe pods >&2 || true
  k -n "$1" get events --sort-by=.lastTimestamp >&2 || true
  local klog="${CLUSTER_DIR:-/tmp/openaaa-cluster}/logs/kubelet.log"
  if [[ -f "$klog" ]]; then
    echo "--- last kubelet errors (${klog})" >&2
    grep -E '^E[0-9]' "$klog" | tail -n 40 >&2 || true
  fi
}

apply_rendered() { # server-side apply of one rendered manifest file
  render_file "$1" | k apply --server-side --field-manager=openaaa-addons --force-conflicts -f -
}

install() {
  local deadline=$((SECONDS + TIMEOUT)) f
  log "CRDs..."
  for f in $(list_crds); do k apply --server-side --field-manager=openaaa-addons --force-conflicts -f "$f" >/dev/null; done
  for f in $(list_crds); do until_ok "$deadline" "CRD $(basename "$f") established" k wait --for condition=established --timeout=5s -f "$f"; done
  log "prometheus-operator, metrics-server..."
  apply_rendered 00-namespaces.yaml >&2
  apply_rendered 20-prometheus-operator.yaml >&2
  apply_rendered 30-metrics-server.yaml >&2
  rollout monitoring deployment/prometheus-operator "$deadline"
  rollout kube-system deployment/metrics-server "$deadline"
  until_ok "$deadline" "Prometheus objects to be accepted" apply_rendered 40-prometheus.yaml
  log "waiting for Prometheus and the metrics API..."
  until_ok "$deadline" "the Prometheus StatefulSet" k -n monitoring get statefulset prometheus-local
  rollout monitoring statefulset/prometheus-local "$deadline"
  until_ok "$deadline" "APIService v1beta1.metrics.k8s.io Available" k wait --for=condition=Available --timeout=5s apiservice/v1beta1.metrics.k8s.io
  install_cert_manager
  log "add-ons ready in ${SECONDS}s"
}

# cert-manager's controller, then the CA chain: the ClusterIssuer openaaa-local-ca is Ready
# only once the controller has issued the CA Certificate from the self-signed issuer.
install_cert_manager() {
  local deadline=$((SECONDS + TIMEOUT)) start=$SECONDS f
  log "cert-manager..."
  for f in $(cert_manager_crds); do k apply --server-side --field-manager=openaaa-addons --force-conflicts -f "$f" >/dev/null; done
  for f in $(cert_manager_crds); do until_ok "$deadline" "CRD $(basename "$f") established" k wait --for condition=established --timeout=5s -f "$f"; done
  apply_rendered 50-cert-manager.yaml >&2
  rollout cert-manager deployment/cert-manager "$deadline"
  rollout cert-manager deployment/cert-manager-cainjector "$deadline"
  rollout cert-manager deployment/cert-manager-webhook "$deadline"
  # A cold make test once saw the cainjector never fill the caBundle in 5 min, beside a
  # second install and the suite's builds (2026-11-29; alone it took seconds): halfway, its
  # log is shown and it is restarted once, which reads every CA source again.
  if ! until_ok $((SECONDS + TIMEOUT / 2)) "the cainjector to put the webhook's CA into its configurations" webhook_ca_injected; then
    log "restarting the cainjector; its last lines:"
    k -n cert-manager logs deployment/cert-manager-cainjector --tail=20 >&2 || true
    k -n cert-manager rollout restart deployment/cert-manager-cainjector >&2
    rollout cert-manager deployment/cert-manager-cainjector "$deadline"
    until_ok "$deadline" "the cainjector to put the webhook's CA into its configurations, restarted" webhook_ca_injected ||
      { k -n cert-manager logs deployment/cert-manager-cainjector --tail=40 >&2 || true; return 1; }
  fi
  until_ok "$deadline" "the webhook to reject an invalid Certificate" webhook_rejects_invalid
  log "cert-manager: webhook answering (CA injected by the cainjector) in $((SECONDS - start))s"
  until_ok "$deadline" "the issuers to be accepted" apply_rendered 51-cert-manager-issuers.yaml
  until_ok "$deadline" "ClusterIssuer openaaa-local-ca Ready (CA Certificate issued)" \
    k wait --for=condition=Ready --timeout=5s clusterissuer/openaaa-local-ca
  log "cert-manager: ClusterIssuer openaaa-local-ca Ready in $((SECONDS - start))s"
}

# The cainjector filled both webhook configurations' caBundle from Secret cert-manager-webhook-ca
# (which the webhook created): the same CA in each.
webhook_ca_injected() {
  local ca v m
  ca="$(k -n cert-manager get secret cert-manager-webhook-ca -o jsonpath='{.data.ca\.crt}')" || return 1
  v="$(k get validatingwebhookconfiguration cert-manager-webhook -o jsonpath='{.webhooks[0].clientConfig.caBundle}')"
  m="$(k get mutatingwebhookconfiguration cert-manager-webhook -o jsonpath='{.webhooks[0].clientConfig.caBundle}')"
  [[ -n "$ca" && "$v" == "$ca" && "$m" == "$ca" ]]
}

# A Certificate without any identity, dry-run on the server: the webhook must deny it (its
# validation, not the CRD schema, requires a commonName, dnsNames, uris, emailAddresses,
# ipAddresses or otherNames).
webhook_rejects_invalid() {
  local out
  if out="$(printf '%s\n' 'apiVersion: cert-manager.io/v1' 'kind: Certificate' \
    'metadata: {name: openaaa-webhook-probe, namespace: cert-manager}' \
    'spec: {secretName: openaaa-webhook-probe, issuerRef: {name: openaaa-local-ca, kind: ClusterIssuer}}' |
    k apply --dry-run=server -f - 2>&1)"; then
    return 1
  fi
  grep -q 'admission webhook "webhook.cert-manager.io" denied' <<<"$out"
}

prom_api() { # path: GET through the API server's service proxy
  k get --raw "/api/v1/namespaces/monitoring/services/prometheus-operated:web/proxy$1"
}

# The ServiceMonitor's target (prometheus-operator's own metrics) is scraped and up.
prom_target_up() {
  prom_api '/api/v1/query?query=up%7Bjob%3D%22prometheus-operator%22%7D%3D%3D1' | grep -q '"result":\[{'
}

# The PrometheusRule of 40-prometheus.yaml is loaded and its recording rule has a sample.
prom_rule_loaded() {
  prom_api '/api/v1/query?query=job%3Aup%3Asum%7Bjob%3D%22prometheus-operator%22%7D' | grep -q '"result":\[{'
}

pod_metrics() { # metrics.k8s.io lists pods with their usage
  k get --raw /apis/metrics.k8s.io/v1beta1/namespaces/kube-system/pods | grep -q '"usage"'
}

verify() {
  local deadline=$((SECONDS + TIMEOUT))
  until_ok "$deadline" "Prometheus to scrape the prometheus-operator ServiceMonitor" prom_target_up
  log "prometheus: target serviceMonitor/monitoring/prometheus-operator is up"
  until_ok "$deadline" "the PrometheusRule openaaa-addons to be loaded and evaluated" prom_rule_loaded
  log "prometheus: PrometheusRule monitoring/openaaa-addons loaded (job:up:sum evaluated)"
  until_ok "$deadline" "pod metrics from metrics.k8s.io" pod_metrics
  log "metrics-server: metrics.k8s.io returns pod metrics"
}

# --- managed Cassandra: cass-operator and k8ssandra-operator (issue 31) ------------------

K8SSANDRA_NS=k8ssandra-operator
K8SSANDRA_MANIFESTS="60-k8ssandra-cass-operator.yaml 61-k8ssandra-operator.yaml 62-k8ssandra-storage.yaml"
K8SSANDRA_PVS="${K8SSANDRA_PVS:-4}"              # static volumes: one per Cassandra node
K8SSANDRA_PV_SIZE="${K8SSANDRA_PV_SIZE:-20Gi}"   # what a claim may ask for (hostPath: not enforced)
CASSANDRA_IMAGES="${CASSANDRA_IMAGES:-${CACHE}/cassandra-image}"

# The volumes' host directory: the local cluster's (hack/cluster.sh env CLUSTER_VOLUMES; its
# `down` removes it), or K8SSANDRA_VOLUMES.
volumes_dir() {
  if [[ -n "${K8SSANDRA_VOLUMES:-}" ]]; then echo "$K8SSANDRA_VOLUMES"; return; fi
  "${HERE}/cluster.sh" env | sed -n 's/^CLUSTER_VOLUMES=//p'
}

# The images install-k8ssandra imports (K8SSANDRA_IMPORT, default `hack/cluster.sh import`;
# empty: none): both operators, cert-manager's (its webhook certificates), and every Cassandra
# image archive present in $CASSANDRA_IMAGES (ghcr.io/openaaa/<file name>:<its tag>).
import_k8ssandra() {
  local cmd="${K8SSANDRA_IMPORT-${HERE}/cluster.sh import}" c n f
  [[ -n "$cmd" ]] || return 0
  local -a args=()
  for c in "${COMPONENTS[@]}"; do
    n="$(field "$c" 0)"
    case "$n" in cass-operator | k8ssandra-operator | cert-manager-*) ;; *) continue ;; esac
    f="${ADDONS_CACHE}/images/${n}.oci.tar"
    [[ -f "$f" ]] || die "no image ${f}: run \`hack/addons.sh build ${n}\` (make addons)"
    args+=("${f}=$(field "$c" 3 | sed 's/:[^:]*$//')")
  done
  for f in "${CASSANDRA_IMAGES}"/*.oci.tar; do
    [[ -f "$f" ]] && args+=("$f")
  done
  log "importing ${#args[@]} images..."
  # shellcheck disable=SC2086 # the command's words
  $cmd "${args[@]}" >&2
}

# Static PersistentVolumes openaaa-local-0..K8SSANDRA_PVS-1 of StorageClass openaaa-local, on
# host directories owned by 999 (Cassandra's uid and gid). A Released volume (its claim
# deleted) is deleted, its directory emptied, and made again: Available for the next claim.
k8ssandra_storage() {
  local dir i name phase
  dir="$(volumes_dir)"
  [[ -n "$dir" ]] || die "no volumes directory (hack/cluster.sh env has no CLUSTER_VOLUMES; set K8SSANDRA_VOLUMES)"
  apply_rendered 62-k8ssandra-storage.yaml >/dev/null
  for ((i = 0; i < K8SSANDRA_PVS; i++)); do
    name="openaaa-local-${i}"
    phase="$(k get pv "$name" --ignore-not-found -o jsonpath='{.status.phase}')"
    if [[ "$phase" == Released || "$phase" == Failed ]]; then
      log "volume ${name} ${phase}: wiping and making it again"
      k delete pv "$name" --wait=true --timeout=60s >/dev/null
      rm -rf "${dir:?}/${name}"
      phase=""
    fi
    mkdir -p "${dir}/${name}"
    chown 999:999 "${dir}/${name}"
    chmod 0750 "${dir}/${name}"
    [[ -z "$phase" ]] || continue
    cat <<PV | k apply --server-side --field-manager=openaaa-addons --force-conflicts -f - >/dev/null
apiVersion: v1
kind: PersistentVolume
metadata:
  name: ${name}
  labels:
    app.kubernetes.io/part-of: openaaa-addons
spec:
  storageClassName: openaaa-local
  capacity:
    storage: ${K8SSANDRA_PV_SIZE}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  hostPath:
    path: ${dir}/${name}
    type: Directory
PV
  done
  log "storage: StorageClass openaaa-local, ${K8SSANDRA_PVS} volumes under ${dir}"
}

# The cainjector put the serving certificate's CA into a webhook configuration (both kinds).
ca_injected() { # name
  local v m
  v="$(k get validatingwebhookconfiguration "${1}-validating-webhook-configuration" -o jsonpath='{.webhooks[0].clientConfig.caBundle}')"
  m="$(k get mutatingwebhookconfiguration "${1}-mutating-webhook-configuration" -o jsonpath='{.webhooks[0].clientConfig.caBundle}')"
  [[ -n "$v" && -n "$m" ]]
}

# webhook_denies NAME: the object on stdin, applied dry-run on the server, is denied by the
# admission webhook NAME (so that webhook answers).
webhook_denies() {
  local out
  if out="$(k apply --dry-run=server -f - 2>&1)"; then
    return 1
  fi
  grep -q "admission webhook \"$1\" denied" <<<"$out"
}

# A K8ssandraCluster without storageConfig: k8ssandra-operator's webhook (not the CRD schema)
# denies it.
k8ssandra_webhook_answers() {
  printf '%s\n' 'apiVersion: k8ssandra.io/v1alpha1' 'kind: K8ssandraCluster' \
    'metadata: {name: openaaa-webhook-probe, namespace: k8ssandra-operator}' \
    'spec: {cassandra: {serverVersion: "5.0.9", datacenters: [{metadata: {name: dc1}, size: 1}]}}' |
    webhook_denies vk8ssandracluster.kb.io
}

# A CassandraDatacenter of server type cassandra with DSE workloads: cass-operator's webhook
# denies it.
cass_webhook_answers() {
  printf '%s\n' 'apiVersion: cassandra.datastax.com/v1beta1' 'kind: CassandraDatacenter' \
    'metadata: {name: openaaa-webhook-probe, namespace: k8ssandra-operator}' \
    'spec: {clusterName: probe, serverType: cassandra, serverVersion: "5.0.9", size: 1, dseWorkloads: {searchEnabled: true},' \
    '  storageConfig: {cassandraDataVolumeClaimSpec: {storageClassName: openaaa-local, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}}' |
    webhook_denies vcassandradatacenter.kb.io
}

# cert-manager (the webhooks' certificates), the CRDs, storage, both operators; waits until both
# Deployments are Available and both webhooks deny an invalid object.
install_k8ssandra() {
  local deadline=$((SECONDS + TIMEOUT)) start=$SECONDS f
  import_k8ssandra
  install_cert_manager
  log "k8ssandra: CRDs..."
  for f in $(k8ssandra_crds); do k apply --server-side --field-manager=openaaa-addons --force-conflicts -f "$f" >/dev/null; done
  for f in $(k8ssandra_crds); do until_ok "$deadline" "CRD $(basename "$f") established" k wait --for condition=established --timeout=5s -f "$f"; done
  apply_rendered 60-k8ssandra-cass-operator.yaml >&2
  apply_rendered 61-k8ssandra-operator.yaml >&2
  k8ssandra_storage
  for f in cass-operator-serving-cert k8ssandra-operator-serving-cert; do
    until_ok "$deadline" "Certificate ${f} Ready" k -n "$K8SSANDRA_NS" wait --for=condition=Ready --timeout=5s "certificate/${f}"
  done
  rollout "$K8SSANDRA_NS" deployment/cass-operator "$deadline"
  rollout "$K8SSANDRA_NS" deployment/k8ssandra-operator "$deadline"
  until_ok "$deadline" "the cainjector to put the CA into cass-operator's webhook configurations" ca_injected cass-operator
  until_ok "$deadline" "the cainjector to put the CA into k8ssandra-operator's webhook configurations" ca_injected k8ssandra-operator
  until_ok "$deadline" "cass-operator's webhook to deny an invalid CassandraDatacenter" cass_webhook_answers
  until_ok "$deadline" "k8ssandra-operator's webhook to deny an invalid K8ssandraCluster" k8ssandra_webhook_answers
  log "k8ssandra: cass-operator ${CASS_OPERATOR_VERSION} and k8ssandra-operator ${K8SSANDRA_OPERATOR_VERSION} Available, webhooks answering, in $((SECONDS - start))s"
}

# Everything install-k8ssandra applied but cert-manager (the other add-ons use it) and the
# volumes' data (hack/cluster.sh down removes it). K8ssandraClusters and CassandraDatacenters
# still in the cluster are deleted first, while their operators still run their finalizers.
uninstall_k8ssandra() {
  local f left
  if k get crd k8ssandraclusters.k8ssandra.io >/dev/null 2>&1; then
    k delete k8ssandraclusters.k8ssandra.io --all -A --timeout="${TIMEOUT}s" >/dev/null || true
  fi
  if k get crd cassandradatacenters.cassandra.datastax.com >/dev/null 2>&1; then
    k delete cassandradatacenters.cassandra.datastax.com --all -A --timeout="${TIMEOUT}s" >/dev/null || true
  fi
  for f in ${K8SSANDRA_MANIFESTS}; do render_file "$f"; done | k delete --ignore-not-found --wait=false -f - >/dev/null 2>&1 || true
  k delete namespace "$K8SSANDRA_NS" --ignore-not-found --timeout="${TIMEOUT}s" >/dev/null
  k delete pv -l app.kubernetes.io/part-of=openaaa-addons --ignore-not-found --timeout="${TIMEOUT}s" >/dev/null
  for f in $(k8ssandra_crds); do k delete --ignore-not-found -f "$f" >/dev/null; done
  left="$(k8ssandra_leftovers)"
  [[ -z "$left" ]] || die "left behind after uninstall-k8ssandra: ${left}"
  log "k8ssandra: uninstalled, nothing left"
}

k8ssandra_leftovers() {
  k get namespace "$K8SSANDRA_NS" --ignore-not-found -o name
  k get crd -o name | grep -E 'k8ssandra\.io|cassandra\.datastax\.com' || true
  k get pv,storageclass -o name | grep -E 'openaaa-local' || true
  k get validatingwebhookconfiguration,mutatingwebhookconfiguration,clusterrole,clusterrolebinding -o name |
    grep -E 'cass-operator|k8ssandra-operator' || true
}

uninstall() {
  local f left
  # Namespaces first: their deletion takes the Prometheus StatefulSet, Secrets and the
  # runtime Services with it; then the cluster-scoped objects and the CRDs.
  render_base | k delete --ignore-not-found --wait=false -f - >/dev/null 2>&1 || true
  k delete namespace monitoring cert-manager --ignore-not-found --timeout="${TIMEOUT}s" >/dev/null
  for f in $(list_crds); do k delete --ignore-not-found -f "$f" >/dev/null; done
  left="$(leftovers)"
  [[ -z "$left" ]] || die "left behind after uninstall: ${left}"
  log "uninstalled: nothing left"
}

leftovers() { # anything of the add-ons still in the cluster, one a line
  k get namespace monitoring cert-manager --ignore-not-found -o name
  k get crd -o name | grep -E 'monitoring\.coreos\.com|cert-manager\.io' || true
  k get clusterissuer -o name 2>/dev/null || true
  k get apiservice v1beta1.metrics.k8s.io --ignore-not-found -o name
  k get validatingwebhookconfiguration,mutatingwebhookconfiguration,clusterrole,clusterrolebinding -o name |
    grep -E 'prometheus|metrics-server|aggregated-metrics-reader|openaaa-addons|cert-manager-webhook' |
    grep -vE 'cass-operator|k8ssandra-operator' || true # install-k8ssandra's: uninstall-k8ssandra removes them
  k -n kube-system get deployment,service,serviceaccount,role,rolebinding,lease,secret,configmap -o name |
    grep -E 'metrics-server' || true
}

cmd="${1:-build}"; shift || true
case "$cmd" in
  build)
    want=("$@"); ((${#want[@]})) || mapfile -t want < <(names)
    build_bins "${want[@]}"
    for n in "${want[@]}"; do build_image "$n"; done
    fetch_crds
    log "binaries in ${ADDONS_CACHE}/bin, images in ${ADDONS_CACHE}/images, CRDs in ${ADDONS_CACHE}/crds" ;;
  list)
    for c in "${COMPONENTS[@]}"; do echo "$(field "$c" 0) $(field "$c" 3) ${ADDONS_CACHE}/images/$(field "$c" 0).oci.tar"; done ;;
  smoke) smoke ;;
  crds) list_crds ;;
  render) render ;;
  import)
    (($#)) || die "usage: import CMD... (called as CMD... ARCHIVE=REPO...)"
    args=()
    for c in "${COMPONENTS[@]}"; do
      img="$(field "$c" 3)"
      args+=("${ADDONS_CACHE}/images/$(field "$c" 0).oci.tar=${img%:*}")
    done
    "$@" "${args[@]}" ;;
  install | verify | uninstall)
    KCFG="${1:?usage: $cmd KUBECONFIG}"; "$cmd" ;;
  install-cert-manager)
    KCFG="${1:?usage: $cmd KUBECONFIG}"; install_cert_manager ;;
  install-k8ssandra)
    KCFG="${1:?usage: $cmd KUBECONFIG}"; install_k8ssandra ;;
  uninstall-k8ssandra)
    KCFG="${1:?usage: $cmd KUBECONFIG}"; uninstall_k8ssandra ;;
  k8ssandra-storage)
    KCFG="${1:?usage: $cmd KUBECONFIG}"; k8ssandra_storage ;;
  crds-k8ssandra) k8ssandra_crds ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
esac
