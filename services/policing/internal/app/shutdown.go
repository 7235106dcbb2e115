package app

import (
	"fmt"

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

// At shutdown a node hands on what it acknowledged but has not delivered yet — the
// accounting spool to Cassandra (store.go), the proxy queue to any live upstream (proxy.go)
// — both at once (together in Start), until they are empty or the shutdown budget ends
// (radius.drainTimeout, which the operator derives from the pod's grace period). The
// listeners are stopped by then: nothing is added meanwhile.

// accountDrain counts and logs what a queue delivered at shutdown and what it left.
func accountDrain(d *deps, queue, dir string, before, left int) error {
	if before > left {
		drainDelivered.WithLabelValues(queue).Add(float64(before - left))
		d.log.Info("delivered at shutdown", "queue", queue, "records", before-left)
	}
	if left == 0 {
		return nil
	}
	drainLeft.WithLabelValues(queue).Add(float64(left))
	d.log.Error("ACCOUNTING RECORDS LEFT UNDELIVERED AT SHUTDOWN: lost unless the directory is on a persistent volume the next pod mounts",
		"queue", queue, "records", left, "dir", dir)
	return fmt.Errorf("%s: %d acknowledged accounting records left undelivered in %s", queue, left, dir)
}
