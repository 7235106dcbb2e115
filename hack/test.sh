#!/usr/bin/env bash
# `make test`: the whole suite, in two halves that overlap (the cold-machine budget, issue 12).
#
#   1. provision-base: what every package but the local cluster's needs (apt packages, Cassandra
#      jars, FreeRADIUS, slapd, envtest's API server, helm, our images). Then, at once:
#   2a. in the background: provision-cluster (the cluster's Kubernetes binaries, CoreDNS, the
#       add-ons: minutes of compiling when cold), then the packages that run on the local
#       cluster (CLUSTER_TESTS), one at a time;
#   2b. in the foreground: every other package (go test's usual parallelism).
# The cluster tests spend most of their time waiting on pods, the others on Cassandra and
# timers, so the halves share the two cores better than one queue: see README "Tests".
# Exit status: non-zero when either half fails; both always run to the end.
#
# Environment (from the Makefile): GO, TEST_ENV_VARS (KEY=VALUE...), TEST_TIMEOUT,
# CLUSTER_TESTS (package patterns).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

GO="${GO:-go}"
MAKE="${MAKE:-make}"
TIMEOUT="${TEST_TIMEOUT:-60m}"
read -r -a cluster_pkgs <<<"${CLUSTER_TESTS:?}"
# shellcheck disable=SC2206 # KEY=VALUE words
env_vars=(${TEST_ENV_VARS:-})

start=$SECONDS
"$MAKE" --no-print-directory provision-base
echo "test: base provisioned in $((SECONDS - start))s" >&2

# Every package, minus the cluster's.
mapfile -t all < <("$GO" list ./...)
mapfile -t clustered < <("$GO" list "${cluster_pkgs[@]}")
others=()
for p in "${all[@]}"; do
	[[ " ${clustered[*]} " == *" ${p} "* ]] || others+=("$p")
done

(
	s=$SECONDS
	"$MAKE" --no-print-directory provision-cluster
	echo "test: cluster provisioned in $((SECONDS - s))s" >&2
	env "${env_vars[@]}" "$GO" test -p 1 -count=1 -timeout "$TIMEOUT" "${cluster_pkgs[@]}"
) &
cluster_pid=$!

rc=0
env "${env_vars[@]}" "$GO" test -count=1 -timeout "$TIMEOUT" "${others[@]}" || rc=$?
echo "test: the packages off the cluster done at $((SECONDS - start))s (rc=${rc})" >&2
crc=0
wait "$cluster_pid" || crc=$?
echo "test: the cluster's packages done at $((SECONDS - start))s (rc=${crc})" >&2
((rc == 0 && crc == 0))
