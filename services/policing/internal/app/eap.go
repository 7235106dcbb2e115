package app

import (
	"crypto/tls"
	"fmt"
	"os"

	"github.com/openaaa/openaaa/services/policing/internal/eap"
	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
	"github.com/openaaa/openaaa/services/policing/internal/tlsfiles"
)

// startEAP builds the EAP server when eap.methods is set (docs/eap.md); its certificates
// reload with the other mounted files.
func (n *Node) startEAP(src subscriber.Source) (*eap.Server, error) {
	c := n.Config.EAP
	if len(c.Methods) == 0 {
		return nil, nil
	}
	opt := eap.Options{NodeID: c.NodeID, MaxConversations: c.MaxConversations, Timeout: c.Timeout.D(),
		RoundTimeout: c.RoundTimeout.D(), TLSMaxVersion: tls.VersionTLS13, TLSIdentity: c.TLSIdentity,
		Subscribers: src, Log: n.Log, TLS: func() *tls.Config { return nil }, AKANetworkName: c.AKANetworkName}
	if c.UsesAKA() {
		sqn, ok := n.Store.(session.SQNCounter)
		if !ok {
			return nil, fmt.Errorf("eap.methods: aka and aka-prime need a session store that keeps sequence numbers (embedded, cassandra, hybrid), not %q", n.Config.Session.Store)
		}
		opt.SQN = sqn
	}
	if c.TLSMaxVersion == "1.2" {
		opt.TLSMaxVersion = tls.VersionTLS12
	}
	// EAP-MD5 conversations live between rounds in the session store, so that a round landing
	// on another node (another DC) continues them (docs/eap.md, "Multi-DC conversations").
	opt.Shared, _ = n.Store.(session.Ephemeral)
	if opt.NodeID == "" {
		opt.NodeID, _ = os.Hostname()
		opt.NodeID = opt.NodeID[:min(len(opt.NodeID), eap.MaxNodeID)]
	}
	for _, m := range c.Methods {
		t, _ := eap.TypeOf(m) // validated
		opt.Methods = append(opt.Methods, t)
	}
	if c.UsesTLS() {
		files := &tlsfiles.Files{CertFile: c.CertFile, KeyFile: c.KeyFile, CAFile: c.CAFile, CRLFile: c.CRLFile, Name: "eap", Log: n.Log}
		paths := []string{c.CertFile, c.KeyFile}
		for _, p := range []string{c.CAFile, c.CRLFile} {
			if p != "" {
				paths = append(paths, p)
			}
		}
		n.Reloader.Mark(paths...)
		if _, err := files.Reload(); err != nil {
			return nil, fmt.Errorf("eap: %w", err)
		}
		opt.TLS = files.Config
		n.Reloader.Watch("certificates", paths, func() error {
			_, err := files.Reload()
			return err
		})
		if err := n.startTicketKeys(&opt); err != nil {
			return nil, err
		}
	}
	n.eap = eap.New(opt)
	return n.eap, nil
}

// stopEAP forgets the conversations (after the RADIUS server drained).
func (n *Node) stopEAP() {
	if n.eap != nil {
		n.eap.Close()
	}
}

// startTicketKeys sets the session ticket keys of EAP resumption (eap.resumption): the
// shared key file, reloaded when it changes (a rotated Secret), or a key of this process.
func (n *Node) startTicketKeys(opt *eap.Options) error {
	r := n.Config.EAP.Resumption
	if !r.Enabled {
		return nil
	}
	opt.TicketLifetime = r.Lifetime.D()
	if r.TicketKeyFile == "" {
		opt.TicketKeys = tlsfiles.NewRandomTicketKeys().Keys
		n.Log.Warn("eap.resumption without ticketKeyFile: sessions resume only on this node, until it restarts")
		return nil
	}
	keys := &tlsfiles.TicketKeys{}
	load := func() error {
		k, err := keys.Load(r.TicketKeyFile)
		if err != nil {
			return fmt.Errorf("eap.resumption.ticketKeyFile: %w", err)
		}
		n.Log.Info("eap ticket keys loaded", "keys", k)
		return nil
	}
	n.Reloader.Mark(r.TicketKeyFile)
	if err := load(); err != nil {
		return err
	}
	opt.TicketKeys = keys.Keys
	n.Reloader.Watch("eap-ticket-keys", []string{r.TicketKeyFile}, load)
	return nil
}
