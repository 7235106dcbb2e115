package eap

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/openaaa/openaaa/services/policing/internal/metrics"
)

var (
	// rejects counts conversations ended with EAP-Failure, by reason (the Reason constants).
	rejects = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "eap", Name: "rejects_total",
		Help: "EAP conversations ended with an Access-Reject and EAP-Failure, by reason.",
	}, []string{"reason"})

	// successes counts conversations ended with EAP-Success, by method.
	successes = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "eap", Name: "successes_total",
		Help: "EAP conversations ended with EAP-Success, by method (tls, peap, ttls, md5, sim, aka, aka-prime).",
	}, []string{"method"})

	// handshakes counts the TLS handshakes of EAP-TLS, PEAP and TTLS completed, by method
	// and whether they resumed a session (resumption.go) or were full.
	handshakes = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "eap", Name: "tls_handshakes_total",
		Help: "TLS handshakes of EAP-TLS, PEAP and TTLS completed, by method and resumed (true: a session ticket resumed, false: a full handshake).",
	}, []string{"method", "resumed"})

	conversations = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: metrics.Namespace, Subsystem: "eap", Name: "conversations",
		Help: "EAP conversations waiting for the peer's next round on this node.",
	})

	// resyncs counts EAP-AKA resynchronisations (a card's AUTS that verified).
	resyncs = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "eap", Name: "aka_resyncs_total",
		Help: "EAP-AKA and AKA' resynchronisations: the card's SQN, from a verified AUTS, moved the stored SQN past it.",
	})

	// sharedErrors counts failures of the session store holding conversations between
	// rounds (shared.go), by operation: put, take, decode.
	sharedErrors = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "eap", Name: "state_store_errors_total",
		Help: "Failures to store (put), read (take) or decode an EAP conversation kept in the session store between rounds.",
	}, []string{"op"})

	expired = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "eap", Name: "conversations_expired_total",
		Help: "EAP conversations forgotten because the peer's next round did not come within eap.timeout.",
	})
)
