package proxy

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/openaaa/openaaa/services/policing/internal/metrics"
)

// Metrics are the accounting proxy's metrics, one value per node. Each request sent to an
// upstream is also one transaction of kind "proxy".
type Metrics struct {
	transactions    *prometheus.CounterVec // the node's shared metrics.Transactions
	requests        *prometheus.CounterVec
	retransmissions *prometheus.CounterVec
	repliesDropped  *prometheus.CounterVec
	upstreamUp      *prometheus.GaugeVec
	statusChecks    *prometheus.CounterVec
	forwarded       *prometheus.CounterVec
	queueRecords    prometheus.Gauge
	duration        prometheus.Histogram
}

// NewMetrics registers the metrics on reg (nil: unregistered); shared counts the requests
// sent as transactions.
func NewMetrics(reg prometheus.Registerer, shared *metrics.Metrics) *Metrics {
	f := promauto.With(reg)
	return &Metrics{
		transactions: shared.Transactions,
		requests: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "proxy", Name: "requests_total",
			Help: "Accounting requests sent to an upstream, by upstream and result (ok, timeout, error).",
		}, []string{"upstream", "result"}),
		retransmissions: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "proxy", Name: "retransmissions_total",
			Help: "Requests retransmitted to an upstream after a timeout.",
		}, []string{"upstream"}),
		repliesDropped: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "proxy", Name: "replies_dropped_total",
			Help: "Upstream replies ignored, by reason (bad_authenticator, proxy_state, unexpected, malformed).",
		}, []string{"reason"}),
		upstreamUp: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: "proxy", Name: "upstream_up",
			Help: "1 when the upstream is considered alive, 0 when dead.",
		}, []string{"upstream"}),
		statusChecks: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "proxy", Name: "status_checks_total",
			Help: "Status-Server health checks (RFC 5997), by upstream and result (ok, fail).",
		}, []string{"upstream", "result"}),
		forwarded: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "proxy", Name: "forwarded_total",
			Help: "Accounting requests delivered to the pool, by mode (queue, sync) and result (ok, failed, lost).",
		}, []string{"mode", "result"}),
		queueRecords: f.NewGauge(prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: "proxy", Name: "queue_records",
			Help: "Accounting requests in the proxy's durable queue waiting for an upstream.",
		}),
		duration: f.NewHistogram(prometheus.HistogramOpts{
			Namespace: metrics.Namespace, Subsystem: "proxy", Name: "exchange_duration_seconds",
			Help:    "Time from sending a request to an upstream to its verified reply.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}),
	}
}
