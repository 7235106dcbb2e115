package app

import (
	"errors"
	"time"

	"github.com/openaaa/openaaa/services/policing/internal/diameter"
	"github.com/openaaa/openaaa/services/policing/internal/gx"
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
	s, err := diameter.Listen(c.Address, diameter.Options{OriginHost: c.OriginHost, OriginRealm: c.OriginRealm,
		Peers: peers, Apps: apps, MaxInFlight: c.MaxInFlight, Log: n.Log})
	if err != nil {
		return errors.New("diameter.address: " + err.Error())
	}
	n.Diameter = s
	n.DiameterAddr = s.Addr()
	if n.gx != nil {
		n.gx.Peers = s // RARs leave over the PCEFs' connections to this node
	}
	return nil
}

// stopDiameter closes the peer connections (PCEFs reconnect to another node) before the
// store closes.
func (n *Node) stopDiameter() error {
	if n.Diameter == nil {
		return nil
	}
	return n.Diameter.Close()
}

// diameterApps are the Diameter applications this node serves: Gx, on the node's store
// and subscriber source.
func (n *Node) diameterApps() map[uint32]diameter.Handler {
	if !n.Config.Diameter.Enabled {
		return nil
	}
	h := &gx.Handler{Identity: diameter.Identity{Host: n.Config.Diameter.OriginHost, Realm: n.Config.Diameter.OriginRealm},
		Subscribers: n.Subscribers, Store: n.Store, Log: n.Log}
	if !n.Config.Session.InProcess() {
		h.StoreTimeout = 3 * time.Second
	}
	if n.lua != nil { // never a typed nil in the interface
		h.Hooks = n.lua
	}
	n.gx = h
	return map[uint32]diameter.Handler{diameter.GxApplicationID: h}
}
