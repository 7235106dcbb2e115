package gx

import (
	"github.com/prometheus/client_golang/prometheus"

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

// NewMetrics builds the metrics with f (a zero Factory leaves them unregistered: a part
// built outside a node, a test that does not read them).
func NewMetrics(f metrics.Factory) *Metrics {
	return &Metrics{
		ruleFailures:              f.CounterVec("gx_rule_failures_total", "PCC rules a PCEF reported inactive in a Charging-Rule-Report, by Rule-Failure-Code.", "failure_code"),
		usageReported:             f.Counter("gx_usage_reported_octets_total", "Octets PCEFs reported used in Usage-Monitoring-Information."),
		throttles:                 f.Counter("gx_throttles_total", "Gx sessions switched to the throttle rule because the subscriber's quota was used."),
		retransmittedTerminations: f.Counter("gx_terminations_repeated_total", "CCR-T for a session another node had already closed (the PCEF sent it again after a lost or late answer): answered 2001."),
		repeatedUpdates:           f.Counter("gx_updates_repeated_total", "CCR-U another node had already applied (the PCEF sent it again after a lost or late answer): answered on the session as it is, its usage not counted twice."),
		replicaWaits:              f.CounterVec("gx_replica_waits_total", "CCR-U/T whose session the shared store did not show at first (another DC wrote it a moment ago), by outcome: found after waiting, or not_found (answered 5002).", "result"),
		scheduledRARs:             f.CounterVec("gx_scheduled_rars_total", "RARs the data policy pushed between CCRs, by cause (window: a rule window opened or closed; quota: the quota ran out) and result: answered (2001), refused (another Result-Code), failed (no answer, no connection; retried), forgotten (the session ended or moved to another node).", "cause", "result"),
		trackedSessions:           f.Gauge("gx_scheduled_sessions", "Gx sessions this node holds whose data policy has rule windows or a quota (watched for RARs)."),
	}
}
