// Package clusterdemo runs hack/cluster-demo.sh (make cluster-demo) against stand-ins of the
// commands it drives — hack/cluster.sh, hack/addons.sh, hack/cassandra.sh, bin/helm, kubectl,
// radclient, curl, make — that answer as the real ones do and record what was asked: the
// script's own logic (the steps in order, a failure naming its step, the tear down of
// CLUSTER_DEMO_KEEP=0 and what it leaves alone) is checked without a cluster. The demo on the
// real cluster is the integrator's run (docs/local-cluster.md, "make cluster-demo").
package clusterdemo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/openaaa/openaaa/internal/testenv"
)

// Stand-ins. @S@ is the state directory: "up" while the stand-in cluster runs, "cass" while
// Cassandra runs, "session" the active accounting session, "log" every call; fail-ready and
// ltphase steer the answers.
var stubs = map[string]string{
	"hack/cluster.sh": `#!/usr/bin/env bash
S=@S@
echo "cluster.sh $*" >>$S/log
case $1 in
kubeconfig) echo $S/kubeconfig ;;
up) touch $S/up; echo $S/kubeconfig ;;
down) rm -f $S/up ;;
import) for a in "${@:2}"; do n=$(basename "${a%%=*}" .oci.tar); echo "ghcr.io/openaaa/$n:$(git describe --tags --always --dirty)"; done ;;
nas-exec) shift; exec "$@" ;;
kubectl) shift; exec kubectl-stub "$@" ;;
esac
`,
	"hack/addons.sh": `#!/usr/bin/env bash
echo "addons.sh $*" >>@S@/log
if [[ $1 == import ]]; then shift; "$@" /x/prometheus.oci.tar=repo >/dev/null; fi
`,
	"hack/cassandra.sh": `#!/usr/bin/env bash
S=@S@
echo "cassandra.sh $* dir=$CASSANDRA_DIR addr=$CASSANDRA_ADDRESSES port=$CASSANDRA_CQL_PORT" >>$S/log
case $1 in start) mkdir -p "$CASSANDRA_DIR"; echo 4242 >$S/cass ;; stop) rm -f $S/cass ;; pids) cat $S/cass 2>/dev/null || true ;; esac
`,
	"bin/helm": `#!/usr/bin/env bash
echo "helm $*" >>@S@/log
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
*"wait aaacluster/edge"*) [[ ! -f $S/fail-ready ]] ;;
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
	t               *testing.T
	repo, state, pd string
}

// newDemo lays out a repository with the script, the samples and the stand-ins.
func newDemo(t *testing.T) *demo {
	root := testenv.Root(t)
	for _, tool := range []string{"git", "python3", "flock", "base64"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found", tool)
		}
	}
	dir := t.TempDir()
	d := &demo{t: t, repo: filepath.Join(dir, "repo"), state: filepath.Join(dir, "state"), pd: filepath.Join(dir, "demo")}
	for _, p := range []string{"hack", "bin", "config/samples", "../path", "../state"} {
		if err := os.MkdirAll(filepath.Join(d.repo, p), 0o755); err != nil {
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
		if err := os.WriteFile(path, []byte(strings.ReplaceAll(body, "@S@", d.state)), 0o755); err != nil {
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

// run runs the script with args and extra environment; its output and whether it succeeded.
func (d *demo) run(extra []string, args ...string) (string, bool) {
	cmd := exec.Command(filepath.Join(d.repo, "hack", "cluster-demo.sh"), args...)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Join(filepath.Dir(d.repo), "path")+":"+os.Getenv("PATH"),
		"CLUSTER_DIR="+filepath.Join(d.state, "cluster"), "CLUSTER_LOCK="+filepath.Join(d.state, "lock"),
		"CLUSTER_DEMO_DIR="+d.pd, "MAKE=make", "MAKEFLAGS=", "MAKELEVEL=")
	cmd.Env = append(cmd.Env, extra...)
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

var steps = []string{
	"==> [1] provision", "==> [2] local cluster up", "==> [3] images imported", "==> [4] add-ons",
	"==> [5] Cassandra 5 on 198.18.0.1:9042", "==> [6] operator chart", "==> [7] AAACluster edge",
	"==> [8] Access-Accept and accounting", "==> [9] the session in the admin API",
	"==> [10] AAALoadTest demo", "==> [11] Prometheus", "==> timings",
}

func TestKeepShowsEverythingAndLeavesItUp(t *testing.T) {
	d := newDemo(t)
	out, ok := d.run(nil)
	if !ok {
		t.Fatalf("the demo failed:\n%s", out)
	}
	at := 0
	for _, s := range steps {
		i := strings.Index(out[at:], s)
		if i < 0 {
			t.Fatalf("%q missing, or out of order:\n%s", s, out)
		}
		at += i
	}
	for _, want := range []string{"Access-Accept", "Accounting-Request Interim-Update", "HTTP 401", `"nas":"198.18.0.2"`,
		"is no longer active", "= 12.5 requests/s", "serviceMonitor/aaa/edge/0", "total", "make cluster-demo-down"} {
		if !strings.Contains(out, want) {
			t.Errorf("%q not in the output:\n%s", want, out)
		}
	}
	if !d.has("up") || !d.has("cass") {
		t.Errorf("CLUSTER_DEMO_KEEP=1: the cluster (%v) and Cassandra (%v) should stay up", d.has("up"), d.has("cass"))
	}
	log, _ := os.ReadFile(filepath.Join(d.state, "log"))
	for _, want := range []string{"make --no-print-directory cluster-provision addons images helm cassandra-jars freeradius",
		"cassandra.sh start 1 dir=" + filepath.Join(d.pd, "cassandra") + " addr=198.18.0.1 port=9042",
		"helm --kubeconfig", "-f config/samples/cluster-demo-values.yaml", "apply -f config/samples/cluster-demo-loadtest.yaml"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("never called: %q\n%s", want, log)
		}
	}
	// make cluster-demo-down removes all of it, the cluster too: the demo started it.
	if out, ok := d.run(nil, "down"); !ok || d.has("up") || d.has("cass") {
		t.Errorf("down: ok=%v, cluster up %v, Cassandra %v\n%s", ok, d.has("up"), d.has("cass"), out)
	}
}

func TestKeep0TearsDown(t *testing.T) {
	d := newDemo(t)
	out, ok := d.run([]string{"CLUSTER_DEMO_KEEP=0"})
	if !ok || !strings.Contains(out, "total with the tear down") {
		t.Fatalf("the demo failed:\n%s", out)
	}
	if d.has("up") || d.has("cass") {
		t.Errorf("CLUSTER_DEMO_KEEP=0 left the cluster (%v) or Cassandra (%v)", d.has("up"), d.has("cass"))
	}
	if _, err := os.Stat(d.pd); err == nil {
		t.Errorf("CLUSTER_DEMO_KEEP=0 left %s", d.pd)
	}
}

func TestFailureNamesTheStepAndTearsDown(t *testing.T) {
	for name, tc := range map[string]struct{ file, content, step string }{
		"never Ready":      {"fail-ready", "", `FAILED in step "AAACluster edge`},
		"load test Failed": {"ltphase", "Failed", `FAILED in step "AAALoadTest demo and its report"`},
	} {
		t.Run(name, func(t *testing.T) {
			d := newDemo(t)
			d.touch(tc.file, tc.content)
			out, ok := d.run([]string{"CLUSTER_DEMO_KEEP=0"})
			if ok || !strings.Contains(out, tc.step) {
				t.Fatalf("want a failure with %q:\n%s", tc.step, out)
			}
			if d.has("up") || d.has("cass") {
				t.Errorf("after the failure with CLUSTER_DEMO_KEEP=0: cluster up %v, Cassandra %v", d.has("up"), d.has("cass"))
			}
		})
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
// CLUSTER_DEMO_KEEP=0.
func TestUsesAClusterUpByHand(t *testing.T) {
	d := newDemo(t)
	d.touch("up", "")
	holder := exec.Command("sleep", "60")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Process.Kill(); _ = holder.Wait() }()
	if err := os.MkdirAll(filepath.Join(d.state, "cluster", "run"), 0o755); err != nil {
		t.Fatal(err)
	}
	d.touch("cluster/run/lock-holder.pid", strconv.Itoa(holder.Process.Pid))
	out, ok := d.run([]string{"CLUSTER_DEMO_KEEP=0"})
	if !ok || !strings.Contains(out, "using the cluster already up") || !strings.Contains(out, "it stays up") {
		t.Fatalf("want the demo on the cluster up by hand:\n%s", out)
	}
	if !d.has("up") || d.has("cass") {
		t.Errorf("cluster up %v (want true), Cassandra %v (want false)", d.has("up"), d.has("cass"))
	}
}
