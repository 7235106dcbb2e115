// Package argocd tests the Argo CD health check of AAACluster (config/argocd/health.lua) by
// running it with gopher-lua, the Lua VM Argo CD itself embeds, against the sample objects
// listed in config/argocd/health_test.yaml (Argo CD's resource_customizations test layout).
package argocd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	health "github.com/openaaa/openaaa/config/argocd"
	"github.com/openaaa/openaaa/internal/testenv"
)

func dir(t *testing.T) string {
	t.Helper()
	return filepath.Join(testenv.Root(t), "config", "argocd")
}

type healthStatus = health.Status

func runHealth(t *testing.T, script string, obj map[string]any) healthStatus {
	t.Helper()
	st, err := health.Evaluate(script, obj)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestHealth(t *testing.T) {
	d := dir(t)
	script, err := os.ReadFile(filepath.Join(d, "health.lua"))
	if err != nil {
		t.Fatal(err)
	}
	cases, err := health.Cases(d)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		t.Run(strings.TrimSuffix(filepath.Base(tc.InputPath), ".yaml"), func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join(d, tc.InputPath))
			if err != nil {
				t.Fatal(err)
			}
			var obj map[string]any
			if err := yaml.Unmarshal(in, &obj); err != nil {
				t.Fatal(err)
			}
			got := runHealth(t, string(script), obj)
			if got != tc.HealthStatus {
				t.Errorf("health = %+v, want %+v", got, tc.HealthStatus)
			}
			seen[got.Status] = true
		})
	}
	for _, s := range []string{"Healthy", "Progressing", "Degraded"} {
		if !seen[s] {
			t.Errorf("no sample object is %s", s)
		}
	}
}

// TestSnippetInStep keeps the resource.customizations snippet equal to health.lua.
func TestSnippetInStep(t *testing.T) {
	d := dir(t)
	script, err := os.ReadFile(filepath.Join(d, "health.lua"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(d, "argocd-cm.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(raw, &cm); err != nil {
		t.Fatal(err)
	}
	const key = "resource.customizations.health.aaa.openaaa.io_AAACluster"
	if got := cm.Data[key]; got != string(script) {
		t.Errorf("argocd-cm.yaml %s differs from health.lua; regenerate it (make argocd-snippet)", key)
	}
}

// TestSamplesAreAAAClusters guards against samples drifting from the API: each one must decode
// into the real Go type with no unknown fields.
func TestSamplesAreAAAClusters(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(dir(t), "testdata", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples: %v", err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := strictAAACluster(raw); err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
		}
	}
}

// TestArgoCDLibraries: Evaluate offers a health script only the Lua libraries Argo CD's VM opens
// (without resource.customizations.useOpenLibs): base, table and package. A script that calls
// string.*, math.* or os.* passes gopher-lua's default state but fails in Argo CD
// (test/argocdhealth checks Argo CD itself the same way).
func TestArgoCDLibraries(t *testing.T) {
	obj := map[string]any{"metadata": map[string]any{"generation": int64(2)}}
	ok := `local t = {}
table.insert(t, tostring(obj.metadata.generation))
for _, v in ipairs(t) do return {status = "Healthy", message = "generation " .. v} end`
	if got := runHealth(t, ok, obj); got != (healthStatus{Status: "Healthy", Message: "generation 2"}) {
		t.Errorf("base and table libraries: %+v", got)
	}
	for _, lib := range []string{"string", "math", "os", "io"} {
		if st, err := health.Evaluate(lib+`.foo = 1 return {status = "Healthy"}`, obj); err == nil {
			t.Errorf("a script using the %s library ran (%+v); Argo CD has no %s library without useOpenLibs", lib, st, lib)
		}
	}
}
