package gx

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fiorix/go-diameter/v4/diam"

	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// A data policy changes between a session's CCRs, which may be hours apart: its rule windows
// (subscriber.RuleWindow) open and close, and its quota runs out when the subscriber source's
// usedOctets grows (a billing system writes it) or the quota is lowered (a plan change). Each
// node pushes the change by RAR to the sessions whose PCEF connection it holds: it tracks the
// sessions its CCRs opened or updated (the last CCR of a session came through it, so the store
// names it as the holder), and every ScheduleInterval decides each again (Decide, as a CCR-U
// without usage would) and sends a RAR to those whose rules change. A session that moved to
// another node (the PCEF failed over) is that node's to track from its next CCR; here the RAR
// finds it held elsewhere and forgets it.

// maxTracked bounds the sessions one node watches (about 150 bytes each, more with per-key
// usage); past it a new session's policy changes only at its next CCR.
const maxTracked = 1 << 20

// tracked is a session watched for its data policy's changes.
type tracked struct {
	user    string
	decided time.Time // when its policy was last applied (a CCA or a RAR)
	used    Used      // the session's own usage at its last CCR (without the source's usedOctets)
}

// schedule is the set of watched sessions of a Handler.
type schedule struct {
	mu       sync.Mutex
	sessions map[string]tracked
}

// track watches a session (CCR-I/U answered here, used its own usage so far) whose policy has
// windows or quotas; untrack forgets it. A throttled session is not tracked (p nil): the
// throttle rule replaced every rule, and its quota can only run out once.
func (h *Handler) track(sessionID, user string, p *subscriber.DataPolicy, decided time.Time, used Used) {
	if p == nil || len(p.Windows) == 0 && p.QuotaOctets == 0 && len(p.Monitoring) == 0 {
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
	h.sched.sessions[sessionID] = tracked{user: user, decided: decided, used: used}
	h.Metrics.trackedSessions.Set(float64(len(h.sched.sessions)))
}

func (h *Handler) untrack(sessionID string) {
	h.sched.mu.Lock()
	defer h.sched.mu.Unlock()
	if _, ok := h.sched.sessions[sessionID]; ok {
		delete(h.sched.sessions, sessionID)
		h.Metrics.trackedSessions.Set(float64(len(h.sched.sessions)))
	}
}

// PushPolicy decides every watched session again and sends a RAR to each whose rules change —
// its rule windows opened or closed since its last decision, or its quota ran out — at most
// concurrency at once, and returns how many RARs it sent. The node calls it every
// ScheduleInterval (app/diameter.go).
func (h *Handler) PushPolicy(ctx context.Context, concurrency int) int {
	now := h.now()
	h.sched.mu.Lock()
	due := maps.Clone(h.sched.sessions)
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
		u := t.used
		u.Octets += sub.Profile.UsedOctets
		d := Decide(sub.Profile.DataPolicy, Update, u, t.decided, now)
		if len(d.Install) == 0 && len(d.Remove) == 0 && len(d.RemoveBases) == 0 && !d.Throttled {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if h.push(ctx, id, t, sub, d, now) {
				sent.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(sent.Load())
}

// push sends one session its policy change and records the outcome; true when a RAR left. A
// session the RAR throttled is marked so in the store (GxThrottled, as a CCR-U that used the
// quota would), without counting as one of the PCEF's requests (WriteOptions.Push): its
// next CCA-U must not remove the rules again, nor its next CC-Request-Number look repeated.
func (h *Handler) push(ctx context.Context, id string, t tracked, sub *subscriber.Subscriber, d Decision, now time.Time) bool {
	cause := "window"
	if d.Throttled || len(d.Exhausted) > 0 {
		cause = "quota"
	}
	rctx, cancel := h.rarContext(ctx)
	defer cancel()
	code, err := h.rarRules(rctx, id, d.Install, d.Remove, d.RemoveBases)
	var elsewhere *HeldElsewhere
	switch {
	case errors.Is(err, session.ErrNotFound) || errors.As(err, &elsewhere):
		h.untrack(id)
		h.Metrics.scheduledRARs.WithLabelValues(cause, "forgotten").Inc()
		return false
	case err != nil:
		h.Metrics.scheduledRARs.WithLabelValues(cause, "failed").Inc()
		h.Log.Warn("gx: policy RAR not answered; retried next round", "sessionId", id, "cause", cause, "err", err.Error())
		return true
	case code == diam.UnknownSessionID:
		h.untrack(id)
		h.Metrics.scheduledRARs.WithLabelValues(cause, "forgotten").Inc()
		return true
	case code != diam.Success:
		h.Metrics.scheduledRARs.WithLabelValues(cause, "refused").Inc()
		h.Log.Warn("gx: policy RAR refused", "sessionId", id, "cause", cause, "resultCode", code)
	default:
		h.Metrics.scheduledRARs.WithLabelValues(cause, "answered").Inc()
	}
	if code == diam.Success && (d.Throttled || len(d.Exhausted) > 0) {
		upd := session.Session{Key: session.Key{NAS: NAS, ID: id}, MonitoringExhausted: d.Exhausted, LastSeen: now, GxThrottled: d.Throttled}
		if d.Throttled {
			h.Metrics.throttles.Inc()
		}
		if _, err := h.Store.Apply(rctx, &session.Update{Kind: session.KindInterim, Session: upd}, session.WriteOptions{NoSpool: true, Push: true}); err != nil {
			// The PCEF has the new rules; its next CCA-U sends the change again, which it
			// reports as rules it did not have.
			h.Log.Warn("gx: pushed policy not stored", "sessionId", id, "err", err.Error())
		}
		if d.Throttled {
			h.untrack(id)
			if h.Throttled != nil {
				h.Throttled(sub)
			}
			return true
		}
	}
	h.sched.mu.Lock()
	if cur, ok := h.sched.sessions[id]; ok && cur.decided.Equal(t.decided) { // no CCR meanwhile
		used := t.used
		used.Exhausted = slices.Concat(used.Exhausted, d.Exhausted)
		h.sched.sessions[id] = tracked{user: t.user, decided: now, used: used}
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
