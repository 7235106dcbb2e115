package aaa

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openaaa/openaaa/services/policing/internal/metrics"
	"github.com/openaaa/openaaa/services/policing/internal/radiusd"
)

// series are a handler's series of the shared request metrics, looked up once: by label on
// every request, the auth handler's three cost more instructions than a memoized Lua
// decision (BenchmarkAuthRequest in policy/luapolicy).
type series struct {
	kind    string                        // label of metrics.Requests and metrics.Duration
	results map[string]prometheus.Counter // metrics.Requests by result
	tx      prometheus.Counter
	time    prometheus.Observer
}

func newSeries(kind, tx string, results ...string) *series {
	s := &series{kind: kind, results: map[string]prometheus.Counter{},
		tx: metrics.Transactions.WithLabelValues(tx), time: metrics.Duration.WithLabelValues(kind)}
	for _, r := range results {
		s.results[r] = metrics.Requests.WithLabelValues(kind, r)
	}
	return s
}

var (
	authSeries = newSeries("auth", "radius_auth", "accept", "reject", "challenge", "error")
	acctSeries = newSeries("acct", "radius_acct", "ok", "error")
)

// result is the metrics.Requests series of a result.
func (s *series) result(r string) prometheus.Counter {
	if c, ok := s.results[r]; ok {
		return c
	}
	return metrics.Requests.WithLabelValues(s.kind, r)
}

// count counts an answered request by result, as a transaction, and its time since receipt.
func (s *series) count(r *radiusd.Request, result string) {
	s.result(result).Inc()
	s.tx.Inc()
	s.time.Observe(time.Since(r.Received).Seconds())
}
