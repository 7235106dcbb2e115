package dict

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/openaaa/openaaa/services/policing/internal/metrics"
)

var (
	attributesLoaded = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: metrics.Namespace, Subsystem: "dictionary", Name: "attributes",
		Help: "Attribute names known: the built-in dictionary and radius.dictionaries, as last loaded.",
	})
	linesSkipped = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metrics.Namespace, Subsystem: "dictionary", Name: "skipped_lines",
		Help: "Dictionary lines left out by the last load, by reason (docs/dictionaries.md).",
	}, []string{"reason"})
)

// Export sets the dictionary metrics from a load that is put in force.
func Export(s Stats) {
	attributesLoaded.Set(float64(s.Attributes))
	linesSkipped.Reset()
	for r, n := range s.Skipped {
		linesSkipped.WithLabelValues(r).Set(float64(n))
	}
}
