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

// New builds the metrics with f (a zero Factory leaves them unregistered: a part built
// outside a node, a test that does not read them).
func New(f Factory) *Metrics {
	return &Metrics{
		Requests:                f.CounterVec("radius_requests_total", "RADIUS requests processed, by kind (auth, acct) and result.", "kind", "result"),
		AccountingRequests:      f.CounterVec("radius_accounting_requests_total", "Accounting requests processed, by Acct-Status-Type.", "status"),
		Duration:                f.HistogramVec("radius_request_duration_seconds", "Time from receiving a RADIUS request to sending its reply, by kind (auth, acct).", []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}, "kind"),
		Dropped:                 f.CounterVec("radius_requests_dropped_total", "RADIUS requests dropped without a reply, by reason.", "reason"),
		AcctDelayClamped:        f.Counter("radius_acct_delay_clamped_total", "Accounting requests whose Acct-Delay-Time exceeded one day and was clamped to it."),
		DuplicatesAnswered:      f.Counter("radius_duplicates_answered_total", "Retransmitted requests answered from the reply cache without processing them again."),
		Transactions:            f.CounterVec("transactions_total", "Transactions (requests processed or sent: radius_auth, radius_acct, proxy, coa, ldap, diameter).", "kind"),
		QueueDepth:              f.Gauge("radius_queue_depth", "Requests received and waiting for a worker."),
		WorkersBusy:             f.Gauge("radius_workers_busy", "Workers processing a request now."),
		Workers:                 f.Gauge("radius_workers", "Size of the worker pool."),
		SessionsActive:          f.Gauge("sessions_active", "Active sessions in the session store."),
		SessionsExpired:         f.Counter("sessions_expired_total", "Sessions closed by the store because the NAS stopped reporting them."),
		SessionsSuperseded:      f.Counter("sessions_superseded_total", "Active sessions closed because their NAS started a new session for the same user on the same framed IP."),
		SessionsSupersedeErrors: f.Counter("sessions_supersede_errors_total", "Accounting-Starts and Interim-Updates whose check for a stale session to close failed in the store."),
		InvalidAttributes:       f.CounterVec("radius_invalid_attributes_total", "Malformed attributes ignored in accounting requests, by attribute name.", "attribute"),
		PolicyDisconnects:       f.CounterVec("policy_disconnects_marked_total", "Sessions the policy marked for disconnect, by reason.", "reason"),
		ConfigReloads:           f.CounterVec("config_reloads_total", "Reloads of mounted configuration files, by kind (clients, subscribers, certificates, policy) and result (ok, rejected).", "kind", "result"),
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
