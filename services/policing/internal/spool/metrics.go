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
	spoolErrors = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "spool", Name: "errors_total",
		Help: "Spool write or fsync errors.",
	})
)
