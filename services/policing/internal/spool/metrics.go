package spool

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/openaaa/openaaa/services/policing/internal/metrics"
)

// Metrics are what a spool updates: the node's openaaa_spool_* ones for the accounting
// spool; unregistered ones for a spool with its own metrics (the proxy queue's are
// openaaa_proxy_queue_*), so that two spools of one process do not overwrite each other's
// gauges.
type Metrics struct {
	bytes          prometheus.Gauge
	records        prometheus.Gauge
	appended       prometheus.Counter
	replayed       prometheus.Counter
	rejected       prometheus.Counter
	rejectedBudget prometheus.Counter
	deliveryRate   prometheus.Gauge
	capacity       prometheus.Gauge
	errs           prometheus.Counter
}

// NewMetrics registers the metrics on reg; a nil reg leaves them unregistered (a part
// built outside a node, a test that does not read them).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	return &Metrics{
		bytes: f.NewGauge(prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: "spool", Name: "bytes",
			Help: "Bytes of accounting records in the local spool waiting for replay to Cassandra.",
		}),
		records: f.NewGauge(prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: "spool", Name: "records",
			Help: "Accounting records in the local spool waiting for replay to Cassandra (spool depth).",
		}),
		appended: f.NewCounter(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "spool", Name: "appended_total",
			Help: "Accounting records written to the local spool (fsync'd).",
		}),
		replayed: f.NewCounter(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "spool", Name: "replayed_total",
			Help: "Spooled accounting records replayed to Cassandra.",
		}),
		rejected: f.NewCounter(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "spool", Name: "rejected_full_total",
			Help: "Accounting records refused because the spool reached its size bound.",
		}),
		rejectedBudget: f.NewCounter(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "spool", Name: "rejected_budget_total",
			Help: "Accounting records refused because the spool held what it can deliver within its delivery budget (an ephemeral spool: spool.deliverWithin); the NAS retransmits them.",
		}),
		deliveryRate: f.NewGauge(prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: "spool", Name: "delivery_rate",
			Help: "Records per second the spool's replays delivered (moving average of replays of at least a batch).",
		}),
		capacity: f.NewGauge(prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: "spool", Name: "capacity_records",
			Help: "The most records an ephemeral spool takes: its delivery rate times spool.deliverWithin.",
		}),
		errs: f.NewCounter(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "spool", Name: "errors_total",
			Help: "Spool write or fsync errors.",
		}),
	}
}
