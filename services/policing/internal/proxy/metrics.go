package proxy

import (
	"github.com/prometheus/client_golang/prometheus"

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

// NewMetrics builds the metrics with f (zero: unregistered); shared counts the requests
// sent as transactions.
func NewMetrics(f metrics.Factory, shared *metrics.Metrics) *Metrics {
	return &Metrics{
		transactions:    shared.Transactions,
		requests:        f.CounterVec("proxy_requests_total", "Accounting requests sent to an upstream, by upstream and result (ok, timeout, error).", "upstream", "result"),
		retransmissions: f.CounterVec("proxy_retransmissions_total", "Requests retransmitted to an upstream after a timeout.", "upstream"),
		repliesDropped:  f.CounterVec("proxy_replies_dropped_total", "Upstream replies ignored, by reason (bad_authenticator, proxy_state, unexpected, malformed).", "reason"),
		upstreamUp:      f.GaugeVec("proxy_upstream_up", "1 when the upstream is considered alive, 0 when dead.", "upstream"),
		statusChecks:    f.CounterVec("proxy_status_checks_total", "Status-Server health checks (RFC 5997), by upstream and result (ok, fail).", "upstream", "result"),
		forwarded:       f.CounterVec("proxy_forwarded_total", "Accounting requests delivered to the pool, by mode (queue, sync) and result (ok, failed, lost).", "mode", "result"),
		queueRecords:    f.Gauge("proxy_queue_records", "Accounting requests in the proxy's durable queue waiting for an upstream."),
		duration:        f.Histogram("proxy_exchange_duration_seconds", "Time from sending a request to an upstream to its verified reply.", []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}),
	}
}
