package eapforward

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/openaaa/openaaa/services/policing/internal/metrics"
)

// Metrics are EAP forwarding's metrics, one value per node: the rounds its Forwarder sends
// and those the node serves for others (counted by aaa.Auth.ForwardedEAP).
type Metrics struct {
	// forwarded counts the rounds this node sent to their conversation's owner, by result:
	// answered, owner_unknown, timeout, error.
	forwarded *prometheus.CounterVec
	// Received counts the rounds other nodes forwarded here that this node served.
	Received prometheus.Counter
}

// NewMetrics registers the metrics on reg; a nil reg leaves them unregistered (a part
// built outside a node, a test that does not read them).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	return &Metrics{
		forwarded: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "eap", Name: "forwarded_rounds_total",
			Help: "EAP rounds of a conversation in another node's memory forwarded to that node, by result (answered, owner_unknown, timeout, error).",
		}, []string{"result"}),
		Received: f.NewCounter(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "eap", Name: "forwarded_rounds_received_total",
			Help: "EAP rounds forwarded by other nodes to this one (the conversation's owner) and served.",
		}),
	}
}
