package app

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/openaaa/openaaa/services/policing/internal/aaa"
	"github.com/openaaa/openaaa/services/policing/internal/admin"
	"github.com/openaaa/openaaa/services/policing/internal/coa"
	"github.com/openaaa/openaaa/services/policing/internal/diameter"
	"github.com/openaaa/openaaa/services/policing/internal/dict"
	"github.com/openaaa/openaaa/services/policing/internal/eap"
	"github.com/openaaa/openaaa/services/policing/internal/eapforward"
	"github.com/openaaa/openaaa/services/policing/internal/gx"
	"github.com/openaaa/openaaa/services/policing/internal/metrics"
	"github.com/openaaa/openaaa/services/policing/internal/policy/luapolicy"
	"github.com/openaaa/openaaa/services/policing/internal/proxy"
	"github.com/openaaa/openaaa/services/policing/internal/spool"
	"github.com/openaaa/openaaa/services/policing/internal/store"
	"github.com/openaaa/openaaa/services/policing/internal/store/cassandra"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// nodeMetrics are the metrics of every package of a node, built once on the node's
// registry whatever the configuration turns on (so that /metrics shows the same series as
// it always did, a feature off included) and handed to the parts that count.
type nodeMetrics struct {
	shared     *metrics.Metrics
	aaa        *aaa.Metrics
	admin      *admin.Metrics
	dict       *dict.Metrics
	eap        *eap.Metrics
	eapForward *eapforward.Metrics
	coa        *coa.Metrics
	diameter   *diameter.Metrics
	gx         *gx.Metrics
	lua        *luapolicy.Metrics
	proxy      *proxy.Metrics
	ldap       *subscriber.Metrics
	store      store.Metrics

	// The node's own: its start (startup.go), its drain (shutdown.go), its records in the
	// node registry (noderegistry.go).
	storeOpenFailures prometheus.Counter
	nodeStarting      prometheus.Gauge
	nodeDraining      prometheus.Gauge
	drainDelivered    *prometheus.CounterVec
	drainLeft         *prometheus.CounterVec
	// The refreshes of this node's records that failed (the log says it once per outage).
	registryFailures prometheus.Counter
}

// newNodeMetrics registers every metric on reg; nil: none is registered (a node built only
// to check its configuration).
func newNodeMetrics(reg prometheus.Registerer) *nodeMetrics {
	f := metrics.With(reg)
	shared := metrics.New(f)
	eapM, forward := eap.NewMetrics(f), eapforward.NewMetrics(f)
	return &nodeMetrics{
		shared:            shared,
		aaa:               aaa.NewMetrics(f, shared, eapM, forward),
		admin:             admin.NewMetrics(f),
		dict:              dict.NewMetrics(f),
		eap:               eapM,
		eapForward:        forward,
		coa:               coa.NewMetrics(f, shared),
		diameter:          diameter.NewMetrics(f, shared),
		gx:                gx.NewMetrics(f),
		lua:               luapolicy.NewMetrics(f, shared),
		proxy:             proxy.NewMetrics(f, shared),
		ldap:              subscriber.NewMetrics(f, shared),
		store:             store.Metrics{Shared: shared, Cassandra: cassandra.NewMetrics(f), Spool: spool.NewMetrics(f)},
		storeOpenFailures: f.Counter("store_open_failures_total", "Failed attempts to open the session store at start (unreachable, no schema yet); the node retries and is not ready meanwhile."),
		nodeStarting:      f.Gauge("node_starting", "1 while the node waits for its session store before it serves RADIUS, else 0."),
		nodeDraining:      f.Gauge("node_draining", "1 while the node stops: not ready, no new requests, delivering its accounting spool and proxy queue."),
		drainDelivered:    f.CounterVec("drain_delivered_total", "Acknowledged accounting records delivered while the node stopped (queue: spool to Cassandra, proxy to an upstream).", "queue"),
		drainLeft:         f.CounterVec("drain_left_total", "Acknowledged accounting records still undelivered when the shutdown time ran out: lost unless their directory is on a persistent volume.", "queue"),
		registryFailures:  f.Counter("node_registry_failures_total", "Failed writes of this node's records in the node registry (RAR and EAP forwarding to this node need them)."),
	}
}

// NewRegistry returns a registry holding every metric a node exports on /metrics, each
// package's as a node registers them (test/monitoring checks dashboards and alerts against
// it).
func NewRegistry() *prometheus.Registry {
	reg := newRegistry()
	newNodeMetrics(reg)
	return reg
}

// newRegistry is a node's registry with the collectors the default registry has (the Go
// runtime's, the process's), so that /metrics shows what it showed on the default one.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// metricsHandler serves /metrics from reg, on both of the node's ports (the startup switch
// and the admin API), counting its own scrapes as promhttp.Handler did.
func metricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.InstrumentMetricHandler(reg, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
}
