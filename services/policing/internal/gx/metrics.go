package gx

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/openaaa/openaaa/services/policing/internal/metrics"
)

// Metrics are the Gx handler's metrics (its RARs between CCRs included: schedule.go), one
// value per node.
type Metrics struct {
	ruleFailures              *prometheus.CounterVec
	usageReported             prometheus.Counter
	throttles                 prometheus.Counter
	retransmittedTerminations prometheus.Counter
	repeatedUpdates           prometheus.Counter
	replicaWaits              *prometheus.CounterVec
	scheduledRARs             *prometheus.CounterVec
	trackedSessions           prometheus.Gauge
}

// NewMetrics registers the metrics on reg; a nil reg leaves them unregistered (a part
// built outside a node, a test that does not read them).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	return &Metrics{
		ruleFailures: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "gx", Name: "rule_failures_total",
			Help: "PCC rules a PCEF reported inactive in a Charging-Rule-Report, by Rule-Failure-Code.",
		}, []string{"failure_code"}),
		usageReported: f.NewCounter(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "gx", Name: "usage_reported_octets_total",
			Help: "Octets PCEFs reported used in Usage-Monitoring-Information.",
		}),
		throttles: f.NewCounter(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "gx", Name: "throttles_total",
			Help: "Gx sessions switched to the throttle rule because the subscriber's quota was used.",
		}),
		retransmittedTerminations: f.NewCounter(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "gx", Name: "terminations_repeated_total",
			Help: "CCR-T for a session another node had already closed (the PCEF sent it again after a lost or late answer): answered 2001.",
		}),
		repeatedUpdates: f.NewCounter(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "gx", Name: "updates_repeated_total",
			Help: "CCR-U another node had already applied (the PCEF sent it again after a lost or late answer): answered on the session as it is, its usage not counted twice.",
		}),
		replicaWaits: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "gx", Name: "replica_waits_total",
			Help: "CCR-U/T whose session the shared store did not show at first (another DC wrote it a moment ago), by outcome: found after waiting, or not_found (answered 5002).",
		}, []string{"result"}),
		scheduledRARs: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "gx", Name: "scheduled_rars_total",
			Help: "RARs the data policy pushed between CCRs, by cause (window: a rule window opened or closed; quota: the quota ran out) and result: answered (2001), refused (another Result-Code), failed (no answer, no connection; retried), forgotten (the session ended or moved to another node).",
		}, []string{"cause", "result"}),
		trackedSessions: f.NewGauge(prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: "gx", Name: "scheduled_sessions",
			Help: "Gx sessions this node holds whose data policy has rule windows or a quota (watched for RARs).",
		}),
	}
}
