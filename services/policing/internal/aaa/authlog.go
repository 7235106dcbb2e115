package aaa

import (
	"context"
	"sync"
	"time"

	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// AuthLogOptions tune an AuthLog.
type AuthLogOptions struct {
	Queue   int           // records waiting at most (default 8192); past it records are dropped
	Workers int           // concurrent writes (default 4)
	Timeout time.Duration // one write (default 2s)
	Metrics *Metrics      // the node's; required
}

// AuthLog writes auth records to the store's auth log off the reply path: Log never
// blocks; when the store cannot keep up the queue fills and records are dropped and counted
// (openaaa_store_auth_log_dropped_total). Close flushes what is queued.
type AuthLog struct {
	l       session.AuthLogger
	timeout time.Duration
	m       *Metrics

	mu     sync.RWMutex // guards closed and sending on ch
	closed bool
	ch     chan session.AuthRecord
	wg     sync.WaitGroup
	abort  chan struct{} // closed when Close gives up waiting
}

// NewAuthLog starts the writers.
func NewAuthLog(l session.AuthLogger, o AuthLogOptions) *AuthLog {
	if o.Queue <= 0 {
		o.Queue = 8192
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	a := &AuthLog{l: l, timeout: o.Timeout, m: o.Metrics, ch: make(chan session.AuthRecord, o.Queue), abort: make(chan struct{})}
	for range o.Workers {
		a.wg.Add(1)
		go a.worker()
	}
	return a
}

// Log queues r; it reports false when r was dropped (queue full or closed).
func (a *AuthLog) Log(r session.AuthRecord) bool {
	if r.At.IsZero() {
		r.At = time.Now()
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.closed {
		a.m.authLogDropped.WithLabelValues("closed").Inc()
		return false
	}
	select {
	case a.ch <- r:
		a.m.authLogQueue.Inc()
		return true
	default:
		a.m.authLogDropped.WithLabelValues("full").Inc()
		return false
	}
}

func (a *AuthLog) worker() {
	defer a.wg.Done()
	for r := range a.ch {
		a.m.authLogQueue.Dec()
		select {
		case <-a.abort:
			a.m.authLogDropped.WithLabelValues("closed").Inc()
			continue
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
		err := a.l.LogAuth(ctx, r)
		cancel()
		if err != nil {
			a.m.authLogDropped.WithLabelValues("error").Inc()
			continue
		}
		a.m.authLogWritten.Inc()
	}
}

// Close stops taking records and writes what is queued, until ctx ends (what is left then
// is dropped and counted). Call it before closing the store.
func (a *AuthLog) Close(ctx context.Context) error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	close(a.ch)
	a.mu.Unlock()
	done := make(chan struct{})
	go func() { a.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		close(a.abort)
		<-done // the workers finish their current write (bounded by Timeout) and drop the rest
		return ctx.Err()
	}
}
