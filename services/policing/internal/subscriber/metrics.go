package subscriber

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/openaaa/openaaa/services/policing/internal/metrics"
)

// Metrics are the LDAP source's metrics (docs/ldap.md), one value per node. Each LDAP
// search is also one transaction of kind "ldap".
type Metrics struct {
	transactions *prometheus.CounterVec // the node's shared metrics.Transactions
	// ldapSearches counts LDAP searches by result: found, not_found, invalid (the entry
	// could not be turned into a profile), error (LDAP unavailable, timeout, server error).
	ldapSearches *prometheus.CounterVec
	// ldapSearchDuration is the time of one search, connection set-up excluded.
	ldapSearchDuration prometheus.Histogram
	// ldapCache counts profile lookups by how the cache answered: hit (fresh), negative_hit
	// (fresh "not found"), miss (LDAP asked), stale (expired profile served while LDAP is
	// unavailable), unavailable (LDAP unavailable and no usable profile: auth rejects).
	ldapCache *prometheus.CounterVec
	// ldapCachedOnly counts accounting's cache-only lookups (it never waits for LDAP):
	// hit (fresh), stale (expired, used), miss (no profile).
	ldapCachedOnly   *prometheus.CounterVec
	ldapCacheEntries prometheus.Gauge
	// ldapConnErrors counts connection failures by stage: dial, tls, bind, search, timeout.
	ldapConnErrors  *prometheus.CounterVec
	ldapConnections prometheus.Gauge
	// ldapUp is 1 while the last connection attempt or search reached LDAP, else 0.
	ldapUp prometheus.Gauge
}

// NewMetrics registers the metrics on reg (nil: unregistered); shared counts the searches
// as transactions.
func NewMetrics(reg prometheus.Registerer, shared *metrics.Metrics) *Metrics {
	f := promauto.With(reg)
	return &Metrics{
		transactions: shared.Transactions,
		ldapSearches: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "ldap", Name: "searches_total",
			Help: "LDAP subscriber searches sent, by result (found, not_found, invalid, error).",
		}, []string{"result"}),
		ldapSearchDuration: f.NewHistogram(prometheus.HistogramOpts{
			Namespace: metrics.Namespace, Subsystem: "ldap", Name: "search_duration_seconds",
			Help:    "Time of one LDAP subscriber search.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
		ldapCache: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "ldap", Name: "cache_lookups_total",
			Help: "Subscriber lookups of the LDAP source by cache outcome (hit, negative_hit, miss, stale, unavailable).",
		}, []string{"result"}),
		ldapCachedOnly: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "ldap", Name: "cache_only_lookups_total",
			Help: "Cache-only subscriber lookups (accounting) of the LDAP source, by result (hit, stale, miss).",
		}, []string{"result"}),
		ldapCacheEntries: f.NewGauge(prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: "ldap", Name: "cache_entries",
			Help: "Profiles (and remembered unknown users) in the LDAP profile cache.",
		}),
		ldapConnErrors: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "ldap", Name: "connection_errors_total",
			Help: "LDAP connection failures by stage (dial, tls, bind, search, timeout).",
		}, []string{"stage"}),
		ldapConnections: f.NewGauge(prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: "ldap", Name: "connections",
			Help: "Open LDAP connections in the pool.",
		}),
		ldapUp: f.NewGauge(prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: "ldap", Name: "up",
			Help: "1 when LDAP answered the last connection attempt or search, 0 when it failed.",
		}),
	}
}
