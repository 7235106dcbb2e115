package app

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/openaaa/openaaa/services/policing/internal/diameter"
	"github.com/openaaa/openaaa/services/policing/internal/gx"
	"github.com/openaaa/openaaa/services/policing/internal/policy"
	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
	"github.com/openaaa/openaaa/services/policing/internal/tlsfiles"
)

// startDiameter opens the Diameter listener when enabled (docs/diameter-gx.md), serving the
// applications in apps (Gx).
func (n *Node) startDiameter(apps map[uint32]diameter.Handler) error {
	c := n.Config.Diameter
	if !c.Enabled {
		return nil
	}
	if err := gx.LoadDictionary(); err != nil {
		return errors.New("diameter: the Gx dictionary: " + err.Error())
	}
	peers := make([]diameter.Peer, 0, len(c.Peers))
	for _, p := range c.Peers {
		netw, _ := p.Network() // validated with the configuration
		peers = append(peers, diameter.Peer{OriginHost: p.OriginHost, OriginRealm: p.OriginRealm, Network: netw})
	}
	opt := diameter.Options{OriginHost: c.OriginHost, OriginRealm: c.OriginRealm, ServedHosts: c.ServedHosts, VendorID: c.VendorID,
		Peers: peers, Apps: apps, MaxInFlight: c.MaxInFlight, Log: n.Log}
	if t := c.TLS; t.Address != "" {
		opt.TLS = &tlsfiles.Files{CertFile: t.CertFile, KeyFile: t.KeyFile, CAFile: t.CAFile, Name: "diameter", Log: n.Log}
		opt.TLSAddress = t.Address
		n.Reloader.Mark(t.CertFile, t.KeyFile, t.CAFile)
		if _, err := opt.TLS.Reload(); err != nil {
			return errors.New("diameter.tls: " + err.Error())
		}
	}
	s, err := diameter.Listen(c.Address, opt)
	if err != nil {
		return errors.New("diameter.address: " + err.Error())
	}
	if opt.TLS != nil {
		// The certificates reload with the other mounted files (app/reload.go).
		n.Reloader.Watch("diameter-certificates", []string{c.TLS.CertFile, c.TLS.KeyFile, c.TLS.CAFile}, func() error {
			_, err := opt.TLS.Reload()
			return err
		})
	}
	n.Diameter = s
	n.DiameterAddr = s.Addr()
	if n.gx != nil {
		n.gx.Peers = s // RARs leave over the PCEFs' connections to this node
		n.startPolicyPush()
	}
	return nil
}

// policyPushConcurrency bounds the RARs of one round of data policy changes in flight.
const policyPushConcurrency = 16

// startPolicyPush sends, every diameter.scheduleInterval, the RARs of the data policies'
// changes between CCRs — rule windows that opened or closed, quotas that ran out
// (gx/schedule.go) — to the sessions this node holds.
func (n *Node) startPolicyPush() {
	stop, done := make(chan struct{}), make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(done)
		t := time.NewTicker(n.Config.Diameter.ScheduleInterval.D())
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			n.gx.PushPolicy(ctx, policyPushConcurrency)
		}
	}()
	n.stopPolicyPush = func() { close(stop); cancel(); <-done }
}

// stopDiameter closes the peer connections (PCEFs reconnect to another node) before the
// store closes.
func (n *Node) stopDiameter() error {
	if n.stopPolicyPush != nil {
		n.stopPolicyPush()
		n.stopPolicyPush = nil
	}
	if n.Diameter == nil {
		return nil
	}
	return n.Diameter.Close()
}

// diameterApps are the Diameter applications this node serves: Gx, on the node's store
// and subscriber source; with policy requests on (coa.policyDisconnect), a Gx session that
// uses the quota sends the subscriber's RADIUS sessions the data policy's throttleAttributes.
func (n *Node) diameterApps(pol *policy.Default) map[uint32]diameter.Handler {
	if !n.Config.Diameter.Enabled {
		return nil
	}
	h := &gx.Handler{Identity: diameter.Identity{Host: n.Config.Diameter.OriginHost, Realm: n.Config.Diameter.OriginRealm},
		Node:        n.diameterNodeName(),
		Subscribers: n.subs.source, Store: n.Store, Log: n.Log}
	if !n.Config.Session.InProcess() {
		h.StoreTimeout = 3 * time.Second
		h.ReplicaWait = 2 * time.Second
	}
	if n.pol.lua != nil { // never a typed nil in the interface
		h.Hooks = n.pol.lua
	}
	if n.policyCoA != nil {
		h.Throttled = func(sub *subscriber.Subscriber) {
			attrs, err := pol.ThrottleAttributes(&sub.Profile)
			if err != nil { // checked at load: only after a dictionary change
				n.Log.Warn("gx: throttle CoA not sent", "user", sub.Username, "err", err.Error())
				return
			}
			n.policyCoA.UserCoA(sub.Username, gx.NAS, attrs)
		}
	}
	n.gx = h
	return map[uint32]diameter.Handler{diameter.GxApplicationID: h}
}

// diameterRegistration is this node's record for RAR forwarding (its Diameter identity, DC
// and admin URL) while Diameter serves, so that a node of any DC asked for a RAR that must
// leave from here forwards the request to this node's admin API (admin/gx.go); nil when
// there is nothing to register (noderegistry.go keeps it fresh).
func (n *Node) diameterRegistration() *session.Node {
	if n.Diameter == nil || n.adm.server == nil {
		return nil
	}
	c := n.Config.Diameter
	url := c.AdminURL
	if url == "" {
		if hp := advertised(n.AdminAddr); hp != "" {
			url = "http://" + hp
		}
	}
	if url == "" {
		n.Log.Warn("diameter: no address to advertise for RAR forwarding: set diameter.adminURL")
		return nil
	}
	n.Log.Info("diameter: registering for RAR forwarding", "node", n.diameterNodeName(), "host", c.OriginHost, "adminURL", url)
	return &session.Node{Name: n.diameterNodeName(), Host: c.OriginHost, AdminURL: url}
}

// diameterNodeName is diameter.nodeName, else host:port (unique per node, the pods of a
// data center sharing one Diameter identity).
func (n *Node) diameterNodeName() string {
	c := n.Config.Diameter
	if c.NodeName != "" {
		return c.NodeName
	}
	host, _ := os.Hostname()
	_, port, _ := net.SplitHostPort(c.Address)
	return host + ":" + port
}

// lookupDiameterNode is the admin API's way to the node holding a PCEF's connection.
func (n *Node) lookupDiameterNode(ctx context.Context, name string) (string, error) {
	reg, ok := n.Store.(session.NodeRegistry)
	if !ok {
		return "", errors.New("the store keeps no node registry")
	}
	node, err := reg.LookupNode(ctx, name)
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
