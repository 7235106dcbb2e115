package coa

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openaaa/openaaa/services/policing/internal/metrics"
)

// Metrics are the CoA and Disconnect metrics, one value per node. Each request sent is
// also one transaction of kind "coa".
type Metrics struct {
	transactions    *prometheus.CounterVec // the node's shared metrics.Transactions
	requests        *prometheus.CounterVec
	errorCauses     *prometheus.CounterVec
	retransmissions prometheus.Counter
	duration        *prometheus.HistogramVec
	policySkipped   prometheus.Counter
}

// NewMetrics builds the metrics with f (zero: unregistered); shared counts the requests
// sent as transactions.
func NewMetrics(f metrics.Factory, shared *metrics.Metrics) *Metrics {
	return &Metrics{
		transactions:    shared.Transactions,
		requests:        f.CounterVec("coa_requests_total", "CoA and Disconnect requests, by kind (coa, disconnect), trigger (api, policy) and result (ack, nak, timeout, error, no_session, no_client).", "kind", "trigger", "result"),
		errorCauses:     f.CounterVec("coa_nak_error_causes_total", "Error-Cause values (RFC 5176 §3.5) of CoA-NAK and Disconnect-NAK replies.", "kind", "error_cause"),
		retransmissions: f.Counter("coa_retransmissions_total", "CoA and Disconnect requests retransmitted after a timeout."),
		duration:        f.HistogramVec("coa_duration_seconds", "Time from sending a CoA or Disconnect request to its ACK or NAK.", []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}, "kind"),
		policySkipped:   f.Counter("coa_policy_disconnects_skipped_total", "Policy disconnects not sent now because too many were in flight (retried on the session's next accounting message)."),
	}
}

// CountNoSession counts a request for which the store had no active session; path tells
// the kind (/api/v1/coa or /api/v1/disconnect).
func (s *Sender) CountNoSession(path string) {
	kind := "disconnect"
	if len(path) >= 4 && path[len(path)-4:] == "/coa" {
		kind = "coa"
	}
	s.Metrics.requests.WithLabelValues(kind, TriggerAPI, ResultNoSession).Inc()
}
