package luapolicy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	"github.com/openaaa/openaaa/services/policing/internal/dict"
)

// hook is a function a script may define.
type hook int

const (
	hookAuthorize  hook = iota // authorize(req, sub)
	hookAccounting             // accounting(req, session, sub)
	// The Gx hooks (3GPP TS 29.212 CCR-I, CCR-U; gx.go). gx_terminate is reserved: a
	// script may define it; nothing calls it yet.
	hookGxInitial   // gx_initial(req, sub)
	hookGxUpdate    // gx_update(req, session, sub)
	hookGxTerminate // gx_terminate(req, session, sub)
	numHooks
)

var hookNames = [numHooks]string{"authorize", "accounting", "gx_initial", "gx_update", "gx_terminate"}

func (h hook) String() string { return hookNames[h] }

// program is one compiled script and everything that lives as long as it: the pool of
// states that share its compiled function, its declared inputs and its memo. A reload
// builds a new program and retires the old one; calls in flight finish on the old one.
type program struct {
	name   string // file
	sum    string // sha256 of the source, in logs
	proto  *lua.FunctionProto
	dict   *dict.Dict
	dog    *watchdog
	budget time.Duration

	hooks  [numHooks]bool
	inputs [numHooks][]input // nil: the hook declares none and is never memoized
	memo   *memo             // nil: memoization off

	pool     chan *state
	created  atomic.Int32
	retired  atomic.Bool
	retiredC chan struct{} // closed by retire: waiters for a state go to the new program
}

// compile parses and compiles source once; every state of the program runs this proto.
func compile(name string, source []byte) (*lua.FunctionProto, error) {
	chunk, err := parse.Parse(strings.NewReader(string(source)), name)
	if err != nil {
		return nil, err
	}
	return lua.Compile(chunk, name)
}

type programOptions struct {
	name     string
	dict     *dict.Dict
	dog      *watchdog
	budget   time.Duration
	poolSize int
	memoSize int // 0: memoization off
	now      func() time.Time
}

// newProgram compiles source, runs it in a first state, reads its inputs and runs its
// selftest: a script that fails any of these is refused.
func newProgram(source []byte, o programOptions) (*program, error) {
	proto, err := compile(o.name, source)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(source)
	p := &program{name: o.name, sum: hex.EncodeToString(sum[:8]), proto: proto, dict: o.dict, dog: o.dog,
		budget: o.budget, pool: make(chan *state, max(o.poolSize, 1)), retiredC: make(chan struct{})}
	st, err := p.newState()
	if err != nil {
		return nil, err
	}
	p.created.Store(1)
	for h := range numHooks {
		p.hooks[h] = st.fns[h] != nil
	}
	// A script with no hook at all would silently hand every decision to the built-in policy:
	// most likely a file read while being written (an editor truncates, then writes) or
	// emptied by mistake. Refused, so the script in force stays.
	if !slices.Contains(p.hooks[:], true) {
		st.close()
		return nil, fmt.Errorf("defines none of the hooks %s (an empty or partly written file?)", strings.Join(hookNames[:], ", "))
	}
	if err := p.readInputs(st.L); err != nil {
		st.close()
		return nil, err
	}
	if o.memoSize > 0 {
		p.memo = newMemo(o.memoSize)
	}
	if err := p.selftest(st, o.now()); err != nil {
		st.close()
		return nil, err
	}
	p.pool <- st
	return p, nil
}

// readInputs reads the global table `inputs = {authorize = {"req.Calling-Station-Id",
// "sub.profile", "hour"}, accounting = {...}}`.
func (p *program) readInputs(L *lua.LState) error {
	v := L.GetGlobal("inputs")
	if v == lua.LNil {
		return nil
	}
	t, ok := v.(*lua.LTable)
	if !ok {
		return fmt.Errorf("inputs is a %s, not a table", v.Type())
	}
	var err error
	t.ForEach(func(k, v lua.LValue) {
		if err != nil {
			return
		}
		h := hookNamed(k.String())
		if h < 0 {
			err = fmt.Errorf("inputs.%s: no such hook (%s)", k, strings.Join(hookNames[:], ", "))
			return
		}
		list, ok := v.(*lua.LTable)
		if !ok {
			err = fmt.Errorf("inputs.%s is a %s, not a list", k, v.Type())
			return
		}
		ins := []input{}
		for i := 1; i <= list.Len(); i++ {
			in, e := parseInput(p.dict, list.RawGetInt(i).String())
			if e != nil {
				err = fmt.Errorf("inputs.%s: %w", k, e)
				return
			}
			ins = append(ins, in)
		}
		p.inputs[h] = ins
	})
	return err
}

func hookNamed(name string) hook {
	for h, n := range hookNames {
		if n == name {
			return hook(h)
		}
	}
	return -1
}

// get takes a state from the pool, making one while the pool is below its size, else
// waiting at most the budget for one to come back.
func (p *program) get(ctx context.Context) (*state, error) {
	select {
	case st := <-p.pool:
		return st, nil
	default:
	}
	if p.created.Add(1) <= int32(cap(p.pool)) {
		st, err := p.newState()
		if err != nil {
			p.created.Add(-1)
			return nil, err
		}
		return st, nil
	}
	p.created.Add(-1)
	t := time.NewTimer(p.budget)
	defer t.Stop()
	select {
	case st := <-p.pool:
		return st, nil
	case <-p.retiredC:
		return nil, errRetired
	case <-t.C:
	case <-ctx.Done():
	}
	return nil, &callError{kind: ErrKindBusy, err: fmt.Errorf("no Lua state free within %s (policy.lua.poolSize %d)", p.budget, cap(p.pool))}
}

// put returns a state; one whose call overran its budget, or of a retired program, is closed.
func (p *program) put(st *state) {
	if st.ctx.expired() || p.retired.Load() {
		st.close()
		p.created.Add(-1)
		return
	}
	p.pool <- st
	if p.retired.Load() { // retired meanwhile: retire drained before this state came back
		p.drain()
	}
}

// retire closes the idle states; those in use are closed when they come back.
func (p *program) retire() {
	p.retired.Store(true)
	close(p.retiredC)
	p.drain()
}

// errRetired tells a caller waiting for a state that its program was replaced.
var errRetired = errors.New("program retired")

func (p *program) drain() {
	for {
		select {
		case st := <-p.pool:
			st.close()
			p.created.Add(-1)
		default:
			return
		}
	}
}
