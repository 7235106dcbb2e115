package app

import (
	"context"

	"github.com/openaaa/openaaa/services/policing/internal/proxy"
	"github.com/openaaa/openaaa/services/policing/internal/radiusd"
)

// proxyPart is the accounting proxy when upstreams are configured, behind local accounting
// processing (docs/proxy.md).
type proxyPart struct {
	d     *deps
	proxy *proxy.Proxy // nil when off
}

func newProxy(d *deps) *proxyPart { return &proxyPart{d: d} }

func (p *proxyPart) Start(context.Context) error {
	c := p.d.cfg.Proxy
	if !c.Enabled() {
		return nil
	}
	px, err := proxy.New(c, p.d.log, p.d.m.proxy)
	if err != nil {
		return err
	}
	p.proxy = px
	p.d.log.Info("accounting proxy started", "mode", c.Mode, "strategy", c.Strategy,
		"upstreams", len(c.Upstreams), "queued", px.Pending())
	return nil
}

// Stop stops the proxy after the RADIUS server drained (requests in flight may still
// queue). At shutdown it first delivers the queue to any live upstream within ctx; what is
// left stays on disk for the next start.
func (p *proxyPart) Stop(ctx context.Context) error {
	if p.proxy == nil {
		return nil
	}
	if !p.d.draining.Load() {
		return p.proxy.Close()
	}
	before := p.proxy.Pending()
	left := p.proxy.Drain(ctx)
	err := p.proxy.Close()
	if e := accountDrain(p.d, "proxy", p.d.cfg.Proxy.Queue.Dir, before, left); e != nil {
		err = e
	}
	return err
}

// forward hands an accounting request to the proxy; nil when the proxy is off.
func (p *proxyPart) forward() func(ctx context.Context, r *radiusd.Request) error {
	if p.proxy == nil {
		return nil
	}
	return func(ctx context.Context, r *radiusd.Request) error {
		return p.proxy.Forward(ctx, r.Packet, r.RemoteAddr)
	}
}
