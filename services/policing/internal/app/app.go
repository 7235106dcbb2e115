// Package app wires a policing node together from its configuration and runs it until its
// context ends, then drains: stop reading, answer what is in flight, close the store.
package app

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/proxy"
	"github.com/openaaa/openaaa/services/policing/internal/radiusd"
	"github.com/openaaa/openaaa/services/policing/internal/reload"
	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// Node is a running policing node.
type Node struct {
	Config   *config.Config
	Log      *slog.Logger
	LogLevel *slog.LevelVar
	Reloader *reload.Watcher // hot reload of mounted files (reload.go)
	Store    session.Store
	Proxy    *proxy.Proxy // the accounting proxy (proxy.go); nil when off
	d        *deps
	parts    *sequence
	shutdown sync.Once
}

// deps is what every component of a node is built with: the configuration, the logger, the
// reloader of mounted files, the node's metrics (one registry per node: app/metrics.go), and
// what the node's parts tell each other through the node rather than through one another:
// where they listen, what they register in the node registry, whether the node drains.
type deps struct {
	cfg      *config.Config
	log      *slog.Logger
	level    *slog.LevelVar
	reloader *reload.Watcher // nil in a node built only to check its configuration
	m        *nodeMetrics
	// metrics serves /metrics from the node's registry (both ports: startup.go, adminport.go).
	metrics http.Handler
	// draining is set by Shutdown: the node is not ready and its queues are delivered; a
	// start that failed only closes them.
	draining atomic.Bool

	mu            sync.Mutex
	addrs         map[string]net.Addr    // by listen key (listening)
	registrations []func() *session.Node // the node registry's records (noderegistry.go)
}

// afterStoreOpen, when set by a test, runs after the store opened and before the watches are
// added: the end of the window in which a node has read its files and not yet watched them.
var afterStoreOpen func()

// Start builds every part and starts them in order. Errors name the config key at fault.
func Start(ctx context.Context, cfg *config.Config, log *slog.Logger, level *slog.LevelVar) (*Node, error) {
	// The watcher exists before the first read of any file it will watch: each part Marks its
	// files before reading them, so that a change between that read and the watch (which
	// spans the wait for the store) is reloaded at the first poll (reload.Watcher.Mark).
	reg := newRegistry()
	m := newNodeMetrics(reg)
	d := &deps{cfg: cfg, log: log, level: level, reloader: reload.New(log, cfg.Reload.Interval.D(), m.shared),
		m: m, metrics: metricsHandler(reg)}
	d.reloader.Mark(clientFiles(cfg)...)
	clients, err := buildClients(cfg)
	if err != nil {
		return nil, err
	}
	pol := newPolicy(d)
	subs := newSubscribers(d, pol)
	adm := newAdminPort(d)
	st := newStore(d, adm)
	rad := newRadius(d, clients)
	co := newCoA(d, st, rad)
	px := newProxy(d)
	ep := newEAP(d, subs, st)
	hs := newHandlers(d, pol, subs, st, co, px, ep)
	dm := newDiameter(d, pol, subs, st, co)
	// The parts in start order; they stop in reverse. A new listener is one file and one
	// line here.
	n := &Node{Config: cfg, Log: log, LogLevel: level, Reloader: d.reloader, d: d, parts: &sequence{parts: []component{
		pol,
		subs,
		adm, // before the store: a node waiting for it is seen alive and not ready (startup.go)
		// What the node acknowledged and has not delivered yet: at shutdown the spool and
		// the proxy queue are delivered at once, after the listeners stopped (shutdown.go).
		together{&sequence{parts: []component{st, co}}, px},
		ep,
		hs,
		rad,
		newEAPForwardListener(d, rad, hs),
		newRADIUSListener(d, rad, hs, radiusd.Auth),
		newRADIUSListener(d, rad, hs, radiusd.Acct),
		dm,
		newRadSec(d, rad, hs),
		newAdminAPI(d, adm, st, co, pol, dm),
		newNodeRegistry(d, st),
		newReload(d, rad, subs, pol, adm), // stops first: no reload while the node drains
	}}}
	if err := n.parts.Start(ctx); err != nil {
		return nil, err
	}
	n.Store, n.Proxy = st.store, px.proxy
	log.Info("policing started", "store", cfg.Session.Store, "clients", len(clients.All()),
		"auth", addrString(d.addr("radius.authAddress")), "acct", addrString(d.addr("radius.acctAddress")),
		"admin", addrString(d.addr("admin.address")))
	return n, nil
}

// Addr is where the node listens for a listen key (radius.authAddress, admin.address,
// diameter.address, ...): the first socket's address; nil when that listener is off.
func (n *Node) Addr(key string) net.Addr { return n.d.addr(key) }

// listening records where the listener of a listen key listens.
func (d *deps) listening(key string, a net.Addr) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.addrs == nil {
		d.addrs = map[string]net.Addr{}
	}
	d.addrs[key] = a
}

func (d *deps) addr(key string) net.Addr {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.addrs[key]
}

// register adds a record this node keeps in the node registry while it runs, made when the
// registry starts (noderegistry.go); nil: nothing to register.
func (d *deps) register(rec func() *session.Node) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.registrations = append(d.registrations, rec)
}

func (d *deps) ready() error {
	if d.draining.Load() {
		return errors.New("draining")
	}
	return nil
}

// Shutdown drains the node once: /readyz turns unready, then the parts stop in reverse
// order — RADIUS stops reading and answers what it holds, the accounting spool and the
// proxy queue are delivered (shutdown.go), the store is closed (the embedded store writes
// its snapshot).
func (n *Node) Shutdown(ctx context.Context) error {
	var err error
	n.shutdown.Do(func() { err = n.drain(ctx) })
	return err
}

func (n *Node) drain(ctx context.Context) error {
	n.d.draining.Store(true)
	n.d.m.nodeDraining.Set(1)
	defer n.d.m.nodeDraining.Set(0)
	n.Log.Info("draining")
	err := n.parts.Stop(ctx)
	n.Log.Info("stopped")
	return err
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}
