package dict

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/openaaa/openaaa/services/policing/internal/metrics"
)

// Metrics are the dictionaries' metrics, one value per node.
type Metrics struct {
	attributesLoaded prometheus.Gauge
	linesSkipped     *prometheus.GaugeVec
}

// NewMetrics registers the metrics on reg; a nil reg leaves them unregistered (a part
// built outside a node, a test that does not read them).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	return &Metrics{
		attributesLoaded: f.NewGauge(prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: "dictionary", Name: "attributes",
			Help: "Attribute names known: the built-in dictionary and radius.dictionaries, as last loaded.",
		}),
		linesSkipped: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: "dictionary", Name: "skipped_lines",
			Help: "Dictionary lines left out by the last load, by reason (docs/dictionaries.md).",
		}, []string{"reason"}),
	}
}

// Export sets the dictionary metrics from a load that is put in force.
func (m *Metrics) Export(s Stats) {
	m.attributesLoaded.Set(float64(s.Attributes))
	m.linesSkipped.Reset()
	for r, n := range s.Skipped {
		m.linesSkipped.WithLabelValues(r).Set(float64(n))
	}
}
