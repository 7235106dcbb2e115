package luapolicy

import (
	"strconv"
	"strings"
	"unsafe"

	lua "github.com/yuin/gopher-lua"

	"github.com/openaaa/openaaa/services/policing/internal/policy/luapolicy/luapm"
)

// The pattern functions of the sandbox: gopher-lua's string.find, match, gmatch and gsub,
// with the same results, on a matcher (luapm) that asks the call's budget context every
// 1,024 steps whether to go on. gopher-lua's own run on the Go stack, where the VM's
// budget check never comes: string.find(s, ".-.-b") is cubic in #s, and on 2,000 bytes
// from a request ran for minutes (issue 35). gsub builds its result in one pass (gopher-lua
// copies the whole string once per replacement: quadratic) and refuses results over
// maxBuilt bytes.

// maxBuilt bounds the strings gsub builds (as string.rep's).
const maxBuilt = maxStringRep

// guardOf is the matcher's Guard for L's call in progress.
func guardOf(L *lua.LState) luapm.Guard {
	c, ok := L.Context().(*budgetCtx)
	if !ok {
		return nil
	}
	return c.poll
}

func readOnlyBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// find runs the matcher, raising a Lua error (the budget's, or the pattern's) on failure.
func find(L *lua.LState, fn, pattern, s string, offset, limit int) []*luapm.MatchData {
	mds, err := luapm.Find(pattern, readOnlyBytes(s), offset, limit, guardOf(L))
	if err != nil {
		L.RaiseError("string.%s: %s", fn, err.Error())
	}
	return mds
}

// strIndex is gopher-lua's luaIndex2StringIndex for a start index.
func strIndex(s string, i int) int {
	if i != 0 {
		i--
	}
	if i < 0 {
		i = len(s) + i + 1
	}
	return max(i, 0)
}

func strFind(L *lua.LState) int {
	str := L.CheckString(1)
	pattern := L.CheckString(2)
	if len(pattern) == 0 {
		L.Push(lua.LNumber(1))
		L.Push(lua.LNumber(0))
		return 2
	}
	init := strIndex(str, L.OptInt(3, 1))
	plain := L.GetTop() == 4 && lua.LVAsBool(L.Get(4))
	if plain || init > len(str) {
		pos := -1
		if init <= len(str) {
			pos = strings.Index(str[init:], pattern)
		}
		if pos < 0 {
			L.Push(lua.LNil)
			return 1
		}
		L.Push(lua.LNumber(init+pos) + 1)
		L.Push(lua.LNumber(init + pos + len(pattern)))
		return 2
	}
	mds := find(L, "find", pattern, str, init, 1)
	if len(mds) == 0 {
		L.Push(lua.LNil)
		return 1
	}
	md := mds[0]
	L.Push(lua.LNumber(md.Capture(0) + 1))
	L.Push(lua.LNumber(md.Capture(1)))
	for i := 2; i < md.CaptureLength(); i += 2 {
		pushCapture(L, md, str, i)
	}
	return md.CaptureLength()/2 + 1
}

func pushCapture(L *lua.LState, md *luapm.MatchData, str string, i int) {
	if md.IsPosCapture(i) {
		L.Push(lua.LNumber(md.Capture(i)))
	} else {
		L.Push(lua.LString(str[md.Capture(i):md.Capture(i+1)]))
	}
}

func strMatch(L *lua.LState) int {
	str := L.CheckString(1)
	pattern := L.CheckString(2)
	offset := L.OptInt(3, 1)
	if offset < 0 {
		offset = len(str) + offset + 1
	}
	offset = max(offset-1, 0)
	mds := find(L, "match", pattern, str, offset, 1)
	if len(mds) == 0 {
		L.Push(lua.LNil)
		return 0 // as gopher-lua
	}
	md := mds[0]
	if md.CaptureLength() == 2 {
		L.Push(lua.LString(str[md.Capture(0):md.Capture(1)]))
		return 1
	}
	for i := 2; i < md.CaptureLength(); i += 2 {
		pushCapture(L, md, str, i)
	}
	return md.CaptureLength()/2 - 1
}

// strGmatch finds every match when called (as gopher-lua does) and returns an iterator.
func strGmatch(L *lua.LState) int {
	str := L.CheckString(1)
	pattern := L.CheckString(2)
	mds := find(L, "gmatch", pattern, str, 0, -1)
	pos := 0
	L.Push(L.NewFunction(func(L *lua.LState) int {
		if pos >= len(mds) {
			return 0
		}
		md := mds[pos]
		pos++
		if md.CaptureLength() == 2 {
			L.Push(lua.LString(str[md.Capture(0):md.Capture(1)]))
			return 1
		}
		for i := 2; i < md.CaptureLength(); i += 2 {
			pushCapture(L, md, str, i)
		}
		return md.CaptureLength()/2 - 1
	}))
	return 1
}

func strGsub(L *lua.LState) int {
	str := L.CheckString(1)
	pat := L.CheckString(2)
	L.CheckTypes(3, lua.LTString, lua.LTTable, lua.LTFunction)
	repl := L.CheckAny(3)
	limit := L.OptInt(4, -1)
	mds := find(L, "gsub", pat, str, 0, limit)
	if len(mds) == 0 {
		L.SetTop(1)
		L.Push(lua.LNumber(0))
		return 2
	}
	var b strings.Builder
	last := 0
	add := func(s string) {
		if b.Len()+len(s) > maxBuilt {
			L.RaiseError("string.gsub: result longer than %d bytes", maxBuilt)
		}
		b.WriteString(s)
	}
	for _, md := range mds {
		start, end := md.Capture(0), md.Capture(1)
		var with string
		replace := true
		switch r := repl.(type) {
		case lua.LString:
			with = gsubString(L, md, str, string(r))
		case *lua.LTable:
			v := gsubKey(L, r, md, str)
			replace = !lua.LVIsFalse(v)
			with = lua.LVAsString(v)
		case *lua.LFunction:
			L.Push(r)
			n := 0
			if md.CaptureLength() > 2 {
				for i := 2; i < md.CaptureLength(); i += 2 {
					if md.IsPosCapture(i) {
						L.Push(lua.LNumber(md.Capture(i)))
					} else {
						L.Push(lua.LString(captured(L, md, str, i)))
					}
					n++
				}
			} else {
				L.Push(lua.LString(captured(L, md, str, 0)))
				n++
			}
			L.Call(n, 1)
			v := L.Get(-1)
			L.Pop(1)
			replace = !lua.LVIsFalse(v)
			with = lua.LVAsString(v)
		}
		if !replace {
			continue
		}
		add(str[last:start])
		add(with)
		last = end
		if g := guardOf(L); g != nil {
			if err := g(); err != nil {
				L.RaiseError("string.gsub: %s", err.Error())
			}
		}
	}
	add(str[last:])
	L.Push(lua.LString(b.String()))
	L.Push(lua.LNumber(len(mds)))
	return 2
}

// gsubKey is a table replacement's key: the first capture, or the whole match.
func gsubKey(L *lua.LState, t *lua.LTable, md *luapm.MatchData, str string) lua.LValue {
	idx := 0
	if md.CaptureLength() > 2 {
		idx = 2
	}
	if md.IsPosCapture(idx) {
		return L.GetTable(t, lua.LNumber(md.Capture(idx)))
	}
	return L.GetField(t, str[md.Capture(idx):md.Capture(idx+1)])
}

// gsubString expands a replacement string as gopher-lua does: %0–%9 are captures, %% is %,
// any other %c stays as it is.
func gsubString(L *lua.LState, md *luapm.MatchData, str, repl string) string {
	if strings.IndexByte(repl, '%') < 0 {
		return repl
	}
	var b strings.Builder
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		if c != '%' || i == len(repl)-1 {
			b.WriteByte(c)
			continue
		}
		i++
		switch d := repl[i]; {
		case d == '%':
			b.WriteByte('%')
		case d >= '0' && d <= '9':
			b.WriteString(captured(L, md, str, 2*int(d-'0')))
		default:
			b.WriteByte('%')
			b.WriteByte(d)
		}
		if b.Len() > maxBuilt {
			L.RaiseError("string.gsub: result longer than %d bytes", maxBuilt)
		}
	}
	return b.String()
}

// captured is gopher-lua's capturedString: capture idx/2 (0: the whole match).
func captured(L *lua.LState, md *luapm.MatchData, str string, idx int) string {
	if idx > 2 && idx >= md.CaptureLength() {
		L.RaiseError("invalid capture index")
	}
	if idx >= md.CaptureLength() && idx == 2 {
		idx = 0
	}
	if md.IsPosCapture(idx) {
		return strconv.Itoa(md.Capture(idx))
	}
	return str[md.Capture(idx):md.Capture(idx+1)]
}
