package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/test/cluster/clustertest"
	"github.com/openaaa/openaaa/test/gitops"
)

const (
	// argocdDocTag marks docs/argocd.md's parent Application, which the test applies with the
	// repository URL replaced.
	argocdDocTag = "argocd-cluster"
	// docRepoURL is the repository URL of the docs' parent Application.
	docRepoURL = "https://git.example.net/platform/gitops.git"
	// appsRepoURL is the repository URL of config/argocd/applications.yaml's OpenAAA charts.
	appsRepoURL = "https://github.com/openaaa/openaaa.git"
	// appsDir is the directory of the repository the parent Application points at (docs/argocd.md).
	appsDir = "clusters/prod/openaaa"
	// argoRadius is the AAACluster's Application, release and AAACluster name.
	argoRadius = "radius"
)

// TestArgoCDOnCluster (issue 36): a real Argo CD (v3.2.11, hack/argocd.sh up: the repo server
// and the application controller as host processes against the cluster) installs OpenAAA from
// a git repository as docs/argocd.md says: its parent Application, verbatim but for the
// repository URL, syncs config/argocd/applications.yaml's operator and AAACluster Applications
// (the user's values beside them in the repository) in their sync waves. Asserted as it happens:
// the operator's Application is Healthy before the AAACluster's exists; the AAACluster's goes
// Progressing → Healthy as the AAACluster becomes Ready (our health check in argocd-cm);
// Cassandra lost → Degraded with our message, back → Healthy; a values commit synced and rolled
// out; every Application Synced with no sync after the last commit (no perpetual diff) once the
// operator has written its defaults and status; uninstalled through Argo CD, nothing is left but
// what docs/argocd.md says stays.
func TestArgoCDOnCluster(t *testing.T) {
	clustertest.Skip(t, cluster)
	// Argo CD and the repository first, while the lane's other tests run: they touch nothing of
	// theirs (namespace argocd, a temporary directory).
	var g argoRun
	inSerialLane(t, needArgoCD, g.start)
	root, repo, start := g.root, g.repo, g.started
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	c := aaaClient(t)
	cassandraUp(t)

	// What stays out of Git: the namespace, Cassandra's credentials, the subscribers.
	mustApply(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: aaaNS}})
	mustApply(t, c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cassandra-credentials", Namespace: aaaNS, Labels: watched},
		StringData: map[string]string{"username": "cassandra", "password": "cassandra"}})
	mustApply(t, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "subscribers", Namespace: aaaNS, Labels: watched},
		Data: map[string]string{"subscribers.yaml": subscribersYAML(0, "")}})
	head := gitops.Git(t, repo, "rev-parse", "HEAD")
	turn := time.Now()

	// The docs' parent Application, as a user applies it.
	parent := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(docParentApplication(t, root, g.url)), &parent.Object); err != nil {
		t.Fatalf("docs/argocd.md's parent Application: %v", err)
	}
	if err := c.Create(ctx, parent); err != nil {
		t.Fatalf("the parent Application: %v", err)
	}

	// Sync waves and health, observed every half second until the AAACluster's Application is
	// Healthy: the operator's Application is Healthy before the AAACluster's is made; the
	// AAACluster's is Progressing on the way.
	var healths []string
	sawRadius := false
	gitops.Eventually(t, 8*time.Minute, "Application radius Healthy", func() (bool, string) {
		op, err := gitops.Get(ctx, c, "openaaa-operator")
		if err != nil {
			return false, "openaaa-operator: " + err.Error()
		}
		app, err := gitops.Get(ctx, c, argoRadius)
		if apierrors.IsNotFound(err) {
			return false, "no Application radius yet; openaaa-operator: " + gitops.StateOf(op).String()
		}
		if err != nil {
			return false, err.Error()
		}
		if !sawRadius {
			sawRadius = true
			if h := gitops.StateOf(op).Health; h != "Healthy" {
				t.Errorf("Application radius (wave 0) made while openaaa-operator (wave -1) is %q", h)
			}
		}
		s := gitops.StateOf(app)
		if s.Health != "" && (len(healths) == 0 || healths[len(healths)-1] != s.Health) {
			healths = append(healths, s.Health)
			t.Logf("Application radius: %s at %s", s.Health, time.Since(turn).Round(time.Second))
		}
		return s.Health == "Healthy", s.String()
	})
	if len(healths) < 2 || healths[len(healths)-2] != "Progressing" {
		t.Errorf("Application radius's health went %v, want Progressing before Healthy", healths)
	}
	key := client.ObjectKey{Namespace: aaaNS, Name: argoRadius}
	waitConditionOf(t, c, key, aaav1.ConditionReady, metav1.ConditionTrue, "", time.Minute)
	for _, name := range []string{"openaaa-platform", "openaaa-operator", argoRadius} {
		gitops.WaitSynced(t, c, name, head, 2*time.Minute)
	}

	// Cassandra lost: Degraded, with our health check's message; back: Healthy.
	cassandraKill(t)
	waitAppHealth(t, c, argoRadius, "Degraded", "contact point", 3*time.Minute)
	cassandraUp(t)
	waitAppHealth(t, c, argoRadius, "Healthy", "", 3*time.Minute)

	// A values commit: a second policing replica, synced (the refresh stands in for a webhook)
	// and rolled out.
	values := filepath.Join(repo, "values", "radius.yaml")
	b, err := os.ReadFile(values)
	if err != nil {
		t.Fatal(err)
	}
	two := strings.Replace(string(b), "    replicas: 1\n", "    replicas: 2\n", 1)
	if two == string(b) {
		t.Fatal("no `replicas: 1` in the AAACluster's values")
	}
	writeRepo(t, repo, "values/radius.yaml", two)
	gitops.Git(t, repo, "commit", "-q", "-am", "radius: two policing replicas in dc1")
	head = gitops.Git(t, repo, "rev-parse", "HEAD")
	// A webhook refreshes every Application of the repository, the operator's too although
	// its source (charts/) did not change: left to its periodic refresh, it was still at the
	// old commit 3 minutes later in a loaded cold run.
	for _, name := range []string{"openaaa-platform", "openaaa-operator", argoRadius} {
		if err := gitops.Refresh(ctx, c, name); err != nil {
			t.Fatal(err)
		}
	}
	gitops.WaitSynced(t, c, argoRadius, head, 2*time.Minute)
	eventually(t, 3*time.Minute, "two policing pods ready in dc1", func() error {
		var deps appsv1.DeploymentList
		if err := c.List(ctx, &deps, client.InNamespace(aaaNS), client.MatchingLabels{"aaa.openaaa.io/cluster": argoRadius}); err != nil {
			return err
		}
		if len(deps.Items) != 1 || deps.Items[0].Status.ReadyReplicas != 2 || deps.Items[0].Status.UpdatedReplicas != 2 {
			return fmt.Errorf("%d Deployments, %v", len(deps.Items), deploymentStates(deps.Items))
		}
		return nil
	})
	waitAppHealth(t, c, argoRadius, "Healthy", "", 2*time.Minute)

	// No perpetual diff: with the operator's defaults and status written, every Application
	// stays Synced at the last commit and no sync runs again (self-heal would show one). The
	// parent may sync the new commit too (its Applications did not change), its wave waiting
	// for radius to be Healthy: settled first.
	for _, name := range []string{"openaaa-platform", "openaaa-operator", argoRadius} {
		gitops.Eventually(t, 3*time.Minute, "Application "+name+" Synced at the last commit, no sync running", func() (bool, string) {
			app, err := gitops.Get(ctx, c, name)
			if err != nil {
				return false, err.Error()
			}
			s := gitops.StateOf(app)
			return s.Sync == "Synced" && s.Revision == head && s.Phase != "Running", s.String()
		})
	}
	finished := map[string]string{}
	for i := 0; i < 15; i++ {
		for _, name := range []string{"openaaa-platform", "openaaa-operator", argoRadius} {
			app, err := gitops.Get(ctx, c, name)
			if err != nil {
				t.Fatal(err)
			}
			s := gitops.StateOf(app)
			if s.Sync != "Synced" {
				t.Fatalf("Application %s: %s; want Synced (a perpetual diff?)", name, s)
			}
			at := app.Object["status"].(map[string]any)["operationState"].(map[string]any)["finishedAt"].(string)
			if prev, ok := finished[name]; ok && prev != at {
				t.Fatalf("Application %s synced again at %s (after %s) with nothing committed: %s", name, at, prev, s)
			}
			finished[name] = at
		}
		time.Sleep(time.Second)
	}
	t.Logf("installed, degraded, recovered and scaled through Argo CD in %s (Argo CD up %s before)", time.Since(turn).Round(time.Second), turn.Sub(start).Round(time.Second))

	// Uninstall through Argo CD, in the order docs/argocd.md gives. The parent first: without a
	// finalizer its Applications stay. The AAACluster's Application has none either: deleting it
	// leaves the AAACluster serving; the AAACluster is deleted on purpose, while its operator
	// runs. The operator's Application has the resources finalizer: its objects go with it but
	// the CRD (helm.sh/resource-policy: keep, which Argo CD honours as Delete=false).
	for _, name := range []string{"openaaa-platform", argoRadius} {
		deleteApplication(t, ctx, c, name)
	}
	time.Sleep(5 * time.Second)
	waitConditionOf(t, c, key, aaav1.ConditionReady, metav1.ConditionTrue, "", time.Minute)
	if err := c.Delete(ctx, &aaav1.AAACluster{ObjectMeta: metav1.ObjectMeta{Namespace: aaaNS, Name: argoRadius}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "the AAACluster's objects collected", func() error {
		return leftovers(ctx, c, client.InNamespace(aaaNS), client.MatchingLabels{"aaa.openaaa.io/cluster": argoRadius})
	})
	deleteApplication(t, ctx, c, "openaaa-operator")
	eventually(t, 2*time.Minute, "the operator's objects removed", func() error {
		return leftovers(ctx, c, client.MatchingLabels{"app.kubernetes.io/instance": "openaaa-operator"})
	})
	crd := &apiextv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: "aaaclusters.aaa.openaaa.io"}, crd); err != nil || crd.DeletionTimestamp != nil {
		t.Errorf("the AAACluster CRD should stay after the operator's Application is deleted: %v", err)
	}
	t.Logf("uninstalled through Argo CD, %s after the test's turn came", time.Since(turn).Round(time.Second))
}

// argoRun is the Argo CD and the repository of TestArgoCDOnCluster, made by start before the
// test's turn in the serial lane.
type argoRun struct {
	root, repo, url string
	started         time.Time
}

// start makes the repository (charts/ from hack/argocd.sh gitrepo; the user's values; the
// Applications, committed) and starts Argo CD against the cluster; the test's end stops it.
func (g *argoRun) start(t *testing.T) {
	t.Helper()
	g.started = time.Now()
	root, _, tag := needOperatorImages(t)
	gitops.Need(t, root)
	g.root = root
	// The operator's Application turns its ServiceMonitor and PrometheusRule on.
	monitoringCRDs(t, root)
	tmp := t.TempDir()
	g.repo = filepath.Join(tmp, "gitops")
	g.url = strings.TrimSpace(gitops.Script(t, root, time.Minute, "gitrepo", g.repo))
	writeRepo(t, g.repo, "values/openaaa-operator.yaml", fmt.Sprintf(
		"image: {tag: %q}\npolicingImage: {tag: %q}\nloadgenImage: {tag: %q}\nreplicaCount: 1\n# the other lane's AAACluster is not this operator's (parallel_test.go)\nwatchNamespace: %s\n",
		tag, tag, tag, aaaNS))
	writeRepo(t, g.repo, "values/radius.yaml", aaaclusterValues())
	writeRepo(t, g.repo, appsDir+"/applications.yaml", openaaaApplications(t, root, g.url))
	gitops.Git(t, g.repo, "add", "-A")
	gitops.Git(t, g.repo, "commit", "-q", "-m", "OpenAAA: operator and AAACluster")

	state := filepath.Join(tmp, "argocd")
	t.Cleanup(func() {
		if t.Failed() {
			gitops.LogTails(t, state, 60)
		}
		gitops.Script(t, root, time.Minute, "down", state)
	})
	gitops.Script(t, root, 3*time.Minute, "up", cluster.Kubeconfig, state)
	t.Logf("Argo CD up and the repository made in %s", time.Since(g.started).Round(time.Second))
}

// writeRepo writes rel in the repository (its directories made).
func writeRepo(t *testing.T, repo, rel, content string) {
	t.Helper()
	p := filepath.Join(repo, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// openaaaApplications is config/argocd/applications.yaml's OpenAAA Applications (the operator
// and the AAACluster) with repoURL url: what a user commits beside their values.
func openaaaApplications(t *testing.T, root, url string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "config", "argocd", "applications.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	for _, doc := range strings.Split(string(b), "\n---\n") {
		if strings.Contains(doc, "repoURL: "+appsRepoURL) {
			docs = append(docs, strings.ReplaceAll(doc, appsRepoURL, url))
		}
	}
	if len(docs) != 2 {
		t.Fatalf("config/argocd/applications.yaml: %d Applications of %s, want the operator's and the AAACluster's", len(docs), appsRepoURL)
	}
	return strings.Join(docs, "\n---\n") + "\n"
}

// docParentApplication is docs/argocd.md's parent Application with repoURL url.
func docParentApplication(t *testing.T, root, url string) string {
	t.Helper()
	blocks, err := testenv.DocBlocks(filepath.Join(root, "docs", "argocd.md"), "docs/argocd.md", argocdDocTag)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 1 || !strings.Contains(blocks[0].Body, docRepoURL) || !strings.Contains(blocks[0].Body, "path: "+appsDir) {
		t.Fatalf("docs/argocd.md: want one block marked %s, an Application of %s at %s", argocdDocTag, docRepoURL, appsDir)
	}
	return strings.ReplaceAll(blocks[0].Body, docRepoURL, url)
}

// waitAppHealth waits until the Application's health is status, and its AAACluster's too
// with a message containing msg (our health check's: config/argocd/health.lua).
func waitAppHealth(t *testing.T, c client.Client, name, status, msg string, within time.Duration) {
	t.Helper()
	start := time.Now()
	var message string
	gitops.Eventually(t, within, "Application "+name+" "+status, func() (bool, string) {
		app, err := gitops.Get(context.Background(), c, name)
		if err != nil {
			return false, err.Error()
		}
		s := gitops.StateOf(app)
		var health string
		health, message = gitops.ResourceHealth(app, "AAACluster", name)
		return s.Health == status && health == status && strings.Contains(message, msg),
			fmt.Sprintf("%s; AAACluster %s %q", s, health, message)
	})
	t.Logf("Application %s %s after %s (AAACluster: %q)", name, status, time.Since(start).Round(time.Second), message)
}

// deleteApplication deletes the Application and waits until it is gone (its finalizer done).
func deleteApplication(t *testing.T, ctx context.Context, c client.Client, name string) {
	t.Helper()
	app, err := gitops.Get(ctx, c, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, app); err != nil {
		t.Fatal(err)
	}
	gitops.Eventually(t, 3*time.Minute, "Application "+name+" deleted", func() (bool, string) {
		_, err := gitops.Get(ctx, c, name)
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

func deploymentStates(deps []appsv1.Deployment) string {
	var s []string
	for _, d := range deps {
		s = append(s, fmt.Sprintf("%s: %d ready, %d updated", d.Name, d.Status.ReadyReplicas, d.Status.UpdatedReplicas))
	}
	return strings.Join(s, "; ")
}
