// Package metrics holds the policing node's Prometheus metrics. Names come from one
// namespace (openaaa) plus a subsystem; dashboards and alerts use exactly these names.
// Other packages (store, proxy, coa, ldap) define their own metrics in their own
// metrics.go with the same namespace and count their work in Transactions. Nothing is
// registered globally: a node builds each package's metrics once on its own registry and
// hands them to the parts it builds, so tests and several nodes of one process do not share
// counters.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics are the metrics the node's packages share (a request is counted by the handler
// that answers it, dropped by the server or the handler, ...): one value per node.
type Metrics struct {
	// Requests counts processed RADIUS requests by kind (auth, acct) and result
	// (accept, reject, ok, error).
	Requests *prometheus.CounterVec
	// AccountingRequests counts accounting requests by Acct-Status-Type.
	AccountingRequests *prometheus.CounterVec
	// Duration is the time from receipt to reply, by kind.
	Duration *prometheus.HistogramVec
	// Dropped counts requests dropped without a reply, by reason.
	Dropped *prometheus.CounterVec
	// AcctDelayClamped counts accounting requests whose Acct-Delay-Time was absurd (more
	// than a day) and was taken as a day.
	AcctDelayClamped prometheus.Counter
	// DuplicatesAnswered counts retransmissions answered from the reply cache (RFC 5080).
	DuplicatesAnswered prometheus.Counter
	// Transactions counts what the field calls transactions: each RADIUS request processed,
	// each request proxied, each CoA/Disconnect sent, each LDAP or Diameter request, by kind.
	// "Outgoing TPS" is the rate of their sum.
	Transactions *prometheus.CounterVec
	// QueueDepth is the number of requests waiting for a worker.
	QueueDepth prometheus.Gauge
	// WorkersBusy is the number of workers processing a request now.
	WorkersBusy prometheus.Gauge
	// Workers is the size of the worker pool.
	Workers prometheus.Gauge
	// SessionsActive is the number of active sessions the store holds (embedded/hybrid: this node's view).
	SessionsActive prometheus.Gauge
	// SessionsExpired counts sessions closed because they stopped reporting.
	SessionsExpired prometheus.Counter
	// SessionsSuperseded counts stale sessions closed because the NAS started a new session
	// on the same line (session.supersedeStale).
	SessionsSuperseded prometheus.Counter
	// SessionsSupersedeErrors counts Starts and Interims whose supersede step failed (the
	// update itself was still stored and acknowledged).
	SessionsSupersedeErrors prometheus.Counter
	// InvalidAttributes counts accounting attributes that are malformed (a wrong length, an
	// IPv6 prefix longer than 128): the attribute is ignored, the request still stored
	// (RFC 6929 §2.8: an invalid attribute is not a reason to drop the packet).
	InvalidAttributes *prometheus.CounterVec
	// PolicyDisconnects counts sessions the policy marked for disconnect, by reason.
	PolicyDisconnects *prometheus.CounterVec
	// ConfigReloads counts reloads of mounted files, by file kind and result.
	ConfigReloads *prometheus.CounterVec
}

// New registers the metrics on reg; a nil reg leaves them unregistered (a part built
// outside a node, a test that does not read them).
func New(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	return &Metrics{
		Requests: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "radius", Name: "requests_total",
			Help: "RADIUS requests processed, by kind (auth, acct) and result.",
		}, []string{"kind", "result"}),
		AccountingRequests: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "radius", Name: "accounting_requests_total",
			Help: "Accounting requests processed, by Acct-Status-Type.",
		}, []string{"status"}),
		Duration: f.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Subsystem: "radius", Name: "request_duration_seconds",
			Help:    "Time from receiving a RADIUS request to sending its reply, by kind (auth, acct).",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"kind"}),
		Dropped: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "radius", Name: "requests_dropped_total",
			Help: "RADIUS requests dropped without a reply, by reason.",
		}, []string{"reason"}),
		AcctDelayClamped: f.NewCounter(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "radius", Name: "acct_delay_clamped_total",
			Help: "Accounting requests whose Acct-Delay-Time exceeded one day and was clamped to it.",
		}),
		DuplicatesAnswered: f.NewCounter(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "radius", Name: "duplicates_answered_total",
			Help: "Retransmitted requests answered from the reply cache without processing them again.",
		}),
		Transactions: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "transactions_total",
			Help: "Transactions (requests processed or sent: radius_auth, radius_acct, proxy, coa, ldap, diameter).",
		}, []string{"kind"}),
		QueueDepth: f.NewGauge(prometheus.GaugeOpts{
			Namespace: Namespace, Subsystem: "radius", Name: "queue_depth",
			Help: "Requests received and waiting for a worker.",
		}),
		WorkersBusy: f.NewGauge(prometheus.GaugeOpts{
			Namespace: Namespace, Subsystem: "radius", Name: "workers_busy",
			Help: "Workers processing a request now.",
		}),
		Workers: f.NewGauge(prometheus.GaugeOpts{
			Namespace: Namespace, Subsystem: "radius", Name: "workers",
			Help: "Size of the worker pool.",
		}),
		SessionsActive: f.NewGauge(prometheus.GaugeOpts{
			Namespace: Namespace, Subsystem: "sessions", Name: "active",
			Help: "Active sessions in the session store.",
		}),
		SessionsExpired: f.NewCounter(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "sessions", Name: "expired_total",
			Help: "Sessions closed by the store because the NAS stopped reporting them.",
		}),
		SessionsSuperseded: f.NewCounter(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "sessions", Name: "superseded_total",
			Help: "Active sessions closed because their NAS started a new session for the same user on the same framed IP.",
		}),
		SessionsSupersedeErrors: f.NewCounter(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "sessions", Name: "supersede_errors_total",
			Help: "Accounting-Starts and Interim-Updates whose check for a stale session to close failed in the store.",
		}),
		InvalidAttributes: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "radius", Name: "invalid_attributes_total",
			Help: "Malformed attributes ignored in accounting requests, by attribute name.",
		}, []string{"attribute"}),
		PolicyDisconnects: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "policy", Name: "disconnects_marked_total",
			Help: "Sessions the policy marked for disconnect, by reason.",
		}, []string{"reason"}),
		ConfigReloads: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "config", Name: "reloads_total",
			Help: "Reloads of mounted configuration files, by kind (clients, subscribers, certificates, policy) and result (ok, rejected).",
		}, []string{"kind", "result"}),
	}
}

const Namespace = "openaaa"

// Drop reasons (label values of RequestsDropped).
const (
	DropUnknownClient    = "unknown_client"
	DropBadAuthenticator = "bad_authenticator"
	DropMissingMA        = "missing_message_authenticator"
	DropBadMA            = "bad_message_authenticator"
	DropMalformed        = "malformed"
	DropDuplicate        = "duplicate"
	DropOverload         = "overload"
	DropSocketBuffer     = "socket_buffer_full"
	DropUnsupported      = "unsupported_code"
	DropStoreError       = "store_error"
	DropProxyError       = "proxy_error"
	// DropProxyStateWithoutMA: an Access-Request with Proxy-State but no
	// Message-Authenticator from a client that does not require one (limitProxyState).
	DropProxyStateWithoutMA = "proxy_state_without_message_authenticator"
	// DropReplyTooLarge: the reply would exceed 4,096 octets; it is not sent.
	DropReplyTooLarge = "reply_too_large"
)
