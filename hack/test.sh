#!/usr/bin/env bash
# `make test`: the whole suite, in lanes that overlap (the cold-machine budget, issue 12).
#
#   1. provision-base: what every package but the local cluster's needs (apt packages, Cassandra
#      jars, FreeRADIUS, slapd, envtest's API server, helm, our images). Then, at once:
#   A. every package but the cluster's and the add-ons' (go test's usual parallelism);
#   B. provision-cluster (the cluster's Kubernetes binaries, CoreDNS, its images), then the
#      cluster's packages (CLUSTER_TESTS), one at a time;
#   C. after provision-cluster: the add-ons' build (`make addons`, minutes of compiling when
#      cold), then their package (ADDONS_TESTS). The cluster tests that need the add-ons wait
#      for this build (test/addons NeedBuilt, through the status file BuildStatusEnv names);
#      the first cluster test does not need them, so it runs while they compile.
# The cluster tests spend most of their time waiting on pods, the others on Cassandra and
# timers: the lanes share the two cores better than one queue (README "Tests").
# Exit status: non-zero when any lane fails; every lane runs to its end.
#
# Environment (from the Makefile): GO, TEST_ENV_VARS (KEY=VALUE...), TEST_TIMEOUT,
# CLUSTER_TESTS, ADDONS_TESTS (package patterns).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

GO="${GO:-go}"
MAKE="${MAKE:-make}"
TIMEOUT="${TEST_TIMEOUT:-60m}"
read -r -a cluster_pkgs <<<"${CLUSTER_TESTS:?}"
read -r -a addons_pkgs <<<"${ADDONS_TESTS:?}"
# shellcheck disable=SC2206 # KEY=VALUE words
env_vars=(${TEST_ENV_VARS:-})
status="$(mktemp -t openaaa-addons-build.XXXXXX)"
trap 'rm -f "$status"' EXIT

start=$SECONDS
at() { echo "test: $* at $((SECONDS - start))s" >&2; }
"$MAKE" --no-print-directory provision-base
at "base provisioned"

# Every package, minus the cluster's and the add-ons'.
mapfile -t all < <("$GO" list ./...)
mapfile -t apart < <("$GO" list "${cluster_pkgs[@]}" "${addons_pkgs[@]}")
others=()
for p in "${all[@]}"; do
	[[ " ${apart[*]} " == *" ${p} "* ]] || others+=("$p")
done

(
	rc=0
	"$MAKE" --no-print-directory provision-cluster || rc=$?
	at "cluster provisioned (rc=${rc})"
	(
		if ((rc == 0)) && "$MAKE" --no-print-directory addons; then
			echo ok >"$status"
			at "add-ons built"
			env "${env_vars[@]}" "$GO" test -count=1 -timeout "$TIMEOUT" "${addons_pkgs[@]}"
		else
			echo failed >"$status"
			at "add-ons' build FAILED"
			exit 1
		fi
	) &
	addons_lane=$!
	if ((rc == 0)); then
		env "${env_vars[@]}" OPENAAA_ADDONS_BUILD_STATUS="$status" \
			"$GO" test -p 1 -count=1 -timeout "$TIMEOUT" "${cluster_pkgs[@]}" || rc=$?
	fi
	arc=0
	wait "$addons_lane" || arc=$?
	((rc == 0 && arc == 0))
) &
cluster_lane=$!

rc=0
env "${env_vars[@]}" "$GO" test -count=1 -timeout "$TIMEOUT" "${others[@]}" || rc=$?
at "the other packages done (rc=${rc})"
crc=0
wait "$cluster_lane" || crc=$?
at "the cluster's and the add-ons' packages done (rc=${crc})"
((rc == 0 && crc == 0))
