package app

import (
	"context"

	"github.com/openaaa/openaaa/services/policing/internal/coa"
	"github.com/openaaa/openaaa/services/policing/internal/policy"
	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// coaPart is the CoA/Disconnect sender (admin API, CLI) and, when policy disconnects are on,
// the accounting step after the store write that disconnects a session the policy marks
// (docs/coa.md).
type coaPart struct {
	d       *deps
	store   *storePart
	radius  *radiusPart // the NAS table in force
	sender  *coa.Sender
	trigger *coa.PolicyTrigger // nil when coa.policyDisconnect is off
}

func newCoA(d *deps, st *storePart, r *radiusPart) *coaPart {
	return &coaPart{d: d, store: st, radius: r}
}

func (p *coaPart) Start(context.Context) error {
	c := p.d.cfg.CoA
	p.sender = &coa.Sender{Store: p.store.store, Clients: p.radius.clients,
		Timeout: c.Timeout.D(), Retries: c.Retries, Log: p.d.log, Metrics: p.d.m.coa}
	if c.PolicyDisconnect {
		p.trigger = coa.NewPolicyTrigger(p.store.store, p.sender, c.ResendAfter.D(), c.PolicyTimeout.D(), c.Concurrency, p.d.log)
	}
	return nil
}

// Stop waits for the policy's requests in flight (bounded by ctx): they read the store,
// which closes after.
func (p *coaPart) Stop(ctx context.Context) error {
	if p.trigger != nil {
		p.trigger.Close(ctx)
	}
	return nil
}

// stored is the accounting step after the store write; nil when policy disconnects are off.
func (p *coaPart) stored() func(*session.Update, policy.Actions) {
	if p.trigger == nil {
		return nil
	}
	return p.trigger.Stored
}
