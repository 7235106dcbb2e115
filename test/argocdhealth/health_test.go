// Package argocdhealth runs the Argo CD health check of AAACluster through Argo CD itself: the
// components' binary of v3.2.11 that hack/argocd.sh builds (`make argocd-gitops`), run as
// argocd-resource-health (hack/argocd/health.go). Like `argocd admin settings resource-overrides
// health OBJECT --argocd-cm-path CM`, it loads config/argocd/argocd-cm.yaml with Argo CD's
// settings manager and judges the object with gitops-engine's health code and Argo CD's Lua VM,
// the calls an application controller makes. test/argocd runs the same cases with gopher-lua
// alone; this package checks that Argo CD reads our argocd-cm keys and agrees with those
// expectations. Without the binary the tests skip, or fail under OPENAAA_INTEGRATION=require
// (make test builds it first, in its add-ons lane: hack/test.sh).
package argocdhealth

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	health "github.com/openaaa/openaaa/config/argocd"
	"github.com/openaaa/openaaa/internal/testenv"
)

// argocd returns the components' binary (hack/argocd.sh path gitops), skipping or failing when
// it is not built.
func argocd(t *testing.T) string {
	t.Helper()
	root := testenv.Root(t)
	out, err := exec.Command("bash", filepath.Join(root, "hack", "argocd.sh"), "path", "gitops").Output()
	if err != nil {
		t.Fatalf("hack/argocd.sh path gitops: %v", err)
	}
	bin := strings.TrimSpace(string(out))
	_, err = os.Stat(bin)
	testenv.Need(t, err == nil, "Argo CD's components "+bin+" (make argocd-gitops)")
	return bin
}

// run runs the binary as argocd-resource-health, away from any real cluster or Argo CD config;
// the output is stdout and stderr.
func run(t *testing.T, bin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "ARGOCD_BINARY_NAME=argocd-resource-health", "HOME="+home,
		"KUBECONFIG="+filepath.Join(home, "no-kubeconfig"), "ARGOCD_CONFIG_DIR="+filepath.Join(home, "argocd"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func mustRun(t *testing.T, bin string, args ...string) string {
	t.Helper()
	out, err := run(t, bin, args...)
	if err != nil {
		t.Fatalf("argocd %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// assess is argocd-resource-health: the health Argo CD gives obj
// with the settings of cm. It fails t when Argo CD has no health check for the object's kind
// (the argocd-cm key was not read).
func assess(t *testing.T, bin, cm, obj string) health.Status {
	t.Helper()
	out := mustRun(t, bin, healthArgs(cm, obj)...)
	var st health.Status
	var status, message bool
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "STATUS: "); ok {
			st.Status, status = v, true
		} else if v, ok := strings.CutPrefix(l, "MESSAGE: "); ok {
			st.Message, message = v, true
		}
	}
	if !status || !message {
		t.Fatalf("argocd assessed no health for %s (is its argocd-cm key read?):\n%s", filepath.Base(obj), out)
	}
	return st
}

func healthArgs(cm, obj string) []string {
	return []string{obj, "--argocd-cm-path", cm}
}

func configDir(t *testing.T) string { return filepath.Join(testenv.Root(t), "config", "argocd") }

// TestVersion: the binary is the Argo CD that hack/argocd/go.mod pins (not a stale build).
func TestVersion(t *testing.T) {
	bin := argocd(t)
	mod, err := os.ReadFile(filepath.Join(testenv.Root(t), "hack", "argocd", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	want := ""
	for _, l := range strings.Split(string(mod), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "github.com/argoproj/argo-cd/v3" {
			want = f[1]
		}
	}
	if want == "" {
		t.Fatal("hack/argocd/go.mod requires no github.com/argoproj/argo-cd/v3")
	}
	got := strings.TrimSpace(mustRun(t, bin, "version"))
	if !strings.HasPrefix(got, "argocd: "+want+"+") {
		t.Errorf("argocd-resource-health version = %q, want argocd: %s+...; rebuild it (make argocd-gitops)", got, want)
	}
}

// TestHealth: every case of config/argocd/health_test.yaml gets, from Argo CD itself with our
// argocd-cm.yaml, the status and message the case expects.
func TestHealth(t *testing.T) {
	bin := argocd(t)
	d := configDir(t)
	cases, err := health.Cases(d)
	if err != nil {
		t.Fatal(err)
	}
	cm := filepath.Join(d, "argocd-cm.yaml")
	for _, tc := range cases {
		t.Run(strings.TrimSuffix(filepath.Base(tc.InputPath), ".yaml"), func(t *testing.T) {
			t.Parallel()
			if got := assess(t, bin, cm, filepath.Join(d, tc.InputPath)); got != tc.HealthStatus {
				t.Errorf("Argo CD's health = %+v, want %+v", got, tc.HealthStatus)
			}
		})
	}
}

// TestApplicationHealth: argocd-cm.yaml's other key, the health of argoproj.io/Application that
// app-of-apps sync waves wait on (docs/argocd.md); Argo CD has none of its own.
func TestApplicationHealth(t *testing.T) {
	bin := argocd(t)
	cm := filepath.Join(configDir(t), "argocd-cm.yaml")
	const app = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: radius, namespace: argocd}\n"
	for _, tc := range []struct {
		name, status string
		want         health.Status
	}{
		{"no-status", "", health.Status{Status: "Progressing"}},
		{"degraded", "status: {health: {status: Degraded, message: policing is not available}}\n",
			health.Status{Status: "Degraded", Message: "policing is not available"}},
		{"healthy", "status: {health: {status: Healthy}}\n", health.Status{Status: "Healthy"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			obj := filepath.Join(t.TempDir(), "application.yaml")
			if err := os.WriteFile(obj, []byte(app+tc.status), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := assess(t, bin, cm, obj); got != tc.want {
				t.Errorf("Argo CD's health = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestLibraries: Argo CD runs a health script with the base, table and package libraries and
// without string, math, os or io (no useOpenLibs key), as config/argocd's Evaluate does for
// test/argocd (its TestArgoCDLibraries): a script that needs more passes there only if it
// would pass here.
func TestLibraries(t *testing.T) {
	bin := argocd(t)
	d := configDir(t)
	obj := filepath.Join(d, "testdata", "healthy.yaml")
	withScript := func(t *testing.T, script string) string {
		t.Helper()
		const key = "  resource.customizations.health.aaa.openaaa.io_AAACluster: |\n"
		raw, err := os.ReadFile(filepath.Join(d, "argocd-cm.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		i := strings.Index(string(raw), key)
		if i < 0 {
			t.Fatalf("argocd-cm.yaml has no line %q", key)
		}
		cm := string(raw[:i]) + key + "    " + strings.ReplaceAll(script, "\n", "\n    ") + "\n"
		f := filepath.Join(t.TempDir(), "argocd-cm.yaml")
		if err := os.WriteFile(f, []byte(cm), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	cm := withScript(t, "local t = {}\ntable.insert(t, tostring(obj.metadata.generation))\nreturn {status = \"Healthy\", message = \"generation \" .. t[1]}")
	if got := assess(t, bin, cm, obj); got != (health.Status{Status: "Healthy", Message: "generation 3"}) {
		t.Errorf("a script with base and table functions: %+v", got)
	}
	for _, lib := range []string{"string", "math", "os", "io"} {
		out, err := run(t, bin, healthArgs(withScript(t, lib+".foo = 1\nreturn {status = \"Healthy\"}"), obj)...)
		if err == nil || !strings.Contains(out, "attempt to index a non-table object(nil)") {
			t.Errorf("a script using the %s library: err %v, want Argo CD to fail on it:\n%s", lib, err, out)
		}
	}
}

// TestDocBlock: docs/argocd.md's health check command, run as it stands with bash from the
// repository's root, judges the healthy sample Healthy with the operator's message.
func TestDocBlock(t *testing.T) {
	argocd(t)
	root := testenv.Root(t)
	blocks, err := testenv.DocBlocks(filepath.Join(root, "docs", "argocd.md"), "docs/argocd.md", "argocd-health")
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 1 {
		t.Fatalf("docs/argocd.md: %d blocks marked argocd-health, want 1", len(blocks))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := testenv.RunBash(ctx, t, root, testenv.EnvWithout(testenv.MakeVars...), blocks[0].Body)
	if err != nil {
		t.Fatalf("%s: %v\n%s", blocks[0].Name(), err, out)
	}
	cases, err := health.Cases(configDir(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		if filepath.Base(tc.InputPath) == "healthy.yaml" {
			want := "STATUS: " + tc.HealthStatus.Status + "\nMESSAGE: " + tc.HealthStatus.Message + "\n"
			if !strings.HasSuffix(out, want) {
				t.Errorf("%s printed:\n%s\nwant it to end with:\n%s", blocks[0].Name(), out, want)
			}
			return
		}
	}
	t.Fatal("config/argocd/health_test.yaml has no case for testdata/healthy.yaml")
}
