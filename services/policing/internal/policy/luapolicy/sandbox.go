package luapolicy

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Sandbox limits. A policy reads a request and returns a decision: it needs little stack,
// and strings far shorter than these.
const (
	callStackSize   = 200     // nested calls (deep recursion fails with "stack overflow")
	registrySize    = 1024    // initial value stack of a state
	registryMaxSize = 1 << 16 // the value stack grows up to this, then fails
	maxStringRep    = 1 << 20 // string.rep results; the VM's own concatenation is bounded by the budget
	maxUnpack       = 1000    // unpack results ("too many results to unpack")
)

// removedGlobals are taken out of the base library: everything that reaches files, loads
// code (source or bytecode) at run time, or changes other functions' environments.
var removedGlobals = []string{"dofile", "loadfile", "load", "loadstring", "require", "module",
	"collectgarbage", "print", "_printregs", "getfenv", "setfenv", "newproxy"}

// newSandbox returns a state with only base (pruned), string, table and math: no os, io,
// debug, package, coroutine or channel.
func newSandbox() *lua.LState {
	L := lua.NewState(lua.Options{SkipOpenLibs: true, CallStackSize: callStackSize,
		RegistrySize: registrySize, RegistryMaxSize: registryMaxSize, MinimizeStackMemory: true})
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.StringLibName, lua.OpenString},
		{lua.TabLibName, lua.OpenTable}, {lua.MathLibName, lua.OpenMath}} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	g := L.G.Global
	for _, name := range removedGlobals {
		g.RawSetString(name, removed(L, name, ""))
	}
	for _, lib := range removedLibraries {
		g.RawSetString(lib, removedLibrary(L, lib))
	}
	// unpack({}, 1, 1e8) pushes each value before the stack limit is noticed: seconds.
	unpack := g.RawGetString("unpack").(*lua.LFunction)
	g.RawSetString("unpack", L.NewFunction(func(L *lua.LState) int {
		t := L.CheckTable(1)
		if L.OptInt(3, t.Len())-L.OptInt(2, 1) >= maxUnpack {
			L.RaiseError("too many results to unpack")
		}
		return unpack.GFunction(L)
	}))
	str := L.GetGlobal(lua.StringLibName).(*lua.LTable) // also the strings' __index
	str.RawSetString("dump", removed(L, "string.dump", ""))
	str.RawSetString("rep", L.NewFunction(boundedRep))
	// The pattern functions on a matcher that stops within the budget (patterns.go).
	for name, fn := range map[string]lua.LGFunction{"find": strFind, "match": strMatch, "gmatch": strGmatch, "gsub": strGsub} {
		str.RawSetString(name, L.NewFunction(fn))
	}
	str.RawSetString("gfind", str.RawGetString("gmatch"))
	format := str.RawGetString("format").(*lua.LFunction)
	str.RawSetString("format", L.NewFunction(func(L *lua.LState) int {
		if !formatWidthsOK(L.CheckString(1)) {
			L.RaiseError("invalid format (width or precision too long)")
		}
		return format.GFunction(L)
	}))
	// math.random would give different decisions for the same inputs (memoization).
	m := L.GetGlobal(lua.MathLibName).(*lua.LTable)
	const why = " (a random decision could not be memoized)"
	m.RawSetString("random", removed(L, "math.random", why))
	m.RawSetString("randomseed", removed(L, "math.randomseed", why))
	return L
}

// removedLibraries are the standard libraries a policy does not get: files, processes, the
// debugger, modules, coroutines, gopher-lua's channels.
var removedLibraries = []string{"os", "io", "debug", "package", "coroutine", "channel"}

// removed stands in for a function the sandbox took out: calling it fails naming it (a
// nil in its place would fail with "attempt to call a non-function object").
func removed(L *lua.LState, name, why string) *lua.LFunction {
	return L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("%s is not available in the sandbox%s", name, why)
		return 0
	})
}

// removedLibrary stands in for a library the sandbox does not open: reading any field of it
// fails naming the field (os.time() → "os.time is not available in the sandbox"); it
// cannot be changed.
func removedLibrary(L *lua.LState, lib string) *lua.LTable {
	t := L.NewTable()
	mt := L.NewTable()
	mt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("%s.%s is not available in the sandbox", lib, L.CheckString(2))
		return 0
	}))
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("%s is not available in the sandbox", lib)
		return 0
	}))
	mt.RawSetString("__metatable", lua.LString("not available in the sandbox"))
	L.SetMetatable(t, mt)
	return t
}

// boundedRep is string.rep refusing results over maxStringRep (a single call could
// otherwise allocate gigabytes before any budget check runs).
func boundedRep(L *lua.LState) int {
	s := L.CheckString(1)
	n := L.CheckInt(2)
	if n <= 0 || len(s) == 0 {
		L.Push(lua.LString(""))
		return 1
	}
	if n > maxStringRep/len(s) {
		L.RaiseError("string.rep: result longer than %d bytes", maxStringRep)
	}
	L.Push(lua.LString(strings.Repeat(s, n)))
	return 1
}

// formatWidthsOK reports whether every width and precision in a format has at most two
// digits (a width of 10^9 would make fmt allocate a gigabyte).
func formatWidthsOK(f string) bool {
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		i++
		digits := 0
	scan:
		for ; i < len(f); i++ {
			switch c := f[i]; {
			case c >= '0' && c <= '9':
				digits++
				if digits > 2 {
					return false
				}
			case c == '.':
				digits = 0
			case c == '-' || c == '+' || c == ' ' || c == '#':
			default:
				break scan
			}
		}
	}
	return true
}
