#!/usr/bin/env bash
# A local single-node Kubernetes 1.34.4 for tests and for trying OpenAAA on real pods
# (docs/local-cluster.md). No Docker, no registry, no traffic off the box.
#
#   containerd 1.6 + runc + CNI plugins (bridge, host-local, portmap) from Debian;
#   etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy, kubectl
#   built from the Go module proxy (hack/lib/kube-build.sh: one wrapper module, one set of
#   flags, one Go build cache with hack/envtest.sh); a pause image and CoreDNS (cluster.local
#   only: no forward plugin, so no query leaves the box) built here as OCI images; a PKI made
#   with openssl.
#
# Addresses: only the RFC 2544 benchmarking range 198.18.0.0/15, on interfaces made here:
#   node  198.18.0.1/24 on veth oaaa-nas0 (host side); the API server, kubelet and NodePorts
#         listen there; tests may bind servers (e.g. Cassandra) to it: pods and the NAS reach it.
#   NAS   198.18.0.2/24 on nas0 inside network namespace openaaa-nas (an external RADIUS client:
#         `hack/cluster.sh nas-exec radclient ...`).
#   pods  198.18.16.0/24 on bridge oaaa-br0 (gateway 198.18.16.1)
#   services 198.18.32.0/24: kubernetes 198.18.32.1, kube-dns (CoreDNS) 198.18.32.10
#   NodePorts 31000-31999, on the node address only (kube-proxy nodePortAddresses).
#
# Usage: hack/cluster.sh COMMAND
#   provision        install/build everything into $CACHE/cluster (idempotent; root for apt-get)
#   up               start the cluster, wait for the node and CoreDNS to be Ready, print the
#                    kubeconfig path; refuses at once when the lock is held (a cluster is up);
#                    with the lock free, what an orphaned cluster left is torn down first
#   down             stop everything `up` started (by PID), remove pods, mounts, cgroups,
#                    iptables chains, links, the netns and files; restore the sysctls the
#                    kubelet rewrote. Idempotent: safe after a failed or partial `up`.
#   import PATH[=REPO]...   import OCI archives (bin/images/*.oci.tar) into containerd's k8s.io
#                    namespace as REPO:<tag> (default REPO: $CLUSTER_IMAGE_PREFIX/<file name>,
#                    i.e. ghcr.io/openaaa/policing for policing.oci.tar)
#   status           processes, node, pods
#   kubeconfig       print the admin kubeconfig path
#   kubectl ARGS...  run the provisioned kubectl with the admin kubeconfig
#   nas-exec CMD...  run CMD inside the NAS network namespace
#   check            exit 0 when provisioned (no build, no root needed)
#   env              print the addresses and paths as KEY=VALUE lines (for scripts and tests)
#
# Environment:
#   CACHE                 cache root (default ~/.cache/openaaa)
#   CLUSTER_DIR           state directory (default /tmp/openaaa-cluster); `up` and `down` remove
#                         it, with CLUSTER_VOLUMES (its volumes/: the host directories of the
#                         static PersistentVolumes that `hack/addons.sh install-k8ssandra` makes)
#   CLUSTER_LOCK          lock file (default /tmp/openaaa-cluster.lock): one cluster per host.
#                         `up` holds it (in a small background holder process) until `down`.
#   CLUSTER_LOCK_HELD=1   the caller already holds the lock (the Go test helper does)
#   CLUSTER_IMAGE_PREFIX  default repository prefix of `import` (ghcr.io/openaaa)
#   CLUSTER_TIMEOUT       seconds to wait for the node and CoreDNS in `up` (default 180)
#   VERBOSE=1             `down` says how long each step took
set -euo pipefail

HACK="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "${HACK}/.." && pwd)"
CACHE="${CACHE:-${HOME}/.cache/openaaa}"
K8S_VERSION="${K8S_VERSION:-1.34.4}"
COREDNS_VERSION="1.12.4"
PAUSE_VERSION="3.10.1" # the pause tag Kubernetes 1.34 uses
APT_PACKAGES="containerd runc containernetworking-plugins iptables nftables conntrack openssl ca-certificates"

CCACHE="${CACHE}/cluster"                         # what provision makes
CBIN="${CCACHE}/k8s-${K8S_VERSION}/bin"           # kubelet, controller-manager, scheduler, proxy
ENVTEST_BIN="${CACHE}/envtest/k8s-${K8S_VERSION}/bin" # etcd, kube-apiserver, kubectl (shared)
IMAGES="${CCACHE}/images"
PKI="${CCACHE}/pki"
CNI_BIN="/usr/lib/cni"                            # Debian's containernetworking-plugins

DIR="${CLUSTER_DIR:-/tmp/openaaa-cluster}"
LOCK="${CLUSTER_LOCK:-/tmp/openaaa-cluster.lock}"
TIMEOUT="${CLUSTER_TIMEOUT:-180}"
IMAGE_PREFIX="${CLUSTER_IMAGE_PREFIX:-ghcr.io/openaaa}"

NODE_NAME="openaaa-node"
NODE_IP="198.18.0.1"
NAS_IP="198.18.0.2"
LINK_PREFIX=24
NAS_NETNS="openaaa-nas"
HOST_VETH="oaaa-nas0"
NAS_VETH="nas0"
BRIDGE="oaaa-br0"
POD_CIDR="198.18.16.0/24"
POD_GW="198.18.16.1"
SERVICE_CIDR="198.18.32.0/24"
API_SERVICE_IP="198.18.32.1"
DNS_IP="198.18.32.10"
OWN_RANGE="198.18.0.0/15"
NODEPORT_RANGE="31000-31999"
API_PORT=16443
ETCD_PORT=22379
ETCD_PEER_PORT=22380
KUBELET_PORT=20250
KUBELET_HEALTHZ_PORT=20248
KCM_PORT=20257
SCHED_PORT=20259
PROXY_METRICS_PORT=20249
PROXY_HEALTHZ_PORT=20256
CGROUP_ROOT="openaaa-cluster"
FW_CHAIN="OAAA-CLUSTER-FWD"
PAUSE_IMAGE="registry.k8s.io/pause:${PAUSE_VERSION}"
COREDNS_IMAGE="openaaa.local/coredns:v${COREDNS_VERSION}"

# What the kubelet rewrites (pkg/kubelet/cm: setupKernelTunables), what the bridge plugin and
# we turn on (ip_forward) and what kube-proxy might (route_localnet; not with our
# nodePortAddresses, saved anyway): saved at `up`, restored at `down`.
SYSCTLS="vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward net.ipv4.conf.all.route_localnet net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables net.netfilter.nf_conntrack_max net.netfilter.nf_conntrack_tcp_be_liberal"
# Paths the kubelet, containerd and CNI write outside our directories. Those absent before
# `up` are removed by `down`.
HOST_PATHS="/var/lib/kubelet /var/log/containers /var/log/pods /var/lib/cni /run/containerd /run/netns /var/run/netns /run/kubernetes /etc/cni /opt/cni /opt/containerd /var/lib/containerd"

log() { echo "cluster: $*" >&2; }
vlog() { if [[ "${VERBOSE:-0}" == 1 ]]; then echo "cluster: [${SECONDS}s] $*" >&2; fi; }
die() { echo "cluster: $*" >&2; exit 1; }
need_root() { [[ $(id -u) -eq 0 ]] || die "$1 needs root"; }
# shellcheck source=lib/proc.sh
source "${HACK}/lib/proc.sh"

KUBECTL="${ENVTEST_BIN}/kubectl"
KUBECONFIG_ADMIN="${DIR}/kubeconfig"
CTRD_SOCK="${DIR}/containerd/containerd.sock"
kc() { "$KUBECTL" --kubeconfig "$KUBECONFIG_ADMIN" "$@"; }
ctr_() { ctr --address "$CTRD_SOCK" "$@"; }

# ---------------------------------------------------------------------------------------------
# provision

apt_packages() {
	local missing=() p
	for p in $APT_PACKAGES; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
	done
	[[ ${#missing[@]} -eq 0 ]] && return 0
	need_root "installing ${missing[*]}"
	# One apt-get update per day at most (the stamp hack/make/charts.mk uses).
	local stamp="${CACHE}/apt-updated"
	mkdir -p "$CACHE"
	if [[ ! -f $stamp ]] || [[ -n "$(find "$stamp" -mmin +1440 2>/dev/null)" ]]; then
		apt-get -o DPkg::Lock::Timeout=300 update -qq && touch "$stamp"
	fi
	log "apt-get install ${missing[*]}"
	# Debian starts no service here (no systemd); containerd is started by `up` only.
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

timed() { # name command...: run, log the wall time (provisioning figures in the docs)
	local name=$1 start=$SECONDS
	shift
	"$@"
	log "provision: ${name} $((SECONDS - start))s"
}

build_k8s() {
	# shellcheck source=lib/kube-build.sh
	source "${HACK}/lib/kube-build.sh"
	timed etcd etcd_build_bin "$ENVTEST_BIN"
	timed kube-apiserver kube_build_bin kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$ENVTEST_BIN"
	timed kubectl kubectl_build_bin "$ENVTEST_BIN"
	local c
	for c in kubelet kube-controller-manager kube-scheduler kube-proxy; do
		timed "$c" kube_build_bin "$c" "k8s.io/kubernetes/cmd/$c" "$CBIN"
	done
}

# CoreDNS with only the plugins a cluster-local DNS needs (internal/tools/coredns), built in
# this repository's module (repo_build_bin); go.mod's github.com/coredns/coredns must be
# COREDNS_VERSION.
build_coredns() {
	# shellcheck source=lib/kube-build.sh
	source "${HACK}/lib/kube-build.sh"
	repo_build_bin coredns "github.com/coredns/coredns@v${COREDNS_VERSION}" "-s -w" "$CBIN"
}

build_images() {
	mkdir -p "$IMAGES"
	local stamp
	stamp="pause=${PAUSE_VERSION} $(sha256sum "${REPO_ROOT}/internal/tools/pause/main.go" | cut -c1-16) coredns=$(cat "${CBIN}/.coredns.stamp") ocibuild=$(sha256sum "${REPO_ROOT}/internal/tools/ocibuild/main.go" | cut -c1-16)"
	if [[ -f "${IMAGES}/pause.oci.tar" && -f "${IMAGES}/coredns.oci.tar" && "$(cat "${IMAGES}/.stamp" 2>/dev/null)" == "$stamp" ]]; then return; fi
	(cd "$REPO_ROOT" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "${IMAGES}/pause.bin" ./internal/tools/pause)
	(cd "$REPO_ROOT" && go run ./internal/tools/ocibuild -name pause -binary "${IMAGES}/pause.bin" -tag "${PAUSE_VERSION}" -out "$IMAGES" >/dev/null)
	cp "${CBIN}/coredns" "${IMAGES}/coredns.bin"
	(cd "$REPO_ROOT" && go run ./internal/tools/ocibuild -name coredns -binary "${IMAGES}/coredns.bin" -tag "v${COREDNS_VERSION}" -out "$IMAGES" -args "-conf /etc/coredns/Corefile" >/dev/null)
	rm -f "${IMAGES}"/*.bin
	echo "$stamp" >"${IMAGES}/.stamp"
}

# PKI: one CA for everything (API server, kubelet serving, clients), a front-proxy CA for
# aggregated APIs (metrics-server), a service-account key pair. ECDSA P-256: fast to make.
pki_cert() { # name CN O [SANs]: key + certificate signed by the CA
	local name=$1 cn=$2 org=$3 san=${4:-} ca=${5:-ca}
	local subj="/CN=${cn}"
	[[ -n $org ]] && subj="/O=${org}${subj}"
	openssl ecparam -name prime256v1 -genkey -noout -out "${PKI}/${name}.key" 2>/dev/null
	local ext="${PKI}/${name}.ext"
	{
		echo "basicConstraints=critical,CA:FALSE"
		echo "keyUsage=critical,digitalSignature,keyEncipherment"
		echo "extendedKeyUsage=serverAuth,clientAuth"
		[[ -n $san ]] && echo "subjectAltName=${san}"
	} >"$ext"
	openssl req -new -key "${PKI}/${name}.key" -subj "$subj" -out "${PKI}/${name}.csr" 2>/dev/null
	openssl x509 -req -in "${PKI}/${name}.csr" -CA "${PKI}/${ca}.crt" -CAkey "${PKI}/${ca}.key" \
		-CAcreateserial -days 3650 -sha256 -extfile "$ext" -out "${PKI}/${name}.crt" 2>/dev/null
	rm -f "${PKI}/${name}.csr" "$ext"
}

pki_ca() { # name CN
	openssl ecparam -name prime256v1 -genkey -noout -out "${PKI}/$1.key" 2>/dev/null
	openssl req -x509 -new -key "${PKI}/$1.key" -subj "/CN=$2" -days 3650 -sha256 \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
		-out "${PKI}/$1.crt" 2>/dev/null
}

make_pki() {
	local stamp="node=${NODE_NAME}/${NODE_IP} api=${API_SERVICE_IP} v2"
	if [[ "$(cat "${PKI}/.stamp" 2>/dev/null)" == "$stamp" ]]; then return; fi
	rm -rf "$PKI" && mkdir -p "$PKI" && chmod 0700 "$PKI"
	pki_ca ca openaaa-cluster-ca
	pki_ca front-proxy-ca openaaa-cluster-front-proxy-ca
	pki_cert apiserver kube-apiserver "" "IP:${NODE_IP},IP:${API_SERVICE_IP},IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
	pki_cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
	pki_cert admin kubernetes-admin system:masters
	pki_cert kubelet "system:node:${NODE_NAME}" system:nodes "IP:${NODE_IP},DNS:${NODE_NAME}"
	pki_cert controller-manager system:kube-controller-manager ""
	pki_cert scheduler system:kube-scheduler ""
	pki_cert kube-proxy system:kube-proxy ""
	pki_cert front-proxy-client front-proxy-client "" "" front-proxy-ca
	openssl ecparam -name prime256v1 -genkey -noout -out "${PKI}/sa.key" 2>/dev/null
	openssl ec -in "${PKI}/sa.key" -pubout -out "${PKI}/sa.pub" 2>/dev/null
	chmod 0600 "${PKI}"/*.key
	echo "$stamp" >"${PKI}/.stamp"
}

cmd_provision() {
	timed apt-packages apt_packages
	timed kubernetes build_k8s
	timed coredns build_coredns
	timed images build_images
	timed pki make_pki
	log "provisioned in ${CCACHE} (kubernetes binaries: ${CBIN} and ${ENVTEST_BIN})"
}

cmd_check() {
	local b
	for b in "${ENVTEST_BIN}/etcd" "${ENVTEST_BIN}/kube-apiserver" "${ENVTEST_BIN}/kubectl" \
		"${CBIN}/kubelet" "${CBIN}/kube-controller-manager" "${CBIN}/kube-scheduler" "${CBIN}/kube-proxy" \
		"${IMAGES}/pause.oci.tar" "${IMAGES}/coredns.oci.tar" "${PKI}/ca.crt"; do
		[[ -e $b ]] || { echo "missing: $b (hack/cluster.sh provision)" >&2; return 1; }
	done
	for b in containerd containerd-shim-runc-v2 runc ctr iptables ip6tables nft ip openssl; do
		command -v "$b" >/dev/null || { echo "missing: $b (hack/cluster.sh provision)" >&2; return 1; }
	done
	[[ -x "${CNI_BIN}/bridge" && -x "${CNI_BIN}/host-local" && -x "${CNI_BIN}/portmap" ]] ||
		{ echo "missing: CNI plugins in ${CNI_BIN}" >&2; return 1; }
}

# ---------------------------------------------------------------------------------------------
# up

kubeconfig_file() { # path user cert-name
	local ca crt key
	ca=$(base64 -w0 <"${PKI}/ca.crt")
	crt=$(base64 -w0 <"${PKI}/$3.crt")
	key=$(base64 -w0 <"${PKI}/$3.key")
	cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: openaaa
  cluster:
    server: https://${NODE_IP}:${API_PORT}
    certificate-authority-data: ${ca}
users:
- name: $2
  user:
    client-certificate-data: ${crt}
    client-key-data: ${key}
contexts:
- name: openaaa
  context: {cluster: openaaa, user: $2}
current-context: openaaa
EOF
	chmod 0600 "$1"
}

# start NAME LOG CMD...: run in the background with the lock fd closed; PID in run/NAME.pid.
start() {
	local name=$1 logf="${DIR}/logs/$1.log"
	shift
	"$@" >"$logf" 2>&1 9>&- &
	echo $! >"${DIR}/run/${name}.pid"
}

wait_for() { # seconds description command...: bounded poll, every 0.2 s
	local secs=$1 what=$2 deadline=$((SECONDS + $1))
	shift 2
	until "$@" >/dev/null 2>&1; do
		((SECONDS < deadline)) || { log "timed out after ${secs}s waiting for ${what}"; return 1; }
		sleep 0.2
	done
}

alive() { proc_pid "${DIR}/run/$1.pid" >/dev/null || { log "$1 exited:"; tail -n 30 "${DIR}/logs/$1.log" >&2; return 1; }; }

save_host_state() {
	mkdir -p "${DIR}/host"
	local s v p
	: >"${DIR}/host/sysctl"
	for s in $SYSCTLS; do
		v=$(sysctl -n "$s" 2>/dev/null) || continue
		echo "${s}=${v}" >>"${DIR}/host/sysctl"
	done
	: >"${DIR}/host/absent"
	for p in $HOST_PATHS; do
		[[ -e $p || -L $p ]] || echo "$p" >>"${DIR}/host/absent"
	done
	ls -1 /run/netns 2>/dev/null >"${DIR}/host/netns" || true
	nft list tables 2>/dev/null | sort >"${DIR}/host/nft-tables" || true
}

setup_network() {
	ip netns add "$NAS_NETNS"
	ip link add "$HOST_VETH" type veth peer name "$NAS_VETH" netns "$NAS_NETNS"
	ip addr add "${NODE_IP}/${LINK_PREFIX}" dev "$HOST_VETH"
	ip link set "$HOST_VETH" up
	ip -n "$NAS_NETNS" link set lo up
	ip -n "$NAS_NETNS" addr add "${NAS_IP}/${LINK_PREFIX}" dev "$NAS_VETH"
	ip -n "$NAS_NETNS" link set "$NAS_VETH" up
	# The NAS reaches the node, and through it pods and ClusterIPs; nothing else.
	ip -n "$NAS_NETNS" route add "$OWN_RANGE" via "$NODE_IP"
	# The pod bridge exists before the first pod so that the service range can be routed to it:
	# the host's own traffic to a ClusterIP (a test's DNS query) then leaves from the node
	# address instead of following the default route.
	ip link add "$BRIDGE" type bridge
	ip addr add "${POD_GW}/24" dev "$BRIDGE"
	ip link set "$BRIDGE" up
	ip route add "$SERVICE_CIDR" dev "$BRIDGE" src "$NODE_IP"
	sysctl -qw net.ipv4.ip_forward=1
	# Nothing of ours is forwarded to or from an interface that is not ours.
	iptables -N "$FW_CHAIN"
	iptables -A "$FW_CHAIN" -i "oaaa+" ! -o "oaaa+" -j DROP
	iptables -A "$FW_CHAIN" ! -i "oaaa+" -o "oaaa+" -j DROP
	iptables -I FORWARD 1 -j "$FW_CHAIN"
}

setup_cgroups() {
	local h
	for h in /sys/fs/cgroup/*/; do
		h=${h%/}
		[[ $(basename "$h") == unified ]] && continue # cgroup v1 host: the v2 hierarchy is unused
		mkdir -p "${h}/${CGROUP_ROOT}"
		if [[ -f "${h}/cpuset.cpus" ]]; then # a new v1 cpuset starts empty
			cat "${h}/cpuset.cpus" >"${h}/${CGROUP_ROOT}/cpuset.cpus"
			cat "${h}/cpuset.mems" >"${h}/${CGROUP_ROOT}/cpuset.mems"
		fi
	done
}

write_configs() {
	mkdir -p "${DIR}"/{containerd,cni/net.d,cni/ipam,kubelet,pod-logs,etcd,apiserver,conf}
	cat >"${DIR}/containerd/config.toml" <<EOF
# containerd for the local cluster only: its own root, state, sockets and runc root.
version = 2
root = "${DIR}/containerd/root"
state = "${DIR}/containerd/state"
oom_score = 0

[grpc]
  address = "${CTRD_SOCK}"
[ttrpc]
  address = "${CTRD_SOCK}.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "${DIR}/containerd/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${PAUSE_IMAGE}"
  # These VMs lack CAP_SYS_RESOURCE: runc cannot lower a sandbox's oom_score_adj.
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "${DIR}/containerd/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "${CNI_BIN}"
    conf_dir = "${DIR}/cni/net.d"
    max_conf_num = 1
EOF
	cat >"${DIR}/cni/net.d/10-openaaa.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "openaaa",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "${BRIDGE}",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "${POD_CIDR}", "gateway": "${POD_GW}"}]],
        "routes": [{"dst": "${OWN_RANGE}"}],
        "dataDir": "${DIR}/cni/ipam"
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
	kubeconfig_file "$KUBECONFIG_ADMIN" admin admin
	kubeconfig_file "${DIR}/conf/controller-manager.kubeconfig" system:kube-controller-manager controller-manager
	kubeconfig_file "${DIR}/conf/scheduler.kubeconfig" system:kube-scheduler scheduler
	kubeconfig_file "${DIR}/conf/kubelet.kubeconfig" "system:node:${NODE_NAME}" kubelet
	kubeconfig_file "${DIR}/conf/kube-proxy.kubeconfig" system:kube-proxy kube-proxy
	# Pods with dnsPolicy Default get no upstream resolver: nothing to query off the box.
	echo "# no upstream DNS in the local cluster" >"${DIR}/conf/resolv.conf"
	cat >"${DIR}/conf/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ${NODE_IP}
port: ${KUBELET_PORT}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: ${KUBELET_HEALTHZ_PORT}
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: ${PKI}/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: ${PKI}/kubelet.crt
tlsPrivateKeyFile: ${PKI}/kubelet.key
containerRuntimeEndpoint: unix://${CTRD_SOCK}
cgroupDriver: cgroupfs
cgroupRoot: /${CGROUP_ROOT}
failCgroupV1: false
failSwapOn: false
oomScoreAdj: 0
makeIPTablesUtilChains: false
clusterDNS: [${DNS_IP}]
clusterDomain: cluster.local
resolvConf: ${DIR}/conf/resolv.conf
podLogsDir: ${DIR}/pod-logs
# Mounted Secrets and ConfigMaps follow changes within ~10 s (hot-reload tests).
syncFrequency: 10s
serializeImagePulls: false
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
# No image garbage collection: every image here is imported (no registry to pull it back from),
# the pause image too, and the disk is shared with whatever else the host holds, so its usage
# can pass the default 85 % with nothing of ours to free. The kubelet then deleted the pause
# image and no new pod could start (a cold make test, 2026-11-24). The cluster lives for a test.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
EOF
	cat >"${DIR}/conf/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: ${DIR}/conf/kube-proxy.kubeconfig}
hostnameOverride: ${NODE_NAME}
mode: iptables
clusterCIDR: ${POD_CIDR}
# NodePorts answer on the node address only, never on the host's own interfaces.
nodePortAddresses: ["${NODE_IP}/32"]
metricsBindAddress: 127.0.0.1:${PROXY_METRICS_PORT}
healthzBindAddress: 127.0.0.1:${PROXY_HEALTHZ_PORT}
oomScoreAdj: 0
iptables: {localhostNodePorts: false, syncPeriod: 30s, minSyncPeriod: 1s}
# Zero leaves the host-wide conntrack sysctls as they are.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s, udpTimeout: 0s, udpStreamTimeout: 0s, tcpBeLiberal: false}
EOF
}

coredns_manifest() {
	cat <<EOF
apiVersion: v1
kind: ServiceAccount
metadata: {name: coredns, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:coredns"}
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:coredns"}
subjects: [{kind: ServiceAccount, name: coredns, namespace: kube-system}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: coredns, namespace: kube-system}
data:
  # No forward plugin: names outside the cluster are not resolved (no traffic off the box).
  # Port 1053: the image runs as non-root.
  Corefile: |
    .:1053 {
        errors
        health :8080
        ready :8181
        kubernetes cluster.local in-addr.arpa ip6.arpa {
            pods insecure
            fallthrough in-addr.arpa ip6.arpa
            ttl 30
        }
        cache 30
        loadbalance
    }
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: coredns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  replicas: 1
  selector: {matchLabels: {k8s-app: kube-dns}}
  template:
    metadata: {labels: {k8s-app: kube-dns}}
    spec:
      serviceAccountName: coredns
      priorityClassName: system-cluster-critical
      dnsPolicy: Default
      securityContext: {runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: coredns
        image: ${COREDNS_IMAGE}
        imagePullPolicy: Never
        args: ["-conf", "/etc/coredns/Corefile"]
        ports:
        - {name: dns, containerPort: 1053, protocol: UDP}
        - {name: dns-tcp, containerPort: 1053, protocol: TCP}
        readinessProbe: {httpGet: {path: /ready, port: 8181}, periodSeconds: 2}
        livenessProbe: {httpGet: {path: /health, port: 8080}, periodSeconds: 10}
        resources: {requests: {cpu: 10m, memory: 32Mi}, limits: {memory: 128Mi}}
        securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
        volumeMounts: [{name: config, mountPath: /etc/coredns, readOnly: true}]
      volumes: [{name: config, configMap: {name: coredns}}]
---
apiVersion: v1
kind: Service
metadata: {name: kube-dns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  clusterIP: ${DNS_IP}
  selector: {k8s-app: kube-dns}
  ports:
  - {name: dns, port: 53, targetPort: 1053, protocol: UDP}
  - {name: dns-tcp, port: 53, targetPort: 1053, protocol: TCP}
EOF
}

node_ready() {
	[[ "$(kc get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" == True ]]
}

up_exit() {
	[[ ${UP_OK:-1} == 1 ]] && return 0
	log "up failed; tearing down (logs kept in ${DIR}.failed-logs)"
	rm -rf "${DIR}.failed-logs"
	cp -r "${DIR}/logs" "${DIR}.failed-logs" 2>/dev/null || true
	set +e
	teardown
}

acquire_lock() { # SECONDS: the lock stays with a holder process until `down`, unless the caller holds it
	[[ "${CLUSTER_LOCK_HELD:-0}" == 1 ]] && return 0
	exec 9>>"$LOCK"
	flock -w "$1" 9 || die "${LOCK} is held: a cluster is up or starting (by hack/cluster.sh up or a test; waited $1 s)"
}

cmd_up() {
	need_root up
	cmd_check >/dev/null || die "not provisioned: run \`make cluster-provision\` (or hack/cluster.sh provision)"
	acquire_lock 0 # one cluster per host: refuse at once
	# Whoever owns a cluster holds the lock (a holder process or a test): with the lock ours,
	# anything left is an orphan (its test was killed, its holder died): clean it up first.
	if ours; then
		log "an earlier cluster left processes or state behind and its owner is gone: tearing it down first"
		teardown
	fi
	rm -rf "$DIR"
	mkdir -p "${DIR}"/{run,logs}
	local t0=$SECONDS
	save_host_state
	# From here on a failure (any exit before the end) tears everything down again.
	UP_OK=0
	trap up_exit EXIT
	setup_network
	setup_cgroups
	write_configs

	start etcd "${ENVTEST_BIN}/etcd" --name openaaa --data-dir "${DIR}/etcd" --unsafe-no-fsync \
		--listen-client-urls "http://127.0.0.1:${ETCD_PORT}" --advertise-client-urls "http://127.0.0.1:${ETCD_PORT}" \
		--listen-peer-urls "http://127.0.0.1:${ETCD_PEER_PORT}" --initial-advertise-peer-urls "http://127.0.0.1:${ETCD_PEER_PORT}" \
		--initial-cluster "openaaa=http://127.0.0.1:${ETCD_PEER_PORT}" --log-level warn
	start containerd containerd --config "${DIR}/containerd/config.toml"
	start kube-apiserver "${ENVTEST_BIN}/kube-apiserver" \
		--etcd-servers "http://127.0.0.1:${ETCD_PORT}" \
		--bind-address "$NODE_IP" --advertise-address "$NODE_IP" --secure-port "$API_PORT" \
		--cert-dir "${DIR}/apiserver" \
		--tls-cert-file "${PKI}/apiserver.crt" --tls-private-key-file "${PKI}/apiserver.key" \
		--client-ca-file "${PKI}/ca.crt" \
		--kubelet-client-certificate "${PKI}/apiserver-kubelet-client.crt" --kubelet-client-key "${PKI}/apiserver-kubelet-client.key" \
		--kubelet-certificate-authority "${PKI}/ca.crt" --kubelet-preferred-address-types InternalIP \
		--service-account-issuer "https://kubernetes.default.svc.cluster.local" \
		--service-account-key-file "${PKI}/sa.pub" --service-account-signing-key-file "${PKI}/sa.key" \
		--service-cluster-ip-range "$SERVICE_CIDR" --service-node-port-range "$NODEPORT_RANGE" \
		--authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction --allow-privileged=true \
		--requestheader-client-ca-file "${PKI}/front-proxy-ca.crt" \
		--requestheader-allowed-names front-proxy-client \
		--requestheader-extra-headers-prefix X-Remote-Extra- --requestheader-group-headers X-Remote-Group \
		--requestheader-username-headers X-Remote-User \
		--proxy-client-cert-file "${PKI}/front-proxy-client.crt" --proxy-client-key-file "${PKI}/front-proxy-client.key" \
		--enable-aggregator-routing=true --profiling=false
	wait_for 60 "containerd" ctr_ version || { alive containerd; die "containerd not ready"; }
	local img
	for img in "${IMAGES}/pause.oci.tar=registry.k8s.io/pause" "${IMAGES}/coredns.oci.tar=openaaa.local/coredns"; do
		import_one "$img" >/dev/null
	done
	wait_for 90 "kube-apiserver /readyz" kc get --raw /readyz || { alive etcd; alive kube-apiserver; die "kube-apiserver not ready"; }
	log "API server ready after $((SECONDS - t0))s"
	start kube-controller-manager "${CBIN}/kube-controller-manager" \
		--kubeconfig "${DIR}/conf/controller-manager.kubeconfig" \
		--authentication-kubeconfig "${DIR}/conf/controller-manager.kubeconfig" \
		--authorization-kubeconfig "${DIR}/conf/controller-manager.kubeconfig" \
		--bind-address 127.0.0.1 --secure-port "$KCM_PORT" --leader-elect=false \
		--cluster-signing-cert-file "${PKI}/ca.crt" --cluster-signing-key-file "${PKI}/ca.key" \
		--root-ca-file "${PKI}/ca.crt" --service-account-private-key-file "${PKI}/sa.key" \
		--use-service-account-credentials=true \
		--allocate-node-cidrs=true --cluster-cidr "$POD_CIDR" --node-cidr-mask-size 24 \
		--service-cluster-ip-range "$SERVICE_CIDR" --profiling=false
	start kube-scheduler "${CBIN}/kube-scheduler" \
		--kubeconfig "${DIR}/conf/scheduler.kubeconfig" \
		--authentication-kubeconfig "${DIR}/conf/scheduler.kubeconfig" \
		--authorization-kubeconfig "${DIR}/conf/scheduler.kubeconfig" \
		--bind-address 127.0.0.1 --secure-port "$SCHED_PORT" --leader-elect=false --profiling=false
	start kubelet "${CBIN}/kubelet" --config "${DIR}/conf/kubelet.yaml" \
		--kubeconfig "${DIR}/conf/kubelet.kubeconfig" --root-dir "${DIR}/kubelet" \
		--hostname-override "$NODE_NAME" --node-ip "$NODE_IP"
	start kube-proxy "${CBIN}/kube-proxy" --config "${DIR}/conf/kube-proxy.yaml"
	wait_for "$TIMEOUT" "node ${NODE_NAME} Ready" node_ready || {
		alive kubelet; alive kube-proxy; alive kube-controller-manager; alive kube-scheduler; die "node not Ready"
	}
	local t_node=$((SECONDS - t0))
	log "node Ready after ${t_node}s"
	coredns_manifest | kc apply -f - >/dev/null
	wait_for 60 "ServiceAccount default/default" kc get serviceaccount default -n default
	kc -n kube-system rollout status deployment/coredns --timeout "${TIMEOUT}s" >/dev/null || {
		kc -n kube-system get pods -o wide >&2 || true
		kc -n kube-system describe pods -l k8s-app=kube-dns >&2 || true
		die "CoreDNS not ready"
	}
	for c in etcd containerd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy; do alive "$c"; done
	UP_OK=1
	echo "node_ready_s=${t_node} up_s=$((SECONDS - t0))" >"${DIR}/run/timings"
	log "up in $((SECONDS - t0))s (node Ready after ${t_node}s); kubeconfig: ${KUBECONFIG_ADMIN}"
	if [[ "${CLUSTER_LOCK_HELD:-0}" != 1 ]]; then
		# Keep the lock while the cluster is up: a holder that inherits the lock's fd 9.
		setsid sleep infinity </dev/null >/dev/null 2>&1 &
		echo $! >"${DIR}/run/lock-holder.pid"
	fi
	echo "$KUBECONFIG_ADMIN"
}

# ---------------------------------------------------------------------------------------------
# import

import_one() { # PATH[=REPO]
	local arg=$1 path repo
	path=${arg%%=*}
	if [[ $arg == *=* ]]; then repo=${arg#*=}; else
		repo="$(basename "$path")"
		repo="${IMAGE_PREFIX}/${repo%.oci.tar}"
	fi
	[[ -f $path ]] || die "import: no such file: $path"
	# An index that carries only a tag (org.opencontainers.image.ref.name) needs --base-name.
	ctr_ -n k8s.io images import --base-name "$repo" "$path" >/dev/null
	ctr_ -n k8s.io images ls -q | grep "^${repo}:" || die "import: nothing named ${repo}:* after importing ${path}"
}

cmd_import() {
	[[ $# -gt 0 ]] || die "usage: hack/cluster.sh import PATH[=REPO]..."
	need_root import
	[[ -S $CTRD_SOCK ]] || die "no cluster is up (no ${CTRD_SOCK})"
	# One import at a time: tests import beside each other (make test's two lanes, the add-ons
	# installed in the background), and archives share layers that containerd ingests once.
	exec 8>"${DIR}/import.lock"
	flock 8
	local a
	for a in "$@"; do import_one "$a"; done
}

# ---------------------------------------------------------------------------------------------
# down

stop_pid() { proc_stop "${DIR}/run/$1.pid" "${2:-100}"; } # TERM, KILL after 10 s by default

stop_all() { # TENTHS NAME...: SIGTERM them all at once, SIGKILL what is left after TENTHS/10 s
	local tenths=$1 n pid i left
	shift
	local pids=()
	for n in "$@"; do
		if pid=$(proc_pid "${DIR}/run/${n}.pid"); then
			kill "$pid" 2>/dev/null || true
			pids+=("$pid")
		fi
		rm -f "${DIR}/run/${n}.pid"
	done
	for ((i = 0; i < tenths; i++)); do
		left=0
		for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && left=1; done
		((left)) || return 0
		sleep 0.1
	done
	for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
}

# PIDs of the processes whose command line names our containerd socket (its shims).
shim_pids() {
	local f
	for f in $(grep -lasF -- "$CTRD_SOCK" /proc/[0-9]*/cmdline 2>/dev/null); do
		{ tr '\0' ' ' <"$f" | grep -q -- "containerd-shim.* -address ${CTRD_SOCK} "; } 2>/dev/null || continue
		f=${f#/proc/}
		echo "${f%/cmdline}"
	done
	return 0
}

iptables_clean() { # iptables|ip6tables: drop our chains and every rule that jumps to them
	local ipt=$1 t script
	command -v "$ipt" >/dev/null || return 0
	local ours='^(KUBE-|CNI-|'"$FW_CHAIN"'$)'
	for t in filter nat mangle raw; do
		"$ipt" -t "$t" -S >/dev/null 2>&1 || continue
		# One iptables-restore per table (a call per rule takes seconds with kube-proxy's
		# hundreds): delete the rules of other chains that jump to ours, flush ours, delete ours.
		script=$("$ipt" -t "$t" -S | awk -v ours="$ours" '
			$1 == "-N" && $2 ~ ours { chains[++n] = $2; next }
			$1 == "-A" && $2 !~ ours {
				for (i = 3; i < NF; i++) if (($i == "-j" || $i == "-g") && $(i + 1) ~ ours) { sub(/^-A /, "-D "); print; break }
			}
			END { for (i = 1; i <= n; i++) print "-F " chains[i]; for (i = 1; i <= n; i++) print "-X " chains[i] }')
		[[ -n $script ]] || continue
		printf '*%s\n%s\nCOMMIT\n' "$t" "$script" | "${ipt}-restore" --noflush || log "${ipt}-restore -t $t failed"
	done
}

# nftables tables that `up` found absent and that are now empty (iptables-nft leaves its
# tables and base chains behind after the last rule is gone), and kube-proxy's own tables.
nft_clean() {
	command -v nft >/dev/null || return 0
	local tbl
	while read -r tbl; do
		[[ -n $tbl ]] || continue
		grep -qxF "$tbl" "${DIR}/host/nft-tables" 2>/dev/null && continue
		local fam name rules
		read -r _ fam name <<<"$tbl"
		rules=$(nft -j list table "$fam" "$name" 2>/dev/null |
			python3 -c 'import json,sys; print(sum(1 for o in json.load(sys.stdin)["nftables"] if "rule" in o))' 2>/dev/null || echo 1)
		if [[ $name == kube-proxy || $rules == 0 ]]; then
			nft delete table "$fam" "$name" 2>/dev/null || true
		fi
	done < <(nft list tables 2>/dev/null)
}

umount_under() { # unmount every mount point under a directory, deepest first
	local m
	for m in $(awk -v d="$1" 'index($2, d "/") == 1 || $2 == d {print $2}' /proc/self/mounts | sort -r); do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || log "cannot unmount $m"
	done
}

ours() { # is there anything of our cluster on this host?
	[[ -d "${DIR}/host" || -d "${DIR}/run" ]] || ip link show "$HOST_VETH" >/dev/null 2>&1 ||
		ip link show "$BRIDGE" >/dev/null 2>&1 || ip netns list 2>/dev/null | grep -qw "$NAS_NETNS" ||
		compgen -G "/sys/fs/cgroup/*/${CGROUP_ROOT}" >/dev/null
}

teardown() {
	local t0=$SECONDS
	if ! ours; then
		log "no cluster here (${DIR}): nothing to do"
		return 0
	fi
	# 1. Nothing may start or restart a pod any more: the controllers, the kubelet and
	# kube-proxy stop together. The pods die in step 2; what CNI would have undone for each
	# (veths, addresses, portmap rules) goes with their network namespaces, the IPAM
	# directory and the chains below, which is faster than asking the kubelet pod by pod.
	stop_all 100 kube-controller-manager kube-scheduler kubelet kube-proxy
	vlog "teardown: containers"
	# 2. Whatever is left in containerd, by its API: tasks killed and deleted, containers removed.
	if proc_pid "${DIR}/run/containerd.pid" >/dev/null; then
		local ns id
		for ns in $(ctr_ namespaces ls -q 2>/dev/null); do
			for id in $(ctr_ -n "$ns" tasks ls -q 2>/dev/null); do
				ctr_ -n "$ns" tasks kill -a -s KILL "$id" >/dev/null 2>&1 || true
			done
			for id in $(ctr_ -n "$ns" tasks ls -q 2>/dev/null); do
				timeout 10 ctr_ -n "$ns" tasks delete -f "$id" >/dev/null 2>&1 || true
			done
			for id in $(ctr_ -n "$ns" containers ls -q 2>/dev/null); do
				ctr_ -n "$ns" containers delete "$id" >/dev/null 2>&1 || true
			done
		done
	fi
	stop_pid containerd
	vlog "teardown: shims and cgroup processes"
	# 3. Shims that outlived containerd, then any process left in our cgroups: all ours.
	local pid pids
	pids=$(shim_pids)
	for pid in $pids; do kill -KILL "$pid" 2>/dev/null || true; done
	local h f
	for h in /sys/fs/cgroup/*/"${CGROUP_ROOT}"; do
		[[ -d $h ]] || continue
		while read -r f; do
			while read -r pid; do
				if [[ -n $pid ]]; then kill -KILL "$pid" 2>/dev/null || true; fi
			done <"$f"
		done < <(find "$h" -name cgroup.procs 2>/dev/null)
	done
	vlog "teardown: stopping the API server and etcd"
	stop_all 50 kube-apiserver
	vlog "teardown: API server stopped"
	stop_all 50 etcd
	vlog "teardown: mounts"
	# 4. Mounts: pod volumes, sandbox shm, container rootfs (all under DIR), pod netns files.
	umount_under "$DIR"
	local n
	for n in /run/netns/cni-*; do
		[[ -e $n ]] || continue
		grep -qxF "${n#/run/netns/}" "${DIR}/host/netns" 2>/dev/null && continue
		umount "$n" 2>/dev/null || umount -l "$n" 2>/dev/null || true
		rm -f "$n"
	done
	ip netns del "$NAS_NETNS" 2>/dev/null || true
	vlog "teardown: packet filter, links"
	# 5. Packet filter, links, routes (routes go with their links).
	iptables_clean iptables
	iptables_clean ip6tables
	nft_clean
	ip link del "$HOST_VETH" 2>/dev/null || true
	local l
	for l in $(ip -o link show master "$BRIDGE" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
		ip link del "$l" 2>/dev/null || true
	done
	ip link del "$BRIDGE" 2>/dev/null || true
	vlog "teardown: cgroups"
	# 6. cgroups, deepest first (empty now).
	for h in /sys/fs/cgroup/*/"${CGROUP_ROOT}"; do
		[[ -d $h ]] || continue
		find "$h" -depth -type d -exec rmdir {} + 2>/dev/null || true
		[[ -d $h ]] && log "cgroup $h not removed"
	done
	vlog "teardown: sysctls"
	# 7. sysctls back to what `up` found.
	if [[ -f "${DIR}/host/sysctl" ]]; then
		local kv
		while read -r kv; do
			[[ "$(sysctl -n "${kv%%=*}" 2>/dev/null)" == "${kv#*=}" ]] || sysctl -qw "$kv" >/dev/null 2>&1 || log "cannot restore $kv"
		done <"${DIR}/host/sysctl"
	fi
	vlog "teardown: paths"
	# 8. Paths written outside DIR that did not exist before `up`.
	if [[ -f "${DIR}/host/absent" ]]; then
		local p
		while read -r p; do
			[[ -n $p ]] || continue
			if [[ $p == /run/netns || $p == /var/run/netns ]]; then
				[[ -n "$(ls -A "$p" 2>/dev/null)" ]] && continue # another netns lives there
				umount "$p" 2>/dev/null || true # `ip netns` bind-mounts the directory on itself
			fi
			[[ -e $p || -L $p ]] || continue
			umount_under "$p"
			rm -rf "$p"
		done <"${DIR}/host/absent"
	fi
	proc_stop "${DIR}/run/lock-holder.pid" 10
	rm -rf "$DIR"
	log "down in $((SECONDS - t0))s"
}

cmd_down() {
	need_root down
	# A cluster brought up by a plain `up` keeps the lock in a holder process: release it.
	if [[ "${CLUSTER_LOCK_HELD:-0}" != 1 ]]; then
		proc_stop "${DIR}/run/lock-holder.pid" 10
		acquire_lock 30 # a test holds it for its whole run: do not pull its cluster away
	fi
	teardown
}

# ---------------------------------------------------------------------------------------------

rss_kb() { awk '/^VmRSS/ {print $2; f=1} END {if (!f) print 0}' "/proc/$1/status" 2>/dev/null || echo 0; }

cmd_status() {
	local c pid rss total=0
	for c in etcd containerd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy lock-holder; do
		if pid=$(proc_pid "${DIR}/run/${c}.pid" 2>/dev/null); then
			rss=$(rss_kb "$pid")
			total=$((total + rss))
			printf '%-24s running pid %s rss %s kB\n' "$c" "$pid" "$rss"
		else
			printf '%-24s stopped\n' "$c"
		fi
	done
	# The shims and every process of every pod (the kubelet's cgroups under our root).
	local shims=0 pods=0 f
	for pid in $(shim_pids); do shims=$((shims + $(rss_kb "$pid"))); done
	while read -r f; do
		while read -r pid; do [[ -n $pid ]] && pods=$((pods + $(rss_kb "$pid"))); done <"$f"
	done < <(find "/sys/fs/cgroup/pids/${CGROUP_ROOT}" -name cgroup.procs 2>/dev/null)
	printf '%-24s rss %s kB\n%-24s rss %s kB\n%-24s rss %s kB (%s MiB)\n' "containerd shims" "$shims" "pods" "$pods" \
		"total" "$((total + shims + pods))" "$(((total + shims + pods) / 1024))"
	if proc_pid "${DIR}/run/kube-apiserver.pid" >/dev/null 2>&1; then
		kc get nodes -o wide || true
		kc get pods -A -o wide || true
	fi
}

cmd_env() {
	cat <<EOF
CLUSTER_DIR=${DIR}
CLUSTER_VOLUMES=${DIR}/volumes
CLUSTER_LOCK=${LOCK}
KUBECONFIG=${KUBECONFIG_ADMIN}
KUBECTL=${KUBECTL}
CONTAINERD_ADDRESS=${CTRD_SOCK}
NODE_NAME=${NODE_NAME}
NODE_IP=${NODE_IP}
NAS_IP=${NAS_IP}
NAS_NETNS=${NAS_NETNS}
POD_CIDR=${POD_CIDR}
SERVICE_CIDR=${SERVICE_CIDR}
DNS_IP=${DNS_IP}
NODEPORT_RANGE=${NODEPORT_RANGE}
API_SERVER=https://${NODE_IP}:${API_PORT}
PAUSE_IMAGE=${PAUSE_IMAGE}
COREDNS_IMAGE=${COREDNS_IMAGE}
IMAGE_PREFIX=${IMAGE_PREFIX}
EOF
}

cmd=${1:-}
[[ $# -gt 0 ]] && shift
case "$cmd" in
provision) cmd_provision ;;
check) cmd_check ;;
up) cmd_up ;;
down) cmd_down ;;
import) cmd_import "$@" ;;
status) cmd_status ;;
kubeconfig) echo "$KUBECONFIG_ADMIN" ;;
kubectl) kc "$@" ;;
nas-exec)
	[[ $# -gt 0 ]] || die "usage: hack/cluster.sh nas-exec CMD..."
	exec ip netns exec "$NAS_NETNS" "$@"
	;;
env) cmd_env ;;
*) sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; [[ -z $cmd || $cmd == help || $cmd == -h ]] || exit 2 ;;
esac
