package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openaaa/openaaa/internal/cassandratest"
	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/test/cluster/clustertest"
)

// DocTag marks the shell blocks of the documentation that run, as they stand, on the
// package's cluster (a `<!-- test: cluster-doc -->` line before the fence).
const docTag = "cluster-doc"

// docCase is a marked block and what the documentation says it shows.
type docCase struct {
	file  string // relative to the repository
	check func(t *testing.T, c client.Client, out string)
}

// Rows of `kubectl get aaaclusters` and `kubectl get aaaloadtests` as the docs say they look.
var (
	readyRow     = regexp.MustCompile(`(?m)^edge\s+1/1\s+True\s`)
	loadTestRow  = regexp.MustCompile(`(?m)^demo\s+Succeeded\s+[0-9.]+\s`)
	loadTestHead = regexp.MustCompile(`(?m)^NAME\s+PHASE\s+TPS\s+AUTH MS\s+ACCT MS\s+P99 MS\s+AGE`)
)

var docCases = []docCase{
	// docs/kubernetes.md, "On the local cluster": the operator, the AAACluster of the
	// cluster-demo samples Ready, the AAALoadTest Succeeded, as kubectl shows them.
	{"docs/kubernetes.md", func(t *testing.T, c client.Client, out string) {
		if !readyRow.MatchString(out) {
			t.Errorf("kubectl get aaaclusters: no row `edge 1/1 True`:\n%s", out)
		}
		if !loadTestHead.MatchString(out) || !loadTestRow.MatchString(out) {
			t.Errorf("kubectl get aaaloadtests: no header NAME PHASE TPS AUTH MS ACCT MS P99 MS AGE and row `demo Succeeded <TPS>`:\n%s", out)
		}
	}},
	// docs/local-cluster.md, "OpenAAA on it, as a new user": Ready, the endpoint naming the
	// NodePort, an Access-Accept from the NAS namespace.
	{"docs/local-cluster.md", func(t *testing.T, c client.Client, out string) {
		if !readyRow.MatchString(out) {
			t.Errorf("kubectl get aaaclusters: no row `edge 1/1 True`:\n%s", out)
		}
		auth, acct := nodePorts(t, c)
		if want := fmt.Sprintf("<node address>:%d (auth), <node address>:%d (acct)", auth, acct); !strings.Contains(out, want) {
			t.Errorf("the AAACluster's endpoint: want %q in the output:\n%s", want, out)
		}
		if !strings.Contains(out, "Received Access-Accept") || !strings.Contains(out, fmt.Sprintf("to %s:%d", clustertest.NodeIP, auth)) {
			t.Errorf("radclient from the NAS namespace: no Access-Accept from %s:%d:\n%s", clustertest.NodeIP, auth, out)
		}
	}},
}

// TestDocsOnCluster runs the documentation's marked shell blocks (docs/kubernetes.md's "On the
// local cluster", docs/local-cluster.md's "OpenAAA on it, as a new user") with bash on the
// package's cluster, as a reader would: from the repository's root, KUBECONFIG the cluster's,
// the 1.34 kubectl and bin/helm first on PATH, no make of ours above (MAKEFLAGS unset). It sets
// CASSANDRA_DIR (hack/cassandra.sh's files) to a directory of its own, as
// docs/local-cluster.md says, and removes what each block made. A block that fails, or that does not show what its comments
// say, fails the test: docs that cannot be followed verbatim are a bug.
func TestDocsOnCluster(t *testing.T) {
	clustertest.Skip(t, cluster)
	root, _, _ := needOperatorImages(t)
	testenv.LookPath(t, "radclient", "FreeRADIUS's freeradius-utils: make provision")
	c := aaaClient(t)
	// docs/kubernetes.md's AAACluster has a ServiceMonitor: its CRDs first.
	monitoringCRDs(t, root)
	// One Cassandra for both blocks: the second block's `hack/cassandra.sh start 1` finds it
	// running and leaves it alone (a second first boot would cost a minute or two); each
	// AAACluster migrates its keyspace whatever the first left (versioned migrations).
	cassDir := t.TempDir()
	defer docStopCassandra(t, root, cassDir)
	for _, dc := range docCases {
		blocks, err := testenv.DocBlocks(filepath.Join(root, dc.file), dc.file, docTag)
		if err != nil {
			t.Fatal(err)
		}
		if len(blocks) != 1 {
			t.Fatalf("%s: %d blocks marked <!-- test: %s -->, want 1", dc.file, len(blocks), docTag)
		}
		b := blocks[0]
		t.Run(strings.ReplaceAll(b.Name(), "/", "_"), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
			defer cancel()
			docClean(t, ctx, c, root) // what an earlier test of the package left in the way
			_, statErr := os.Stat(filepath.Join(root, "values.yaml"))
			hadValues := statErr == nil
			defer func() {
				docClean(t, context.Background(), c, root)
				if !hadValues {
					_ = os.Remove(filepath.Join(root, "values.yaml"))
				}
			}()
			start := time.Now()
			out, err := runDocBlock(ctx, t, root, b, "CASSANDRA_DIR="+cassDir)
			t.Logf("%s ran in %s:\n%s", b.Name(), time.Since(start).Round(time.Second), out)
			if err != nil {
				t.Fatalf("%s failed: %v\n%s", b.Name(), err, diagnostics())
			}
			dc.check(t, c, out)
		})
	}
}

// monitoringCRDs applies the CRDs of the monitoring objects an AAACluster makes (ServiceMonitor,
// PrometheusRule) as `hack/addons.sh install` does: the same files (hack/envtest.sh's), the same
// field manager. The blocks need nothing else of the add-ons, which make test is still
// building when this test starts (the managed-Cassandra test waits for this one).
func monitoringCRDs(t *testing.T, root string) {
	t.Helper()
	out, err := exec.Command(filepath.Join(root, "hack", "envtest.sh"), "--print-crds").Output()
	if err != nil {
		t.Fatalf("hack/envtest.sh --print-crds: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"apply", "--server-side", "--field-manager=openaaa-addons", "--force-conflicts"}
	for _, kind := range []string{"servicemonitors", "prometheusrules"} {
		args = append(args, "-f", filepath.Join(dir, "monitoring.coreos.com_"+kind+".yaml"))
	}
	if out, err := cluster.Kubectl(ctx, args...); err != nil {
		t.Fatalf("the monitoring CRDs: %v\n%s", err, out)
	}
	// Polled: `kubectl wait` fails at once on a CRD whose status has no conditions yet.
	c := aaaClient(t)
	for _, kind := range []string{"servicemonitors", "prometheusrules"} {
		eventually(t, time.Minute, kind+" established", func() error {
			crd := &apiextv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: kind + ".monitoring.coreos.com"}, crd); err != nil {
				return err
			}
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextv1.Established && cond.Status == apiextv1.ConditionTrue {
					return nil
				}
			}
			return fmt.Errorf("conditions %v", crd.Status.Conditions)
		})
	}
}

// runDocBlock runs the block with bash (-e, pipefail: the first failing command fails it) in
// root, with the environment a reader of the docs has on the local cluster, plus extra.
func runDocBlock(ctx context.Context, t *testing.T, root string, b testenv.DocBlock, extra ...string) (string, error) {
	t.Helper()
	kubectlDir := t.TempDir()
	// The 1.34 kubectl `hack/cluster.sh kubectl` runs, as `kubectl` on PATH.
	if err := os.WriteFile(filepath.Join(kubectlDir, "kubectl"),
		[]byte("#!/usr/bin/env bash\nexec "+filepath.Join(root, "hack", "cluster.sh")+" kubectl \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := testenv.EnvWithout(append(testenv.MakeVars, "KUBECONFIG", "PATH", "CLUSTER_LOCK_HELD", "CASSANDRA_DIR")...)
	env = append(env, "KUBECONFIG="+cluster.Kubeconfig,
		"PATH="+kubectlDir+":"+filepath.Join(root, "bin")+":"+os.Getenv("PATH"))
	if os.Getenv("CASSANDRA_JVM_OPTS") == "" {
		env = append(env, "CASSANDRA_JVM_OPTS="+cassandratest.TestJVMOpts) // lean on 2 cores, as the tests' nodes
	}
	return testenv.RunBash(ctx, t, root, append(env, extra...), b.Body)
}

// docClean removes what the docs' blocks make in the cluster: the releases edge and
// openaaa-operator (the AAACluster first, while the operator still runs to finish it) and the
// namespace aaa (waiting until it is gone: the next block or test creates it again).
func docClean(t *testing.T, ctx context.Context, c client.Client, root string) {
	t.Helper()
	helm := filepath.Join(root, "bin", "helm")
	for _, r := range [][2]string{{release, aaaNS}, {"openaaa-operator", operatorNS}} {
		if r[0] == "openaaa-operator" {
			deleteNamespace(t, ctx, c, aaaNS)
		}
		out, err := exec.CommandContext(ctx, helm, "--kubeconfig", cluster.Kubeconfig, "uninstall", r[0], "-n", r[1],
			"--wait", "--timeout", "2m", "--ignore-not-found").CombinedOutput()
		if err != nil {
			t.Errorf("helm uninstall %s: %v\n%s", r[0], err, out)
		}
	}
}

// docStopCassandra stops the blocks' Cassandra node by PID (hack/cassandra.sh stop).
func docStopCassandra(t *testing.T, root, cassDir string) {
	cmd := exec.Command(filepath.Join(root, "hack", "cassandra.sh"), "stop")
	cmd.Env = append(os.Environ(), "CASSANDRA_DIR="+cassDir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("stopping the docs' Cassandra: %v\n%s", err, out)
	}
}

func deleteNamespace(t *testing.T, ctx context.Context, c client.Client, name string) {
	t.Helper()
	ns := &corev1.Namespace{}
	ns.Name = name
	if err := c.Delete(ctx, ns); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting namespace %s: %v", name, err)
		return
	}
	eventually(t, 3*time.Minute, "namespace "+name+" gone", func() error {
		err := c.Get(ctx, client.ObjectKey{Name: name}, &corev1.Namespace{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	})
}
