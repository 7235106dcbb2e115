package cassandra

import (
	"context"
	"errors"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openaaa/openaaa/services/policing/internal/metrics"
)

// Metrics are the Cassandra and hybrid stores' metrics, one value per node.
type Metrics struct {
	stmtDuration     *prometheus.HistogramVec
	stmtErrors       *prometheus.CounterVec
	writesSkipped    prometheus.Counter
	rowCacheRequests *prometheus.CounterVec
	spoolUndecodable prometheus.Counter
	cacheRequests    *prometheus.CounterVec
	cacheEntries     prometheus.Gauge
	spoolDrained     *prometheus.CounterVec
}

// NewMetrics builds the metrics with f (a zero Factory leaves them unregistered: a part
// built outside a node, a test that does not read them).
func NewMetrics(f metrics.Factory) *Metrics {
	return &Metrics{
		stmtDuration:     f.HistogramVec("store_statement_duration_seconds", "Cassandra statement latency by kind (read_session, write_session, stop_session, write_history, lookup_user, lookup_framed_ip, lookup_ipv6, lookup_nas, read_history, write_auth_log).", []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}, "kind"),
		stmtErrors:       f.CounterVec("store_errors_total", "Cassandra statement errors by kind and error (timeout, unavailable, overloaded, no_connection, canceled, other).", "kind", "error"),
		writesSkipped:    f.Counter("store_writes_skipped_total", "Accounting updates that changed nothing in the session row (no write sent)."),
		rowCacheRequests: f.CounterVec("store_row_cache_total", "Interims that looked for their session's row in the row cache, by result: hit (merged onto it, no read), miss, refused (out of order, another session, or the row may have expired), bypassed (the write would have changed a lookup: read after all).", "result"),
		spoolUndecodable: f.Counter("spool_undecodable_total", "Spooled records that could not be decoded and were skipped (a bug: they are logged in full)."),
		cacheRequests:    f.CounterVec("cache_requests_total", "Hybrid store cache look-ups by result (hit, miss, stale, stale_served). Hit ratio: hit / sum.", "result"),
		cacheEntries:     f.Gauge("cache_entries", "Sessions in the hybrid store's local cache."),
		spoolDrained:     f.CounterVec("spool_drained_total", "Spooled accounting records delivered at shutdown, by connection: local (the store's own, which the driver may route to another datacenter) or a remote datacenter's.", "via"),
	}
}

func (m *Metrics) observe(kind string, start time.Time, err error) {
	m.stmtDuration.WithLabelValues(kind).Observe(time.Since(start).Seconds())
	if err != nil && !errors.Is(err, gocql.ErrNotFound) {
		m.stmtErrors.WithLabelValues(kind, errorClass(err)).Inc()
	}
}

func errorClass(err error) string {
	var re gocql.RequestError
	if errors.As(err, &re) {
		switch re.Code() {
		case gocql.ErrCodeWriteTimeout, gocql.ErrCodeReadTimeout:
			return "timeout"
		case gocql.ErrCodeUnavailable:
			return "unavailable"
		case gocql.ErrCodeOverloaded:
			return "overloaded"
		}
		return "other"
	}
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, gocql.ErrTimeoutNoResponse):
		return "timeout"
	case errors.Is(err, gocql.ErrNoConnections), errors.Is(err, gocql.ErrConnectionClosed),
		errors.Is(err, gocql.ErrSessionClosed):
		return "no_connection"
	}
	return "other"
}
