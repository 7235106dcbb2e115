// Package clusterdemo runs hack/cluster-demo.sh (make cluster-demo) against stand-ins of the
// commands it drives — hack/cluster.sh, hack/addons.sh, hack/cassandra.sh, bin/helm, kubectl,
// radclient, curl, make — that answer as the real ones do and record what was asked: the
// script's own logic (the steps in order, a failure naming its step, the tear down of
// CLUSTER_DEMO_KEEP=0 and what it leaves alone) is checked without a cluster. The demo on the
// real cluster is the integrator's run (docs/local-cluster.md, "make cluster-demo").
package clusterdemo

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/openaaa/openaaa/internal/testenv"
)

// Stand-ins. @S@ is the state directory, @P@ a process alive while the test runs (the lock
// holder `hack/cluster.sh up` leaves): "up" while the stand-in cluster runs, "cass" while
// the host's Cassandra runs, "k8ssandra" once cass-operator and k8ssandra-operator are
// installed, "kcluster" the managed Cassandra (K8ssandraCluster and CassandraDatacenter) of
// the AAACluster, "going" its countdown after the uninstall, "kept" the AAACluster as
// `kubectl get` shows its kind and spec.cassandra.external, "session" the active accounting
// session, "log" every call; fail-ready, ready-after, ltphase, fail-k8ssandra, stuck (the
// operators never remove it) and stuck-hard (nor does deleting it) steer the answers.
var stubs = map[string]string{
	"hack/cluster.sh": `#!/usr/bin/env bash
S=@S@
echo "cluster.sh $*" >>$S/log
case $1 in
kubeconfig) echo $S/kubeconfig ;;
up) touch $S/up; mkdir -p $CLUSTER_DIR/run; echo @P@ >$CLUSTER_DIR/run/lock-holder.pid; echo $S/kubeconfig ;;
down) rm -f $S/up $S/k8ssandra $S/kcluster $S/going $S/kept $CLUSTER_DIR/run/lock-holder.pid ;;
import) for a in "${@:2}"; do n=$(basename "${a%%=*}" .oci.tar); echo "ghcr.io/openaaa/$n:$(git describe --tags --always --dirty)"; done ;;
nas-exec) shift; exec "$@" ;;
kubectl) shift; exec kubectl-stub "$@" ;;
esac
`,
	"hack/addons.sh": `#!/usr/bin/env bash
S=@S@
echo "addons.sh $* images=$CASSANDRA_IMAGES" >>$S/log
case $1 in
import) shift; "$@" /x/prometheus.oci.tar=repo >/dev/null ;;
install-k8ssandra) [[ ! -f $S/fail-k8ssandra ]] || { echo "addons: timed out waiting for cass-operator" >&2; exit 1; }; touch $S/k8ssandra ;;
esac
`,
	"hack/cassandra.sh": `#!/usr/bin/env bash
S=@S@
echo "cassandra.sh $* dir=$CASSANDRA_DIR addr=$CASSANDRA_ADDRESSES port=$CASSANDRA_CQL_PORT" >>$S/log
case $1 in start) mkdir -p "$CASSANDRA_DIR"; echo 4242 >$S/cass ;; stop) rm -f $S/cass ;; pids) cat $S/cass 2>/dev/null || true ;; esac
`,
	// helm: installing the AAACluster makes it (and, managed, the operator makes its
	// K8ssandraCluster, k8ssandra-operator its CassandraDatacenter); uninstalling it starts their
	// removal, which takes a few polls (or never: stuck).
	"bin/helm": `#!/usr/bin/env bash
S=@S@
echo "helm $*" >>$S/log
a="$*"
case $a in
*"upgrade --install edge "*cluster-demo-managed-values.yaml*)
	echo -n "AAACluster " >$S/kept
	[[ ! -f $S/k8ssandra ]] || printf 'k8ssandracluster.k8ssandra.io/edge\ncassandradatacenter.cassandra.datastax.com/dc1\n' >$S/kcluster ;;
*"upgrade --install edge "*) echo -n "AAACluster map[contactPoints:[198.18.0.1:9042]]" >$S/kept ;;
*"uninstall edge "*) rm -f $S/kept; [[ ! -f $S/kcluster ]] || echo 3 >$S/going ;;
esac
`,
	"path/kubectl-stub": `#!/usr/bin/env bash
S=@S@
echo "kubectl $*" >>$S/log
[[ -f $S/up ]] || { echo "connection refused" >&2; exit 1; }
a="$*"
case $a in
"get --raw /readyz") echo ok ;;
*"proxy/api/v1/targets"*) echo '{"status":"success","data":{"activeTargets":[{"scrapePool":"serviceMonitor/aaa/edge/0","scrapeUrl":"http://198.18.16.5:9812/metrics","health":"up","labels":{"namespace":"aaa"}}]}}' ;;
*"proxy/api/v1/query"*) echo '{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"12.5"]}]}}' ;;
*"get svc edge-dc1-radius"*"radius-auth"*) echo -n 31234 ;;
*"get svc edge-dc1-radius"*"radius-acct"*) echo -n 31235 ;;
*"get pods -l"*) echo -n 198.18.16.5 ;;
*"get secret edge-admin-token"*) echo -n dG9rZW4tdG9rZW4tdG9rZW4= ;;
*"get aaaloadtest demo -o jsonpath={.status.phase}"*) cat $S/ltphase 2>/dev/null || echo -n Succeeded ;;
*"get aaacluster edge --ignore-not-found"*) cat $S/kept 2>/dev/null || true ;;
*'[?(@.type=="Ready")]}{.status}'*)
	n=$(cat $S/ready-polls 2>/dev/null || echo 0); echo $((n + 1)) >$S/ready-polls
	if [[ -f $S/fail-ready ]] || ((n < $(cat $S/ready-after 2>/dev/null || echo 0))); then
		echo -n "False CassandraInitializing: CassandraReady: dc1 0/1 Cassandra nodes ready"
	else
		echo -n "True Ready: AAA cluster ready in 1 data center"
	fi ;;
*"get k8ssandraclusters.k8ssandra.io,cassandradatacenters.cassandra.datastax.com -o name"*)
	[[ -f $S/k8ssandra ]] || { echo "error: the server doesn't have a resource type" >&2; exit 1; }
	cat $S/kcluster 2>/dev/null || true
	if [[ -f $S/going && ! -f $S/stuck ]]; then
		n=$(($(cat $S/going) - 1)); echo $n >$S/going
		((n > 0)) || rm -f $S/kcluster $S/going
	fi ;;
*"delete cassandradatacenters.cassandra.datastax.com --all"*) [[ -f $S/stuck-hard ]] || rm -f $S/kcluster $S/going ;;
*) echo "(kubectl $a)" ;;
esac
`,
	"path/radclient": `#!/usr/bin/env bash
S=@S@
in=$(cat)
echo "radclient $* <<< $in" >>$S/log
case $in in
*Password*) echo "Received Access-Accept Id 1" ;;
*Stop*) rm -f $S/session; echo "Received Accounting-Response Id 3" ;;
*) sed -n 's/.*Acct-Session-Id = "\([^"]*\)".*/\1/p' <<<"$in" >$S/session; echo "Received Accounting-Response Id 2" ;;
esac
`,
	"path/curl": `#!/usr/bin/env bash
S=@S@
echo "curl $*" >>$S/log
if [[ "$*" != *Authorization* ]]; then echo -n 401; exit 0; fi
if [[ -s $S/session ]]; then echo "[{\"nas\":\"198.18.0.2\",\"acctSessionId\":\"$(cat $S/session)\"}]"; else echo "[]"; fi
`,
	"path/make": `#!/usr/bin/env bash
echo "make $*" >>@S@/log
`,
	"path/id": `#!/usr/bin/env bash
echo 0
`,
}

type demo struct {
	t                       *testing.T
	repo, state, pd, images string
}

// newDemo lays out a repository with the script, the samples and the stand-ins, and the
// Cassandra test images the managed path imports.
func newDemo(t *testing.T) *demo {
	root := testenv.Root(t)
	for _, tool := range []string{"git", "python3", "flock", "base64"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found", tool)
		}
	}
	dir := t.TempDir()
	d := &demo{t: t, repo: filepath.Join(dir, "repo"), state: filepath.Join(dir, "state"), pd: filepath.Join(dir, "demo"),
		images: filepath.Join(dir, "cassandra-image")}
	for _, p := range []string{"hack", "bin", "config/samples", "../path", "../state", "../cassandra-image"} {
		if err := os.MkdirAll(filepath.Join(d.repo, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, img := range []string{"cassandra-mgmt", "cassandra-config", "cassandra-logger"} {
		if err := os.WriteFile(filepath.Join(d.images, img+".oci.tar"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(t, filepath.Join(root, "hack", "cluster-demo.sh"), filepath.Join(d.repo, "hack", "cluster-demo.sh"), 0o755)
	samples, _ := filepath.Glob(filepath.Join(root, "config", "samples", "cluster-demo-*"))
	for _, s := range samples {
		copyFile(t, s, filepath.Join(d.repo, "config", "samples", filepath.Base(s)), 0o644)
	}
	for name, body := range stubs {
		path := filepath.Join(d.repo, name)
		if strings.HasPrefix(name, "path/") {
			path = filepath.Join(dir, name)
		}
		body = strings.NewReplacer("@S@", d.state, "@P@", strconv.Itoa(os.Getpid())).Replace(body)
		if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "t"}} {
		if out, err := exec.Command("git", append([]string{"-C", d.repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return d
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, mode); err != nil {
		t.Fatal(err)
	}
}

func (d *demo) has(name string) bool {
	_, err := os.Stat(filepath.Join(d.state, name))
	return err == nil
}

func (d *demo) touch(name, content string) {
	if err := os.WriteFile(filepath.Join(d.state, name), []byte(content), 0o644); err != nil {
		d.t.Fatal(err)
	}
}

func (d *demo) log() string {
	b, _ := os.ReadFile(filepath.Join(d.state, "log"))
	return string(b)
}

// run runs the script with args and extra environment; its output and whether it succeeded.
// The demo's own settings are cleared first: the defaults unless extra sets them.
func (d *demo) run(extra []string, args ...string) (string, bool) {
	cmd := exec.Command(filepath.Join(d.repo, "hack", "cluster-demo.sh"), args...)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Join(filepath.Dir(d.repo), "path")+":"+os.Getenv("PATH"),
		"CLUSTER_DIR="+filepath.Join(d.state, "cluster"), "CLUSTER_LOCK="+filepath.Join(d.state, "lock"),
		"CLUSTER_DEMO_DIR="+d.pd, "CASSANDRA_IMAGES="+d.images, "MAKE=make", "MAKEFLAGS=", "MAKELEVEL=",
		"CLUSTER_DEMO_KEEP=", "CLUSTER_DEMO_CASSANDRA=", "CLUSTER_DEMO_PROVISION=", "CLUSTER_DEMO_READY_TIMEOUT=",
		"CLUSTER_DEMO_GONE_TIMEOUT=")
	cmd.Env = append(cmd.Env, extra...)
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

// upByHand: the stand-in cluster up as `make cluster-up` leaves it, its lock holder alive.
func (d *demo) upByHand(t *testing.T) {
	d.touch("up", "")
	holder := exec.Command("sleep", "60")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	if err := os.MkdirAll(filepath.Join(d.state, "cluster", "run"), 0o755); err != nil {
		t.Fatal(err)
	}
	d.touch("cluster/run/lock-holder.pid", strconv.Itoa(holder.Process.Pid))
}

// inOrder fails unless every one of want is in s, in this order.
func inOrder(t *testing.T, what, s string, want ...string) {
	t.Helper()
	at := 0
	for _, w := range want {
		i := strings.Index(s[at:], w)
		if i < 0 {
			t.Fatalf("%q missing from the %s, or out of order:\n%s", w, what, s)
		}
		at += i + len(w)
	}
}

// The modes of CLUSTER_DEMO_CASSANDRA: managed (the default) and external.
type mode struct {
	env       []string
	steps     []string // the step headers, in order
	log       []string // calls the run makes, in order
	output    []string // what the output shows
	teardown  []string // calls `down` makes, in order
	cassandra string   // the state file of its Cassandra
}

var modes = map[string]mode{
	"managed": {
		steps: []string{"==> [1] provision (make cluster-provision addons ...)", "==> [2] local cluster up",
			"==> [3] images imported", "==> [4] add-ons", "==> [5] k8ssandra-operator and cass-operator (managed Cassandra)",
			"==> [6] operator chart",
			"==> [7] AAACluster edge (charts/aaacluster, config/samples/cluster-demo-values.yaml + cluster-demo-managed-values.yaml) Ready",
			"==> [8] Access-Accept and accounting", "==> [9] the session in the admin API",
			"==> [10] Prometheus scrapes our targets", "==> [11] AAALoadTest demo", "==> [12] a dashboard query shows the load test", "==> timings"},
		log: []string{"make --no-print-directory cluster-provision addons cassandra-image images helm freeradius",
			"addons.sh install ", "addons.sh install-k8ssandra @S@/kubeconfig images=@I@",
			"helm --kubeconfig @S@/kubeconfig upgrade --install openaaa-operator",
			"kubectl apply -f config/samples/cluster-demo-objects.yaml -l openaaa.io/cassandra!=external",
			"upgrade --install edge charts/aaacluster -n aaa -f config/samples/cluster-demo-values.yaml -f config/samples/cluster-demo-managed-values.yaml",
			"apply -f config/samples/cluster-demo-loadtest.yaml"},
		output: []string{"Ready=False CassandraInitializing: CassandraReady: dc1 0/1 Cassandra nodes ready",
			"K8ssandraCluster edge, CassandraDatacenter dc1, pod edge-dc1-default-sts-0", "Secret edge-superuser",
			"the releases, the managed Cassandra, the cluster"},
		teardown: []string{"helm --kubeconfig @S@/kubeconfig uninstall edge -n aaa",
			"kubectl -n aaa get k8ssandraclusters.k8ssandra.io,cassandradatacenters.cassandra.datastax.com -o name",
			"helm --kubeconfig @S@/kubeconfig uninstall openaaa-operator", "kubectl delete -f config/samples/cluster-demo-objects.yaml",
			"cluster.sh down"},
		cassandra: "kcluster",
	},
	"external": {
		env: []string{"CLUSTER_DEMO_CASSANDRA=external"},
		steps: []string{"==> [1] provision (make cluster-provision addons ...)", "==> [2] local cluster up",
			"==> [3] images imported", "==> [4] add-ons", "==> [5] Cassandra 5 on 198.18.0.1:9042 (a host process)",
			"==> [6] operator chart", "==> [7] AAACluster edge (charts/aaacluster, config/samples/cluster-demo-values.yaml) Ready",
			"==> [8] Access-Accept and accounting", "==> [9] the session in the admin API",
			"==> [10] Prometheus scrapes our targets", "==> [11] AAALoadTest demo", "==> [12] a dashboard query shows the load test", "==> timings"},
		log: []string{"make --no-print-directory cluster-provision addons images helm cassandra-jars freeradius",
			"addons.sh install ", "cassandra.sh start 1 dir=@D@/cassandra addr=198.18.0.1 port=9042",
			"helm --kubeconfig @S@/kubeconfig upgrade --install openaaa-operator",
			"kubectl apply -f config/samples/cluster-demo-objects.yaml\n",
			"upgrade --install edge charts/aaacluster -n aaa -f config/samples/cluster-demo-values.yaml\n",
			"apply -f config/samples/cluster-demo-loadtest.yaml"},
		output: []string{"Cassandra:  198.18.0.1:9042, PID 4242", "the releases, Cassandra, the cluster"},
		teardown: []string{"helm --kubeconfig @S@/kubeconfig uninstall edge -n aaa", "helm --kubeconfig @S@/kubeconfig uninstall openaaa-operator",
			"kubectl delete -f config/samples/cluster-demo-objects.yaml", "cassandra.sh stop", "cluster.sh down"},
		cassandra: "cass",
	},
}

func (d *demo) expand(s []string) []string {
	r := strings.NewReplacer("@S@", d.state, "@I@", d.images, "@D@", d.pd)
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = r.Replace(x)
	}
	return out
}

func TestKeepShowsEverythingAndLeavesItUp(t *testing.T) {
	for name, m := range modes {
		t.Run(name, func(t *testing.T) {
			d := newDemo(t)
			d.touch("ready-after", "1") // Ready on the second look: the wait shows the state on the way
			out, ok := d.run(m.env)
			if !ok {
				t.Fatalf("the demo failed:\n%s", out)
			}
			inOrder(t, "output", out, m.steps...)
			for _, want := range append([]string{"Access-Accept", "Accounting-Request Interim-Update", "HTTP 401", `"nas":"198.18.0.2"`,
				"is no longer active", "= 12.5 requests/s", "serviceMonitor/aaa/edge/0", "total", "make cluster-demo-down"}, m.output...) {
				if !strings.Contains(out, want) {
					t.Errorf("%q not in the output:\n%s", want, out)
				}
			}
			if !d.has("up") || !d.has(m.cassandra) {
				t.Errorf("CLUSTER_DEMO_KEEP=1: the cluster (%v) and Cassandra (%v) should stay up", d.has("up"), d.has(m.cassandra))
			}
			log := d.log()
			inOrder(t, "calls", log, d.expand(m.log)...)
			other := map[string]string{"managed": "cassandra.sh start", "external": "install-k8ssandra"}[name]
			if strings.Contains(log, other) {
				t.Errorf("%s Cassandra: %q called\n%s", name, other, log)
			}
			if name == "managed" && strings.Contains(log, "cassandra-credentials") {
				t.Errorf("managed Cassandra: the Secret cassandra-credentials named\n%s", log)
			}
			// make cluster-demo-down removes all of it, the cluster too: the demo started it.
			d.touch("log", "")
			if out, ok := d.run(m.env, "down"); !ok || d.has("up") || d.has(m.cassandra) {
				t.Errorf("down: ok=%v, cluster up %v, Cassandra %v\n%s", ok, d.has("up"), d.has(m.cassandra), out)
			}
			inOrder(t, "calls of down", d.log(), d.expand(m.teardown)...)
		})
	}
}

func TestKeep0TearsDown(t *testing.T) {
	for name, m := range modes {
		t.Run(name, func(t *testing.T) {
			d := newDemo(t)
			out, ok := d.run(append([]string{"CLUSTER_DEMO_KEEP=0"}, m.env...))
			if !ok || !strings.Contains(out, "total with the tear down") {
				t.Fatalf("the demo failed:\n%s", out)
			}
			if d.has("up") || d.has(m.cassandra) {
				t.Errorf("CLUSTER_DEMO_KEEP=0 left the cluster (%v) or Cassandra (%v)", d.has("up"), d.has(m.cassandra))
			}
			if _, err := os.Stat(d.pd); err == nil {
				t.Errorf("CLUSTER_DEMO_KEEP=0 left %s", d.pd)
			}
			if name == "managed" {
				// The managed Cassandra went before the operator and the namespace, while the
				// operators that remove it still ran.
				inOrder(t, "output", out, "waiting for the managed Cassandra to go: k8ssandracluster.k8ssandra.io/edge cassandradatacenter.cassandra.datastax.com/dc1",
					"the managed Cassandra is gone", "releases edge and openaaa-operator uninstalled", "cluster down")
			}
		})
	}
}

func TestFailureNamesTheStepAndTearsDown(t *testing.T) {
	for name, tc := range map[string]struct {
		file, content, step string
		env                 []string
	}{
		"never Ready": {"fail-ready", "", `FAILED in step "AAACluster edge`, []string{"CLUSTER_DEMO_READY_TIMEOUT=3"}},
		"never Ready, external": {"fail-ready", "", `FAILED in step "AAACluster edge`,
			[]string{"CLUSTER_DEMO_READY_TIMEOUT=3", "CLUSTER_DEMO_CASSANDRA=external"}},
		"load test Failed":          {"ltphase", "Failed", `FAILED in step "AAALoadTest demo and its report"`, nil},
		"k8ssandra-operator not up": {"fail-k8ssandra", "", `FAILED in step "k8ssandra-operator and cass-operator (managed Cassandra)"`, nil},
	} {
		t.Run(name, func(t *testing.T) {
			d := newDemo(t)
			d.touch(tc.file, tc.content)
			out, ok := d.run(append([]string{"CLUSTER_DEMO_KEEP=0"}, tc.env...))
			if ok || !strings.Contains(out, tc.step) {
				t.Fatalf("want a failure with %q:\n%s", tc.step, out)
			}
			if tc.file == "fail-ready" && !strings.Contains(out, "not Ready within 3 s") {
				t.Errorf("the failure does not name the bound:\n%s", out)
			}
			if d.has("up") || d.has("cass") || d.has("kcluster") {
				t.Errorf("after the failure with CLUSTER_DEMO_KEEP=0: cluster up %v, Cassandra %v, managed Cassandra %v",
					d.has("up"), d.has("cass"), d.has("kcluster"))
			}
		})
	}
}

// Without the Cassandra test images the managed path stops before installing anything of it,
// naming what builds them.
func TestManagedNeedsTheCassandraImages(t *testing.T) {
	d := newDemo(t)
	if err := os.Remove(filepath.Join(d.images, "cassandra-config.oci.tar")); err != nil {
		t.Fatal(err)
	}
	out, ok := d.run([]string{"CLUSTER_DEMO_KEEP=0"})
	if ok || !strings.Contains(out, `FAILED in step "k8ssandra-operator and cass-operator`) || !strings.Contains(out, "cassandra-config.oci.tar (make cassandra-image)") {
		t.Fatalf("want a failure naming the missing image:\n%s", out)
	}
	if strings.Contains(d.log(), "install-k8ssandra") {
		t.Errorf("install-k8ssandra ran without the images")
	}
}

// A CassandraDatacenter its operators do not remove is deleted by the tear down after its
// bound; the cluster the demo started goes anyway.
func TestTeardownDeletesAStuckDatacenter(t *testing.T) {
	d := newDemo(t)
	d.touch("stuck", "")
	out, ok := d.run([]string{"CLUSTER_DEMO_KEEP=0", "CLUSTER_DEMO_GONE_TIMEOUT=1"})
	if !ok {
		t.Fatalf("the demo failed:\n%s", out)
	}
	inOrder(t, "output", out, "waiting for the managed Cassandra to go", "deleting the CassandraDatacenters", "the managed Cassandra is gone", "cluster down")
	if !strings.Contains(d.log(), "kubectl -n aaa delete cassandradatacenters.cassandra.datastax.com --all") {
		t.Errorf("the stuck CassandraDatacenter was not deleted:\n%s", d.log())
	}
	if d.has("up") {
		t.Errorf("the cluster stayed up")
	}
}

// A kept demo's AAACluster cannot switch between external and managed Cassandra (the CRD
// refuses it): the next run of the other kind stops before touching anything, saying what to
// do; `down` removes the kept one whatever the mode.
func TestRefusesToSwitchAKeptDemo(t *testing.T) {
	d := newDemo(t)
	if out, ok := d.run(modes["external"].env); !ok {
		t.Fatalf("the external demo failed:\n%s", out)
	}
	out, ok := d.run(nil)
	if ok || !strings.Contains(out, `FAILED in step "k8ssandra-operator and cass-operator`) ||
		!strings.Contains(out, "has external Cassandra and cannot switch to managed: make cluster-demo-down first") {
		t.Fatalf("want a refusal naming make cluster-demo-down:\n%s", out)
	}
	if !d.has("kept") || !d.has("cass") || d.has("k8ssandra") {
		t.Errorf("the refusal changed the kept demo: AAACluster %v, Cassandra %v, k8ssandra-operator installed %v", d.has("kept"), d.has("cass"), d.has("k8ssandra"))
	}
	if out, ok := d.run(nil, "down"); !ok || d.has("up") || d.has("cass") || d.has("kept") {
		t.Fatalf("down: ok=%v, cluster up %v, Cassandra %v, AAACluster %v\n%s", ok, d.has("up"), d.has("cass"), d.has("kept"), out)
	}
	if out, ok := d.run([]string{"CLUSTER_DEMO_KEEP=0"}); !ok {
		t.Fatalf("the managed demo after down failed:\n%s", out)
	}
}

// What the managed path applies of config/samples/cluster-demo-objects.yaml (kubectl apply -l
// with the script's selector): everything but the Cassandra credentials of the external values.
func TestManagedObjectsLeaveOutTheCredentials(t *testing.T) {
	root := testenv.Root(t)
	script, err := os.ReadFile(filepath.Join(root, "hack", "cluster-demo.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`OBJECTS_SELECTOR=\(-l '([^']+)'\)`).FindSubmatch(script)
	if m == nil {
		t.Fatal("no OBJECTS_SELECTOR=(-l '...') in hack/cluster-demo.sh")
	}
	sel, err := labels.Parse(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "config", "samples", "cluster-demo-objects.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var applied, left []string
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var o struct {
			Kind     string
			Metadata struct {
				Name   string
				Labels map[string]string
			}
		}
		if err := dec.Decode(&o); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		name := o.Kind + "/" + o.Metadata.Name
		if sel.Matches(labels.Set(o.Metadata.Labels)) {
			applied = append(applied, name)
		} else {
			left = append(left, name)
		}
	}
	if got, want := strings.Join(applied, " "), "Namespace/aaa Secret/aaa-loadgen-nas ConfigMap/subscribers"; got != want {
		t.Errorf("managed applies %s, want %s", got, want)
	}
	if got, want := strings.Join(left, " "), "Secret/cassandra-credentials"; got != want {
		t.Errorf("managed leaves out %s, want %s", got, want)
	}
	values, err := os.ReadFile(filepath.Join(root, "config", "samples", "cluster-demo-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(values), "credentialsSecret: {name: cassandra-credentials}") {
		t.Errorf("config/samples/cluster-demo-values.yaml no longer names the Secret cassandra-credentials: the selector's label may be on the wrong Secret")
	}
}

// A cluster that answers without a lock holder belongs to a test: refused, and left alone.
func TestRefusesATestsCluster(t *testing.T) {
	d := newDemo(t)
	d.touch("up", "")
	out, ok := d.run([]string{"CLUSTER_DEMO_KEEP=0"})
	if ok || !strings.Contains(out, `FAILED in step "local cluster up"`) || !strings.Contains(out, "a test holds it") {
		t.Fatalf("want a refusal naming the step:\n%s", out)
	}
	if !d.has("up") {
		t.Errorf("the test's cluster was taken down")
	}
}

// A cluster `make cluster-up` left (its lock holder alive) is used, and stays up after
// CLUSTER_DEMO_KEEP=0, with the add-ons; the managed Cassandra goes.
func TestUsesAClusterUpByHand(t *testing.T) {
	d := newDemo(t)
	d.upByHand(t)
	out, ok := d.run([]string{"CLUSTER_DEMO_KEEP=0"})
	if !ok || !strings.Contains(out, "using the cluster already up") || !strings.Contains(out, "it stays up") {
		t.Fatalf("want the demo on the cluster up by hand:\n%s", out)
	}
	if !d.has("up") || d.has("kcluster") || !d.has("k8ssandra") {
		t.Errorf("cluster up %v (want true), managed Cassandra %v (want false), k8ssandra-operator %v (want true)",
			d.has("up"), d.has("kcluster"), d.has("k8ssandra"))
	}
}

// On a cluster that stays up, a managed Cassandra that does not go even when deleted fails the
// tear down, naming it: nothing else would remove it.
func TestTeardownFailsOnManagedCassandraLeft(t *testing.T) {
	d := newDemo(t)
	d.upByHand(t)
	d.touch("stuck", "")
	d.touch("stuck-hard", "")
	out, ok := d.run([]string{"CLUSTER_DEMO_KEEP=0", "CLUSTER_DEMO_GONE_TIMEOUT=1"})
	if ok || !strings.Contains(out, "the managed Cassandra did not go: k8ssandracluster.k8ssandra.io/edge") ||
		!strings.Contains(out, "the teardown did not complete") {
		t.Fatalf("want the tear down to fail naming what is left:\n%s", out)
	}
}
