package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Factory builds metrics on one registry, each in one call: its name below the openaaa
// namespace ("radius_requests_total" is openaaa_radius_requests_total), its help, its
// labels. Every package declares its metrics through it, so the namespace is written once.
type Factory struct{ f promauto.Factory }

// With is the factory of reg; a nil reg leaves what it builds unregistered (a part built
// outside a node, a test that does not read them).
func With(reg prometheus.Registerer) Factory { return Factory{promauto.With(reg)} }

func opts(name, help string) prometheus.Opts {
	return prometheus.Opts{Namespace: Namespace, Name: name, Help: help}
}

func (f Factory) Counter(name, help string) prometheus.Counter {
	return f.f.NewCounter(prometheus.CounterOpts(opts(name, help)))
}

func (f Factory) Gauge(name, help string) prometheus.Gauge {
	return f.f.NewGauge(prometheus.GaugeOpts(opts(name, help)))
}

func (f Factory) CounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return f.f.NewCounterVec(prometheus.CounterOpts(opts(name, help)), labels)
}

func (f Factory) GaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return f.f.NewGaugeVec(prometheus.GaugeOpts(opts(name, help)), labels)
}

// Histogram and HistogramVec take the buckets the metric's range wants (seconds: from
// sub-millisecond answers to a timeout).
func (f Factory) Histogram(name, help string, buckets []float64) prometheus.Histogram {
	return f.f.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Name: name, Help: help, Buckets: buckets})
}

func (f Factory) HistogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return f.f.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: name, Help: help, Buckets: buckets}, labels)
}
