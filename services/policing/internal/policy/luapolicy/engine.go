// Package luapolicy is the scriptable policy engine (docs/policy.md): a Lua file with
// optional hooks — authorize(req, sub), accounting(req, session, sub), and the reserved Gx
// hooks — each falling back to the built-in policy when absent.
//
// Fast by construction (gopher-lua's patterns): the script is compiled once and its
// FunctionProto shared by a pool of states (at most policy.lua.poolSize); requests,
// sessions and subscribers are read through accessor userdata made once per state, not
// tables built per call. A hook that declares its inputs is memoized: the engine hashes
// them and reuses the hook's decision for the same inputs, whichever user or session it
// was made for (field notes §1, CPU lesson 4).
//
// Sandboxed (sandbox.go), bounded in time per call (budget.go), failing closed or open as
// configured, and reloaded whole: a new script is compiled, run and self-tested before it
// replaces the old one (Reload).
package luapolicy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"time"

	"layeh.com/radius"

	"github.com/openaaa/openaaa/services/policing/internal/dict"
	"github.com/openaaa/openaaa/services/policing/internal/metrics"
	"github.com/openaaa/openaaa/services/policing/internal/policy"
	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// Options configure an Engine (config keys policy.lua.*).
type Options struct {
	File     string        // the script
	Budget   time.Duration // per hook call
	PoolSize int           // Lua states at most (one per worker is enough)
	FailOpen bool          // a failed authorize falls back to the built-in policy instead of rejecting
	Memoize  bool
	MemoSize int // decisions kept (one per hook and distinct inputs)
	Dict     *dict.Dict
	Builtin  *policy.Default // decides for absent hooks (and failed ones when FailOpen)
	Log      *slog.Logger
	Now      func() time.Time // the clock of hour() and weekday() (tests); time.Now by default
	Metrics  *Metrics         // the node's; nil: unregistered ones
}

// Engine is a policy.Policy running a Lua script.
type Engine struct {
	opt     Options
	prog    atomic.Pointer[program]
	dog     *watchdog
	lastLog atomic.Int64 // unix seconds of the last hook error logged (one a second)
}

var _ policy.Policy = (*Engine)(nil)

// New loads the script; an error names what is wrong with it.
func New(opt Options) (*Engine, error) {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Metrics == nil {
		opt.Metrics = NewMetrics(metrics.Factory{}, metrics.New(metrics.Factory{}))
	}
	if opt.Budget <= 0 {
		return nil, errors.New("budget must be positive")
	}
	e := &Engine{opt: opt, dog: newWatchdog(opt.Budget)}
	if err := e.Reload(); err != nil {
		e.dog.close()
		return nil, err
	}
	return e, nil
}

// Reload reads, compiles and self-tests the script and swaps it in; on any error the
// program in force stays, and the error is returned (the watcher logs and counts it).
func (e *Engine) Reload() error {
	src, err := os.ReadFile(e.opt.File)
	if err != nil {
		e.opt.Metrics.Loads.WithLabelValues("rejected").Inc()
		return err
	}
	return e.load(src)
}

func (e *Engine) load(src []byte) error {
	memoSize := 0
	if e.opt.Memoize {
		memoSize = max(e.opt.MemoSize, 1)
	}
	p, err := newProgram(src, programOptions{name: e.opt.File, dict: e.opt.Dict, dog: e.dog, budget: e.opt.Budget,
		poolSize: e.opt.PoolSize, memoSize: memoSize, now: e.opt.Now})
	if err != nil {
		e.opt.Metrics.Loads.WithLabelValues("rejected").Inc()
		// A refused script may have allocated up to its quota (and a step beyond): give
		// the heap back to the OS now rather than when the scavenger gets to it (a full GC;
		// refusals are rare).
		debug.FreeOSMemory()
		return fmt.Errorf("policy.lua.file %s: %w", e.opt.File, err)
	}
	if old := e.prog.Swap(p); old != nil {
		old.retire()
	}
	e.opt.Metrics.Loads.WithLabelValues("ok").Inc()
	var hooks []string
	for h, ok := range p.hooks {
		if ok {
			hooks = append(hooks, hookNames[h])
		}
	}
	e.opt.Log.Info("lua policy loaded", "file", e.opt.File, "sha256", p.sum, "hooks", hooks, "memoized", p.memo != nil)
	return nil
}

// Close releases every state and stops the watchdog.
func (e *Engine) Close() {
	if p := e.prog.Load(); p != nil {
		p.retire()
	}
	e.dog.close()
}

// Reject implements policy.Policy.
func (e *Engine) Reject(reason string) policy.AuthDecision { return e.opt.Builtin.Reject(reason) }

// Authorize implements policy.Policy: the authorize hook, or the built-in policy.
func (e *Engine) Authorize(ctx context.Context, req *radius.Packet, sub *subscriber.Subscriber) policy.AuthDecision {
	p := e.prog.Load()
	if !p.hooks[hookAuthorize] {
		return e.opt.Builtin.Authorize(ctx, req, sub)
	}
	if sub.Disabled {
		return e.opt.Builtin.Reject("subscriber disabled")
	}
	d, err := e.decide(ctx, p, hookAuthorize, args{req: req.Attributes, sub: sub, clock: e.opt.Now})
	if err != nil {
		if e.opt.FailOpen {
			e.opt.Metrics.Failed.WithLabelValues("open").Inc()
			return e.opt.Builtin.Authorize(ctx, req, sub)
		}
		e.opt.Metrics.Failed.WithLabelValues("closed").Inc()
		return e.opt.Builtin.Reject("policy error: " + kindOf(err))
	}
	if d.reject {
		return e.opt.Builtin.Reject(d.reason)
	}
	return policy.AuthDecision{Accept: true, Reply: slices.Clip(d.reply)}
}

// Accounting implements policy.Policy: the accounting hook (not on Stop), or the built-in
// policy. A failed hook decides nothing: the update is still stored and acknowledged.
func (e *Engine) Accounting(ctx context.Context, req *radius.Packet, u *session.Update, sub *subscriber.Subscriber) policy.Actions {
	p := e.prog.Load()
	if !p.hooks[hookAccounting] {
		return e.opt.Builtin.Accounting(ctx, req, u, sub)
	}
	if u.Kind == session.KindStop {
		return policy.Actions{}
	}
	a := args{req: req.Attributes, sub: sub, sess: u, clock: e.opt.Now}
	d, err := e.decide(ctx, p, hookAccounting, a)
	if err != nil {
		e.opt.Metrics.Failed.WithLabelValues("acct").Inc()
		return policy.Actions{}
	}
	var acts policy.Actions
	if d.disconnect != "" {
		acts.Disconnect = d.disconnect
		e.opt.Metrics.disconnects.WithLabelValues("lua").Inc() // the script's reason is free text: not a label
	}
	if len(d.coa) > 0 {
		acts.CoA = slices.Clip(d.coa)
	}
	return acts
}

// decide reuses the hook's memoized decision for inputs that hash as a, else runs the hook
// (and remembers its decision).
func (e *Engine) decide(ctx context.Context, p *program, h hook, a args) (decision, error) {
	ins := p.inputs[h]
	memoized := p.memo != nil && ins != nil
	var sum uint64
	if memoized {
		sum = a.sum(p.memo.seed, ins)
		if d, ok := p.memo.get(h, sum); ok {
			e.opt.Metrics.perHook[h].reuses.Inc()
			return *d, nil
		}
	}
	d, err := e.run(ctx, p, h, a, ins)
	if err != nil {
		return d, err
	}
	if memoized {
		p.memo.put(h, sum, d)
	}
	return d, nil
}

func (e *Engine) run(ctx context.Context, p *program, h hook, a args, ins []input) (decision, error) {
	st, err := p.get(ctx)
	for i := 0; errors.Is(err, errRetired) && i < 3; i++ {
		// Replaced while this call waited for a state: run the script now in force (in the
		// rare case that it dropped the hook, the call fails as busy).
		p = e.prog.Load()
		ins = p.inputs[h]
		st, err = p.get(ctx)
	}
	if errors.Is(err, errRetired) {
		err = &callError{kind: ErrKindBusy, err: err}
	}
	if err != nil {
		return decision{}, e.failed(p, h, err)
	}
	d, err := st.call(h, a, ins)
	e.opt.Metrics.perHook[h].duration.Observe(st.took.Seconds())
	e.opt.Metrics.perHook[h].runs.Inc()
	p.put(st)
	if err != nil {
		return decision{}, e.failed(p, h, err)
	}
	return d, nil
}

// failed counts a hook error by kind and logs it, at most once a second.
func (e *Engine) failed(p *program, h hook, err error) error {
	kind := kindOf(err)
	e.opt.Metrics.Errors.WithLabelValues(hookNames[h], kind).Inc()
	now := time.Now().Unix()
	if last := e.lastLog.Load(); now > last && e.lastLog.CompareAndSwap(last, now) {
		e.opt.Log.Warn("lua policy hook failed (logged at most once a second; see openaaa_policy_lua_errors_total)",
			"hook", hookNames[h], "kind", kind, "file", p.name, "sha256", p.sum, "err", err.Error())
	}
	return err
}

func kindOf(err error) string {
	var ce *callError
	if errors.As(err, &ce) {
		return ce.kind
	}
	return ErrKindRuntime
}
