package coa

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"layeh.com/radius"

	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/policy"
	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// PolicyTrigger is the accounting pipeline's step after the store write (aaa.Acct.Stored): it
// carries out what the policy decided on an update the store accepted (policy.Actions) — a
// Disconnect-Request to the session's NAS (e.g. quota exhausted), or a CoA-Request with the
// policy's attributes (a Lua policy's coa()) — in the background. The accounting reply never
// waits for it. One session is not disconnected again within ResendAfter (the
// NAS may keep sending interims until it acts, and each would otherwise trigger a new
// request).
type PolicyTrigger struct {
	Store       session.Store // read for the stored session the request is built from
	Sender      *Sender
	ResendAfter time.Duration
	// Timeout bounds one request (coa.policyTimeout): the session's read and the request
	// with its retransmissions.
	Timeout time.Duration
	Log     *slog.Logger

	sem      chan struct{}
	mu       sync.Mutex
	lastSent map[session.Key]time.Time
	wg       sync.WaitGroup
	ctx      context.Context
	cancel   context.CancelFunc
}

// NewPolicyTrigger reads sessions from st; concurrency bounds the requests in flight,
// timeout each of them (0 takes the configuration's default).
func NewPolicyTrigger(st session.Store, s *Sender, resendAfter, timeout time.Duration, concurrency int, log *slog.Logger) *PolicyTrigger {
	if timeout <= 0 {
		timeout = config.Default().CoA.PolicyTimeout.D()
	}
	p := &PolicyTrigger{Store: st, Sender: s, ResendAfter: resendAfter, Timeout: timeout, Log: log,
		sem: make(chan struct{}, concurrency), lastSent: map[session.Key]time.Time{}}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p
}

// Stored carries out the policy's actions on an update the store accepted; it never blocks.
func (p *PolicyTrigger) Stored(u *session.Update, a policy.Actions) {
	switch {
	case u.Kind == session.KindStop:
	case a.Disconnect != "":
		p.trigger(u.Session.Key, a.Disconnect, TriggerPolicy, nil)
	case len(a.CoA) > 0:
		p.trigger(u.Session.Key, "coa", TriggerPolicy, a.CoA)
	}
}

// UserCoA sends a CoA-Request carrying attrs to every active RADIUS session of user, in the
// background, except the sessions of NAS skipNAS (the Gx sessions themselves): the Gx policy
// server's quota reaching the subscriber's other accesses. Each session is subject to
// ResendAfter as the other policy requests are.
func (p *PolicyTrigger) UserCoA(user, skipNAS string, attrs radius.Attributes) {
	if user == "" || len(attrs) == 0 {
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		ctx, cancel := context.WithTimeout(p.ctx, p.Timeout)
		defer cancel()
		sessions, err := p.Store.ByUser(ctx, user)
		if err != nil {
			p.Log.Warn("coa: gx quota: the subscriber's sessions not readable", "user", user, "err", err)
			return
		}
		for _, s := range sessions {
			if s.Key.NAS != skipNAS {
				p.trigger(s.Key, "gx quota", TriggerGxQuota, attrs)
			}
		}
	}()
}

// trigger sends a Disconnect-Request, or a CoA-Request carrying attrs when attrs is set;
// reason is for the log, label the requests' trigger label.
func (p *PolicyTrigger) trigger(k session.Key, reason, label string, attrs radius.Attributes) {
	now := time.Now()
	p.mu.Lock()
	if last, ok := p.lastSent[k]; ok && now.Sub(last) < p.ResendAfter {
		p.mu.Unlock()
		return
	}
	for key, t := range p.lastSent { // keep the map bounded by what is recent
		if len(p.lastSent) < 4096 {
			break
		}
		if now.Sub(t) >= p.ResendAfter {
			delete(p.lastSent, key)
		}
	}
	select {
	case p.sem <- struct{}{}:
	default:
		p.mu.Unlock()
		p.Sender.Metrics.policySkipped.Inc()
		return
	}
	p.lastSent[k] = now
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer func() { <-p.sem; p.wg.Done() }()
		ctx, cancel := context.WithTimeout(p.ctx, p.Timeout)
		defer cancel()
		sess, err := p.Store.Get(ctx, k)
		if err != nil {
			p.Log.Warn("coa: policy disconnect: session not readable", "nas", k.NAS, "session", k.ID, "err", err)
			return
		}
		if attrs != nil {
			p.Log.Info("coa: policy CoA", "nas", k.NAS, "session", k.ID, "user", sess.UserName, "reason", reason, "attributes", len(attrs))
			p.Sender.CoA(ctx, sess, attrs, label)
			return
		}
		p.Log.Info("coa: policy disconnect", "nas", k.NAS, "session", k.ID, "user", sess.UserName, "reason", reason)
		p.Sender.Disconnect(ctx, sess, label)
	}()
}

// Close waits for the requests in flight (bounded by ctx, then cancelled); the store stays
// open for its owner to close after.
func (p *PolicyTrigger) Close(ctx context.Context) {
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		p.cancel()
	}
	p.cancel()
	p.wg.Wait()
}
