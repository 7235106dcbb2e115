package eap

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openaaa/openaaa/services/policing/internal/metrics"
)

// Metrics are EAP's metrics, one value per node: its Server's, and the refusals the RADIUS
// handler makes with Failure and Refused when EAP is off or the policy says no.
type Metrics struct {
	// rejects counts conversations ended with EAP-Failure, by reason (the Reason constants).
	rejects *prometheus.CounterVec
	// successes counts conversations ended with EAP-Success, by method.
	successes *prometheus.CounterVec
	// handshakes counts the TLS handshakes of EAP-TLS, PEAP and TTLS completed, by method
	// and whether they resumed a session (resumption.go) or were full.
	handshakes    *prometheus.CounterVec
	conversations prometheus.Gauge
	// resyncs counts EAP-AKA resynchronisations (a card's AUTS that verified).
	resyncs prometheus.Counter
	// sharedErrors counts failures of the session store holding conversations between
	// rounds (shared.go), by operation: put, take, decode.
	sharedErrors *prometheus.CounterVec
	expired      prometheus.Counter
}

// NewMetrics builds the metrics with f (a zero Factory leaves them unregistered: a part
// built outside a node, a test that does not read them).
func NewMetrics(f metrics.Factory) *Metrics {
	return &Metrics{
		rejects:       f.CounterVec("eap_rejects_total", "EAP conversations ended with an Access-Reject and EAP-Failure, by reason.", "reason"),
		successes:     f.CounterVec("eap_successes_total", "EAP conversations ended with EAP-Success, by method (tls, peap, ttls, md5, sim, aka, aka-prime).", "method"),
		handshakes:    f.CounterVec("eap_tls_handshakes_total", "TLS handshakes of EAP-TLS, PEAP and TTLS completed, by method and resumed (true: a session ticket resumed, false: a full handshake).", "method", "resumed"),
		conversations: f.Gauge("eap_conversations", "EAP conversations waiting for the peer's next round on this node."),
		resyncs:       f.Counter("eap_aka_resyncs_total", "EAP-AKA and AKA' resynchronisations: the card's SQN, from a verified AUTS, moved the stored SQN past it."),
		sharedErrors:  f.CounterVec("eap_state_store_errors_total", "Failures to store (put), read (take) or decode an EAP conversation kept in the session store between rounds.", "op"),
		expired:       f.Counter("eap_conversations_expired_total", "EAP conversations forgotten because the peer's next round did not come within eap.timeout."),
	}
}

// failure is an EAP-Failure answering the Response with Identifier id, counted by reason.
func (m *Metrics) failure(id byte, r Reason) Result {
	m.rejects.WithLabelValues(string(r)).Inc()
	return Result{EAP: final(CodeFailure, id), Reason: r}
}
