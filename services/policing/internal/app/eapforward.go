package app

import (
	"context"
	"fmt"

	"github.com/openaaa/openaaa/services/policing/internal/aaa"
	"github.com/openaaa/openaaa/services/policing/internal/eapforward"
	"github.com/openaaa/openaaa/services/policing/internal/nas"
	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// startEAPForward opens the listener for the EAP rounds other nodes forward here and lets
// auth forward rounds of other nodes' conversations (eap.forward, docs/eap.md "Multi-DC
// conversations"). Both need the inter-node secret; the other nodes find this one in the
// node registry (noderegistry.go).
func (n *Node) startEAPForward(auth *aaa.Auth) error {
	c := n.Config.EAP.Forward
	if c.Address == "" || n.eap == nil {
		return nil
	}
	reg, ok := n.Store.(session.NodeRegistry)
	if !ok {
		return fmt.Errorf("eap.forward.address: needs a session store with a node registry shared by the nodes (cassandra, hybrid), not %q", n.Config.Session.Store)
	}
	secret, err := nas.ReadSecret(c.SecretFile)
	if err != nil {
		return fmt.Errorf("eap.forward.secretFile: %w", err)
	}
	// Every request on this port comes from another node, whatever its address (pods).
	peer := &nas.Client{Name: "eap-forward", Secret: secret, RequireMA: true}
	conn, err := n.Radius.ListenAs(c.Address, peer, auth.ForwardedEAP(n.Radius.Clients))
	if err != nil {
		return fmt.Errorf("eap.forward.address: %w", err)
	}
	n.EAPForwardAddr = conn.LocalAddr()
	auth.Forward = &eapforward.Forwarder{Self: n.eap.NodeID(), Secret: secret, Timeout: c.Timeout.D(), Retries: c.Retries, Log: n.Log,
		Lookup: func(ctx context.Context, node string) (string, error) {
			rec, err := reg.LookupNode(ctx, node)
			if err != nil {
				return "", err
			}
			return rec.EAPForward, nil
		}}
	return nil
}

// eapRegistration is this node's record for EAP forwarding (its EAP node id and forwarding
// address); nil when forwarding is off.
func (n *Node) eapRegistration() *session.Node {
	if n.EAPForwardAddr == nil {
		return nil
	}
	addr := n.Config.EAP.Forward.Advertise
	if addr == "" {
		addr = advertised(n.EAPForwardAddr)
	}
	if addr == "" {
		n.Log.Warn("eap: no address to advertise for forwarding: set eap.forward.advertise")
		return nil
	}
	n.Log.Info("eap: registering for forwarding", "node", n.eap.NodeID(), "address", addr)
	return &session.Node{Name: n.eap.NodeID(), EAPForward: addr}
}
