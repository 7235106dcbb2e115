package eapforward

import (
	"github.com/prometheus/client_golang/prometheus"

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

// NewMetrics builds the metrics with f (a zero Factory leaves them unregistered: a part
// built outside a node, a test that does not read them).
func NewMetrics(f metrics.Factory) *Metrics {
	return &Metrics{
		forwarded: f.CounterVec("eap_forwarded_rounds_total", "EAP rounds of a conversation in another node's memory forwarded to that node, by result (answered, owner_unknown, timeout, error).", "result"),
		Received:  f.Counter("eap_forwarded_rounds_received_total", "EAP rounds forwarded by other nodes to this one (the conversation's owner) and served."),
	}
}
