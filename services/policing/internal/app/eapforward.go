package app

import (
	"context"
	"fmt"

	"github.com/openaaa/openaaa/services/policing/internal/eap"
	"github.com/openaaa/openaaa/services/policing/internal/eapforward"
	"github.com/openaaa/openaaa/services/policing/internal/nas"
	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// eapForwarding is what eap.forward sets up (docs/eap.md "Multi-DC conversations"): auth
// forwards the rounds of other nodes' conversations with fwd, and the rounds other nodes
// forward here come in as peer, on the listener (eapForwardListener). Both need the
// inter-node secret; the other nodes find this one in the node registry (noderegistry.go).
type eapForwarding struct {
	fwd  *eapforward.Forwarder
	peer *nas.Client
	self string // this node's EAP node id
}

// newEAPForwarding is nil when eap.forward is off.
// reg is the store's node registry (config.Validate: the store keeps one).
func newEAPForwarding(d *deps, reg session.NodeRegistry, e *eap.Server) (*eapForwarding, error) {
	c := d.cfg.EAP.Forward
	if c.Address == "" || e == nil {
		return nil, nil
	}
	secret, err := nas.ReadSecret(c.SecretFile)
	if err != nil {
		return nil, fmt.Errorf("eap.forward.secretFile: %w", err)
	}
	return &eapForwarding{
		// Every request on this port comes from another node, whatever its address (pods).
		peer: &nas.Client{Name: "eap-forward", Secret: secret, RequireMA: true},
		self: e.NodeID(),
		fwd: &eapforward.Forwarder{Self: e.NodeID(), Secret: secret, Timeout: c.Timeout.D(), Retries: c.Retries, Log: d.log, Metrics: d.m.eapForward,
			Lookup: func(ctx context.Context, node string) (string, error) {
				rec, err := reg.LookupNode(ctx, node)
				if err != nil {
					return "", err
				}
				return rec.EAPForward, nil
			}},
	}, nil
}

// forwarder is auth's forwarder; nil when forwarding is off.
func (f *eapForwarding) forwarder() *eapforward.Forwarder {
	if f == nil {
		return nil
	}
	return f.fwd
}

// eapForwardListener opens eap.forward.address on the RADIUS server, which closes it when
// it stops, and registers this node for forwarding.
type eapForwardListener struct {
	d        *deps
	radius   *radiusPart
	handlers *handlersPart
}

func newEAPForwardListener(d *deps, r *radiusPart, h *handlersPart) *eapForwardListener {
	return &eapForwardListener{d: d, radius: r, handlers: h}
}

func (l *eapForwardListener) Start(context.Context) error {
	f := l.handlers.forwarding
	if f == nil {
		return nil
	}
	s := l.radius.server
	conn, err := s.ListenAs(l.d.cfg.EAP.Forward.Address, f.peer, l.handlers.auth.ForwardedEAP(s.Clients))
	if err != nil {
		return fmt.Errorf("eap.forward.address: %w", err)
	}
	l.d.listening("eap.forward.address", conn.LocalAddr())
	l.d.register(func() *session.Node { return l.registration(f) })
	return nil
}

func (l *eapForwardListener) Stop(context.Context) error { return nil }

// registration is this node's record for EAP forwarding (its EAP node id and forwarding
// address).
func (l *eapForwardListener) registration(f *eapForwarding) *session.Node {
	addr := l.d.cfg.EAP.Forward.Advertise
	if addr == "" {
		addr = advertised(l.d.addr("eap.forward.address"))
	}
	if addr == "" {
		l.d.log.Warn("eap: no address to advertise for forwarding: set eap.forward.advertise")
		return nil
	}
	l.d.log.Info("eap: registering for forwarding", "node", f.self, "address", addr)
	return &session.Node{Name: f.self, EAPForward: addr}
}
