package diameter

import (
	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openaaa/openaaa/services/policing/internal/metrics"
)

// Metrics are the Diameter server's metrics, one value per node. Each request answered or
// sent is also one transaction of kind "diameter".
type Metrics struct {
	// The series every Gx request touches, resolved once: looking them up by label on each
	// request (three hashings of the labels under a lock) was 2 % of a CCR-U's CPU.
	transactions prometheus.Counter
	ccrAnswered  prometheus.Counter
	ccrDuration  prometheus.Observer
	requests     *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	peersUp      prometheus.Gauge
	peersRefused *prometheus.CounterVec
	duplicates   prometheus.Counter
	sent         *prometheus.CounterVec
	malformed    prometheus.Counter
}

// NewMetrics builds the metrics with f (zero: unregistered); shared counts the requests
// as transactions.
func NewMetrics(f metrics.Factory, shared *metrics.Metrics) *Metrics {
	m := &Metrics{
		requests:     f.CounterVec("diameter_requests_total", "Diameter requests answered, by command (CER, DWR, DPR, CCR…) and Result-Code.", "command", "result_code"),
		duration:     f.HistogramVec("diameter_request_duration_seconds", "Time from reading a Diameter request to writing its answer, by command.", []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}, "command"),
		peersUp:      f.Gauge("diameter_peers_up", "Diameter peers whose capabilities exchange succeeded and whose connection is open."),
		peersRefused: f.CounterVec("diameter_peers_refused_total", "Diameter connections or requests refused by the peer table, by reason.", "reason"),
		duplicates:   f.Counter("diameter_duplicates_answered_total", "Retransmitted Diameter requests (same Origin-Host and End-to-End-Id) answered from the cache without processing them again."),
		sent:         f.CounterVec("diameter_requests_sent_total", "Diameter requests this node sent to a peer (RAR; DPR when it stops), by command.", "command"),
		malformed:    f.Counter("diameter_malformed_total", "Diameter messages that could not be decoded; the connection is closed (RFC 6733 §3: framing is lost)."),
	}
	m.transactions = shared.Transactions.WithLabelValues("diameter")
	m.ccrAnswered = m.requests.WithLabelValues("CCR", "2001")
	m.ccrDuration = m.duration.WithLabelValues("CCR")
	return m
}

// Refusal reasons (label values of peersRefused).
const (
	refusedUnknownPeer   = "unknown_peer"
	refusedNoCommonApp   = "no_common_application"
	refusedBeforeCER     = "request_before_cer"
	refusedMissingOrigin = "missing_origin"
	// refusedCertificate: over TLS, the CER's Origin-Host is not a name of the peer's certificate.
	refusedCertificate = "certificate"
	// refusedHandshake: the TLS handshake failed (no certificate, unknown CA, timeout).
	refusedHandshake = "tls_handshake"
)

// requestMetrics are the answered-requests counter and the duration histogram of a command
// answered with code.
func (m *Metrics) requestMetrics(name string, code uint32) (prometheus.Counter, prometheus.Observer) {
	if name == "CCR" {
		if code == diam.Success {
			return m.ccrAnswered, m.ccrDuration
		}
		return m.requests.WithLabelValues(name, codeLabel(code)), m.ccrDuration
	}
	return m.requests.WithLabelValues(name, codeLabel(code)), m.duration.WithLabelValues(name)
}
