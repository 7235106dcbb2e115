package eapforward

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/openaaa/openaaa/services/policing/internal/metrics"
)

var (
	// forwarded counts the rounds this node sent to their conversation's owner, by result:
	// answered, owner_unknown, timeout, error.
	forwarded = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "eap", Name: "forwarded_rounds_total",
		Help: "EAP rounds of a conversation in another node's memory forwarded to that node, by result (answered, owner_unknown, timeout, error).",
	}, []string{"result"})

	// Received counts the rounds other nodes forwarded here that this node served.
	Received = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "eap", Name: "forwarded_rounds_received_total",
		Help: "EAP rounds forwarded by other nodes to this one (the conversation's owner) and served.",
	})
)
