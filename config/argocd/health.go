// Package argocd runs the Argo CD health check of AAACluster (health.lua, embedded) with
// gopher-lua, the Lua VM Argo CD itself embeds, so that tests judge objects — samples and live
// ones on a real cluster — exactly as Argo CD would.
package argocd

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	lua "github.com/yuin/gopher-lua"
	"sigs.k8s.io/yaml"
)

//go:embed health.lua
var healthScript string

// Status is what a health script returns.
type Status struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

// Case is one test of health_test.yaml: a sample object and the health it must get.
type Case struct {
	HealthStatus Status `json:"healthStatus"`
	InputPath    string `json:"inputPath"` // relative to the directory of health_test.yaml
}

// Cases reads dir/health_test.yaml, the layout of Argo CD's resource_customizations tests: the
// cases that both gopher-lua (test/argocd) and Argo CD itself (test/argocdhealth) must pass.
func Cases(dir string) ([]Case, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "health_test.yaml"))
	if err != nil {
		return nil, err
	}
	var f struct {
		Tests []Case `json:"tests"`
	}
	if err := yaml.UnmarshalStrict(raw, &f); err != nil {
		return nil, fmt.Errorf("health_test.yaml: %w", err)
	}
	if len(f.Tests) == 0 {
		return nil, fmt.Errorf("health_test.yaml: no tests")
	}
	return f.Tests, nil
}

// Health judges an AAACluster (any JSON-shaped value of it: a typed object is converted
// through JSON, as Argo CD sees it) with health.lua.
func Health(obj any) (Status, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return Status{}, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return Status{}, err
	}
	return Evaluate(healthScript, m)
}

// argoCDLibs are the Lua libraries Argo CD v3.2.11 opens for a health script unless
// resource.customizations.useOpenLibs is set (util/lua/lua.go): no string, math, os or io, which
// gopher-lua's default state would offer (Argo CD adds only os.time and os.date, through
// require("os"), which no script of ours needs).
var argoCDLibs = []struct {
	name string
	open lua.LGFunction
}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}}

// Evaluate runs a health script with obj as Argo CD hands it over, with Argo CD's libraries.
func Evaluate(script string, obj map[string]any) (Status, error) {
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer L.Close()
	// Argo CD stops a script after a second.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	L.SetContext(ctx)
	for _, lib := range argoCDLibs {
		if err := L.CallByParam(lua.P{Fn: L.NewFunction(lib.open), Protect: true}, lua.LString(lib.name)); err != nil {
			return Status{}, fmt.Errorf("opening Lua library %s: %w", lib.name, err)
		}
	}
	L.SetGlobal("obj", toLua(L, obj))
	if err := L.DoString(script); err != nil {
		return Status{}, fmt.Errorf("health script: %w", err)
	}
	tbl, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		return Status{}, fmt.Errorf("health script returned %s, want a table", L.Get(-1).Type())
	}
	return Status{Status: lua.LVAsString(tbl.RawGetString("status")), Message: lua.LVAsString(tbl.RawGetString("message"))}, nil
}

// toLua converts a JSON-like value into a Lua value, the way Argo CD hands `obj` to a health
// script.
func toLua(L *lua.LState, v any) lua.LValue {
	switch x := v.(type) {
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
	return lua.LNil
}
