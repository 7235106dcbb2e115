// Package argocd tests the Argo CD health check of AAACluster (config/argocd/health.lua) by
// running it with gopher-lua, the Lua VM Argo CD itself embeds, against the sample objects
// listed in config/argocd/health_test.yaml (Argo CD's resource_customizations test layout).
package argocd

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
	"sigs.k8s.io/yaml"
)

func dir(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "config", "argocd")
}

type healthStatus struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

// toLua converts a JSON-like value (as sigs.k8s.io/yaml decodes it) into a Lua value, the way
// Argo CD hands `obj` to a health script.
func toLua(L *lua.LState, v any) lua.LValue {
	switch x := v.(type) {
	case nil:
		return lua.LNil
	case bool:
		return lua.LBool(x)
	case float64:
		return lua.LNumber(x)
	case int64:
		return lua.LNumber(x)
	case string:
		return lua.LString(x)
	case []any:
		t := L.NewTable()
		for _, e := range x {
			t.Append(toLua(L, e))
		}
		return t
	case map[string]any:
		t := L.NewTable()
		for k, e := range x {
			t.RawSetString(k, toLua(L, e))
		}
		return t
	}
	panic("unexpected type")
}

func runHealth(t *testing.T, script string, obj map[string]any) healthStatus {
	t.Helper()
	L := lua.NewState(lua.Options{SkipOpenLibs: false})
	defer L.Close()
	L.SetGlobal("obj", toLua(L, obj))
	if err := L.DoString(script); err != nil {
		t.Fatalf("health.lua: %v", err)
	}
	ret := L.Get(-1)
	tbl, ok := ret.(*lua.LTable)
	if !ok {
		t.Fatalf("health.lua returned %s, want a table", ret.Type())
	}
	return healthStatus{
		Status:  lua.LVAsString(tbl.RawGetString("status")),
		Message: lua.LVAsString(tbl.RawGetString("message")),
	}
}

func TestHealth(t *testing.T) {
	d := dir(t)
	script, err := os.ReadFile(filepath.Join(d, "health.lua"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(d, "health_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cases struct {
		Tests []struct {
			HealthStatus healthStatus `json:"healthStatus"`
			InputPath    string       `json:"inputPath"`
		} `json:"tests"`
	}
	if err := yaml.UnmarshalStrict(raw, &cases); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, tc := range cases.Tests {
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
