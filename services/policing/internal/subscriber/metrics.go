package subscriber

import (
	"github.com/prometheus/client_golang/prometheus"

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

// NewMetrics builds the metrics with f (zero: unregistered); shared counts the searches
// as transactions.
func NewMetrics(f metrics.Factory, shared *metrics.Metrics) *Metrics {
	return &Metrics{
		transactions:       shared.Transactions,
		ldapSearches:       f.CounterVec("ldap_searches_total", "LDAP subscriber searches sent, by result (found, not_found, invalid, error).", "result"),
		ldapSearchDuration: f.Histogram("ldap_search_duration_seconds", "Time of one LDAP subscriber search.", []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}),
		ldapCache:          f.CounterVec("ldap_cache_lookups_total", "Subscriber lookups of the LDAP source by cache outcome (hit, negative_hit, miss, stale, unavailable).", "result"),
		ldapCachedOnly:     f.CounterVec("ldap_cache_only_lookups_total", "Cache-only subscriber lookups (accounting) of the LDAP source, by result (hit, stale, miss).", "result"),
		ldapCacheEntries:   f.Gauge("ldap_cache_entries", "Profiles (and remembered unknown users) in the LDAP profile cache."),
		ldapConnErrors:     f.CounterVec("ldap_connection_errors_total", "LDAP connection failures by stage (dial, tls, bind, search, timeout).", "stage"),
		ldapConnections:    f.Gauge("ldap_connections", "Open LDAP connections in the pool."),
		ldapUp:             f.Gauge("ldap_up", "1 when LDAP answered the last connection attempt or search, 0 when it failed."),
	}
}
