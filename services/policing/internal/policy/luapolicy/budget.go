package luapolicy

import (
	"errors"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// errBudget and errMemory are the errors a state's context reports once its call ran out of
// time or of memory.
var (
	errBudget = errors.New("policy budget exceeded")
	errMemory = errors.New("policy memory quota exceeded")
)

// Memory quotas: what one call may allocate (bytes, counted by the watchdog from the first
// tick that sees the call running; see watchdog.check). A decision needs a few KiB; a load
// builds the script's tables (a blocklist of 100,000 entries keyed by string.format
// allocates 44 MiB, 10,000 entries 4 MiB).
const (
	decisionQuota = 16 << 20
	loadQuota     = 64 << 20
)

// longWork is how much a call does before it counts as long: past it (16,384 VM
// instructions, or 16 rounds of 1,024 pattern steps: a few hundred microseconds; a policy's
// decision runs tens to hundreds), it runs only while it holds one of the watchdog's slow
// permits (GOMAXPROCS − 1, at least 1), so that long calls together never take every CPU
// from the cheap ones (issue 35). Counted in work, not time: a short call that the OS
// descheduled on a loaded machine is not long.
const longWork = 1 << 14

// watchTick is how often the watchdog checks the calls in progress: a call stops within its
// budget plus a tick (plus the 1,024 VM instructions or pattern steps between two looks at
// its context), and a call allocating fast stops about a tick after it passed its quota.
const watchTick = time.Millisecond

// budgetCtx is the context.Context of one Lua state. gopher-lua calls Done() before every
// VM instruction; the watchdog closes it when the state's call overran its time or memory.
// A state whose context fired is discarded. This costs one atomic store per call, where a
// context.WithTimeout per call would cost a timer and several allocations.
type budgetCtx struct {
	done    chan struct{}
	once    sync.Once
	reason  atomic.Pointer[error]
	started atomic.Int64 // unix nanoseconds when the call expires minus the budget; 0: idle
	quota   atomic.Int64 // bytes the call in progress may allocate
	dog     *watchdog

	memOut atomic.Bool // expired for memory

	// owned by the state's goroutine
	polls    uint32 // Done() calls and pattern steps / 1,024 of the call in progress
	holding  bool   // holds a slow permit
	waited   bool   // asked for a slow permit: a long call
	selfLook bool   // a load or selftest: looks at its own time and memory too (lookSelf)
	lastLook int64  // unix nanoseconds of its last look

	// owned by the watchdog (under its mutex)
	markFor int64  // the started value mark belongs to
	mark    uint64 // the process's allocations when the watchdog first saw the call
}

func newBudgetCtx(w *watchdog) *budgetCtx { return &budgetCtx{done: make(chan struct{}), dog: w} }

func (c *budgetCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *budgetCtx) Value(any) any               { return nil }

// graceWork: a call that has run fewer VM instructions than this (a few hundred
// microseconds of work) and never asked for a slow permit is not stopped for time. Its
// wall-clock budget can only have run out while it was not running (the OS ran other
// threads: a loaded machine), and failing it would reject a legitimate request for the
// machine's load. Memory stops it at once.
const graceWork = 1 << 16

// Done is called by the VM before each instruction: every 1,024th call also looks whether
// the call became long (slow).
func (c *budgetCtx) Done() <-chan struct{} {
	c.polls++
	if c.polls%1024 == 0 {
		c.slow()
	}
	if c.selfLook {
		c.lookSelf()
	}
	if c.polls < graceWork && !c.waited && !c.memOut.Load() {
		return nil // never ready
	}
	return c.done
}

func (c *budgetCtx) Err() error {
	select {
	case <-c.done:
		if r := c.reason.Load(); r != nil {
			return *r
		}
		return errBudget
	default:
		return nil
	}
}

// poll is what Go code running for a script (the pattern functions) calls now and then: it
// takes a slow permit once the call is long, and says whether to stop.
func (c *budgetCtx) poll() error {
	c.polls += 1024
	c.slow()
	if c.polls < graceWork && !c.waited && !c.memOut.Load() {
		return nil
	}
	return c.Err()
}

// begin marks the start of a call that may run for allowance + the budget and allocate quota.
// A call with an allowance (a load, a selftest: rare) is charged from its first byte; a
// decision from the first tick that sees it (reading the allocations costs a few hundred
// nanoseconds, more than a cheap decision).
func (c *budgetCtx) begin(allowance time.Duration, quota int64) (unixNano int64) {
	now := time.Now().UnixNano()
	c.polls, c.waited = 0, false
	c.quota.Store(quota)
	s := now + int64(allowance)
	c.selfLook, c.lastLook = allowance > 0, now
	if allowance > 0 {
		c.dog.mark(c, s)
	}
	c.started.Store(s)
	if c.dog.idle.Load() {
		select {
		case c.dog.wake <- struct{}{}:
		default:
		}
	}
	return now
}

// lookSelf: a load or a selftest checks its own time and memory before an instruction once
// a watchTick has passed since its last look, as the watchdog would. One instruction (a
// concatenation doubling a string) can allocate hundreds of MiB, and the watchdog, a thread
// like any other, may not run for the tens of milliseconds that copy takes on a loaded
// machine (a cold make test): the next doubling then began before the call was stopped, and
// a 64 MiB quota let 256 MiB through. A clock read per instruction is for loads only, which
// are rare; a decision is not charged it.
func (c *budgetCtx) lookSelf() {
	now := time.Now().UnixNano()
	if now-c.lastLook < int64(watchTick) {
		return
	}
	c.lastLook = now
	c.dog.mu.Lock()
	defer c.dog.mu.Unlock()
	c.dog.look(c, now, c.dog.allocs())
}

// end marks the call finished and gives back its slow permit.
func (c *budgetCtx) end() {
	c.started.Store(0)
	c.selfLook = false
	if c.holding {
		c.holding = false
		<-c.dog.slow
	}
}

// slow takes a slow permit for a call that has done more than longWork, waiting for one (or
// for the call's end: its budget runs on while it waits).
func (c *budgetCtx) slow() {
	if c.holding || c.polls < longWork {
		return
	}
	c.waited = true
	select {
	case c.dog.slow <- struct{}{}:
		c.holding = true
	case <-c.done:
	}
}

// expire ends the call: for memory at once, for time once it did more than graceWork (a
// call already expired for time may still be expired for memory).
func (c *budgetCtx) expire(reason error) {
	if reason == errMemory {
		if c.memOut.Swap(true) {
			return
		}
		c.reason.Store(&reason)
	} else {
		c.reason.CompareAndSwap(nil, &reason)
	}
	c.once.Do(func() { close(c.done) })
}

func (c *budgetCtx) expired() bool { return c.Err() != nil }

// watchdog expires the contexts of calls that run longer than the budget or allocate more
// than their quota. It checks every watchTick (every idleTick when idle).
//
// Memory is the process's heap allocations (runtime/metrics /gc/heap/allocs:bytes) since
// the first tick that saw the call: gopher-lua has no allocation hook, so a call is charged
// with everything the process allocated while it ran. A decision of a few microseconds is
// almost never seen by a tick, and one that is seen is a new call at the next; only a call
// that runs for ticks is charged, for ticks of the whole process's allocations.
type watchdog struct {
	budget time.Duration
	slow   chan struct{} // permits of long calls
	mu     sync.Mutex
	ctxs   map[*budgetCtx]struct{}
	stop   chan struct{}
	done   chan struct{}
	sample []metrics.Sample
	idle   atomic.Bool   // looking every idleTick
	wake   chan struct{} // a call began while idle
}

func newWatchdog(budget time.Duration) *watchdog {
	w := &watchdog{budget: budget, ctxs: map[*budgetCtx]struct{}{}, stop: make(chan struct{}), done: make(chan struct{}),
		slow: make(chan struct{}, max(runtime.GOMAXPROCS(0)-1, 1)), wake: make(chan struct{}, 1),
		sample: []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}}
	go func() {
		defer close(w.done)
		t := time.NewTimer(watchTick)
		defer t.Stop()
		var lastActive time.Time
		tick := func(now time.Time) {
			if w.check(now.UnixNano()) {
				lastActive = now
			}
			// Every tick while calls run (and for idleAfter since the last one), else every
			// idleTick: an idle node does not wake a thousand times a second.
			next := watchTick
			if now.Sub(lastActive) > idleAfter {
				next = idleTick
			}
			w.idle.Store(next == idleTick)
			t.Reset(next)
		}
		for {
			select {
			case <-w.stop:
				return
			case now := <-t.C:
				tick(now)
			case <-w.wake: // a call began while idle
				tick(time.Now())
			}
		}
	}()
	return w
}

// An idle watchdog (no call seen running for idleAfter) looks every idleTick, and a call that
// begins meanwhile wakes it (one channel send, only while idle), so that no call is watched
// late. Measured: an idle policing with a Lua policy used 0.9 % of a core before issue 35 (a
// tick every 25 ms), 2.0 % with a constant 1 ms tick, 0.9–1.2 % with this (10 s, jiffies).
const (
	idleAfter = 100 * time.Millisecond
	idleTick  = 10 * time.Millisecond
)

// check expires the calls past their budget or quota; it says whether any call was running.
func (w *watchdog) check(now int64) (active bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var allocs uint64
	read := false
	for c := range w.ctxs {
		if c.started.Load() == 0 {
			continue
		}
		active = true
		if !read {
			allocs, read = w.allocs(), true
		}
		w.look(c, now, allocs)
	}
	return active
}

// look expires c's call if, at now, it ran past its budget or allocated more than its quota
// (allocs: the process's allocations now); a call not seen before is charged from allocs.
// The caller holds w.mu.
func (w *watchdog) look(c *budgetCtx, now int64, allocs uint64) {
	s := c.started.Load()
	if s == 0 {
		return
	}
	if now-s > int64(w.budget) {
		c.expire(errBudget) // it may still be running (graceWork): memory is checked on
	}
	if c.markFor != s {
		c.markFor, c.mark = s, allocs
		return
	}
	if allocs-c.mark > uint64(c.quota.Load()) {
		c.expire(errMemory)
	}
}

// allocs reads the process's heap allocations so far; the caller holds w.mu (w.sample).
func (w *watchdog) allocs() uint64 {
	metrics.Read(w.sample)
	return w.sample[0].Value.Uint64()
}

// mark charges c's call that starts as s from now.
func (w *watchdog) mark(c *budgetCtx, s int64) {
	w.mu.Lock()
	c.markFor, c.mark = s, w.allocs()
	w.mu.Unlock()
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
