// Package proxy forwards accounting requests, after local processing, to a pool of upstream
// RADIUS accounting servers (docs/proxy.md).
//
// Two modes. In queue mode (the default) the request is appended to a durable local queue
// (the spool: fsync'd segment files) before the NAS gets its Accounting-Response, and a
// background loop delivers the queue to the pool; a slow or dead upstream then costs the NAS
// nothing and loses nothing. In sync mode the NAS is answered only after an upstream
// answered, within syncTimeout; when the pool fails the NAS gets no reply and retransmits.
//
// Pool: failover (the first live upstream takes everything) or loadbalance (round robin
// over the live ones). An upstream is marked dead after deadAfter failed exchanges and
// revived by a Status-Server it answers (RFC 5997), or after reviveAfter when health checks
// are off. Each exchange retransmits the same datagram with a doubling timer (RFC 5080) and
// accepts only a reply whose authenticator verifies and which echoes the one Proxy-State we
// added (Proxy-States of the NAS are not forwarded: we answered the NAS ourselves).
package proxy

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"
	"layeh.com/radius/rfc2866"

	"github.com/openaaa/openaaa/internal/radiusx"
	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/metrics"
	"github.com/openaaa/openaaa/services/policing/internal/nas"
	"github.com/openaaa/openaaa/services/policing/internal/spool"
)

// Proxy is the accounting proxy. Safe for concurrent use.
type Proxy struct {
	cfg       config.Proxy
	log       *slog.Logger
	m         *Metrics
	upstreams []*upstream
	rr        atomic.Uint32
	queue     *queue // nil in sync mode
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

// New builds the proxy from its configuration (secrets are read now) and starts the health
// checks and, in queue mode, the queue. m are the node's metrics (nil: unregistered ones).
func New(cfg config.Proxy, log *slog.Logger, m *Metrics) (*Proxy, error) {
	if log == nil {
		log = slog.Default()
	}
	if m == nil {
		m = NewMetrics(metrics.Factory{}, metrics.New(metrics.Factory{}))
	}
	p := &Proxy{cfg: cfg, log: log, m: m}
	for i, uc := range cfg.Upstreams {
		secret, err := nas.ReadSecret(uc.SecretFile)
		if err != nil {
			return nil, fmt.Errorf("proxy.upstreams[%d].secretFile: %w", i, err)
		}
		u := &upstream{name: uc.Name, addr: uc.Address, secret: secret, requireMA: uc.RequireMessageAuthenticator, m: m}
		u.alive.Store(true)
		p.m.upstreamUp.WithLabelValues(u.name).Set(1)
		p.upstreams = append(p.upstreams, u)
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	if cfg.Mode == "queue" {
		sp, err := spool.Open(spool.Options{Dir: cfg.Queue.Dir, MaxBytes: cfg.Queue.MaxBytes, DeliverWithin: cfg.Queue.DeliverWithin.D(), Log: log})
		if err != nil {
			return nil, fmt.Errorf("proxy.queue.dir: %w", err)
		}
		p.queue = &queue{p: p, sp: sp, wake: make(chan struct{}, 1), batch: cfg.Queue.Concurrency}
		p.m.queueRecords.Set(float64(sp.Records()))
		p.wg.Add(1)
		go p.queue.run()
	}
	if cfg.StatusInterval > 0 {
		p.wg.Add(1)
		go p.health()
	}
	return p, nil
}

// Forward passes on an accounting request that was processed locally. In queue mode it
// returns once the request is durably queued; in sync mode once an upstream answered. An
// error means the request was not taken (sync: the NAS must not be answered).
func (p *Proxy) Forward(ctx context.Context, req *radius.Packet, from netip.AddrPort) error {
	attrs := forwardAttributes(req, from)
	if p.queue != nil {
		if err := p.queue.enqueue(attrs); err != nil {
			// The request is stored locally and the NAS is answered: the upstream copy is lost.
			p.m.forwarded.WithLabelValues("queue", "lost").Inc()
			p.log.Warn("accounting request not queued for the upstream", "err", err)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.SyncTimeout.D())
	defer cancel()
	if err := p.deliver(ctx, attrs); err != nil {
		p.m.forwarded.WithLabelValues("sync", "failed").Inc()
		return err
	}
	p.m.forwarded.WithLabelValues("sync", "ok").Inc()
	return nil
}

// forwardAttributes copies what the upstream gets: every attribute of the NAS except
// Message-Authenticator and Proxy-State (they belong to the NAS↔us hop), plus the NAS's
// address as NAS-IP-Address when the NAS did not send one.
func forwardAttributes(req *radius.Packet, from netip.AddrPort) radius.Attributes {
	out := make(radius.Attributes, 0, len(req.Attributes)+1)
	hasNASIP := false
	for _, a := range req.Attributes {
		switch a.Type {
		case radiusx.TypeMessageAuthenticator, radiusx.TypeProxyState:
			continue
		case rfc2865.NASIPAddress_Type:
			hasNASIP = true
		}
		out = append(out, a)
	}
	if a := from.Addr().Unmap(); !hasNASIP && a.Is4() {
		b := a.As4()
		out = append(out, &radius.AVP{Type: rfc2865.NASIPAddress_Type, Attribute: b[:]})
	}
	return out
}

func (p *Proxy) opts() exchangeOpts {
	return exchangeOpts{timeout: p.cfg.Timeout.D(), maxTimeout: p.cfg.MaxTimeout.D(),
		retries: p.cfg.Retries, maxProxyState: p.cfg.MaxProxyState}
}

// candidates lists the live upstreams in the order to try them.
func (p *Proxy) candidates() []*upstream {
	var live []*upstream
	for _, u := range p.upstreams {
		if !u.alive.Load() && p.cfg.StatusInterval == 0 &&
			time.Since(time.Unix(0, u.deadSince.Load())) >= p.cfg.ReviveAfter.D() {
			p.markAlive(u, "revive timer")
		}
		if u.alive.Load() {
			live = append(live, u)
		}
	}
	if p.cfg.Strategy == "loadbalance" && len(live) > 1 {
		k := int(p.rr.Add(1)) % len(live)
		live = append(live[k:], live[:k]...)
	}
	return live
}

// deliver sends one request to the pool: the candidates in turn until one answers.
func (p *Proxy) deliver(ctx context.Context, attrs radius.Attributes) error {
	var errs []error
	for _, u := range p.candidates() {
		p.m.transactions.WithLabelValues("proxy").Inc()
		_, err := u.exchange(ctx, radius.CodeAccountingRequest, attrs, p.opts())
		if err == nil {
			p.m.requests.WithLabelValues(u.name, "ok").Inc()
			u.fails.Store(0)
			return nil
		}
		if errors.Is(err, errTimeout) {
			p.m.requests.WithLabelValues(u.name, "timeout").Inc()
		} else {
			p.m.requests.WithLabelValues(u.name, "error").Inc()
		}
		if ctx.Err() != nil {
			return err
		}
		p.failed(u, err)
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return errNoUpstream
	}
	return errors.Join(errs...)
}

func (p *Proxy) failed(u *upstream, err error) {
	if int(u.fails.Add(1)) >= p.cfg.DeadAfter && u.alive.CompareAndSwap(true, false) {
		u.deadSince.Store(time.Now().UnixNano())
		p.m.upstreamUp.WithLabelValues(u.name).Set(0)
		p.log.Warn("proxy upstream marked dead", "upstream", u.name, "address", u.addr, "err", err.Error())
	}
}

func (p *Proxy) markAlive(u *upstream, why string) {
	u.fails.Store(0)
	if u.alive.CompareAndSwap(false, true) {
		p.m.upstreamUp.WithLabelValues(u.name).Set(1)
		p.log.Info("proxy upstream alive again", "upstream", u.name, "address", u.addr, "by", why)
		if p.queue != nil {
			p.queue.poke()
		}
	}
}

// health sends Status-Server to every upstream each interval: a dead one that answers is
// alive again; a live one that does not answer counts a failure.
func (p *Proxy) health() {
	defer p.wg.Done()
	t := time.NewTicker(p.cfg.StatusInterval.D())
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
		}
		var wg sync.WaitGroup
		for _, u := range p.upstreams {
			wg.Add(1)
			go func() {
				defer wg.Done()
				o := p.opts()
				ctx, cancel := context.WithTimeout(p.ctx, p.cfg.StatusInterval.D())
				defer cancel()
				if err := u.statusServer(ctx, o); err != nil {
					p.m.statusChecks.WithLabelValues(u.name, "fail").Inc()
					if p.ctx.Err() == nil && u.alive.Load() {
						p.failed(u, err)
					}
					return
				}
				p.m.statusChecks.WithLabelValues(u.name, "ok").Inc()
				p.markAlive(u, "Status-Server")
			}()
		}
		wg.Wait()
	}
}

// Pending returns how many requests wait in the queue (0 in sync mode).
func (p *Proxy) Pending() int {
	if p.queue == nil {
		return 0
	}
	return p.queue.sp.Records()
}

// Drain waits until the queue is delivered to an upstream of the pool (any live one: the
// strategy and the health checks as usual) or ctx ends, and returns how many requests are
// left. Call it once no more requests come (the listeners are shut), before Close.
func (p *Proxy) Drain(ctx context.Context) int {
	if p.queue == nil {
		return 0
	}
	p.queue.poke()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for p.queue.sp.Pending() {
		select {
		case <-ctx.Done():
			return p.queue.sp.Records()
		case <-t.C:
		}
	}
	return 0
}

// Close stops the health checks and the queue; queued requests stay on disk for the next
// start (Drain delivers them first).
func (p *Proxy) Close() error {
	p.cancel()
	p.wg.Wait()
	if p.queue != nil {
		return p.queue.sp.Close()
	}
	return nil
}

// u32 reads an integer attribute, 0 when absent.
func u32(a radius.Attributes, t radius.Type) uint32 {
	v, ok := a.Lookup(t)
	if !ok || len(v) != 4 {
		return 0
	}
	return binary.BigEndian.Uint32(v)
}

// withDelay returns attrs with Acct-Delay-Time raised by the time spent in the queue
// (RFC 2866 §5.2: how long the request has been trying to reach the server).
func withDelay(attrs radius.Attributes, queued time.Duration) radius.Attributes {
	secs := uint32(queued / time.Second)
	if secs == 0 {
		return attrs
	}
	out := make(radius.Attributes, 0, len(attrs)+1)
	for _, a := range attrs {
		if a.Type != rfc2866.AcctDelayTime_Type {
			out = append(out, a)
		}
	}
	out = append(out, &radius.AVP{Type: rfc2866.AcctDelayTime_Type, Attribute: radius.NewInteger(u32(attrs, rfc2866.AcctDelayTime_Type) + secs)})
	return out
}
