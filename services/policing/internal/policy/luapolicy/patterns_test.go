package luapolicy

import (
	"regexp"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// TestPatternFunctionsAsGopherLua: the sandbox's find, match, gmatch and gsub return what
// gopher-lua's do.
func TestPatternFunctionsAsGopherLua(t *testing.T) {
	exprs := []string{
		`string.find("hello world", "o w")`, `string.find("hello world", "l+")`, `string.find("hello", "")`,
		`string.find("hello", "l", 10)`, `string.find("a.b", ".", 1, true)`, `string.find("a.b", "%.", -2)`,
		`string.find("key=value", "(%w+)=(%w+)")`, `string.find("abc", "()b()")`, `string.find("x", "^y")`,
		`string.match("2024-01-07", "(%d+)-(%d+)-(%d+)")`, `string.match("  trim  ", "^%s*(.-)%s*$")`,
		`string.match("abc", "b", -2)`, `string.match("abc", "z")`, `string.match("[x]", "%b[]")`,
		`string.match("aXa", "(a)X%1")`, `string.match("02-00-5E-10-00-01", "^(%x%x)-")`,
		`string.gsub("hello world", "o", "0")`, `string.gsub("hello", "", "-")`, `string.gsub("abc", "%w", "%0%0")`,
		`string.gsub("abc", "(b)", "[%1]")`, `string.gsub("a b", "%s", "%%")`, `string.gsub("abc", "b", "%x")`,
		`string.gsub("hello world", "(%w+)", "<%1>", 1)`, `string.gsub("$name is $age", "%$(%w+)", {name="bob", age=3})`,
		`string.gsub("abc", "%w", function(c) if c == "b" then return false end return c:upper() end)`,
		`string.gsub("abc", "()", "%1")`, `string.gsub("x", "x", "%")`,
		`(function() local r = {} for k, v in string.gmatch("a=1, b=2", "(%w+)=(%w+)") do r[#r+1] = k .. v end return table.concat(r, ",") end)()`,
		`(function() local r = {} for w in string.gmatch("one two  three", "%a+") do r[#r+1] = w end return table.concat(r, ",") end)()`,
		`(function() local r = {} for p in string.gmatch("abc", "()") do r[#r+1] = p end return table.concat(r, ",") end)()`,
		`pcall(string.find, "abc", "[a")`, `pcall(string.gsub, "abc", "(", "x")`, `pcall(string.match, "abc", "%")`,
		`("x"):rep(3):gsub("x", "y")`, `("Mikrotik-Rate-Limit"):match("^(%a+)-")`,
	}
	run := func(L *lua.LState, expr string) string {
		if err := L.DoString(`local r = { ` + expr + ` } local o = {} for i = 1, select("#", unpack(r)) do o[#o+1] = tostring(r[i]) end __out = table.concat(o, "|") .. "#" .. select("#", ` + expr + `)`); err != nil {
			return "error: " + err.Error()
		}
		return L.GetGlobal("__out").String()
	}
	ref := lua.NewState()
	defer ref.Close()
	L := newSandbox()
	defer L.Close()
	L.SetGlobal("tostring", ref.GetGlobal("tostring")) // same formatting of values
	for _, e := range exprs {
		want, got := run(ref, e), run(L, e)
		// Errors differ in their prefix only: the sandbox's name the function (string.find: …).
		got = regexp.MustCompile(`string\.(find|match|gsub|gmatch): `).ReplaceAllString(got, "")
		if want != got {
			t.Errorf("%s: sandbox %q, gopher-lua %q", e, got, want)
		}
	}
}
