package app

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"

	"github.com/openaaa/openaaa/services/policing/internal/eap"
	"github.com/openaaa/openaaa/services/policing/internal/tlsfiles"
)

// eapPart is the EAP server when eap.methods is set (docs/eap.md); its certificates reload
// with the other mounted files.
type eapPart struct {
	d      *deps
	subs   *subscribersPart
	store  *storePart
	server *eap.Server // nil when off
}

func newEAP(d *deps, subs *subscribersPart, st *storePart) *eapPart {
	return &eapPart{d: d, subs: subs, store: st}
}

func (p *eapPart) Start(context.Context) error {
	c := p.d.cfg.EAP
	if len(c.Methods) == 0 {
		return nil
	}
	opt := eap.Options{NodeID: c.NodeID, MaxConversations: c.MaxConversations, Timeout: c.Timeout.D(),
		RoundTimeout: c.RoundTimeout.D(), TLSMaxVersion: tls.VersionTLS13, TLSIdentity: c.TLSIdentity,
		Subscribers: p.subs.source, Log: p.d.log, TLS: func() *tls.Config { return nil }, AKANetworkName: c.AKANetworkName,
		Metrics: p.d.m.eap}
	if c.UsesAKA() {
		opt.SQN = p.store.sqn // config.Validate: the store keeps them
	}
	if c.TLSMaxVersion == "1.2" {
		opt.TLSMaxVersion = tls.VersionTLS12
	}
	// EAP-MD5 conversations live between rounds in the session store, so that a round landing
	// on another node (another DC) continues them (docs/eap.md, "Multi-DC conversations").
	opt.Shared = p.store.shared
	if opt.NodeID == "" {
		opt.NodeID, _ = os.Hostname()
		opt.NodeID = opt.NodeID[:min(len(opt.NodeID), eap.MaxNodeID)]
	}
	for _, m := range c.Methods {
		t, _ := eap.TypeOf(m) // validated
		opt.Methods = append(opt.Methods, t)
	}
	if c.UsesTLS() {
		files := &tlsfiles.Files{CertFile: c.CertFile, KeyFile: c.KeyFile, CAFile: c.CAFile, CRLFile: c.CRLFile, Name: "eap", Log: p.d.log}
		paths := []string{c.CertFile, c.KeyFile}
		for _, p := range []string{c.CAFile, c.CRLFile} {
			if p != "" {
				paths = append(paths, p)
			}
		}
		p.d.reloader.Mark(paths...)
		if _, err := files.Reload(); err != nil {
			return fmt.Errorf("eap: %w", err)
		}
		opt.TLS = files.Config
		p.d.reloader.Watch("certificates", paths, func() error {
			_, err := files.Reload()
			return err
		})
		if err := p.startTicketKeys(&opt); err != nil {
			return err
		}
	}
	p.server = eap.New(opt)
	return nil
}

// Stop forgets the conversations (after the RADIUS server drained).
func (p *eapPart) Stop(context.Context) error {
	if p.server != nil {
		p.server.Close()
	}
	return nil
}

// startTicketKeys sets the session ticket keys of EAP resumption (eap.resumption): the
// shared key file, reloaded when it changes (a rotated Secret), or a key of this process.
func (p *eapPart) startTicketKeys(opt *eap.Options) error {
	r := p.d.cfg.EAP.Resumption
	if !r.Enabled {
		return nil
	}
	opt.TicketLifetime = r.Lifetime.D()
	if r.TicketKeyFile == "" {
		opt.TicketKeys = tlsfiles.NewRandomTicketKeys().Keys
		p.d.log.Warn("eap.resumption without ticketKeyFile: sessions resume only on this node, until it restarts")
		return nil
	}
	keys := &tlsfiles.TicketKeys{}
	load := func() error {
		k, err := keys.Load(r.TicketKeyFile)
		if err != nil {
			return fmt.Errorf("eap.resumption.ticketKeyFile: %w", err)
		}
		p.d.log.Info("eap ticket keys loaded", "keys", k)
		return nil
	}
	p.d.reloader.Mark(r.TicketKeyFile)
	if err := load(); err != nil {
		return err
	}
	opt.TicketKeys = keys.Keys
	p.d.reloader.Watch("eap-ticket-keys", []string{r.TicketKeyFile}, load)
	return nil
}
