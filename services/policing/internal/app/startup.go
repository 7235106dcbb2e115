package app

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/store"
)

// Backoff between attempts to open a remote store: short, so a node is ready within seconds
// of its Cassandra (or its schema) arriving; capped, so a long outage costs little.
const (
	storeRetryFirst = 500 * time.Millisecond
	storeRetryMax   = 5 * time.Second
)

// adminSwitch is the admin port's handler. While the node starts it answers /healthz (the
// process is alive: Kubernetes must not restart it into CrashLoopBackOff), /metrics, and
// /readyz with 503 and what the node waits for; then the full admin handler takes over.
type adminSwitch struct {
	full    atomic.Pointer[http.Handler]
	waiting atomic.Pointer[string]
	start   *http.ServeMux
}

func newAdminSwitch(metrics http.Handler) *adminSwitch {
	a := &adminSwitch{start: http.NewServeMux()}
	starting := "starting"
	a.waiting.Store(&starting)
	a.start.Handle("GET /metrics", metrics)
	a.start.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	a.start.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "not ready: "+*a.waiting.Load(), http.StatusServiceUnavailable)
	})
	return a
}

func (a *adminSwitch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := a.full.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	a.start.ServeHTTP(w, r)
}

func (a *adminSwitch) wait(why string)      { a.waiting.Store(&why) }
func (a *adminSwitch) serve(h http.Handler) { a.full.Store(&h) }

// openStore opens the session store. A store in the process fails for good (a bad snapshot
// file); a remote one (Cassandra, hybrid) is retried until it opens or ctx ends, because
// Cassandra being down or its schema not migrated yet is a state that passes, not a
// configuration error: the node stays alive and not ready, and says why.
func openStore(ctx context.Context, d *deps, adm *adminSwitch) (session.Store, error) {
	cfg, log := d.cfg, d.log
	if cfg.Session.InProcess() {
		return store.Open(ctx, cfg, log, d.m.store)
	}
	d.m.nodeStarting.Set(1)
	defer d.m.nodeStarting.Set(0)
	delay := storeRetryFirst
	for attempt := 1; ; attempt++ {
		st, err := store.Open(ctx, cfg, log, d.m.store)
		if err == nil {
			if attempt > 1 {
				log.Info("session store open", "store", cfg.Session.Store, "attempts", attempt)
			}
			return st, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("session store: %w (stopped waiting: %v)", err, ctx.Err())
		}
		d.m.storeOpenFailures.Inc()
		adm.wait("waiting for the session store: " + err.Error())
		log.Warn("session store not available; not ready, retrying", "store", cfg.Session.Store,
			"attempt", attempt, "retryIn", delay.String(), "err", err.Error())
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("session store: %w (stopped waiting: %v)", err, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, storeRetryMax)
	}
}
