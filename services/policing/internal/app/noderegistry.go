package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// The node registry records: refreshed every nodeRefresh, forgotten nodeTTL after the last.
const (
	nodeRefresh = 10 * time.Second
	nodeTTL     = 30 * time.Second
)

// nodeRegistry records this node in the store's node registry while it runs, with what the
// other nodes need to reach it, as its listeners ask (d.register): its admin URL while
// Diameter serves (RAR forwarding, diameter.go), its EAP forwarding address while that
// listens (eapforward.go). One loop refreshes every record; a failure is counted, logged
// once and its end once, and the loop goes on (a store back, a migration run).
type nodeRegistry struct {
	d     *deps
	store *storePart
	stop  func() // nil: nothing registered
}

func newNodeRegistry(d *deps, st *storePart) *nodeRegistry { return &nodeRegistry{d: d, store: st} }

func (r *nodeRegistry) Start(context.Context) error {
	reg := r.store.registry
	if reg == nil {
		return nil
	}
	r.d.mu.Lock()
	regs := r.d.registrations
	r.d.mu.Unlock()
	var recs []*session.Node
	for _, f := range regs {
		recs = append(recs, f())
	}
	nodes := mergeNodes(recs...)
	if len(nodes) == 0 {
		return nil
	}
	for i := range nodes {
		nodes[i].DC = r.d.cfg.Session.Cassandra.LocalDC
	}
	r.stop = refreshNodes(reg, nodes, nodeRefresh, r.d.log, r.d.m.registryFailures)
	return nil
}

// Stop ends the refresh (the records expire after nodeTTL) before the store closes.
func (r *nodeRegistry) Stop(context.Context) error {
	if r.stop != nil {
		r.stop()
	}
	return nil
}

// refreshNodes writes recs into reg now and every period until the returned stop is called.
func refreshNodes(reg session.NodeRegistry, recs []session.Node, period time.Duration, log *slog.Logger, failures prometheus.Counter) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(period)
		defer t.Stop()
		failing := false
		for {
			var err error
			for _, r := range recs {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				if e := reg.RegisterNode(ctx, r, nodeTTL); e != nil {
					failures.Inc()
					if err == nil {
						err = e
					}
				}
				cancel()
			}
			switch {
			case err != nil && !failing:
				log.Warn("this node is not in the node registry: RARs and EAP rounds cannot be forwarded to it (run `policing migrate`?)", "err", err.Error())
			case err == nil && failing:
				log.Info("this node is in the node registry again")
			}
			failing = err != nil
			select {
			case <-quit:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(quit); <-done }
}

// mergeNodes are the records to register: one per name, a Diameter and an EAP record under
// one name merged (a store keeps one record per name).
func mergeNodes(recs ...*session.Node) []session.Node {
	var out []session.Node
	for _, r := range recs {
		if r == nil {
			continue
		}
		if len(out) == 1 && out[0].Name == r.Name { // each record sets its own fields
			if r.EAPForward != "" {
				out[0].EAPForward = r.EAPForward
			}
			if r.AdminURL != "" {
				out[0].Host, out[0].AdminURL = r.Host, r.AdminURL
			}
			continue
		}
		out = append(out, *r)
	}
	return out
}
