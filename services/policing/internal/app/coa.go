package app

import (
	"context"

	"github.com/openaaa/openaaa/services/policing/internal/aaa"
	"github.com/openaaa/openaaa/services/policing/internal/coa"
	"github.com/openaaa/openaaa/services/policing/internal/nas"
)

// startCoA builds the CoA/Disconnect sender (admin API, CLI) and, when policy disconnects
// are on, makes it the accounting step after the store write, so that a session the policy
// marks is disconnected (docs/coa.md).
func (n *Node) startCoA(acct *aaa.Acct) {
	c := n.Config.CoA
	n.CoA = &coa.Sender{Store: n.Store, Clients: func() *nas.Table { return n.Radius.Clients() },
		Timeout: c.Timeout.D(), Retries: c.Retries, Log: n.Log}
	if !c.PolicyDisconnect {
		return
	}
	n.policyCoA = coa.NewPolicyTrigger(n.Store, n.CoA, c.ResendAfter.D(), c.Concurrency, n.Log)
	acct.Stored = n.policyCoA.Stored
}

// stopPolicyCoA waits for the policy's requests in flight (bounded by ctx): they read the
// store, which closes after.
func (n *Node) stopPolicyCoA(ctx context.Context) error {
	if n.policyCoA != nil {
		n.policyCoA.Close(ctx)
	}
	return nil
}
