package luapolicy

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// errBudget is the error a state's context reports once its call ran out of budget.
var errBudget = errors.New("policy budget exceeded")

// budgetCtx is the context.Context of one Lua state. gopher-lua checks Done() between VM
// instructions; a single watchdog closes it when the state's call overran. A state whose
// context fired is discarded. This costs one atomic store per call, where a
// context.WithTimeout per call would cost a timer and several allocations.
type budgetCtx struct {
	done    chan struct{}
	once    sync.Once
	started atomic.Int64 // unix nanoseconds of the call in progress; 0: idle
}

func newBudgetCtx() *budgetCtx { return &budgetCtx{done: make(chan struct{})} }

func (c *budgetCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *budgetCtx) Done() <-chan struct{}       { return c.done }
func (c *budgetCtx) Value(any) any               { return nil }
func (c *budgetCtx) Err() error {
	select {
	case <-c.done:
		return errBudget
	default:
		return nil
	}
}

func (c *budgetCtx) expire()       { c.once.Do(func() { close(c.done) }) }
func (c *budgetCtx) expired() bool { return c.Err() != nil }

// watchdog expires the contexts of calls that run longer than budget. It checks every
// budget/2 (at least 1 ms), so a runaway call stops within 1.5 × budget (plus the time of
// the library function it may be in: Go code is not interrupted).
type watchdog struct {
	budget time.Duration
	mu     sync.Mutex
	ctxs   map[*budgetCtx]struct{}
	stop   chan struct{}
	done   chan struct{}
}

func newWatchdog(budget time.Duration) *watchdog {
	w := &watchdog{budget: budget, ctxs: map[*budgetCtx]struct{}{}, stop: make(chan struct{}), done: make(chan struct{})}
	tick := max(budget/2, time.Millisecond)
	go func() {
		defer close(w.done)
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case now := <-t.C:
				w.check(now.UnixNano())
			}
		}
	}()
	return w
}

func (w *watchdog) check(now int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for c := range w.ctxs {
		if s := c.started.Load(); s != 0 && now-s > int64(w.budget) {
			c.expire()
		}
	}
}

func (w *watchdog) add(c *budgetCtx) {
	w.mu.Lock()
	w.ctxs[c] = struct{}{}
	w.mu.Unlock()
}

func (w *watchdog) remove(c *budgetCtx) {
	w.mu.Lock()
	delete(w.ctxs, c)
	w.mu.Unlock()
}

func (w *watchdog) close() {
	close(w.stop)
	<-w.done
}
