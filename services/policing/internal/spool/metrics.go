package spool

import (
	"github.com/prometheus/client_golang/prometheus"

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

// NewMetrics builds the metrics with f (a zero Factory leaves them unregistered: a part
// built outside a node, a test that does not read them).
func NewMetrics(f metrics.Factory) *Metrics {
	return &Metrics{
		bytes:          f.Gauge("spool_bytes", "Bytes of accounting records in the local spool waiting for replay to Cassandra."),
		records:        f.Gauge("spool_records", "Accounting records in the local spool waiting for replay to Cassandra (spool depth)."),
		appended:       f.Counter("spool_appended_total", "Accounting records written to the local spool (fsync'd)."),
		replayed:       f.Counter("spool_replayed_total", "Spooled accounting records replayed to Cassandra."),
		rejected:       f.Counter("spool_rejected_full_total", "Accounting records refused because the spool reached its size bound."),
		rejectedBudget: f.Counter("spool_rejected_budget_total", "Accounting records refused because the spool held what it can deliver within its delivery budget (an ephemeral spool: spool.deliverWithin); the NAS retransmits them."),
		deliveryRate:   f.Gauge("spool_delivery_rate", "Records per second the spool's replays delivered (moving average of replays of at least a batch)."),
		capacity:       f.Gauge("spool_capacity_records", "The most records an ephemeral spool takes: its delivery rate times spool.deliverWithin."),
		errs:           f.Counter("spool_errors_total", "Spool write or fsync errors."),
	}
}
