#!/usr/bin/env bash
# `make test`: the whole suite, in lanes that overlap (the cold-machine budget, issue 12).
#
#   1. provision-base: what every package but the local cluster's needs (apt packages, Cassandra
#      jars, FreeRADIUS, slapd, envtest's API server, helm, our images), the Go builds beside
#      the downloads and installs. Then, at once:
#   A. every package but the cluster's and the add-ons' (go test's usual parallelism);
#   B. the multi-DC end-to-end package (E2E_TESTS; its Cassandra nodes on 127.0.1.x with a lock
#      of their own, so it does not queue behind the single-node packages of lane A) beside
#      provision-cluster (the cluster's Kubernetes binaries, CoreDNS, its images), then the
#      cluster's packages
#      (CLUSTER_TESTS) once both are done: the two heaviest loads on the machine (three
#      Cassandra nodes, one of them killed and restarted under load; a Kubernetes node with
#      its add-ons) never run at once. Beside each other they starved Cassandra's restart
#      (4 min instead of 1) and the multi-DC test's outage phase grew with it. The cluster's
#      and the add-ons' builds run niced (BUILD_NICE) so that they yield to the tests;
#   C. after provision-cluster: the add-ons' build (`make addons`, minutes of compiling when
#      cold), then their package (ADDONS_TESTS). The cluster tests that need the add-ons wait
#      for this build (test/addons NeedBuilt, through the status file BuildStatusEnv names);
#      the first cluster test does not need them, so it runs while they compile.
# The cluster tests spend most of their time waiting on pods, the others on Cassandra and
# timers: the lanes share the two cores better than one queue (README "Tests").
# Exit status: non-zero when any lane fails; every lane runs to its end.
#
# Environment (from the Makefile): GO, TEST_ENV_VARS (KEY=VALUE...), TEST_TIMEOUT,
# CLUSTER_TESTS, ADDONS_TESTS, E2E_TESTS (package patterns).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

GO="${GO:-go}"
MAKE="${MAKE:-make}"
TIMEOUT="${TEST_TIMEOUT:-60m}"
read -r -a cluster_pkgs <<<"${CLUSTER_TESTS:?}"
read -r -a addons_pkgs <<<"${ADDONS_TESTS:?}"
read -r -a e2e_pkgs <<<"${E2E_TESTS:?}"
# shellcheck disable=SC2206 # KEY=VALUE words
env_vars=(${TEST_ENV_VARS:-})
# One build configuration for the tests and the binaries they build, the images' (static,
# -trimpath): the packages compiled for the images in provision-base serve them all, instead
# of a second compile of every dependency with cgo and full paths (issue 12's budget).
env_vars+=(CGO_ENABLED=0 "GOFLAGS=${GOFLAGS:+${GOFLAGS} }-trimpath")
status="$(mktemp -t openaaa-addons-build.XXXXXX)"
trap 'rm -f "$status"' EXIT

# The cluster's and the add-ons' builds run at a lower priority than the tests: on a cold
# machine they compile for many minutes beside the multi-DC test, whose Cassandra nodes and
# timeouts must not starve (it failed so: a killed node took 3.5 min to come back).
BUILD_NICE=10
# The provisioning's compilers collect no garbage until their heap reaches BUILD_MEMLIMIT: a
# quarter less compiler CPU (measured: the operator from an empty cache, 316 → 236 s user),
# with each compile's memory bounded. Only the provisioning's builds: the tests' own binaries
# and the servers they start keep Go's default.
BUILD_ENV=(GOGC=off GOMEMLIMIT=3GiB)

start=$SECONDS
at() { echo "test: $* at $((SECONDS - start))s" >&2; }
# The base's two streams (Makefile, PROVISION_BUILDS) at once.
env "${BUILD_ENV[@]}" "$MAKE" --no-print-directory provision-base-packages &
packages=$!
brc=0
env "${BUILD_ENV[@]}" "$MAKE" --no-print-directory provision-base-builds || brc=$?
prc=0
wait "$packages" || prc=$?
((brc == 0 && prc == 0)) || { at "base provisioning FAILED (builds rc=${brc}, packages rc=${prc})"; exit 1; }
at "base provisioned"

# Every package, minus the cluster's and the add-ons'.
mapfile -t all < <("$GO" list ./...)
mapfile -t apart < <("$GO" list "${cluster_pkgs[@]}" "${addons_pkgs[@]}" "${e2e_pkgs[@]}")
others=()
for p in "${all[@]}"; do
	[[ " ${apart[*]} " == *" ${p} "* ]] || others+=("$p")
done

(
	# The multi-DC end-to-end package needs only the base: it starts now, beside the cluster's
	# provisioning (at a lower priority); the cluster's tests wait for it.
	env "${env_vars[@]}" "$GO" test -count=1 -timeout "$TIMEOUT" "${e2e_pkgs[@]}" &
	e2e=$!
	rc=0
	nice -n "$BUILD_NICE" env "${BUILD_ENV[@]}" "$MAKE" --no-print-directory provision-cluster || rc=$?
	at "cluster provisioned (rc=${rc})"
	(
		if ((rc == 0)) && nice -n "$BUILD_NICE" env "${BUILD_ENV[@]}" "$MAKE" --no-print-directory addons; then
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
	erc=0
	wait "$e2e" || erc=$?
	at "the end-to-end packages done (rc=${erc})"
	if ((rc == 0)); then
		env "${env_vars[@]}" OPENAAA_ADDONS_BUILD_STATUS="$status" \
			"$GO" test -p 1 -count=1 -timeout "$TIMEOUT" "${cluster_pkgs[@]}" || rc=$?
	fi
	((erc == 0)) || rc=$erc
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
