package app

import (
	"context"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/openaaa/openaaa/services/policing/internal/metrics"
)

var (
	nodeDraining = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: metrics.Namespace, Subsystem: "node", Name: "draining",
		Help: "1 while the node stops: not ready, no new requests, delivering its accounting spool and proxy queue.",
	})
	drainDelivered = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "drain", Name: "delivered_total",
		Help: "Acknowledged accounting records delivered while the node stopped (queue: spool to Cassandra, proxy to an upstream).",
	}, []string{"queue"})
	drainLeft = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "drain", Name: "left_total",
		Help: "Acknowledged accounting records still undelivered when the shutdown time ran out: lost unless their directory is on a persistent volume.",
	}, []string{"queue"})
)

// spooler is a store with a local spool (Cassandra, hybrid).
type spooler interface{ Spooled() int }

// deliverQueues hands on what the node acknowledged but has not delivered yet — the
// accounting spool to Cassandra (any datacenter that takes it), the proxy queue to any live
// upstream — both at once, until they are empty or ctx ends, and closes the store and the
// proxy. The listeners are shut by now: nothing is added meanwhile. ctx is the shutdown
// budget (radius.drainTimeout, which the operator derives from the pod's grace period).
func (n *Node) deliverQueues(ctx context.Context) []error {
	var wg sync.WaitGroup
	var proxyErr error
	if n.Proxy != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			before := n.Proxy.Pending()
			left := n.Proxy.Drain(ctx)
			proxyErr = n.stopProxy()
			if err := n.accountDrain("proxy", n.Config.Proxy.Queue.Dir, before, left); err != nil {
				proxyErr = err
			}
		}()
	}
	before := 0
	if n.spool != nil {
		before = n.spool.Spooled()
	}
	errs := []error{n.closeAuthLog(ctx), n.stopPolicyCoA(ctx), n.Store.Close(ctx)}
	if n.spool != nil {
		errs = append(errs, n.accountDrain("spool", n.Config.Session.Cassandra.Spool.Dir, before, n.spool.Spooled()))
	}
	wg.Wait()
	return append(errs, proxyErr)
}

// accountDrain counts and logs what a queue delivered at shutdown and what it left.
func (n *Node) accountDrain(queue, dir string, before, left int) error {
	if before > left {
		drainDelivered.WithLabelValues(queue).Add(float64(before - left))
		n.Log.Info("delivered at shutdown", "queue", queue, "records", before-left)
	}
	if left == 0 {
		return nil
	}
	drainLeft.WithLabelValues(queue).Add(float64(left))
	n.Log.Error("ACCOUNTING RECORDS LEFT UNDELIVERED AT SHUTDOWN: lost unless the directory is on a persistent volume the next pod mounts",
		"queue", queue, "records", left, "dir", dir)
	return fmt.Errorf("%s: %d acknowledged accounting records left undelivered in %s", queue, left, dir)
}
