package eap

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

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

// NewMetrics registers the metrics on reg; a nil reg leaves them unregistered (a part
// built outside a node, a test that does not read them).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	return &Metrics{
		rejects: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "eap", Name: "rejects_total",
			Help: "EAP conversations ended with an Access-Reject and EAP-Failure, by reason.",
		}, []string{"reason"}),
		successes: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "eap", Name: "successes_total",
			Help: "EAP conversations ended with EAP-Success, by method (tls, peap, ttls, md5, sim, aka, aka-prime).",
		}, []string{"method"}),
		handshakes: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "eap", Name: "tls_handshakes_total",
			Help: "TLS handshakes of EAP-TLS, PEAP and TTLS completed, by method and resumed (true: a session ticket resumed, false: a full handshake).",
		}, []string{"method", "resumed"}),
		conversations: f.NewGauge(prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: "eap", Name: "conversations",
			Help: "EAP conversations waiting for the peer's next round on this node.",
		}),
		resyncs: f.NewCounter(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "eap", Name: "aka_resyncs_total",
			Help: "EAP-AKA and AKA' resynchronisations: the card's SQN, from a verified AUTS, moved the stored SQN past it.",
		}),
		sharedErrors: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "eap", Name: "state_store_errors_total",
			Help: "Failures to store (put), read (take) or decode an EAP conversation kept in the session store between rounds.",
		}, []string{"op"}),
		expired: f.NewCounter(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "eap", Name: "conversations_expired_total",
			Help: "EAP conversations forgotten because the peer's next round did not come within eap.timeout.",
		}),
	}
}

// failure is an EAP-Failure answering the Response with Identifier id, counted by reason.
func (m *Metrics) failure(id byte, r Reason) Result {
	m.rejects.WithLabelValues(string(r)).Inc()
	return Result{EAP: final(CodeFailure, id), Reason: r}
}
