// Package app wires a policing node together from its configuration and runs it until its
// context ends, then drains: stop reading, answer what is in flight, close the store.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/aaa"
	"github.com/openaaa/openaaa/services/policing/internal/admin"
	"github.com/openaaa/openaaa/services/policing/internal/coa"
	"github.com/openaaa/openaaa/services/policing/internal/diameter"
	"github.com/openaaa/openaaa/services/policing/internal/eap"
	"github.com/openaaa/openaaa/services/policing/internal/gx"
	"github.com/openaaa/openaaa/services/policing/internal/proxy"
	"github.com/openaaa/openaaa/services/policing/internal/radiusd"
	"github.com/openaaa/openaaa/services/policing/internal/reload"
	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// Node is a running policing node.
type Node struct {
	Config         *config.Config
	Log            *slog.Logger
	LogLevel       *slog.LevelVar
	Store          session.Store
	Radius         *radiusd.Server
	AuthAddr       net.Addr
	AcctAddr       net.Addr
	AdminAddr      net.Addr
	Proxy          *proxy.Proxy    // accounting proxy (app/proxy.go); nil when off
	CoA            *coa.Sender     // CoA/Disconnect sender (app/coa.go)
	RadSec         *radiusd.RadSec // RadSec listener (app/radsec.go); nil when off
	RadSecAddr     net.Addr
	Diameter       *diameter.Server // Diameter/Gx listener (app/diameter.go); nil when off
	DiameterAddr   net.Addr
	EAPForwardAddr net.Addr        // EAP forwarding listener (app/eapforward.go); nil when off
	gx             *gx.Handler     // the Gx handler (app/diameter.go): RARs from the admin API
	stopNodeReg    func()          // ends this node's records' refresh in the node registry (app/noderegistry.go)
	stopPolicyPush func()          // ends the data policies' RARs (app/diameter.go)
	Reloader       *reload.Watcher // hot reload of mounted files (app/reload.go)
	reloadStop     func()
	authLog        *aaa.AuthLog // the store's auth log writer; nil when the store keeps none
	d              *deps
	life           lifecycle // the parts moved to components (component.go), stopped last
	pol            *policyPart
	subs           *subscribersPart
	adm            *adminPort
	eap            *eap.Server // EAP conversations (app/eap.go); nil when off
	spool          spooler     // the store's spool, nil without one (shutdown.go)
	draining       atomic.Bool
	shutdown       sync.Once
	// the policy's Disconnect/CoA after a store write (app/coa.go); nil when off
	policyCoA *coa.PolicyTrigger
}

// afterStoreOpen, when set by a test, runs after the store opened and before the watches are
// added: the end of the window in which a node has read its files and not yet watched them.
var afterStoreOpen func()

// deps is what every part of a node is built with: the configuration, the logger and the
// reloader of mounted files.
type deps struct {
	cfg      *config.Config
	log      *slog.Logger
	level    *slog.LevelVar
	reloader *reload.Watcher // nil in a node built only to check its configuration
}

// Start builds every part and starts the listeners. Errors name the config key at fault.
func Start(ctx context.Context, cfg *config.Config, log *slog.Logger, level *slog.LevelVar) (*Node, error) {
	// The watcher exists before the first read of any file it will watch: each part Marks its
	// files before reading them, so that a change between that read and the watch (which
	// spans the wait for the store) is reloaded at the first poll (reload.Watcher.Mark).
	d := &deps{cfg: cfg, log: log, level: level, reloader: reload.New(log, cfg.Reload.Interval.D())}
	n := &Node{Config: cfg, Log: log, LogLevel: level, Reloader: d.reloader, d: d}
	n.Reloader.Mark(clientFiles(cfg)...)
	clients, err := buildClients(cfg)
	if err != nil {
		return nil, err
	}
	n.pol = newPolicy(d)
	n.subs = newSubscribers(d, n.pol)
	// The admin port comes before the store, so that a node waiting for it is seen alive and
	// not ready, with the reason (startup.go).
	n.adm = newAdminPort(d)
	for _, c := range []component{n.pol, n.subs, n.adm} {
		if err := n.life.start(ctx, c); err != nil {
			_ = n.life.stop(context.Background())
			return nil, err
		}
	}
	n.AdminAddr = n.adm.addr
	builtin, pol, src, token, adm := n.pol.builtin, n.pol.decide, n.subs.source, n.adm.token, n.adm.sw
	st, err := n.openStore(ctx, adm)
	if err != nil {
		_ = n.life.stop(context.Background())
		return nil, err
	}
	n.Store = st
	if afterStoreOpen != nil {
		afterStoreOpen() // tests: a file changes between the first read and the watch
	}
	n.spool, _ = st.(spooler) // the store itself: startCoA may wrap n.Store (shutdown.go)
	r := cfg.Radius
	n.Radius = radiusd.New(radiusd.Options{Inline: cfg.InlineDispatch(), Workers: r.Workers, QueueSize: r.QueueSize, MaxQueueWait: r.MaxQueueWait.D(),
		Readers: r.Readers, DuplicateWindow: r.DuplicateWindow.D(), SocketBuffer: r.SocketBuffer, Log: log}, clients)
	n.startReload(src)
	n.pol.watchPolicy()
	watchAdminToken(d, token)
	authLogger, _ := st.(session.AuthLogger)
	auth := &aaa.Auth{Subscribers: src, Policy: pol, Log: log}
	if auth.EAP, err = n.startEAP(src); err != nil {
		n.abort()
		return nil, err
	}
	if cfg.Subscribers.Source != "file" {
		auth.LookupTimeout = 2 * time.Second
	}
	if authLogger != nil {
		n.authLog = aaa.NewAuthLog(authLogger, aaa.AuthLogOptions{})
		auth.AuthLog = n.authLog
	}
	// Superseding writes a Stop that, on Cassandra, can race the old session's last messages
	// in another DC (the row is read, merged and written): in-process stores only for now.
	acct := &aaa.Acct{Store: st, Subscribers: src, Policy: pol, Log: log,
		SupersedeStale: cfg.Session.SupersedeStale && cfg.Session.InProcess()}
	if !cfg.Session.InProcess() {
		acct.StoreTimeout = 3 * time.Second
	}
	n.startCoA(acct)
	if err := n.startProxy(acct); err != nil {
		n.abort()
		return nil, err
	}
	if err := n.startEAPForward(auth); err != nil {
		n.abort()
		return nil, err
	}
	if n.AuthAddr, err = n.listen("radius.authAddress", r.AuthAddress, radiusd.Auth, auth); err != nil {
		n.abort()
		return nil, err
	}
	if n.AcctAddr, err = n.listen("radius.acctAddress", r.AcctAddress, radiusd.Acct, acct); err != nil {
		n.abort()
		return nil, err
	}
	if err := n.startRadSec(auth, acct); err != nil {
		n.abort()
		return nil, err
	}
	if err := n.startDiameter(n.diameterApps(builtin)); err != nil {
		n.abort()
		return nil, err
	}
	if n.adm.server != nil {
		a := &admin.Server{Store: st, LogLevel: level, Log: log, Ready: n.ready, CoA: n.CoA, Pprof: cfg.Admin.Pprof, Token: token, Dict: n.pol.dict}
		if n.gx != nil {
			a.GxRAR = n.gx.RAR
			a.GxNodes, a.NodeName = n.lookupDiameterNode, n.diameterNodeName()
		}
		adm.serve(a.Handler())
	}
	n.startNodeRegistry()
	log.Info("policing started", "store", cfg.Session.Store, "clients", len(clients.All()),
		"auth", addrString(n.AuthAddr), "acct", addrString(n.AcctAddr), "admin", addrString(n.AdminAddr))
	return n, nil
}

// listen opens one socket per address of a listen key (several: a multi-homed node that
// listens on chosen addresses only) and returns the first one's address.
func (n *Node) listen(key, addrs string, kind radiusd.Kind, h radiusd.Handler) (net.Addr, error) {
	var first net.Addr
	for _, a := range config.Addresses(addrs) {
		c, err := n.Radius.Listen(a, kind, h)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		if first == nil {
			first = c.LocalAddr()
		}
	}
	return first, nil
}

func (n *Node) ready() error {
	if n.draining.Load() {
		return errors.New("draining")
	}
	return nil
}

// abort stops a node whose start failed after the store opened.
func (n *Node) abort() {
	n.stopReload()
	_ = n.stopRadSec(context.Background())
	_ = n.stopDiameter()
	n.stopNodeRegistry()
	_ = n.Radius.Shutdown(context.Background())
	n.stopEAP()
	_ = n.stopProxy()
	n.closeAuthLog(context.Background())
	_ = n.stopPolicyCoA(context.Background())
	_ = n.Store.Close(context.Background())
	_ = n.life.stop(context.Background())
}

// Shutdown drains the node once: /readyz turns unready, RADIUS stops reading and answers
// what it holds, the accounting spool and the proxy queue are delivered (shutdown.go), then
// the store is closed (the embedded store writes its snapshot).
func (n *Node) Shutdown(ctx context.Context) error {
	var err error
	n.shutdown.Do(func() { err = n.drain(ctx) })
	return err
}

func (n *Node) drain(ctx context.Context) error {
	n.draining.Store(true)
	nodeDraining.Set(1)
	defer nodeDraining.Set(0)
	n.Log.Info("draining")
	n.stopReload()
	errs := []error{n.stopRadSec(ctx), n.stopDiameter()}
	n.stopNodeRegistry()
	errs = append(errs, n.Radius.Shutdown(ctx))
	n.stopEAP()
	errs = append(errs, n.deliverQueues(ctx)...) // shutdown.go
	errs = append(errs, n.life.stop(ctx))
	n.Log.Info("stopped")
	return errors.Join(errs...)
}

// closeAuthLog writes the queued auth log records (bounded by ctx) before the store closes.
func (n *Node) closeAuthLog(ctx context.Context) error {
	if n.authLog == nil {
		return nil
	}
	if err := n.authLog.Close(ctx); err != nil {
		n.Log.Warn("auth log: records left unwritten at shutdown", "err", err)
	}
	return nil
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}
