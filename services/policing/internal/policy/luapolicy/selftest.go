package luapolicy

import (
	"fmt"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// selftest runs the script's optional selftest() before the program goes into service.
// In it, check_authorize(req, sub [, clock]) and check_accounting(req, session, sub
// [, clock]) run a hook on sample tables and return its decision as a table:
// {accept=, reason=, reply={[name]=value}, disconnect=, coa={[name]=value}}.
func (p *program) selftest(st *state, now time.Time) error {
	L := st.L
	fn, ok := L.GetGlobal("selftest").(*lua.LFunction)
	if !ok {
		return nil
	}
	L.SetGlobal("check_authorize", L.NewFunction(func(L *lua.LState) int { return st.check(L, hookAuthorize, now) }))
	L.SetGlobal("check_accounting", L.NewFunction(func(L *lua.LState) int { return st.check(L, hookAccounting, now) }))
	defer func() {
		L.SetGlobal("check_authorize", lua.LNil)
		L.SetGlobal("check_accounting", lua.LNil)
	}()
	L.Push(fn)
	st.ctx.begin(loadAllowance, loadQuota)
	err := L.PCall(0, 0, nil)
	st.ctx.end()
	L.SetTop(0)
	if err != nil {
		return fmt.Errorf("selftest: %w", err)
	}
	return nil
}

// tableSource reads a sample table as a request, subscriber or session, checking names as
// the live accessors do.
type tableSource struct{ t *lua.LTable }

func (s tableSource) get(st *state, sc scope, name string) (val, error) {
	var err error
	switch sc {
	case scopeReq:
		if _, ok := st.prog.dict.Lookup(name); !ok {
			err = fmt.Errorf("no attribute %q in the dictionary", name)
		}
	case scopeSub:
		if !subField(name) {
			err = fmt.Errorf("no subscriber field %q", name)
		}
	default:
		if _, ok := sessionFields[name]; !ok {
			err = fmt.Errorf("no session field %q", name)
		}
	}
	if err != nil || s.t == nil {
		return val{}, err
	}
	switch v := s.t.RawGetString(name).(type) {
	case lua.LString:
		return str(string(v)), nil
	case lua.LNumber:
		return val{kind: 'n', n: float64(v)}, nil
	case lua.LBool:
		return boolean(bool(v)), nil
	}
	return val{}, nil
}

// check runs hook h on the sample tables given to check_authorize / check_accounting.
func (st *state) check(L *lua.LState, h hook, now time.Time) int {
	fn := st.fns[h]
	if fn == nil {
		L.RaiseError("%s is not defined", h)
	}
	n := len(hookArgs[h])
	tables := make([]*lua.LTable, n)
	for i := range n {
		tables[i] = L.OptTable(i+1, nil)
	}
	if c := L.OptTable(n+1, nil); c != nil {
		// 2024-01-07 was a Sunday (weekday 0).
		now = time.Date(2024, 1, 7+int(lua.LVAsNumber(c.RawGetString("weekday"))), int(lua.LVAsNumber(c.RawGetString("hour"))), 0, 0, 0, time.UTC)
	}
	saved := [3]any{}
	for i, ud := range st.ud {
		saved[i] = ud.Value
	}
	uds := make([]lua.LValue, n)
	for i, u := range hookArgs[h] {
		acc := *st.ud[u].Value.(*accessor)
		acc.src = tableSource{t: tables[i]}
		st.ud[u].Value = &acc
		uds[i] = st.ud[u]
	}
	oHook, oInputs, oA, oD, oKind := st.hook, st.inputs, st.a, st.d, st.errKind
	st.hook, st.inputs, st.a, st.d, st.errKind = h, st.prog.inputs[h], args{clock: func() time.Time { return now }}, decision{}, ""
	rec := map[string]*lua.LTable{"reply": L.NewTable(), "coa": L.NewTable()}
	st.record = func(fn, name, text string) { rec[fn].RawSetString(name, lua.LString(text)) }
	err := L.CallByParam(lua.P{Fn: fn, NRet: 0, Protect: true}, uds...)
	d := st.d
	st.record = nil
	for i, ud := range st.ud {
		ud.Value = saved[i]
	}
	st.hook, st.inputs, st.a, st.d, st.errKind = oHook, oInputs, oA, oD, oKind
	if err != nil {
		L.RaiseError("%s: %s", h, err.Error())
	}
	out := L.NewTable()
	out.RawSetString("accept", lua.LBool(!d.reject))
	if d.reject {
		out.RawSetString("reason", lua.LString(d.reason))
	}
	out.RawSetString("reply", rec["reply"])
	if d.disconnect != "" {
		out.RawSetString("disconnect", lua.LString(d.disconnect))
	}
	out.RawSetString("coa", rec["coa"])
	L.Push(out)
	return 1
}
