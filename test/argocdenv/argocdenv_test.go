// Package argocdenv runs a real Argo CD v3.2.11 (`hack/argocd.sh up`: redis, the repo server and
// the application controller as host processes) against a throwaway kube-apiserver and etcd
// (envtest), and has it sync the operator chart from a local git repository
// (`hack/argocd.sh gitrepo`, a file:// URL). There is no kubelet: the objects are created but
// no pod runs, so the Deployment stays Progressing; what is checked is the GitOps path itself
// (Synced, the objects in the API server, a new commit synced). Step 1 of issue 36; the real
// cluster test runs the same on hack/cluster.sh's cluster.
//
// `make test` runs it in its add-ons lane, once Argo CD is built (`make argocd-env-test` alone).
// Without envtest's binaries, the Argo CD binary (make argocd), redis-server (make redis), git
// or helm (make helm) it skips, or fails under OPENAAA_INTEGRATION=require.
package argocdenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/test/gitops"
)

const (
	k8sVersion = "1.34.4" // hack/envtest.sh's K8S_VERSION
	appNS      = "openaaa-system"
	appName    = "openaaa-operator"
	radiusNS   = "radius"
)

// need checks envtest's binaries and what `hack/argocd.sh up` runs, and returns envtest's asset
// directory.
func need(t *testing.T, root string) string {
	t.Helper()
	if testing.Short() && !testenv.Required() {
		t.Skip("argocdenv: skipped in -short mode")
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		out, err := exec.Command("bash", filepath.Join(root, "hack", "envtest.sh"), "--print-assets").Output()
		if err != nil {
			t.Fatalf("hack/envtest.sh --print-assets: %v", err)
		}
		assets = strings.TrimSpace(string(out))
	}
	_, err := os.Stat(filepath.Join(assets, "kube-apiserver"))
	testenv.Need(t, err == nil, "kube-apiserver in "+assets+" (hack/envtest.sh)")
	gitops.Need(t, root)
	return assets
}

func TestSyncOperatorChart(t *testing.T) {
	root := testenv.Root(t)
	assets := need(t, root)
	start := time.Now()

	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("envtest: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	user, err := env.AddUser(envtest.User{Name: "argocd", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kcfg, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	kubeconfig := filepath.Join(tmp, "kubeconfig")
	if err := os.WriteFile(kubeconfig, kcfg, 0o600); err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}

	repo := filepath.Join(tmp, "gitops")
	url := strings.TrimSpace(gitops.Script(t, root, time.Minute, "gitrepo", repo))
	first := gitops.Git(t, repo, "rev-parse", "HEAD")
	if again := strings.TrimSpace(gitops.Script(t, root, time.Minute, "gitrepo", repo)); again != url || gitops.Git(t, repo, "rev-parse", "HEAD") != first {
		t.Errorf("a second gitrepo of unchanged charts made a commit (or another URL: %s)", again)
	}

	state := filepath.Join(tmp, "argocd")
	var pids []int
	t.Cleanup(func() {
		if t.Failed() {
			gitops.LogTails(t, state, 40)
		}
		gitops.Script(t, root, time.Minute, "down", state)
		for _, pid := range pids {
			if syscall.Kill(pid, 0) == nil {
				t.Errorf("PID %d still running after down", pid)
			}
		}
		if left, _ := filepath.Glob(filepath.Join(state, "*")); len(left) != 1 || filepath.Base(left[0]) != "log" {
			t.Errorf("down left %v, want the logs alone", left)
		}
		gitops.Script(t, root, time.Minute, "down", state) // nothing left to stop: fine
	})
	upStart := time.Now()
	up := gitops.Script(t, root, 3*time.Minute, "up", kubeconfig, state)
	t.Logf("up in %s:\n%s", time.Since(upStart).Round(100*time.Millisecond), up)
	for _, name := range []string{"redis", "repo-server", "controller"} {
		b, err := os.ReadFile(filepath.Join(state, name+".pid"))
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	// Idempotent: a second up finds everything running and starts nothing.
	if again := gitops.Script(t, root, time.Minute, "up", kubeconfig, state); again != up {
		t.Errorf("a second up started something else:\n%s", again)
	}
	t.Logf("envtest and Argo CD up after %s", time.Since(start).Round(time.Second))

	// The operator chart, synced by the controller itself (automated).
	app := application(appName, url, "charts/openaaa-operator", appNS)
	ctx := context.Background()
	if err := c.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	head := gitops.Git(t, repo, "rev-parse", "HEAD")
	gitops.WaitSynced(t, c, appName, head, 90*time.Second)
	var crd apiextensionsv1.CustomResourceDefinition
	if err := c.Get(ctx, types.NamespacedName{Name: "aaaclusters.aaa.openaaa.io"}, &crd); err != nil {
		t.Errorf("the chart's CRD: %v", err)
	}
	if r := replicas(t, c); r != 2 {
		t.Errorf("Deployment replicas %d, want the chart's default 2", r)
	}
	t.Logf("synced %s after %s", head[:8], time.Since(start).Round(time.Second))

	// The AAACluster of values/aaacluster.yaml, once its CRD is there. No operator runs, so our
	// health check in argocd-cm (config/argocd/health.lua) finds no status: Progressing. The
	// AAACluster is the Application's only object, so the Application's health is its health;
	// without argocd-cm's check Argo CD gives an AAACluster none, and the Application would be
	// Healthy.
	radius := application("radius", url, "charts/aaacluster", radiusNS)
	_ = unstructured.SetNestedStringSlice(radius.Object, []string{"../../values/aaacluster.yaml"}, "spec", "source", "helm", "valueFiles")
	if err := c.Create(ctx, radius); err != nil {
		t.Fatal(err)
	}
	got := gitops.WaitSynced(t, c, "radius", head, 90*time.Second)
	resources, _, _ := unstructured.NestedSlice(got.Object, "status", "resources")
	if len(resources) != 1 || resources[0].(map[string]any)["kind"] != "AAACluster" {
		t.Errorf("Application radius's objects %v, want the AAACluster alone", resources)
	}
	if health, _, _ := unstructured.NestedString(got.Object, "status", "health", "status"); health != "Progressing" {
		t.Errorf("Application radius's health %q, want Progressing (health.lua: no status yet)", health)
	}

	// A commit changes a value; the refresh annotation stands in for a webhook (the controller
	// would otherwise see the commit at its next resync, up to 3 min).
	values := filepath.Join(repo, "charts", "openaaa-operator", "values.yaml")
	b, err := os.ReadFile(values)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(b), "\nreplicaCount: 2\n", "\nreplicaCount: 3\n", 1)
	if changed == string(b) {
		t.Fatal("no `replicaCount: 2` line in the operator chart's values.yaml")
	}
	if err := os.WriteFile(values, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	gitops.Git(t, repo, "commit", "-q", "-am", "operator: 3 replicas")
	head = gitops.Git(t, repo, "rev-parse", "HEAD")
	if err := gitops.Refresh(ctx, c, appName); err != nil {
		t.Fatal(err)
	}
	gitops.WaitSynced(t, c, appName, head, 90*time.Second)
	if r := replicas(t, c); r != 3 {
		t.Errorf("Deployment replicas %d after the commit, want 3", r)
	}
	t.Logf("synced %s after %s", head[:8], time.Since(start).Round(time.Second))
}

// application is an Application of the chart at path in the repository at url, synced
// automatically into namespace, server-side: the operator chart's CRDs are too large for
// client-side apply's last-applied annotation.
func application(name, url, path, namespace string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1",
		"kind":       "Application",
		"metadata":   map[string]any{"name": name, "namespace": "argocd"},
		"spec": map[string]any{
			"project":     "default",
			"source":      map[string]any{"repoURL": url, "targetRevision": "main", "path": path},
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": namespace},
			"syncPolicy": map[string]any{
				"automated":   map[string]any{"prune": true, "selfHeal": true},
				"syncOptions": []any{"CreateNamespace=true", "ServerSideApply=true"},
			},
		},
	}}
}

// replicas is the operator Deployment's spec.replicas (the chart names it after the release).
func replicas(t *testing.T, c client.Client) int32 {
	t.Helper()
	var list appsv1.DeploymentList
	if err := c.List(context.Background(), &list, client.InNamespace(appNS)); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Spec.Replicas == nil {
		t.Fatalf("want one Deployment in %s, got %d", appNS, len(list.Items))
	}
	return *list.Items[0].Spec.Replicas
}
