package cassandra

import (
	"context"
	"fmt"
	"time"

	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// RemoteDC is another datacenter that takes the spool at shutdown when the local one cannot.
type RemoteDC struct {
	Name          string
	ContactPoints []string
}

// Spooled returns how many accounting records wait in the spool (0 without one).
func (st *Store) Spooled() int {
	if st.o.Spool == nil {
		return 0
	}
	return st.o.Spool.Records()
}

// drainAttempt bounds one attempt on one datacenter, so that a dead local datacenter leaves
// time for the others.
func (st *Store) drainAttempt() time.Duration {
	return 2*st.o.Conn.Timeout + time.Second
}

// drain delivers the spool before the store closes, until it is empty or ctx ends: the
// local datacenter first (this store's connection), then each remote datacenter through a
// connection of its own whose local DC it is (LOCAL_* consistencies count its replicas), and
// again from the local one, for as long as ctx lasts — a datacenter may come back meanwhile.
// On Kubernetes the spool's volume usually dies with the pod: what is left at exit is lost.
func (st *Store) drain(ctx context.Context) error {
	if st.o.Spool == nil || !st.o.Spool.Pending() {
		return nil
	}
	st.log.Info("spool: delivering before shutdown", "records", st.o.Spool.Records(), "localDC", st.o.Conn.LocalDC,
		"remoteDCs", len(st.o.RemoteDCs))
	warn := rateLimiter{every: 10 * time.Second} // a round a second: say it now and then
	remotes := map[string]*Store{}
	defer func() {
		for _, r := range remotes {
			r.s.Close()
		}
	}()
	// try delivers to one datacenter for as long as it makes progress (a large spool takes
	// more than one attempt), and reports whether the spool is empty.
	try := func(name string, target *Store) bool {
		for {
			actx, cancel := context.WithTimeout(ctx, st.drainAttempt())
			n, err := target.ReplayNow(actx)
			cancel()
			if n > 0 {
				st.m.spoolDrained.WithLabelValues(name).Add(float64(n))
				st.log.Info("spool: delivered at shutdown", "via", name, "records", n, "left", st.o.Spool.Records())
			}
			if !st.o.Spool.Pending() {
				return true
			}
			if n == 0 || ctx.Err() != nil {
				if err != nil && ctx.Err() == nil && warn.ok() {
					st.log.Warn("spool: datacenter did not take the spool", "via", name, "err", err, "left", st.o.Spool.Records())
				}
				return false
			}
		}
	}
	for {
		if try("local", st) {
			return nil
		}
		for _, dc := range st.o.RemoteDCs {
			if ctx.Err() != nil {
				break
			}
			r := remotes[dc.Name]
			if r == nil {
				var err error
				if r, err = st.remote(ctx, dc); err != nil {
					if warn.ok() {
						st.log.Warn("spool: cannot reach a remote datacenter", "dc", dc.Name, "err", err)
					}
					continue
				}
				remotes[dc.Name] = r
			}
			if try(dc.Name, r) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("spool: %d accounting records not delivered at shutdown: %w", st.o.Spool.Records(), ctx.Err())
		case <-time.After(st.o.ReplayInterval):
		}
	}
}

// remote connects to another datacenter as its local one and returns a store writing there
// (same keyspace, credentials, consistencies and spool).
func (st *Store) remote(ctx context.Context, dc RemoteDC) (*Store, error) {
	o := st.o
	o.Conn.ContactPoints, o.Conn.LocalDC = dc.ContactPoints, dc.Name
	cctx, cancel := context.WithTimeout(ctx, st.drainAttempt())
	defer cancel()
	sess, err := Connect(cctx, o.Conn)
	if err != nil {
		return nil, err
	}
	r := &Store{
		o: o, s: sess, log: st.log.With("dc", dc.Name), cons: st.cons, hcons: st.hcons, q: st.q,
		stop: make(chan struct{}), stopped: make(chan struct{}), errLog: rateLimiter{every: 10 * time.Second},
		m: st.m, // its statements count in the node's metrics, as the local store's
	}
	r.pending.n = map[session.Key]int{}
	return r, nil
}
