package admin

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/openaaa/openaaa/services/policing/internal/metrics"
)

// Metrics are the admin API's metrics, one value per node.
type Metrics struct {
	unauthorized  prometheus.Counter
	rarsForwarded *prometheus.CounterVec
}

// NewMetrics registers the metrics on reg; a nil reg leaves them unregistered (a part
// built outside a node, a test that does not read them).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	return &Metrics{
		unauthorized: f.NewCounter(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "admin", Name: "unauthorized_requests_total",
			Help: "Admin API requests refused for a missing or wrong bearer token.",
		}),
		rarsForwarded: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "gx", Name: "rars_forwarded_total",
			Help: "RAR requests forwarded to the node holding the PCEF's connection, by result: ok (that node answered), unregistered (no live node of that identity), unreachable.",
		}, []string{"result"}),
	}
}
