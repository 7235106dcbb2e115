package app

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/nas"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// buildClients builds the NAS table from the configuration's clients and clientsFile.
func buildClients(cfg *config.Config) (*nas.Table, error) {
	all, err := cfg.AllClients()
	if err != nil {
		return nil, err
	}
	return nas.Build(all)
}

// clientFiles lists the files of the NAS table known before clientsFile is read: the file and
// the secret files of the configuration's own clients (those named by clientsFile are seen
// only once it is read: unmarked, their watch reloads once at the first poll).
func clientFiles(cfg *config.Config) []string {
	ps := []string{cfg.ClientsFile}
	for _, cl := range cfg.Clients {
		ps = append(ps, cl.SecretFile)
	}
	return ps
}

// clientPaths lists the files the NAS table is built from: clientsFile and every secret
// file named by the configuration or by the last clients file that parsed.
type clientPaths struct {
	cfg  *config.Config
	mu   sync.Mutex
	last []string
}

func (c *clientPaths) set(clients []config.Client) {
	ps := make([]string, 0, len(clients)+1)
	if c.cfg.ClientsFile != "" {
		ps = append(ps, c.cfg.ClientsFile)
	}
	for _, cl := range clients {
		ps = append(ps, cl.SecretFile)
	}
	c.mu.Lock()
	c.last = ps
	c.mu.Unlock()
}

func (c *clientPaths) get() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// reloadPart watches the mounted files the node's own parts read (clients, secrets, the
// dictionaries, the subscriber file, the Lua policy, the admin token) and reloads them on
// change or SIGHUP. The parts with files of their own (EAP, RadSec and Diameter
// certificates) add their watches with d.reloader.Watch when they start, each after a Mark
// taken before its first read. It starts last, so that it stops first: nothing reloads while
// the node drains.
type reloadPart struct {
	d      *deps
	radius *radiusPart
	subs   *subscribersPart
	pol    *policyPart
	admin  *adminPort
	stop   func()
}

func newReload(d *deps, r *radiusPart, subs *subscribersPart, pol *policyPart, adm *adminPort) *reloadPart {
	return &reloadPart{d: d, radius: r, subs: subs, pol: pol, admin: adm}
}

func (r *reloadPart) Start(context.Context) error {
	cfg, log := r.d.cfg, r.d.log
	w := r.d.reloader // made by Start before the first read (Mark)

	cp := &clientPaths{cfg: cfg}
	cp.set(cfg.Clients)
	if all, err := cfg.AllClients(); err == nil {
		cp.set(all)
	}
	w.WatchFunc("clients", cp.get, func() error {
		all, err := cfg.AllClients()
		if err != nil {
			return err
		}
		cp.set(all) // a new client's secret file is watched even if it is not there yet
		t, err := nas.Build(all)
		if err != nil {
			return fmt.Errorf("clients: %w", err)
		}
		r.radius.server.SetClients(t)
		log.Info("clients reloaded", "clients", len(t.All()))
		return nil
	})
	src := r.subs.source
	r.pol.watchDictionaries(src) // before the subscribers: their check depends on it
	if f, ok := src.(*subscriber.File); ok {
		w.Watch("subscribers", []string{f.Path()}, func() error {
			if err := f.Reload(); err != nil {
				// The file may use an attribute of a dictionary change that was refused for
				// want of this very file: try both together.
				if len(cfg.Radius.Dictionaries) == 0 || r.pol.swapDictionaries(f) != nil {
					return err
				}
			}
			log.Info("subscribers reloaded", "subscribers", f.Len())
			return nil
		})
	}
	r.pol.watchPolicy()
	watchAdminToken(r.d, r.admin.token)
	w.Start()

	ctx, cancel := context.WithCancel(context.Background())
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.OnSignal(ctx, hup)
	}()
	r.stop = func() {
		signal.Stop(hup)
		cancel()
		<-done
		w.Stop()
	}
	return nil
}

func (r *reloadPart) Stop(context.Context) error {
	r.stop()
	return nil
}
