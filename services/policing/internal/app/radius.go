package app

import (
	"context"
	"fmt"

	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/aaa"
	"github.com/openaaa/openaaa/services/policing/internal/nas"
	"github.com/openaaa/openaaa/services/policing/internal/radiusd"
)

// radiusPart is the RADIUS server: the worker pool that the UDP listeners, RadSec and EAP
// forwarding hand their requests to. Its Stop stops reading every socket and answers what
// is in flight, so it stops after the listeners that feed it and before what its handlers
// use (EAP, the store, the proxy).
type radiusPart struct {
	d       *deps
	initial *nas.Table // the NAS table read at start
	server  *radiusd.Server
}

func newRadius(d *deps, clients *nas.Table) *radiusPart { return &radiusPart{d: d, initial: clients} }

func (r *radiusPart) Start(context.Context) error {
	c := r.d.cfg.Radius
	r.server = radiusd.New(radiusd.Options{Inline: r.d.cfg.InlineDispatch(), Workers: c.Workers, QueueSize: c.QueueSize,
		MaxQueueWait: c.MaxQueueWait.D(), Readers: c.Readers, DuplicateWindow: c.DuplicateWindow.D(),
		SocketBuffer: c.SocketBuffer, Log: r.d.log, Metrics: r.d.m.shared}, r.initial)
	return nil
}

func (r *radiusPart) Stop(ctx context.Context) error { return r.server.Shutdown(ctx) }

// clients is the NAS table in force: the server's, which the clients reload swaps, once it
// runs. The CoA sender, which starts before it, asks at each request.
func (r *radiusPart) clients() *nas.Table {
	if r.server == nil {
		return r.initial
	}
	return r.server.Clients()
}

// handlersPart builds the RADIUS handlers once the parts they use have started, each with
// all its collaborators: auth (subscribers, policy, EAP and its forwarding, the auth log),
// acct (the store, the policy's CoA after a write, the proxy).
type handlersPart struct {
	d     *deps
	pol   *policyPart
	subs  *subscribersPart
	store *storePart
	coa   *coaPart
	proxy *proxyPart
	eap   *eapPart

	auth       *aaa.Auth
	acct       *aaa.Acct
	forwarding *eapForwarding // nil when eap.forward is off (eapforward.go)
}

func newHandlers(d *deps, pol *policyPart, subs *subscribersPart, st *storePart, co *coaPart, px *proxyPart, ep *eapPart) *handlersPart {
	return &handlersPart{d: d, pol: pol, subs: subs, store: st, coa: co, proxy: px, eap: ep}
}

func (h *handlersPart) Start(context.Context) error {
	cfg := h.d.cfg
	fwd, err := newEAPForwarding(h.d, h.store.registry, h.eap.server)
	if err != nil {
		return err
	}
	h.forwarding = fwd
	h.auth = &aaa.Auth{Subscribers: h.subs.source, Policy: h.pol.decide, Log: h.d.log, EAP: h.eap.server,
		Forward: fwd.forwarder(), AuthLog: h.store.authLog, Metrics: h.d.m.aaa}
	if cfg.Subscribers.Source != "file" {
		h.auth.LookupTimeout = cfg.Subscribers.LDAP.LookupTimeout.D()
	}
	// Superseding writes a Stop that, on Cassandra, can race the old session's last messages
	// in another DC (the row is read, merged and written): in-process stores only for now.
	h.acct = &aaa.Acct{Store: h.store.store, Subscribers: h.subs.source, Policy: h.pol.decide, Log: h.d.log,
		SupersedeStale: cfg.Session.SupersedeStale && cfg.Session.InProcess(),
		Stored:         h.coa.stored(), Forward: h.proxy.forward(), Metrics: h.d.m.aaa}
	if !cfg.Session.InProcess() {
		h.acct.StoreTimeout = cfg.Session.Cassandra.WriteTimeout.D()
	}
	return nil
}

func (h *handlersPart) Stop(context.Context) error { return nil }

// radiusListener opens the UDP sockets of radius.authAddress or radius.acctAddress, one per
// address (several: a multi-homed node that listens on chosen addresses only). The server
// closes them when it stops.
type radiusListener struct {
	d        *deps
	radius   *radiusPart
	handlers *handlersPart
	kind     radiusd.Kind
}

func newRADIUSListener(d *deps, r *radiusPart, h *handlersPart, kind radiusd.Kind) *radiusListener {
	return &radiusListener{d: d, radius: r, handlers: h, kind: kind}
}

func (l *radiusListener) Start(context.Context) error {
	key, addrs, h := "radius.authAddress", l.d.cfg.Radius.AuthAddress, radiusd.Handler(l.handlers.auth)
	if l.kind == radiusd.Acct {
		key, addrs, h = "radius.acctAddress", l.d.cfg.Radius.AcctAddress, l.handlers.acct
	}
	for i, a := range config.Addresses(addrs) {
		c, err := l.radius.server.Listen(a, l.kind, h)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		if i == 0 {
			l.d.listening(key, c.LocalAddr())
		}
	}
	return nil
}

func (l *radiusListener) Stop(context.Context) error { return nil }
