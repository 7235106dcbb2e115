// Package lifecycle runs docs/local-cluster.md's first block — the cluster's whole life by
// hand: make cluster-provision, make cluster-up, the images imported, kubectl, make
// cluster-down — as it stands, with bash. It cannot run inside test/cluster, whose TestMain
// holds a cluster for the package: this package starts none. It waits for the machine-wide
// cluster lock, holds it, and runs the block with CLUSTER_LOCK_HELD=1 (docs/local-cluster.md,
// hack/cluster.sh reference), so that no other package's cluster starts in between; then
// checks what the block's comments say and that the host is left as it was.
package lifecycle

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/test/cluster/clustertest"
)

var corednsRunning = regexp.MustCompile(`(?m)^kube-system\s+coredns-\S+\s+1/1\s+Running\s`)

func TestLocalClusterDocLifecycle(t *testing.T) {
	if testing.Short() && !testenv.Required() {
		t.Skip("-short: the local cluster's tests skip")
	}
	err := clustertest.Available()
	testenv.Need(t, err == nil, "local Kubernetes cluster: "+errString(err))
	root, err := clustertest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := testenv.DocBlocks(filepath.Join(root, "docs", "local-cluster.md"), "docs/local-cluster.md", "cluster-lifecycle")
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 1 {
		t.Fatalf("docs/local-cluster.md: %d blocks marked <!-- test: cluster-lifecycle -->, want 1", len(blocks))
	}
	b := blocks[0]

	// Under make test, the cluster's packages run one after another (go test -p 1): the lock
	// is free at once; by hand, another package's cluster may hold it for its whole run.
	waitStart := time.Now()
	lock, err := clustertest.Lock(50 * time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	t.Logf("waited %s for the cluster lock", time.Since(waitStart).Round(100*time.Millisecond))
	before := clustertest.SnapshotHost()

	env := append(testenv.EnvWithout(append(testenv.MakeVars, "KUBECONFIG", "CLUSTER_LOCK_HELD")...), "CLUSTER_LOCK_HELD=1")
	clusterSh := filepath.Join(root, "hack", "cluster.sh")
	// Whatever the block leaves (it failed half-way), `down` removes, still under our lock.
	defer func() {
		cmd := exec.Command(clusterSh, "down")
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("hack/cluster.sh down after the block: %v\n%s", err, out)
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	start := time.Now()
	out, err := testenv.RunBash(ctx, t, root, env, b.Body)
	t.Logf("%s ran in %s:\n%s", b.Name(), time.Since(start).Round(time.Second), out)
	if err != nil {
		t.Fatalf("%s failed: %v", b.Name(), err)
	}
	// make cluster-up prints the kubeconfig's path; kubectl get pods -A shows CoreDNS running;
	// make cluster-down leaves the host as it found it.
	if !strings.Contains(out, "/tmp/openaaa-cluster/kubeconfig") {
		t.Errorf("make cluster-up did not print the kubeconfig path /tmp/openaaa-cluster/kubeconfig")
	}
	if !corednsRunning.MatchString(out) {
		t.Errorf("hack/cluster.sh kubectl get pods -A: no CoreDNS pod 1/1 Running")
	}
	for _, img := range []string{"policing", "openaaa-operator", "aaa-loadgen"} {
		if !strings.Contains(out, clustertest.ImagePrefix+"/"+img+":") {
			t.Errorf("make images cluster-import did not list %s/%s:<tag>", clustertest.ImagePrefix, img)
		}
	}
	if left := before.Changed(); left != "" {
		t.Errorf("make cluster-down left the host changed: %s", left)
	}
	if _, err := os.Stat("/tmp/openaaa-cluster"); err == nil {
		t.Errorf("make cluster-down left /tmp/openaaa-cluster")
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
