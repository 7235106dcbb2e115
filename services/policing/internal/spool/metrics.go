package spool

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/openaaa/openaaa/services/policing/internal/metrics"
)

var (
	spoolBytes = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: metrics.Namespace, Subsystem: "spool", Name: "bytes",
		Help: "Bytes of accounting records in the local spool waiting for replay to Cassandra.",
	})
	spoolRecords = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: metrics.Namespace, Subsystem: "spool", Name: "records",
		Help: "Accounting records in the local spool waiting for replay to Cassandra (spool depth).",
	})
	spoolAppended = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "spool", Name: "appended_total",
		Help: "Accounting records written to the local spool (fsync'd).",
	})
	spoolReplayed = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "spool", Name: "replayed_total",
		Help: "Spooled accounting records replayed to Cassandra.",
	})
	spoolRejected = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "spool", Name: "rejected_full_total",
		Help: "Accounting records refused because the spool reached its size bound.",
	})
	spoolRejectedBudget = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "spool", Name: "rejected_budget_total",
		Help: "Accounting records refused because the spool held what it can deliver within its delivery budget (an ephemeral spool: spool.deliverWithin); the NAS retransmits them.",
	})
	spoolDeliveryRate = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: metrics.Namespace, Subsystem: "spool", Name: "delivery_rate",
		Help: "Records per second the spool's replays delivered (moving average of replays of at least a batch).",
	})
	spoolCapacity = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: metrics.Namespace, Subsystem: "spool", Name: "capacity_records",
		Help: "The most records an ephemeral spool takes: its delivery rate times spool.deliverWithin.",
	})
	spoolErrors = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "spool", Name: "errors_total",
		Help: "Spool write or fsync errors.",
	})
)

// meters are the collectors a spool updates: the openaaa_spool_* ones for the accounting spool,
// unregistered ones for a spool with its own metrics (Options.Unmetered: the proxy queue's are
// openaaa_proxy_queue_*), so that two spools of one process do not overwrite each other's gauges.
type meters struct {
	bytes, records, deliveryRate, capacity             prometheus.Gauge
	appended, replayed, rejected, rejectedBudget, errs prometheus.Counter
}

var accountingMeters = meters{
	bytes: spoolBytes, records: spoolRecords, deliveryRate: spoolDeliveryRate, capacity: spoolCapacity,
	appended: spoolAppended, replayed: spoolReplayed, rejected: spoolRejected,
	rejectedBudget: spoolRejectedBudget, errs: spoolErrors,
}

func unregisteredMeters() meters {
	g := func() prometheus.Gauge { return prometheus.NewGauge(prometheus.GaugeOpts{Name: "unregistered"}) }
	c := func() prometheus.Counter { return prometheus.NewCounter(prometheus.CounterOpts{Name: "unregistered"}) }
	return meters{bytes: g(), records: g(), deliveryRate: g(), capacity: g(),
		appended: c(), replayed: c(), rejected: c(), rejectedBudget: c(), errs: c()}
}
