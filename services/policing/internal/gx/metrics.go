package gx

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/openaaa/openaaa/services/policing/internal/metrics"
)

var (
	ruleFailures = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "gx", Name: "rule_failures_total",
		Help: "PCC rules a PCEF reported inactive in a Charging-Rule-Report, by Rule-Failure-Code.",
	}, []string{"failure_code"})
	usageReported = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "gx", Name: "usage_reported_octets_total",
		Help: "Octets PCEFs reported used in Usage-Monitoring-Information.",
	})
	throttles = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "gx", Name: "throttles_total",
		Help: "Gx sessions switched to the throttle rule because the subscriber's quota was used.",
	})
	retransmittedTerminations = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "gx", Name: "terminations_repeated_total",
		Help: "CCR-T for a session another node had already closed (the PCEF sent it again after a lost or late answer): answered 2001.",
	})
	repeatedUpdates = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "gx", Name: "updates_repeated_total",
		Help: "CCR-U another node had already applied (the PCEF sent it again after a lost or late answer): answered on the session as it is, its usage not counted twice.",
	})
	replicaWaits = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "gx", Name: "replica_waits_total",
		Help: "CCR-U/T whose session the shared store did not show at first (another DC wrote it a moment ago), by outcome: found after waiting, or not_found (answered 5002).",
	}, []string{"result"})
)
