#!/usr/bin/env bash
# `make test`: the whole suite, in lanes that overlap (the cold-machine budget, issue 12).
#
#   1. provision-base: what every package but the local cluster's needs (apt packages, Cassandra
#      jars, FreeRADIUS, slapd, envtest's API server, helm, our images), the Go builds beside
#      the downloads and installs. Then, at once:
#   A. every package but the cluster's and the add-ons' (go test's usual parallelism);
#   B. the multi-DC end-to-end test (E2E_GATE of the E2E_TESTS packages; its Cassandra nodes on
#      127.0.1.x with a lock of their own, so it does not queue behind the single-node
#      packages of lane A) beside provision-cluster (the cluster's Kubernetes binaries,
#      CoreDNS, its images), then the cluster's packages (CLUSTER_TESTS) once both are done,
#      beside the end-to-end packages' other tests: the two heaviest loads on the machine
#      (three Cassandra nodes, one of them killed and restarted under load; a Kubernetes node
#      with its add-ons) never run at once. Beside each other they starved Cassandra's restart
#      (4 min instead of 1) and the multi-DC test's outage phase grew with it. The builds
#      run niced (BUILD_NICE) while it runs, so that they yield to it;
#   C. after provision-cluster: the add-ons' build, what managed Cassandra needs first
#      (`make addons-k8ssandra cassandra-image`; its debootstrap is in the base), then the rest
#      (`make addons`, minutes of compiling when cold), then Argo CD's components (`make
#      argocd-gitops`, 4.5-5.5 min cold), then their packages (ADDONS_TESTS). The cluster tests that need the
#      add-ons wait for the part they need alone (test/addons NeedBuilt, through the status
#      file BuildStatusEnv names); the first cluster tests do not need them, so they run
#      while the add-ons compile.
# The cluster tests spend most of their time waiting on pods, the others on Cassandra and
# timers: the lanes share the two cores better than one queue (docs/testing.md).
# Exit status: non-zero when any lane fails; every lane runs to its end.
#
# Environment (from the Makefile): GO, TEST_ENV_VARS (KEY=VALUE...), TEST_TIMEOUT,
# CLUSTER_TESTS, ADDONS_TESTS, E2E_TESTS (package patterns), E2E_GATE (a test name regexp).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

GO="${GO:-go}"
MAKE="${MAKE:-make}"
TIMEOUT="${TEST_TIMEOUT:-60m}"
read -r -a cluster_pkgs <<<"${CLUSTER_TESTS:?}"
read -r -a addons_pkgs <<<"${ADDONS_TESTS:?}"
read -r -a e2e_pkgs <<<"${E2E_TESTS:?}"
e2e_gate="${E2E_GATE:?}"
# shellcheck disable=SC2206 # KEY=VALUE words
env_vars=(${TEST_ENV_VARS:-})
# One build configuration for the tests and the binaries they build, the images' (static,
# -trimpath): the packages compiled for the images in provision-base serve them all, instead
# of a second compile of every dependency with cgo and full paths (issue 12's budget). The
# test binaries and the servers the tests build are linked without DWARF (-w: a quarter of a
# link's work for nothing a test reads; stack traces come from the pclntab, which stays).
env_vars+=(CGO_ENABLED=0 "GOFLAGS=${GOFLAGS:+${GOFLAGS} }-trimpath -ldflags=-w")
status="$(mktemp -t openaaa-addons-build.XXXXXX)"

# The builds run at a lower priority than the tests: on a cold machine they compile for many
# minutes beside the multi-DC test, whose Cassandra nodes and timeouts must not starve (it
# failed so: a killed node took 3.5 min to come back). Not much lower: the cluster's, the
# add-ons' and Argo CD's builds are each on the cluster tests' path (cold runs of 2026-11-29
# at nice 10: the cluster provisioned 96 s after the multi-DC test ended, with 3-19 % of the
# CPU beside the other packages' compiles; Argo CD built at 28 min, the lane waiting on it).
BUILD_NICE=5
# build_nice: BUILD_NICE while the multi-DC test runs, then 0. Once it is over, the add-ons' and
# Argo CD's builds are the cluster tests' path, and niced they got a quarter of the CPU beside
# the other packages' tests (cold run of 2026-11-29, 898bba0: 17-31 % niced of 99 % busy),
# which have minutes to spare.
build_nice() { if kill -0 "$e2e" 2>/dev/null; then echo "$BUILD_NICE"; else echo 0; fi; }
# The provisioning's compilers collect no garbage until their heap reaches BUILD_MEMLIMIT: a
# quarter less compiler CPU (measured: the operator from an empty cache, 316 → 236 s user),
# with each compile's memory bounded. Only the provisioning's builds: the tests' own binaries
# and the servers they start keep Go's default.
BUILD_ENV=(GOGC=off GOMEMLIMIT=3GiB)

start=$SECONDS
at() { echo "test: $* at $((SECONDS - start))s" >&2; }

# Every CPU_SAMPLE seconds a line with the machine's CPU over that interval (busy, of which
# niced — the builds —, and I/O wait) and the load average: which stretches of a cold run are
# bound by the two cores and which wait (pods, timers, downloads). That decides what can
# still overlap (issue 12's budget, docs/testing.md).
CPU_SAMPLE="${CPU_SAMPLE:-60}"
cpu_sampler() {
	local prev cur
	read -r -a prev </proc/stat
	while sleep "$CPU_SAMPLE"; do
		read -r -a cur </proc/stat
		# cpu user nice system idle iowait irq softirq steal
		awk -v t=$((SECONDS - start)) -v p="${prev[*]:1:8}" -v c="${cur[*]:1:8}" -v load="$(cut -d' ' -f1 /proc/loadavg)" 'BEGIN {
			split(p, a); split(c, b); tot = 0
			for (i = 1; i <= 8; i++) { d[i] = b[i] - a[i]; tot += d[i] }
			if (tot <= 0) exit
			printf "test: cpu at %ds: %d%% busy (niced %d%%, iowait %d%%), load %s\n", t,
				100 * (tot - d[4] - d[5]) / tot, 100 * d[2] / tot, 100 * d[5] / tot, load
		}' >&2
		prev=("${cur[@]}")
	done
}
cpu_sampler &
sampler=$!
trap 'kill "$sampler" 2>/dev/null; rm -f "$status"' EXIT
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
	# The multi-DC end-to-end test needs only the base: it starts now, beside the cluster's
	# provisioning (at a lower priority); the cluster's tests wait for it alone (E2E_GATE:
	# the test that kills and restarts Cassandra nodes under load). The end-to-end package's
	# other tests follow it beside the cluster's (2 nodes, none restarted under load): off
	# the path that the cluster's tests wait on.
	env "${env_vars[@]}" "$GO" test -count=1 -timeout "$TIMEOUT" -run "^(${e2e_gate})\$" "${e2e_pkgs[@]}" &
	e2e=$!
	rc=0
	nice -n "$BUILD_NICE" env "${BUILD_ENV[@]}" "$MAKE" --no-print-directory provision-cluster || rc=$?
	at "cluster provisioned (rc=${rc})"
	(
		# What managed Cassandra needs first (cert-manager, cass-operator, k8ssandra-operator,
		# the Cassandra images): the managed-Cassandra test, the cluster package's longest,
		# starts on that part alone; then the monitoring add-ons. The status file gets a line
		# per part (test/addons BuildStatusEnv).
		if ((rc == 0)) && nice -n "$(build_nice)" env "${BUILD_ENV[@]}" "$MAKE" --no-print-directory addons-k8ssandra cassandra-image &&
			echo k8ssandra >>"$status" && at "managed Cassandra's add-ons built" &&
			nice -n "$(build_nice)" env "${BUILD_ENV[@]}" "$MAKE" --no-print-directory addons; then
			echo ok >>"$status"
			at "add-ons built"
			# Argo CD's components once the add-ons are built, which the serial lane's last
			# cluster test (TestArgoCDOnCluster) waits on, its status line releasing that
			# test. Not the CLI: nothing here runs it, and it links nearly all of Argo CD (a
			# fifth more to compile, beside that test: cold runs of 2026-11-29).
			argocd_rc=0
			nice -n "$(build_nice)" env "${BUILD_ENV[@]}" "$MAKE" --no-print-directory argocd-gitops || argocd_rc=$?
			at "Argo CD's components built (rc=${argocd_rc})"
			if ((argocd_rc == 0)); then echo argocd >>"$status"; else echo failed >>"$status"; fi
			tests_rc=0
			env "${env_vars[@]}" "$GO" test -count=1 -timeout "$TIMEOUT" "${addons_pkgs[@]}" || tests_rc=$?
			((argocd_rc == 0 && tests_rc == 0))
		else
			echo failed >>"$status"
			at "add-ons' build FAILED"
			exit 1
		fi
	) &
	addons_lane=$!
	erc=0
	wait "$e2e" || erc=$?
	at "the end-to-end gate (${e2e_gate}) done (rc=${erc})"
	env "${env_vars[@]}" "$GO" test -count=1 -timeout "$TIMEOUT" -skip "^(${e2e_gate})\$" "${e2e_pkgs[@]}" &
	e2e_rest=$!
	if ((rc == 0)); then
		env "${env_vars[@]}" OPENAAA_ADDONS_BUILD_STATUS="$status" \
			"$GO" test -p 1 -count=1 -timeout "$TIMEOUT" "${cluster_pkgs[@]}" || rc=$?
	fi
	wait "$e2e_rest" || erc=$?
	at "the end-to-end packages done (rc=${erc})"
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
