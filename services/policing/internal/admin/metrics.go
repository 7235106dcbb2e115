package admin

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openaaa/openaaa/services/policing/internal/metrics"
)

// Metrics are the admin API's metrics, one value per node.
type Metrics struct {
	unauthorized  prometheus.Counter
	rarsForwarded *prometheus.CounterVec
}

// NewMetrics builds the metrics with f (a zero Factory leaves them unregistered: a part
// built outside a node, a test that does not read them).
func NewMetrics(f metrics.Factory) *Metrics {
	return &Metrics{
		unauthorized:  f.Counter("admin_unauthorized_requests_total", "Admin API requests refused for a missing or wrong bearer token."),
		rarsForwarded: f.CounterVec("gx_rars_forwarded_total", "RAR requests forwarded to the node holding the PCEF's connection, by result: ok (that node answered), unregistered (no live node of that identity), unreachable.", "result"),
	}
}
