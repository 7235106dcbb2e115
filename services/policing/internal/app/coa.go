package app

import (
	"github.com/openaaa/openaaa/services/policing/internal/coa"
	"github.com/openaaa/openaaa/services/policing/internal/nas"
	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// startCoA builds the CoA/Disconnect sender (admin API, CLI) and, when policy disconnects
// are on, wraps the store so that a session the policy marks is disconnected (docs/coa.md).
// It returns the store the handlers use.
func (n *Node) startCoA(st session.Store) session.Store {
	c := n.Config.CoA
	n.CoA = &coa.Sender{Store: st, Clients: func() *nas.Table { return n.Radius.Clients() },
		Timeout: c.Timeout.D(), Retries: c.Retries, Log: n.Log}
	if !c.PolicyDisconnect {
		return st
	}
	ps := coa.NewPolicyStore(st, n.CoA, c.ResendAfter.D(), c.Concurrency, n.Log)
	n.Store = ps
	return ps
}
