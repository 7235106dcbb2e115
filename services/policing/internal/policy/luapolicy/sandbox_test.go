package luapolicy

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Each escape is tried from inside a hook (at run time) and, where it matters, from the
// chunk (at load time): both must fail without harming the process.
func TestSandboxEscapesRefused(t *testing.T) {
	cases := map[string]string{
		"os.execute":         `os.execute("touch /tmp/pwned")`,
		"io.open":            `io.open("/etc/passwd")`,
		"require":            `require("os")`,
		"package.loadlib":    `package.loadlib("libc.so.6", "system")`,
		"dofile":             `dofile("/etc/passwd")`,
		"loadfile":           `loadfile("/etc/passwd")`,
		"load of bytecode":   `load("\27LuaQ\0\1\4\8\4\8\0")`,
		"loadstring":         `loadstring("return 1")()`,
		"string.dump":        `string.dump(authorize)`,
		"debug":              `debug.getregistry()`,
		"coroutine":          `coroutine.create(function() end)`,
		"getfenv":            `getfenv(1).os = nil`,
		"string.rep 1 GiB":   `local s = string.rep("x", 1024*1024*1024)`,
		"method rep 4 GiB":   `local s = ("abcd"):rep(1024*1024*1024)`,
		"format width":       `local s = string.format("%999999999d", 1)`,
		"deep recursion":     `local function f(n) return 1 + f(n+1) end f(1)`,
		"unpack huge":        `unpack({}, 1, 1e8)`,
		"write req":          `req["User-Name"] = "root"`,
		"accessor metatable": `setmetatable(req, {})`,
		"math.random":        `math.random()`,
	}
	for name, code := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEngine(t, "function authorize(req, sub)\n"+code+"\nend")
			start := time.Now()
			d := e.Authorize(context.Background(), request(t, "alice"), sub("gold", ""))
			if d.Accept {
				t.Fatalf("%s: accepted: the escape ran", code)
			}
			if !strings.HasPrefix(d.Reason, "policy error: ") {
				t.Fatalf("reason %q", d.Reason)
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Fatalf("took %s", took)
			}
		})
	}
}

func TestSandboxAtLoadTime(t *testing.T) {
	for _, code := range []string{`os.exit(1)`, `io.write("x")`, `require("x")`, `x = string.rep("x", 2^31)`, `while true do end`} {
		o := options(writeScript(t, t.TempDir(), code))
		o.Budget = 10 * time.Millisecond
		e, err := New(o)
		if err == nil {
			e.Close()
			t.Fatalf("%s: loaded", code)
		}
	}
}

func TestSandboxKeepsWhatPoliciesNeed(t *testing.T) {
	e := newEngine(t, `
local blocked = { ["00-11-22-33-44-55"] = true }
function authorize(req, sub)
  local s = string.format("%s-%02d", string.upper("ab"), math.floor(3.7))
  local t = {}
  table.insert(t, s)
  assert(table.concat(t, ",") == "AB-03")
  assert(("x"):rep(3) == "xxx" and tonumber("12") == 12 and select("#", 1, 2) == 2)
  local ok = pcall(error, "caught")
  assert(not ok)
  for k, v in pairs(blocked) do assert(v) end
  if blocked[req["Calling-Station-Id"]] then reject("blocked") end
end`)
	if d := e.Authorize(context.Background(), request(t, "a", "Calling-Station-Id", "00-11-22-33-44-55"), sub("gold", "")); d.Accept || d.Reason != "blocked" {
		t.Fatalf("decision %+v", d)
	}
	if d := e.Authorize(context.Background(), request(t, "a"), sub("gold", "")); !d.Accept {
		t.Fatalf("decision %+v", d)
	}
}
