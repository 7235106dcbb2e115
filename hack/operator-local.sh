#!/usr/bin/env bash
# Try the operator without a cluster: a local kube-apiserver and etcd (envtest assets) with the
# AAACluster, K8ssandraCluster, cert-manager and prometheus-operator CRDs; the operator running
# against it; the 3-DC sample applied in namespace demo.
#
# There are no kubelets and no other controllers: objects are created, validated and reconciled,
# but pods never run, the K8ssandraCluster never becomes initialized, so the AAACluster stays at
# CassandraInitializing. `kubectl get aaaclusters,k8ssandraclusters,certificates -A` shows it.
# Playing k8ssandra-operator by hand moves it on (see docs/operator.md, "Try it locally").
#
# Usage: hack/operator-local.sh [--once]
#   --once   apply, show, check the AAACluster got its K8ssandraCluster, stop (a smoke test).
set -euo pipefail
cd "$(dirname "$0")/.."

ONCE=0
[[ "${1:-}" == "--once" ]] && ONCE=1
WORK="${OPENAAA_LOCAL_DIR:-$(mktemp -d /tmp/openaaa-local.XXXXXX)}"
mkdir -p "$WORK"
export KUBECONFIG="$WORK/kubeconfig"

ASSETS="$(hack/envtest.sh --kubectl)"
CRDS="$(hack/envtest.sh --print-crds)"
KUBECTL="$ASSETS/kubectl"

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

echo "== building the local control plane helper and the operator"
go build -o "$WORK/localcluster" ./test/e2e/localcluster
go build -o "$WORK/operator" .

echo "== starting kube-apiserver and etcd (logs: $WORK/localcluster.log)"
"$WORK/localcluster" --write-kubeconfig "$KUBECONFIG" --assets "$ASSETS" --third-party-crds "$CRDS" >"$WORK/localcluster.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 120); do
  [[ -f "$KUBECONFIG" ]] && break
  sleep 0.5
done
[[ -f "$KUBECONFIG" ]] || { echo "the control plane did not start:"; cat "$WORK/localcluster.log"; exit 1; }

echo "== starting the operator (logs: $WORK/operator.log)"
"$WORK/operator" --leader-elect=false --metrics-bind-address=0 --health-probe-bind-address=127.0.0.1:18081 >"$WORK/operator.log" 2>&1 &
pids+=($!)

echo "== applying the 3-DC sample in namespace demo"
"$KUBECTL" create namespace demo
"$KUBECTL" apply -n demo -k config/samples

for _ in $(seq 1 120); do
  "$KUBECTL" get -n demo k8ssandraclusters aaa >/dev/null 2>&1 && break
  sleep 0.5
done
"$KUBECTL" get -n demo aaaclusters -o wide
"$KUBECTL" get -n demo k8ssandraclusters,certificates,servicemonitors,prometheusrules,configmaps
"$KUBECTL" get -n demo aaacluster aaa -o jsonpath='{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}'

if [[ "$ONCE" == 1 ]]; then
  "$KUBECTL" get -n demo k8ssandraclusters aaa >/dev/null
  echo "== ok"
  exit 0
fi
cat <<EOF

The operator runs against a local API server. In another shell:
  export KUBECONFIG=$KUBECONFIG
  $KUBECTL get aaaclusters -A
Pods do not run (no kubelets). Ctrl-C stops everything.
EOF
wait "${pids[0]}"
