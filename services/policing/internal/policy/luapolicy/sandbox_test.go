package luapolicy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openaaa/openaaa/services/policing/internal/dict"
)

// Each escape is written so that it would succeed if the sandbox let it through (a file
// that exists, code that compiles): the hook must fail instead, quickly.
func TestSandboxEscapesRefused(t *testing.T) {
	lua := filepath.Join(t.TempDir(), "ok.lua")
	if err := os.WriteFile(lua, []byte("return 1"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"os.execute":         `os.execute("true")`,
		"io.open":            fmt.Sprintf(`io.open(%q):close()`, lua),
		"require":            `require("string")`,
		"package":            `assert(package.path)`,
		"dofile":             fmt.Sprintf(`dofile(%q)`, lua),
		"loadfile":           fmt.Sprintf(`loadfile(%q)()`, lua),
		"load":               `load("return 1")()`,
		"load of bytecode":   `load(string.dump(function() return 1 end))()`,
		"loadstring":         `loadstring("return 1")()`,
		"string.dump":        `string.dump(authorize)`,
		"debug":              `debug.traceback()`,
		"coroutine":          `coroutine.create(function() end)`,
		"getfenv":            `getfenv(1)`,
		"string.rep 1 GiB":   `local s = string.rep("x", 1024*1024*1024)`,
		"method rep 4 GiB":   `local s = ("abcd"):rep(1024*1024*1024)`,
		"format width":       `local s = string.format("%999999999d", 1)`,
		"deep recursion":     `local function f(n) return 1 + f(n+1) end f(1)`,
		"unpack huge":        `unpack({}, 1, 1e8)`,
		"write req":          `req["User-Name"] = "root"`,
		"accessor metatable": `getmetatable(req).__index = nil`,
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

func TestSandboxGlobalsRemoved(t *testing.T) {
	names := append(append([]string{}, removedLibraries...), removedGlobals...)
	var list strings.Builder
	for _, n := range names {
		fmt.Fprintf(&list, "%q, ", n)
	}
	e := newEngine(t, `
local absent = { `+list.String()+` }
local function stub(v) -- a stand-in that fails naming itself, not the real thing
  local ok, err
  if type(v) == "table" then ok, err = pcall(function() return v.anything end)
  else ok, err = pcall(v) end
  return not ok and tostring(err):find("not available in the sandbox", 1, true)
end
function authorize(req, sub)
  for _, n in ipairs(absent) do if not stub(rawget(_G, n)) then reject(n) end end
  if not stub(string.dump) then reject("string.dump") end
end`)
	if d := e.Authorize(context.Background(), request(t, "alice"), sub("gold", "")); !d.Accept {
		t.Fatalf("present in the sandbox: %s", d.Reason)
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

// A dictionary that names them does not let a script put the attributes the server writes
// into every reply into a (possibly shared, memoized) reply.
func TestServerAttributesRefused(t *testing.T) {
	d, err := dict.Parse("ATTRIBUTE\tProxy-State\t33\toctets\nATTRIBUTE\tMessage-Authenticator\t80\toctets\n")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Proxy-State", "Message-Authenticator"} {
		e := newEngine(t, `function authorize(req, sub) reply("`+name+`", "0x00") end`, func(o *Options) { o.Dict = d })
		if dec := e.Authorize(context.Background(), request(t, "alice"), sub("gold", "")); dec.Accept || dec.Reason != "policy error: decision" {
			t.Errorf("%s: %+v", name, dec)
		}
	}
}
