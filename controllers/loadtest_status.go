package controllers

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
	"github.com/openaaa/openaaa/services/loadgen/summary"
)

// loadTestOutcome is what one reconcile of an AAALoadTest observed.
type loadTestOutcome struct {
	phase           string // aaav1.LoadTest*
	reason, message string
	job             string
	startTime       *metav1.Time
	completionTime  *metav1.Time
	summary         *summary.Summary // Succeeded, or Failed for want of its success criteria
}

func decimal(v float64, digits int) string { return strconv.FormatFloat(v, 'f', digits, 64) }

func optDecimal(p *float64, digits int) string {
	if p == nil {
		return ""
	}
	return decimal(*p, digits)
}

func toInt64(v uint64) int64 { return int64(min(v, uint64(1<<63-1))) }

// loadTestFigures converts the summary's figures: rates and busy workers with one decimal,
// milliseconds with three. Pure.
func loadTestFigures(f summary.Figures) aaav1.LoadTestFigures {
	return aaav1.LoadTestFigures{
		IncomingTPS: decimal(f.IncomingTPS, 1),
		OutgoingTPS: optDecimal(f.OutgoingTPS, 1),
		WorkersBusy: optDecimal(f.WorkersBusy, 1),
		Workers:     optDecimal(f.Workers, 0),
		AvgAuthMs:   decimal(f.AvgAuthMs, 3),
		AvgAcctMs:   decimal(f.AvgAcctMs, 3),
		P99Ms:       decimal(f.P99Ms, 3),
		Answered:    toInt64(f.Answered),
		Timeouts:    toInt64(f.Timeouts),
		Errors:      toInt64(f.Errors),
		Accepts:     toInt64(f.Accepts),
		Rejects:     toInt64(f.Rejects),
	}
}

// loadTestReport is the status report of a summary: the total and each data center's share
// (the summary's targets are named after the data centers). Pure.
func loadTestReport(s *summary.Summary) (*aaav1.LoadTestReport, []aaav1.DatacenterLoadReport) {
	total := &aaav1.LoadTestReport{
		LoadTestFigures:   loadTestFigures(s.Figures),
		Seconds:           decimal(s.Seconds, 1),
		Sent:              toInt64(s.Sent),
		Sessions:          toInt64(s.Sessions),
		SessionsCompleted: toInt64(s.SessionsDone),
	}
	for k, v := range s.Dropped {
		if total.DroppedByReason == nil {
			total.DroppedByReason = map[string]int64{}
		}
		total.DroppedByReason[k] = toInt64(v)
	}
	var dcs []aaav1.DatacenterLoadReport
	for _, t := range s.Targets {
		dcs = append(dcs, aaav1.DatacenterLoadReport{Name: t.Name, LoadTestFigures: loadTestFigures(t.Figures)})
	}
	return total, dcs
}

// computeLoadTestStatus turns the outcome into the status: phase, times, report and the
// conditions Ready, Complete and Failed. A finished run keeps its status. Pure apart from the
// clock meta.SetStatusCondition reads for lastTransitionTime (kept unless a condition changes).
func computeLoadTestStatus(lt *aaav1.AAALoadTest, o loadTestOutcome) aaav1.AAALoadTestStatus {
	s := *lt.Status.DeepCopy()
	gen := lt.Generation
	s.ObservedGeneration = gen
	s.Phase = o.phase
	if o.job != "" {
		s.Job = o.job
	}
	if s.StartTime == nil && o.startTime != nil {
		s.StartTime = o.startTime
	}
	if s.CompletionTime == nil && o.completionTime != nil {
		s.CompletionTime = o.completionTime
	}
	set := func(typ string, ok bool, reason, message string) {
		setCondition(&s.Conditions, gen, typ, ok, reason, message)
	}
	switch o.phase {
	case aaav1.LoadTestSucceeded:
		s.Report, s.Datacenters = loadTestReport(o.summary)
		set(aaav1.ConditionReady, true, ReasonCompleted, o.message)
		set(aaav1.ConditionComplete, true, ReasonCompleted, o.message)
		set(aaav1.ConditionFailed, false, ReasonAsExpected, "the run completed")
	case aaav1.LoadTestFailed:
		if o.summary != nil { // the run ran, its figures missed the criteria: show them
			s.Report, s.Datacenters = loadTestReport(o.summary)
		}
		set(aaav1.ConditionReady, false, o.reason, o.message)
		set(aaav1.ConditionComplete, false, o.reason, "the run failed")
		set(aaav1.ConditionFailed, true, o.reason, o.message)
	default: // Pending, Running
		set(aaav1.ConditionReady, false, o.reason, o.message)
		set(aaav1.ConditionComplete, false, o.reason, o.message)
		set(aaav1.ConditionFailed, false, ReasonAsExpected, "no failure observed")
	}
	return s
}

// loadTestWarning tells which Ready reasons are recorded as Warning events.
func loadTestWarning(phase, reason string) bool {
	return phase == aaav1.LoadTestFailed || reason == ReasonSecretNotFound || reason == ReasonClusterNotFound || reason == ReasonReconcileError
}

// writeLoadTestStatus is the one writer of an AAALoadTest's status: it patches only a changed
// status, and records an event (also logged) when the phase or the Ready reason changes. When
// someone else wrote the status meanwhile, it computes it again on the fresh object.
func (r *AAALoadTestReconciler) writeLoadTestStatus(ctx context.Context, lt *aaav1.AAALoadTest, o loadTestOutcome) error {
	var prev aaav1.AAALoadTestStatus
	written, err := patchStatus(ctx, r.Client, lt, func() {
		prev = *lt.Status.DeepCopy()
		if !loadTestFinished(lt) { // else finished by the writer we raced with: it stays so
			lt.Status = computeLoadTestStatus(lt, o)
		}
	})
	if !written {
		return err
	}
	next := lt.Status
	was := meta.FindStatusCondition(prev.Conditions, aaav1.ConditionReady)
	cur := meta.FindStatusCondition(next.Conditions, aaav1.ConditionReady)
	if cur != nil && (was == nil || was.Reason != cur.Reason || prev.Phase != next.Phase) {
		eventType := corev1.EventTypeNormal
		if loadTestWarning(next.Phase, cur.Reason) {
			eventType = corev1.EventTypeWarning
		}
		msg := cur.Message
		if next.Phase == aaav1.LoadTestSucceeded && next.Report != nil {
			// A Failed run's message already names the figures that missed the criteria.
			msg = fmt.Sprintf("%s: %s TPS, avg auth %s ms, avg acct %s ms, p99 %s ms, %d timeouts",
				msg, next.Report.IncomingTPS, next.Report.AvgAuthMs, next.Report.AvgAcctMs, next.Report.P99Ms, next.Report.Timeouts)
		}
		recordEvent(ctx, r.Recorder, lt, eventType, cur.Reason, "%s: %s", next.Phase, msg)
	}
	return nil
}
