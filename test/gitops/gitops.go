// Package gitops is what the tests that run a real Argo CD share (test/argocdenv against envtest,
// test/cluster's TestArgoCDOnCluster on the local cluster): hack/argocd.sh's local Argo CD and
// git repository, and waits on Applications.
package gitops

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openaaa/openaaa/internal/testenv"
)

// Namespace is where hack/argocd.sh up runs Argo CD's objects (Applications, argocd-cm).
const Namespace = "argocd"

// Need skips the test (fails it under OPENAAA_INTEGRATION=require) when what `hack/argocd.sh up`
// runs is missing: Argo CD's components (make argocd-gitops), redis-server (make redis), git, helm (make
// helm). It returns helm's path.
func Need(t testing.TB, root string) (helm string) {
	t.Helper()
	out, err := exec.Command("bash", filepath.Join(root, "hack", "argocd.sh"), "path", "gitops").Output()
	if err != nil {
		t.Fatalf("hack/argocd.sh path gitops: %v", err)
	}
	_, err = os.Stat(strings.TrimSpace(string(out)))
	testenv.Need(t, err == nil, "Argo CD's components (make argocd-gitops)")
	_, err = os.Stat("/usr/bin/redis-server")
	testenv.Need(t, err == nil, "redis-server (hack/argocd.sh install-redis)")
	testenv.LookPath(t, "git", "apt-get install git")
	helm = os.Getenv("HELM")
	if helm == "" {
		helm = filepath.Join(root, "bin", "helm")
	}
	_, err = os.Stat(helm)
	testenv.Need(t, err == nil, "helm "+helm+" (make helm)")
	return helm
}

// Script runs hack/argocd.sh with args, bounded by d; its stdout.
func Script(t testing.TB, root string, d time.Duration, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(root, "hack", "argocd.sh")}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/argocd.sh %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// Git runs git in dir as hack/argocd.sh gitrepo's fixed identity.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=OpenAAA test", "GIT_AUTHOR_EMAIL=test@openaaa.invalid",
		"GIT_COMMITTER_NAME=OpenAAA test", "GIT_COMMITTER_EMAIL=test@openaaa.invalid")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Eventually polls cond every half second until it returns true or d passes; cond's last
// message says why not.
func Eventually(t testing.TB, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	msg := ""
	for time.Now().Before(deadline) {
		var ok bool
		if ok, msg = cond(); ok {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("%s: not within %s: %s", what, d, msg)
}

// Get reads the Application name.
func Get(ctx context.Context, c client.Client, name string) (*unstructured.Unstructured, error) {
	app := &unstructured.Unstructured{}
	app.SetAPIVersion("argoproj.io/v1alpha1")
	app.SetKind("Application")
	err := c.Get(ctx, types.NamespacedName{Namespace: Namespace, Name: name}, app)
	return app, err
}

// State is what a user reads of an Application: sync status and revision, health and its
// message, the last operation's phase and revision.
type State struct {
	Sync, Revision, Health, HealthMessage, Phase, OperationRevision, OperationMessage string
	Conditions                                                                        []any
}

// StateOf reads app's State.
func StateOf(app *unstructured.Unstructured) State {
	str := func(path ...string) string {
		s, _, _ := unstructured.NestedString(app.Object, path...)
		return s
	}
	conds, _, _ := unstructured.NestedSlice(app.Object, "status", "conditions")
	return State{
		Sync: str("status", "sync", "status"), Revision: str("status", "sync", "revision"),
		Health: str("status", "health", "status"), HealthMessage: str("status", "health", "message"),
		Phase: str("status", "operationState", "phase"), OperationRevision: str("status", "operationState", "syncResult", "revision"),
		OperationMessage: str("status", "operationState", "message"), Conditions: conds,
	}
}

func (s State) String() string {
	return fmt.Sprintf("sync %q at %.8q, health %q (%q), operation %q at %.8q: %s; conditions %v",
		s.Sync, s.Revision, s.Health, s.HealthMessage, s.Phase, s.OperationRevision, s.OperationMessage, s.Conditions)
}

// ResourceHealth is the health and message Argo CD gives the Application's object of kind and
// name (status.resources: hack/argocd.sh runs the controller with --persist-resource-health).
func ResourceHealth(app *unstructured.Unstructured, kind, name string) (status, message string) {
	resources, _, _ := unstructured.NestedSlice(app.Object, "status", "resources")
	for _, r := range resources {
		m, _ := r.(map[string]any)
		if m["kind"] == kind && m["name"] == name {
			status, _, _ = unstructured.NestedString(m, "health", "status")
			message, _, _ = unstructured.NestedString(m, "health", "message")
		}
	}
	return status, message
}

// WaitSynced waits (at most d) until the Application name is Synced at revision and its last
// sync succeeded, and returns it.
func WaitSynced(t testing.TB, c client.Client, name, revision string, d time.Duration) *unstructured.Unstructured {
	t.Helper()
	var app *unstructured.Unstructured
	Eventually(t, d, "Application "+name+" Synced at "+revision[:8], func() (bool, string) {
		var err error
		if app, err = Get(context.Background(), c, name); err != nil {
			return false, err.Error()
		}
		s := StateOf(app)
		return s.Sync == "Synced" && s.Revision == revision && s.Phase == "Succeeded" && s.OperationRevision == revision, s.String()
	})
	t.Logf("Application %s: Synced at %s, health %s", name, revision[:8], StateOf(app).Health)
	return app
}

// Refresh has the controller compare the Application with its repository now (a webhook's
// work): otherwise it sees a new commit at its next resync, up to 3 minutes later.
func Refresh(ctx context.Context, c client.Client, name string) error {
	app := &unstructured.Unstructured{}
	app.SetAPIVersion("argoproj.io/v1alpha1")
	app.SetKind("Application")
	app.SetNamespace(Namespace)
	app.SetName(name)
	patch := []byte(`{"metadata":{"annotations":{"argocd.argoproj.io/refresh":"hard"}}}`)
	return c.Patch(ctx, app, client.RawPatch(types.MergePatchType, patch))
}

// LogTails logs the last n lines of the repo server's and the controller's logs in STATE_DIR
// (hack/argocd.sh up): what a failed test shows of Argo CD.
func LogTails(t testing.TB, state string, n int) {
	t.Helper()
	for _, name := range []string{"repo-server", "controller"} {
		b, _ := os.ReadFile(filepath.Join(state, "log", name+".log"))
		t.Logf("Argo CD's %s log (tail):\n%s", name, tail(string(b), n))
	}
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
