package engine

import (
	"sync/atomic"
	"time"
)

// health is a NAS's view of its servers with failover on (Config.Failover): a retransmission
// after a timeout goes to the next target, as a NAS with a secondary server does, and a target
// that timed out is skipped for Config.HoldDown, then probed by one request. Losing a DC then
// costs each request in flight to it one retransmission window, and the requests after it
// none. One view per run, shared by the workers, as a NAS has one RADIUS client.
type health struct {
	holdDown time.Duration
	start    time.Time
	// deadUntil per target: nanoseconds since start until which it is skipped; 0: alive.
	deadUntil []atomic.Int64
}

func newHealth(targets int, holdDown time.Duration, start time.Time) *health {
	return &health{holdDown: holdDown, start: start, deadUntil: make([]atomic.Int64, targets)}
}

func (h *health) now() int64 { return int64(time.Since(h.start)) + 1 } // never 0: 0 means alive

// usable reports whether target t may take a request now. Of the callers that find a dead
// target's hold-down over, exactly one gets true — the probe — and pushes the hold-down on,
// so that the others keep skipping the target while the probe is out.
func (h *health) usable(t int) bool {
	d := h.deadUntil[t].Load()
	if d == 0 {
		return true
	}
	now := h.now()
	return now >= d && h.deadUntil[t].CompareAndSwap(d, now+int64(h.holdDown))
}

// pick is the first usable target from t on (wrapping); with none usable, t itself: a NAS
// whose servers all look dead still sends.
func (h *health) pick(t int) int {
	n := len(h.deadUntil)
	for i := range n {
		if c := (t + i) % n; h.usable(c) {
			return c
		}
	}
	return t % n
}

// failed marks target t dead for the hold-down (it did not answer in time).
func (h *health) failed(t int) { h.deadUntil[t].Store(h.now() + int64(h.holdDown)) }

// answered marks target t alive.
func (h *health) answered(t int) {
	if h.deadUntil[t].Load() != 0 {
		h.deadUntil[t].Store(0)
	}
}
