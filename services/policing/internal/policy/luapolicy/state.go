package luapolicy

import (
	"errors"
	"fmt"
	"math"
	"time"

	lua "github.com/yuin/gopher-lua"
	"layeh.com/radius"

	"github.com/openaaa/openaaa/internal/radiusx"
	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/dict"
	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// state is one Lua state of a program's pool: the script's chunk has run in it (its
// globals, e.g. a blocklist table, are built once per state), its hooks are looked up, and
// the accessor userdata are made once and pointed at each call's arguments.
type state struct {
	L    *lua.LState
	prog *program
	ctx  *budgetCtx
	fns  [numHooks]*lua.LFunction
	ud   [3]*lua.LUserData // req, sub, session accessors: Value is a source
	live liveSource        // the source of real calls; selftest swaps in sample tables
	// record sees every reply and coa attribute by name (selftest only; nil otherwise)
	record func(fn, name, text string)

	// the call in progress
	hook    hook
	inputs  []input // declared inputs: reads outside them fail; nil: any read
	a       args
	d       decision
	avps    []radius.AVP // the AVPs of d's attributes (attr)
	errKind string
	took    time.Duration // the last call's duration (the run duration metric)
}

// source answers an accessor's reads.
type source interface {
	get(st *state, sc scope, name string) (val, error)
}

// liveSource reads the arguments of the call in progress.
type liveSource struct{}

func (liveSource) get(st *state, sc scope, name string) (val, error) {
	switch sc {
	case scopeReq:
		a, ok := st.prog.dict.Lookup(name)
		if !ok {
			return val{}, fmt.Errorf("no attribute %q in the dictionary", name)
		}
		return reqValue(st.a.req, a), nil
	case scopeSub:
		if st.a.sub == nil {
			return val{}, nil
		}
		if v, ok := subValue(st.a.sub, name); ok {
			return v, nil
		}
		return val{}, fmt.Errorf("no subscriber field %q", name)
	default:
		if st.a.sess == nil {
			return val{}, nil
		}
		if v, ok := sessionValue(st.a.sess, st.a.sub, name); ok {
			return v, nil
		}
		return val{}, fmt.Errorf("no session field %q", name)
	}
}

// accessor is the userdata value of req, sub and session.
type accessor struct {
	scope scope
	src   source
}

func (p *program) newState() (*state, error) {
	st := &state{prog: p, ctx: newBudgetCtx(p.dog)}
	L := newSandbox()
	st.L = L
	L.SetContext(st.ctx)
	p.dog.add(st.ctx)

	mt := L.NewTable()
	mt.RawSetString("__index", L.NewFunction(st.index))
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		st.errKind = ErrKindInput
		L.RaiseError("requests, sessions and subscribers are read-only")
		return 0
	}))
	mt.RawSetString("__metatable", lua.LString("read-only"))
	for i, sc := range []scope{scopeReq, scopeSub, scopeSession} {
		ud := L.NewUserData()
		ud.Value = &accessor{scope: sc, src: st.live}
		L.SetMetatable(ud, mt)
		st.ud[i] = ud
	}
	for name, fn := range map[string]lua.LGFunction{
		"reject": st.reject, "reply": st.reply, "disconnect": st.disconnect, "coa": st.coaAttr,
		"install_rule": st.installRule, "remove_rule": st.removeRule,
		"hour": st.clock("hour"), "weekday": st.clock("weekday"), "ip_in": ipIn,
	} {
		L.SetGlobal(name, L.NewFunction(fn))
	}

	// The chunk builds the script's globals; it may take longer than a call (a big table).
	L.Push(L.NewFunctionFromProto(p.proto))
	st.ctx.begin(loadAllowance, loadQuota)
	err := L.PCall(0, 0, nil)
	st.ctx.end()
	if err != nil {
		st.close()
		return nil, fmt.Errorf("running the script: %w", err)
	}
	for h := range numHooks {
		switch f := L.GetGlobal(hookNames[h]).(type) {
		case *lua.LFunction:
			st.fns[h] = f
		case *lua.LNilType:
		default:
			st.close()
			return nil, fmt.Errorf("%s is a %s, not a function", hookNames[h], f.Type())
		}
	}
	return st, nil
}

// loadAllowance is the time the script's chunk may take when a state is made.
const loadAllowance = time.Second

func (st *state) close() {
	st.prog.dog.remove(st.ctx)
	st.L.Close()
}

// fail raises a Lua error of a kind (the metric's label).
func (st *state) fail(kind, format string, a ...any) {
	st.errKind = kind
	st.L.RaiseError(format, a...)
}

// index is the accessors' __index: req["Calling-Station-Id"], sub.class, session.octets.
func (st *state) index(L *lua.LState) int {
	acc, ok := L.CheckUserData(1).Value.(*accessor)
	if !ok {
		st.fail(ErrKindInput, "not an accessor")
	}
	name := L.CheckString(2)
	if st.inputs != nil && !declared(st.inputs, acc.scope, name) {
		st.fail(ErrKindInput, "%s.%s is read but not declared in inputs.%s", scopeNames[acc.scope], name, hookNames[st.hook])
	}
	v, err := acc.src.get(st, acc.scope, name)
	if err != nil {
		st.fail(ErrKindInput, "%s: %v", scopeNames[acc.scope], err)
	}
	L.Push(v.lua())
	return 1
}

func declared(ins []input, sc scope, name string) bool {
	for _, in := range ins {
		if in.scope == sc && in.name == name {
			return true
		}
	}
	return false
}

func (st *state) clock(name string) lua.LGFunction {
	return func(L *lua.LState) int {
		if st.inputs != nil && !declared(st.inputs, scopeClock, name) {
			st.fail(ErrKindInput, "%s() is called but not declared in inputs.%s", name, hookNames[st.hook])
		}
		L.Push(clockValue(st.a.now(), name).lua())
		return 1
	}
}

// ip_in(ip, prefix): whether prefix covers ip, each an address or a prefix of either family
// (session.Covers: the longest-prefix rule of the store's IPv6 lookup); false when either
// is nil or not an address. Pure: it reads nothing a hook's memo would have to declare.
func ipIn(L *lua.LState) int {
	q, err1 := config.ParseClientAddress(L.OptString(1, "")) // an address or a prefix, masked
	c, err2 := config.ParseClientAddress(L.OptString(2, ""))
	L.Push(lua.LBool(err1 == nil && err2 == nil && session.Covers(c, q)))
	return 1
}

func (st *state) only(fn string, hooks ...hook) {
	for _, h := range hooks {
		if st.hook == h {
			return
		}
	}
	st.fail(ErrKindDecision, "%s() is not available in %s", fn, hookNames[st.hook])
}

// reject([reason]): authorize decides Access-Reject. The reason is logged and counted,
// never sent.
func (st *state) reject(L *lua.LState) int {
	st.only("reject", hookAuthorize, hookGxInitial, hookGxUpdate)
	st.d.reject = true
	st.d.reason = L.OptString(1, "rejected by policy")
	return 0
}

// reply(name, value): an attribute of the Access-Accept, by dictionary name.
func (st *state) reply(L *lua.LState) int {
	st.only("reply", hookAuthorize)
	st.d.reply = st.attr(L, "reply", st.d.reply)
	return 0
}

// disconnect([reason]): accounting marks the session for a Disconnect-Request.
func (st *state) disconnect(L *lua.LState) int {
	st.only("disconnect", hookAccounting)
	st.d.disconnect = L.OptString(1, "policy")
	return 0
}

// coa(name, value): accounting sends a CoA-Request carrying this attribute (with the
// others of the same call).
func (st *state) coaAttr(L *lua.LState) int {
	st.only("coa", hookAccounting)
	st.d.coa = st.attr(L, "coa", st.d.coa)
	return 0
}

func (st *state) attr(L *lua.LState, fn string, to radius.Attributes) radius.Attributes {
	name := L.CheckString(1)
	a, ok := st.prog.dict.Lookup(name)
	if !ok {
		st.fail(ErrKindDecision, "%s: no attribute %q in the dictionary", fn, name)
	}
	var enc dict.Encoded
	var err error
	done := false
	lv := L.Get(2)
	// A number goes to the wire without a round trip through text (two allocations and a
	// parse), unless selftest records its text.
	if n, isNum := lv.(lua.LNumber); isNum && st.record == nil && n >= 0 && n <= math.MaxUint32 && n == lua.LNumber(math.Trunc(float64(n))) {
		enc, done, err = a.EncodeUint(uint64(n))
	}
	v := ""
	if !done {
		if v, ok = text(lv); !ok {
			st.fail(ErrKindDecision, "%s(%q): the value must be a string or a non-negative integer, not %s", fn, name, lv.Type())
		}
		enc, err = a.Encode(v)
	}
	if err != nil {
		st.fail(ErrKindDecision, "%s: %v", fn, err)
	}
	// The server writes these two into every reply, in place: a memoized reply shared by
	// concurrent requests must never hold one (nor should a script forge them).
	if enc.Type == radiusx.TypeMessageAuthenticator || enc.Type == radiusx.TypeProxyState {
		st.fail(ErrKindDecision, "%s: %s is set by the server", fn, name)
	}
	if st.record != nil {
		st.record(fn, name, v)
	}
	// The call's attributes share allocations: their AVPs one array, the list another (a
	// decision has a few; an attribute each and a growing list were most of its allocations).
	if len(st.avps) == cap(st.avps) {
		st.avps = make([]radius.AVP, 0, avpsPerAlloc)
	}
	st.avps = append(st.avps, radius.AVP{Type: enc.Type, Attribute: enc.Value})
	if to == nil {
		to = make(radius.Attributes, 0, avpsPerAlloc)
	}
	return append(to, &st.avps[len(st.avps)-1])
}

// avpsPerAlloc: the reply or CoA attributes of a decision allocated at once (a memoized
// decision keeps its array: a few, not the most a script could send).
const avpsPerAlloc = 4

// errNoHook is returned by call for a hook the script does not define.
var errNoHook = errors.New("hook not defined")

// callError is a failed hook call, with its kind.
type callError struct {
	kind string
	err  error
}

func (e *callError) Error() string { return e.err.Error() }
func (e *callError) Unwrap() error { return e.err }

// call runs hook h with the accessors pointed at a; inputs (non-nil) restricts the reads.
func (st *state) call(h hook, a args, inputs []input) (decision, error) {
	fn := st.fns[h]
	if fn == nil {
		return decision{}, &callError{kind: ErrKindBusy, err: errNoHook}
	}
	st.hook, st.a, st.inputs, st.d, st.errKind = h, a, inputs, decision{}, ""
	L := st.L
	L.Push(fn)
	for _, i := range hookArgs[h] {
		L.Push(st.ud[i])
	}
	start := st.ctx.begin(0, decisionQuota)
	err := L.PCall(len(hookArgs[h]), 0, nil)
	st.ctx.end()
	st.took = time.Duration(time.Now().UnixNano() - start)
	L.SetTop(0)
	d := st.d
	st.a, st.d, st.avps = args{}, decision{}, nil // keep no request alive in the pool
	if err != nil {
		kind := st.errKind
		switch {
		case errors.Is(st.ctx.Err(), errMemory):
			kind = ErrKindMemory
		case st.ctx.expired():
			kind = ErrKindBudget
		case kind == "":
			kind = ErrKindRuntime
		}
		return decision{}, &callError{kind: kind, err: err}
	}
	return d, nil
}

// hookArgs are the accessors each hook receives, in order (userdata indexes).
var hookArgs = [numHooks][]int{
	hookAuthorize:   {0, 1},
	hookAccounting:  {0, 2, 1},
	hookGxInitial:   {0, 1},
	hookGxUpdate:    {0, 2, 1},
	hookGxTerminate: {0, 2, 1},
}
