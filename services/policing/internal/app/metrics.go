package app

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/openaaa/openaaa/services/policing/internal/metrics"
)

// The node's own metrics: its start (startup.go), its drain (shutdown.go), its records in the
// node registry (noderegistry.go).
var (
	storeOpenFailures = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "store", Name: "open_failures_total",
		Help: "Failed attempts to open the session store at start (unreachable, no schema yet); the node retries and is not ready meanwhile.",
	})
	nodeStarting = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: metrics.Namespace, Subsystem: "node", Name: "starting",
		Help: "1 while the node waits for its session store before it serves RADIUS, else 0.",
	})
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
	// The refreshes of this node's records that failed (the log says it once per outage).
	registryFailures = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "node", Name: "registry_failures_total",
		Help: "Failed writes of this node's records in the node registry (RAR and EAP forwarding to this node need them).",
	})
)
