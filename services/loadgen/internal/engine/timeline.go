package engine

import (
	"sync/atomic"
	"time"
)

// Second is one second of a run's timeline: the requests that ended in it.
type Second struct {
	Answered uint64
	// Failed requests got no valid reply after all their transmissions (timeout or error):
	// what a NAS sees. A second with one is part of the NAS-visible gap.
	Failed uint64
	// Retransmissions sent in this second.
	Retransmissions uint64
}

// timeline counts per second since the run's start; shared by the workers (a few thousand
// increments per second: one atomic each is cheap).
type timeline struct {
	start time.Time
	secs  []struct{ answered, failed, retrans atomic.Uint64 }
}

// newTimeline covers d plus a second of slack for the last requests' replies.
func newTimeline(start time.Time, d time.Duration) *timeline {
	return &timeline{start: start, secs: make([]struct{ answered, failed, retrans atomic.Uint64 }, int(d/time.Second)+2)}
}

func (t *timeline) at(now time.Time) int {
	i := int(now.Sub(t.start) / time.Second)
	return min(max(i, 0), len(t.secs)-1)
}

func (t *timeline) answered(now time.Time) { t.secs[t.at(now)].answered.Add(1) }
func (t *timeline) failed(now time.Time)   { t.secs[t.at(now)].failed.Add(1) }
func (t *timeline) retrans(now time.Time)  { t.secs[t.at(now)].retrans.Add(1) }

// seconds is the timeline up to elapsed (whole seconds begun).
func (t *timeline) seconds(elapsed time.Duration) []Second {
	n := min(int((elapsed+time.Second-1)/time.Second), len(t.secs))
	out := make([]Second, n)
	for i := range out {
		s := &t.secs[i]
		out[i] = Second{Answered: s.answered.Load(), Failed: s.failed.Load(), Retransmissions: s.retrans.Load()}
	}
	return out
}
