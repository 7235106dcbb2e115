package gx

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/openaaa/openaaa/services/policing/internal/metrics"
	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// The rule windows of the data policies (subscriber.RuleWindow) open and close between a
// session's CCRs, which may be hours apart. Each node pushes the change by RAR to the sessions
// whose PCEF connection it holds: it tracks the sessions its CCRs opened or updated (the last
// CCR of a session came through it, so the store names it as the holder), and every
// ScheduleInterval sends a RAR to each whose windows opened or closed since it last decided.
// A session that moved to another node (the PCEF failed over) is that node's to track from
// its next CCR; here the RAR finds it held elsewhere and forgets it.

var scheduledRARs = promauto.NewCounterVec(prometheus.CounterOpts{
	Namespace: metrics.Namespace, Subsystem: "gx", Name: "scheduled_rars_total",
	Help: "RARs a rule window (dataPolicy.windows) opening or closing sent, by result: answered (2001), refused (another Result-Code), failed (no answer, no connection; retried), forgotten (the session ended or moved to another node).",
}, []string{"result"})

var trackedSessions = promauto.NewGauge(prometheus.GaugeOpts{
	Namespace: metrics.Namespace, Subsystem: "gx", Name: "scheduled_sessions",
	Help: "Gx sessions this node holds whose data policy has rule windows (watched for RARs).",
})

// maxTracked bounds the sessions one node watches (about 100 bytes each); past it a new
// session's windows change only at its next CCR.
const maxTracked = 1 << 20

// tracked is a session watched for its rule windows.
type tracked struct {
	user    string
	decided time.Time // when its windows were last applied (a CCA or a RAR)
}

// schedule is the set of watched sessions of a Handler.
type schedule struct {
	mu       sync.Mutex
	sessions map[string]tracked
}

// track watches a session (CCR-I/U answered here) whose policy has windows; untrack forgets it.
func (h *Handler) track(sessionID, user string, p *subscriber.DataPolicy, decided time.Time) {
	if p == nil || len(p.Windows) == 0 {
		h.untrack(sessionID)
		return
	}
	h.sched.mu.Lock()
	defer h.sched.mu.Unlock()
	if h.sched.sessions == nil {
		h.sched.sessions = map[string]tracked{}
	}
	if _, ok := h.sched.sessions[sessionID]; !ok && len(h.sched.sessions) >= maxTracked {
		return
	}
	h.sched.sessions[sessionID] = tracked{user: user, decided: decided}
	trackedSessions.Set(float64(len(h.sched.sessions)))
}

func (h *Handler) untrack(sessionID string) {
	h.sched.mu.Lock()
	defer h.sched.mu.Unlock()
	if _, ok := h.sched.sessions[sessionID]; ok {
		delete(h.sched.sessions, sessionID)
		trackedSessions.Set(float64(len(h.sched.sessions)))
	}
}

// PushWindows sends a RAR to every watched session whose rule windows opened or closed since
// its last decision, at most concurrency at once, and returns how many RARs it sent. The
// node calls it every ScheduleInterval (app/diameter.go).
func (h *Handler) PushWindows(ctx context.Context, concurrency int) int {
	now := h.now()
	h.sched.mu.Lock()
	due := make(map[string]tracked, len(h.sched.sessions))
	for id, t := range h.sched.sessions {
		due[id] = t
	}
	h.sched.mu.Unlock()
	var (
		wg   sync.WaitGroup
		sem  = make(chan struct{}, max(concurrency, 1))
		sent atomic.Int64
	)
	for id, t := range due {
		sub, ok := h.cachedSubscriber(ctx, t.user)
		if !ok {
			continue // the source cannot say now: the next round
		}
		install, remove := WindowChanges(sub.Profile.DataPolicy, t.decided, now)
		if len(install) == 0 && len(remove) == 0 {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if h.pushWindow(ctx, id, t, install, remove, now) {
				sent.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(sent.Load())
}

// pushWindow sends one session its window change and records the outcome; true when a RAR
// left.
func (h *Handler) pushWindow(ctx context.Context, id string, t tracked, install, remove []string, now time.Time) bool {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	code, err := h.RAR(rctx, id, install, remove)
	var elsewhere *HeldElsewhere
	switch {
	case errors.Is(err, session.ErrNotFound) || errors.As(err, &elsewhere):
		h.untrack(id)
		scheduledRARs.WithLabelValues("forgotten").Inc()
		return false
	case err != nil:
		scheduledRARs.WithLabelValues("failed").Inc()
		h.Log.Warn("gx: rule window RAR not answered; retried next round", "sessionId", id, "err", err.Error())
		return true
	case code == diam.UnknownSessionID:
		h.untrack(id)
		scheduledRARs.WithLabelValues("forgotten").Inc()
		return true
	case code != diam.Success:
		scheduledRARs.WithLabelValues("refused").Inc()
		h.Log.Warn("gx: rule window RAR refused", "sessionId", id, "resultCode", code)
	default:
		scheduledRARs.WithLabelValues("answered").Inc()
	}
	h.sched.mu.Lock()
	if cur, ok := h.sched.sessions[id]; ok && cur.decided.Equal(t.decided) { // no CCR meanwhile
		h.sched.sessions[id] = tracked{user: t.user, decided: now}
	}
	h.sched.mu.Unlock()
	return true
}

// cachedSubscriber looks a subscriber up without waiting on a remote source when it can (LDAP's
// cache: the schedule must not hammer the directory every round).
func (h *Handler) cachedSubscriber(ctx context.Context, user string) (*subscriber.Subscriber, bool) {
	if c, ok := h.Subscribers.(subscriber.CachedSource); ok {
		if sub, ok := c.CachedLookup(user); ok {
			return sub, true
		}
	}
	sub, code := h.lookup(ctx, user)
	return sub, code == diam.Success
}

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}
