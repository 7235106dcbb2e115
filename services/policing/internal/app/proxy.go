package app

import (
	"context"

	"github.com/openaaa/openaaa/services/policing/internal/aaa"
	"github.com/openaaa/openaaa/services/policing/internal/proxy"
	"github.com/openaaa/openaaa/services/policing/internal/radiusd"
)

// startProxy starts the accounting proxy when upstreams are configured and hooks it
// behind local accounting processing (docs/proxy.md).
func (n *Node) startProxy(acct *aaa.Acct) error {
	if !n.Config.Proxy.Enabled() {
		return nil
	}
	p, err := proxy.New(n.Config.Proxy, n.Log)
	if err != nil {
		return err
	}
	n.Proxy = p
	acct.Forward = func(ctx context.Context, r *radiusd.Request) error {
		return p.Forward(ctx, r.Packet, r.RemoteAddr)
	}
	n.Log.Info("accounting proxy started", "mode", n.Config.Proxy.Mode, "strategy", n.Config.Proxy.Strategy,
		"upstreams", len(n.Config.Proxy.Upstreams), "queued", p.Pending())
	return nil
}

// stopProxy stops the proxy after the RADIUS server drained (requests in flight may still
// queue); queued requests stay on disk for the next start.
func (n *Node) stopProxy() error {
	if n.Proxy == nil {
		return nil
	}
	return n.Proxy.Close()
}
