package app

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/diameter"
	"github.com/openaaa/openaaa/services/policing/internal/gx"
	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
	"github.com/openaaa/openaaa/services/policing/internal/tlsfiles"
)

// diameterPart is the Diameter listener when enabled (docs/diameter-gx.md), serving Gx on
// the node's store and subscriber source.
type diameterPart struct {
	d        *deps
	pol      *policyPart
	subs     *subscribersPart
	store    *storePart
	coa      *coaPart
	server   *diameter.Server
	gx       *gx.Handler // the admin API sends RARs through it; nil when off
	stopPush func()
}

func newDiameter(d *deps, pol *policyPart, subs *subscribersPart, st *storePart, co *coaPart) *diameterPart {
	return &diameterPart{d: d, pol: pol, subs: subs, store: st, coa: co}
}

func (p *diameterPart) Start(context.Context) error {
	c := p.d.cfg.Diameter
	if !c.Enabled {
		return nil
	}
	if err := gx.LoadDictionary(); err != nil {
		return errors.New("diameter: the Gx dictionary: " + err.Error())
	}
	peers := make([]diameter.Peer, 0, len(c.Peers))
	for _, peer := range c.Peers {
		netw, _ := peer.Network() // validated with the configuration
		peers = append(peers, diameter.Peer{OriginHost: peer.OriginHost, OriginRealm: peer.OriginRealm, Network: netw})
	}
	opt := diameter.Options{OriginHost: c.OriginHost, OriginRealm: c.OriginRealm, ServedHosts: c.ServedHosts, VendorID: c.VendorID,
		Peers: peers, MaxInFlight: c.MaxInFlight, RequestTimeout: c.RequestTimeout.D(), FlushTimeout: c.FlushTimeout.D(),
		DPRTimeout: c.DPRTimeout.D(), HandshakeTimeout: c.TLS.HandshakeTimeout.D(), Inline: p.d.cfg.DiameterInline(), Log: p.d.log,
		Metrics: p.d.m.diameter}
	if t := c.TLS; t.Address != "" {
		opt.TLS = &tlsfiles.Files{CertFile: t.CertFile, KeyFile: t.KeyFile, CAFile: t.CAFile, Name: "diameter", Log: p.d.log}
		opt.TLSAddress = t.Address
		p.d.reloader.Mark(t.CertFile, t.KeyFile, t.CAFile)
		if _, err := opt.TLS.Reload(); err != nil {
			return errors.New("diameter.tls: " + err.Error())
		}
	}
	s, err := diameter.New(opt)
	if err != nil {
		return errors.New("diameter.address: " + err.Error())
	}
	p.gx = p.gxHandler(s) // RARs leave over the PCEFs' connections to this node
	s.Handle(diameter.GxApplicationID, p.gx)
	if err := s.Listen(c.Address); err != nil {
		return errors.New("diameter.address: " + err.Error())
	}
	if opt.TLS != nil {
		// The certificates reload with the other mounted files (app/reload.go).
		p.d.reloader.Watch("diameter-certificates", []string{c.TLS.CertFile, c.TLS.KeyFile, c.TLS.CAFile}, func() error {
			_, err := opt.TLS.Reload()
			return err
		})
	}
	p.server = s
	dispatch := "workers"
	if opt.Inline {
		dispatch = "inline"
	}
	p.d.log.Info("diameter listener started", "address", s.Addr().String(), "dispatch", dispatch)
	p.d.listening("diameter.address", s.Addr())
	if opt.TLS != nil {
		p.d.listening("diameter.tls.address", s.TLSAddr())
	}
	p.stopPush = p.startPolicyPush()
	p.d.register(p.registration)
	return nil
}

// Stop sends each peer a DPR (RFC 6733 §5.4), answers the requests in flight within ctx
// (the shutdown's budget), cancelling those left, and closes the peer connections (PCEFs
// reconnect to another node) before the store closes.
func (p *diameterPart) Stop(ctx context.Context) error {
	if p.server == nil {
		return nil
	}
	p.stopPush()
	return p.server.Shutdown(ctx)
}

// gxHandler is the Gx application, sending its RARs through s. With policy requests on
// (coa.policyDisconnect), a Gx session that uses the quota sends the subscriber's RADIUS
// sessions the data policy's throttleAttributes.
func (p *diameterPart) gxHandler(s *diameter.Server) *gx.Handler {
	c := p.d.cfg
	h := &gx.Handler{Identity: diameter.Identity{Host: c.Diameter.OriginHost, Realm: c.Diameter.OriginRealm},
		Node:        diameterNodeName(c.Diameter),
		Subscribers: p.subs.source, Store: p.store.store, Log: p.d.log, Peers: s, RARTimeout: c.Diameter.RARTimeout.D(),
		Metrics: p.d.m.gx}
	if !c.Session.InProcess() {
		h.StoreTimeout = c.Session.Cassandra.WriteTimeout.D()
		h.ReplicaWait = c.Session.Cassandra.ReplicaWait.D()
	}
	if p.pol.lua != nil { // never a typed nil in the interface
		h.Hooks = p.pol.lua
	}
	if trigger, builtin := p.coa.trigger, p.pol.builtin; trigger != nil {
		h.Throttled = func(sub *subscriber.Subscriber) {
			attrs, err := builtin.ThrottleAttributes(&sub.Profile)
			if err != nil { // checked at load: only after a dictionary change
				p.d.log.Warn("gx: throttle CoA not sent", "user", sub.Username, "err", err.Error())
				return
			}
			trigger.UserCoA(sub.Username, gx.NAS, attrs)
		}
	}
	return h
}

// policyPushConcurrency bounds the RARs of one round of data policy changes in flight.
const policyPushConcurrency = 16

// startPolicyPush sends, every diameter.scheduleInterval, the RARs of the data policies'
// changes between CCRs — rule windows that opened or closed, quotas that ran out
// (gx/schedule.go) — to the sessions this node holds.
func (p *diameterPart) startPolicyPush() (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(done)
		t := time.NewTicker(p.d.cfg.Diameter.ScheduleInterval.D())
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
			}
			p.gx.PushPolicy(ctx, policyPushConcurrency)
		}
	}()
	return func() { close(quit); cancel(); <-done }
}

// registration is this node's record for RAR forwarding (its Diameter identity, DC and
// admin URL), so that a node of any DC asked for a RAR that must leave from here forwards
// the request to this node's admin API (admin/gx.go); nil without an admin port or an
// address to advertise.
func (p *diameterPart) registration() *session.Node {
	admin := p.d.addr("admin.address")
	if admin == nil {
		return nil
	}
	c := p.d.cfg.Diameter
	url := c.AdminURL
	if url == "" {
		if hp := advertised(admin); hp != "" {
			url = "http://" + hp
		}
	}
	if url == "" {
		p.d.log.Warn("diameter: no address to advertise for RAR forwarding: set diameter.adminURL")
		return nil
	}
	name := diameterNodeName(c)
	p.d.log.Info("diameter: registering for RAR forwarding", "node", name, "host", c.OriginHost, "adminURL", url)
	return &session.Node{Name: name, Host: c.OriginHost, AdminURL: url}
}

// diameterNodeName is diameter.nodeName, else host:port (unique per node, the pods of a
// data center sharing one Diameter identity).
func diameterNodeName(c config.Diameter) string {
	if c.NodeName != "" {
		return c.NodeName
	}
	host, _ := os.Hostname()
	_, port, _ := net.SplitHostPort(c.Address)
	return host + ":" + port
}

// lookupNode is the admin API's way to the node holding a PCEF's connection.
func (p *diameterPart) lookupNode(ctx context.Context, name string) (string, error) {
	if p.store.registry == nil {
		return "", errors.New("the store keeps no node registry")
	}
	node, err := p.store.registry.LookupNode(ctx, name)
	if err != nil {
		return "", err
	}
	return node.AdminURL, nil
}

// advertised is the host:port of a listener as the other nodes reach it: the wildcard
// replaced by this host's first address that is not loopback (a pod's IP); "" when there is
// none.
func advertised(a net.Addr) string {
	var ip net.IP
	var port int
	switch a := a.(type) {
	case *net.TCPAddr:
		ip, port = a.IP, a.Port
	case *net.UDPAddr:
		ip, port = a.IP, a.Port
	default:
		return ""
	}
	if ip.IsUnspecified() {
		ip = nil
		addrs, _ := net.InterfaceAddrs()
		for _, x := range addrs {
			if in, ok := x.(*net.IPNet); ok && !in.IP.IsLoopback() && !in.IP.IsLinkLocalUnicast() {
				ip = in.IP
				break
			}
		}
		if ip == nil {
			return ""
		}
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(port))
}
