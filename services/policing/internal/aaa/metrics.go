package aaa

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openaaa/openaaa/services/policing/internal/eap"
	"github.com/openaaa/openaaa/services/policing/internal/eapforward"
	"github.com/openaaa/openaaa/services/policing/internal/metrics"
	"github.com/openaaa/openaaa/services/policing/internal/radiusd"
)

// Metrics are the handlers' series of the node's shared request metrics and the auth log's
// metrics; one value per node, given to its Auth, Acct and AuthLog. The node's EAP metrics
// count the EAP refusals auth makes, and the rounds it serves for other nodes.
type Metrics struct {
	shared         *metrics.Metrics
	eap            *eap.Metrics
	forward        *eapforward.Metrics
	auth, acct     *series
	authLogDropped *prometheus.CounterVec
	authLogWritten prometheus.Counter
	authLogQueue   prometheus.Gauge
}

// NewMetrics builds the auth log's metrics with f (zero: unregistered) and resolves the
// handlers' series of shared, so that they show from the start.
func NewMetrics(f metrics.Factory, shared *metrics.Metrics, eap *eap.Metrics, forward *eapforward.Metrics) *Metrics {
	return &Metrics{
		shared:         shared,
		eap:            eap,
		forward:        forward,
		auth:           newSeries(shared, "auth", "radius_auth", "accept", "reject", "challenge", "error"),
		acct:           newSeries(shared, "acct", "radius_acct", "ok", "error"),
		authLogDropped: f.CounterVec("store_auth_log_dropped_total", "Auth log records not written, by reason: full (the queue was full: the store is slower than auth), closed (after shutdown began), error (the store failed the write).", "reason"),
		authLogWritten: f.Counter("store_auth_log_written_total", "Auth log records written to the store."),
		authLogQueue:   f.Gauge("store_auth_log_queue", "Auth log records waiting to be written."),
	}
}

// series are a handler's series of the shared request metrics, looked up once: by label on
// every request, the auth handler's three cost more instructions than a memoized Lua
// decision (BenchmarkAuthRequest in policy/luapolicy).
type series struct {
	shared  *metrics.Metrics
	kind    string                        // label of metrics.Requests and metrics.Duration
	results map[string]prometheus.Counter // metrics.Requests by result
	tx      prometheus.Counter
	time    prometheus.Observer
}

func newSeries(shared *metrics.Metrics, kind, tx string, results ...string) *series {
	s := &series{shared: shared, kind: kind, results: map[string]prometheus.Counter{},
		tx: shared.Transactions.WithLabelValues(tx), time: shared.Duration.WithLabelValues(kind)}
	for _, r := range results {
		s.results[r] = shared.Requests.WithLabelValues(kind, r)
	}
	return s
}

// result is the metrics.Requests series of a result.
func (s *series) result(r string) prometheus.Counter {
	if c, ok := s.results[r]; ok {
		return c
	}
	return s.shared.Requests.WithLabelValues(s.kind, r)
}

// count counts an answered request by result, as a transaction, and its time since receipt.
func (s *series) count(r *radiusd.Request, result string) {
	s.result(result).Inc()
	s.tx.Inc()
	s.time.Observe(time.Since(r.Received).Seconds())
}
