package dict

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openaaa/openaaa/services/policing/internal/metrics"
)

// Metrics are the dictionaries' metrics, one value per node.
type Metrics struct {
	attributesLoaded prometheus.Gauge
	linesSkipped     *prometheus.GaugeVec
}

// NewMetrics builds the metrics with f (a zero Factory leaves them unregistered: a part
// built outside a node, a test that does not read them).
func NewMetrics(f metrics.Factory) *Metrics {
	return &Metrics{
		attributesLoaded: f.Gauge("dictionary_attributes", "Attribute names known: the built-in dictionary and radius.dictionaries, as last loaded."),
		linesSkipped:     f.GaugeVec("dictionary_skipped_lines", "Dictionary lines left out by the last load, by reason (docs/dictionaries.md).", "reason"),
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
