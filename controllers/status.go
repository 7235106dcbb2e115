package controllers

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
)

// warningReasons are the condition reasons whose transition is recorded as a Warning event.
var warningReasons = map[string]bool{
	ReasonMigrationFailed:      true,
	ReasonK8ssandraMissing:     true,
	ReasonK8ssandraError:       true,
	ReasonCredentialsMissing:   true,
	ReasonNotLabelled:          true,
	ReasonCertManagerMissing:   true,
	ReasonCRDNotInstalled:      true,
	ReasonReconcileError:       true,
	ReasonUnavailable:          true,
	ReasonPartiallyAvailable:   true,
	ReasonDatacenterNotReady:   true,
	ReasonCassandraUnreachable: true,
	"BackoffLimitExceeded":     true,
	ReasonDeadlineExceeded:     true,
}

// computeStatus turns what the steps observed into the status. Pure apart from the clock that
// meta.SetStatusCondition reads for lastTransitionTime (kept unless the status changes).
func computeStatus(st *state, stepErr error) aaav1.AAAClusterStatus {
	c, spec := st.cluster, st.spec
	s := *st.status.DeepCopy()
	gen := c.Generation
	s.ObservedGeneration = gen
	set := func(typ string, ok bool, reason, message string) {
		setCondition(&s.Conditions, gen, typ, ok, reason, message)
	}

	// CassandraReady. A step that did not complete observed nothing whole: its conditions
	// keep their previous value.
	cs := st.cassandra
	cassandraDone := st.completed[stepCassandra]
	// A data center that has not joined yet (its policing never available since it entered
	// the spec) is progress, not loss: only joined ones make Cassandra's absence a Warning
	// and the cluster Degraded.
	joined := func(dc string) bool {
		old := findDC(st.status.Datacenters, dc)
		return old != nil && old.Joined
	}
	// cassandraLost: a joined data center's Cassandra is not ready; cassandraJoining: one
	// that has not joined.
	var cassandraLost, cassandraJoining bool
	for _, dc := range spec.Datacenters {
		switch {
		case cs.dcReady[dc.Name]:
		case joined(dc.Name):
			cassandraLost = true
		default:
			cassandraJoining = true
		}
	}
	cassandraJoinsOnly := cs.initialized && !cs.ready && !cassandraLost && cassandraJoining && cs.problem == ""
	if cassandraDone {
		reason := cs.reason
		if cassandraJoinsOnly && reason == ReasonDatacenterNotReady {
			reason = ReasonDatacenterJoining
		}
		set(aaav1.ConditionCassandraReady, cs.ready, reason, cs.message)
	}

	// SchemaReady
	sc := st.schema
	switch {
	case st.completed[stepSchema]:
		set(aaav1.ConditionSchemaReady, sc.ready, sc.reason, sc.message)
	case cassandraDone && !cs.initialized:
		set(aaav1.ConditionSchemaReady, false, ReasonWaitingCassandra, "waiting for Cassandra before migrating the schema")
	}

	// Per data center, PolicingReady. A DC the datacenters step did not finish keeps what was
	// last seen of it.
	var ready, deployed []string
	var notReady, lost []string
	dcs := make([]aaav1.DatacenterStatus, 0, len(spec.Datacenters))
	for _, dc := range spec.Datacenters {
		old := findDC(st.status.Datacenters, dc.Name)
		ds := aaav1.DatacenterStatus{Name: dc.Name, CassandraReady: cs.dcReady[dc.Name]}
		if old != nil && !cassandraDone {
			ds.CassandraReady = old.CassandraReady
		}
		if dc.Replicas != nil {
			ds.DesiredReplicas = *dc.Replicas
		} else if dc.Autoscaling != nil {
			ds.DesiredReplicas = dc.Autoscaling.MinReplicas
		}
		if obs := st.dcs[dc.Name]; obs != nil && obs.complete {
			if obs.deployed {
				deployed = append(deployed, dc.Name)
				if w := obs.workload; w != nil {
					if w.replicas != nil {
						ds.DesiredReplicas = *w.replicas
					}
					ds.ReadyReplicas = w.readyReplicas
					ds.Ready = w.ready
				}
				ds.Endpoint = serviceEndpoint(obs.service)
			}
		} else if old != nil {
			ds.DesiredReplicas, ds.ReadyReplicas, ds.Ready, ds.Endpoint = old.DesiredReplicas, old.ReadyReplicas, old.Ready, old.Endpoint
		}
		ds.Joined = ds.Ready || joined(dc.Name)
		if ds.Ready {
			ready = append(ready, dc.Name)
		} else {
			notReady = append(notReady, dc.Name)
			if ds.Joined {
				lost = append(lost, dc.Name)
			}
		}
		dcs = append(dcs, ds)
	}
	s.Datacenters = dcs
	s.ReadyDatacenters = fmt.Sprintf("%d/%d", len(ready), len(spec.Datacenters))
	// An error stopped the chain before the datacenters step completed: what policing and
	// degradation would be derived from was not all observed, so they keep their value (a
	// stopped chain without error did observe why the DCs are where they are).
	dcsObserved := st.completed[stepDatacenters] || stepErr == nil
	switch {
	case !dcsObserved:
	case len(notReady) == 0:
		set(aaav1.ConditionPolicingReady, true, ReasonReady, "policing is available in every data center")
	case !st.completed[stepDatacenters] && cassandraDone && !cs.initialized:
		set(aaav1.ConditionPolicingReady, false, ReasonWaitingCassandra, "policing starts once Cassandra is initialized and the schema migrated")
	case len(deployed) == 0 && st.completed[stepDatacenters],
		// The chain stopped at the schema (the first migration runs) and no data center was
		// ever deployed: nothing is unavailable yet, policing waits (no Warning).
		!st.completed[stepDatacenters] && !sc.ready && neverDeployed(st.status.Datacenters):
		set(aaav1.ConditionPolicingReady, false, ReasonWaitingForSchema, "policing starts once the schema is migrated")
	case len(lost) == 0:
		set(aaav1.ConditionPolicingReady, false, ReasonDatacenterJoining, "policing is starting in: "+strings.Join(notReady, ", "))
	case len(ready) == 0:
		set(aaav1.ConditionPolicingReady, false, ReasonUnavailable, "policing is not available in: "+strings.Join(notReady, ", "))
	default:
		set(aaav1.ConditionPolicingReady, false, ReasonPartiallyAvailable, "policing is not available in: "+strings.Join(notReady, ", "))
	}

	// MonitoringReady
	if st.completed[stepMonitoring] {
		switch {
		case st.monitoring != nil:
			set(aaav1.ConditionMonitoringReady, false, st.monitoring.reason, st.monitoring.message)
		case st.monitoringWanted:
			set(aaav1.ConditionMonitoringReady, true, ReasonReady, "monitoring objects are in place")
		default:
			meta.RemoveStatusCondition(&s.Conditions, aaav1.ConditionMonitoringReady)
		}
	}

	// Degraded: serving, but not fully.
	switch {
	case st.certProblem != nil:
		set(aaav1.ConditionDegraded, true, st.certProblem.reason, st.certProblem.message)
	case st.completed[stepConfig] && len(st.unwatched) > 0:
		// Their changes would not reach the pods: serving, but not as configured.
		set(aaav1.ConditionDegraded, true, ReasonNotLabelled, notLabelledMessage(st.unwatched))
	case sc.failed:
		set(aaav1.ConditionDegraded, true, ReasonMigrationFailed, sc.message)
	case !dcsObserved:
	case len(ready) > 0 && len(lost) > 0:
		msg := "policing is not available in: " + strings.Join(lost, ", ")
		if cs.initialized && !cs.ready { // a lost data center: its Cassandra too
			msg += "; " + cs.message
		}
		set(aaav1.ConditionDegraded, true, ReasonPartiallyAvailable, msg)
	case cs.initialized && !cs.ready && len(ready) > 0 && !cassandraJoinsOnly:
		set(aaav1.ConditionDegraded, true, ReasonDatacenterNotReady, cs.message)
	case cs.problem != "":
		set(aaav1.ConditionDegraded, true, ReasonK8ssandraError, cs.problem)
	default:
		set(aaav1.ConditionDegraded, false, ReasonAsExpected, "no degradation observed")
	}

	// Ready: all of CassandraReady, SchemaReady and PolicingReady.
	if stepErr != nil {
		set(aaav1.ConditionReady, false, ReasonReconcileError, stepErr.Error())
		return s
	}
	for _, typ := range []string{aaav1.ConditionCassandraReady, aaav1.ConditionSchemaReady, aaav1.ConditionPolicingReady} {
		cond := meta.FindStatusCondition(s.Conditions, typ)
		if cond == nil {
			set(aaav1.ConditionReady, false, ReasonWaitingCassandra, typ+" not known yet")
			return s
		}
		if cond.Status != metav1.ConditionTrue {
			set(aaav1.ConditionReady, false, cond.Reason, typ+": "+cond.Message)
			return s
		}
	}
	set(aaav1.ConditionReady, true, ReasonReady, "AAA cluster ready in "+plural(len(spec.Datacenters), "data center", "data centers"))
	return s
}

// plural is "1 data center", "3 data centers". Pure.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// neverDeployed: no data center of the last status has shown a Service or a ready pod. Pure.
func neverDeployed(dcs []aaav1.DatacenterStatus) bool {
	for _, d := range dcs {
		if d.Endpoint != "" || d.ReadyReplicas > 0 || d.Ready {
			return false
		}
	}
	return true
}

func findDC(list []aaav1.DatacenterStatus, name string) *aaav1.DatacenterStatus {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

// setCondition sets the condition typ, True when ok, observed at generation gen; the
// AAACluster and the AAALoadTest status share it so that both cap messages alike.
func setCondition(conds *[]metav1.Condition, gen int64, typ string, ok bool, reason, message string) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: truncate(message), ObservedGeneration: gen,
	})
}

func truncate(s string) string {
	const max = 1024
	if len(s) > max {
		return s[:max-3] + "..."
	}
	return s
}

// writeStatus is the one writer of status: it patches it only when it changed, and records
// an event (also logged) for each condition that changed status or reason. When someone else
// wrote the status meanwhile, it computes it again on the fresh object from what the steps
// observed (stepErr included), so their write is not lost.
func (r *AAAClusterReconciler) writeStatus(ctx context.Context, st *state, stepErr error) error {
	c := st.cluster
	var prev aaav1.AAAClusterStatus
	written, err := patchStatus(ctx, r.Client, c, func() {
		// The schema step records the applied schema in st.status: keep it over the fresh copy.
		schema := st.status.Schema
		st.status = *c.Status.DeepCopy()
		st.status.Schema = schema
		prev = *c.Status.DeepCopy()
		c.Status = computeStatus(st, stepErr)
	})
	if !written {
		return err
	}
	// Events once the status is written, for the transitions that were written.
	for _, typ := range []string{aaav1.ConditionCassandraReady, aaav1.ConditionSchemaReady, aaav1.ConditionPolicingReady,
		aaav1.ConditionMonitoringReady, aaav1.ConditionDegraded, aaav1.ConditionReady} {
		n := meta.FindStatusCondition(c.Status.Conditions, typ)
		if n == nil {
			continue
		}
		o := meta.FindStatusCondition(prev.Conditions, typ)
		if o != nil && o.Status == n.Status && o.Reason == n.Reason {
			continue
		}
		eventType := corev1.EventTypeNormal
		if warningReasons[n.Reason] || (typ == aaav1.ConditionDegraded && n.Status == metav1.ConditionTrue) {
			eventType = corev1.EventTypeWarning
		}
		r.event(ctx, c, eventType, n.Reason, "%s=%s: %s", typ, n.Status, n.Message)
	}
	return nil
}
