package controllers

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
)

// warningReasons are the condition reasons whose transition is recorded as a Warning event.
var warningReasons = map[string]bool{
	ReasonMigrationFailed:      true,
	ReasonK8ssandraMissing:     true,
	ReasonCredentialsMissing:   true,
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
		status := metav1.ConditionFalse
		if ok {
			status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{
			Type: typ, Status: status, Reason: reason, Message: truncate(message), ObservedGeneration: gen,
		})
	}

	// CassandraReady
	cs := st.cassandra
	if cs.reason != "" {
		set(aaav1.ConditionCassandraReady, cs.ready, cs.reason, cs.message)
	}

	// SchemaReady
	sc := st.schema
	switch {
	case sc.reason != "":
		set(aaav1.ConditionSchemaReady, sc.ready, sc.reason, sc.message)
	case cs.reason != "" && !cs.initialized:
		set(aaav1.ConditionSchemaReady, false, ReasonWaitingCassandra, "waiting for Cassandra before migrating the schema")
	}

	// Per data center, PolicingReady.
	var ready, deployed []string
	var notReady []string
	dcs := make([]aaav1.DatacenterStatus, 0, len(spec.Datacenters))
	for _, dc := range spec.Datacenters {
		ds := aaav1.DatacenterStatus{Name: dc.Name, CassandraReady: cs.dcReady[dc.Name]}
		if old := findDC(st.status.Datacenters, dc.Name); old != nil && cs.reason == "" {
			ds.CassandraReady = old.CassandraReady // the Cassandra step did not run
		}
		if dc.Replicas != nil {
			ds.DesiredReplicas = *dc.Replicas
		} else if dc.Autoscaling != nil {
			ds.DesiredReplicas = dc.Autoscaling.MinReplicas
		}
		if obs := st.dcs[dc.Name]; obs != nil && obs.deployed {
			deployed = append(deployed, dc.Name)
			if d := obs.deployment; d != nil {
				if d.Spec.Replicas != nil {
					ds.DesiredReplicas = *d.Spec.Replicas
				}
				ds.ReadyReplicas = d.Status.ReadyReplicas
				ds.Ready = deploymentReady(d)
			}
			ds.Endpoint = serviceEndpoint(obs.service)
		} else if old := findDC(st.status.Datacenters, dc.Name); old != nil && len(st.dcs) == 0 {
			// The datacenters step did not run: keep what was last seen.
			ds.ReadyReplicas, ds.Ready, ds.Endpoint = old.ReadyReplicas, old.Ready, old.Endpoint
		}
		if ds.Ready {
			ready = append(ready, dc.Name)
		} else {
			notReady = append(notReady, dc.Name)
		}
		dcs = append(dcs, ds)
	}
	s.Datacenters = dcs
	s.ReadyDatacenters = fmt.Sprintf("%d/%d", len(ready), len(spec.Datacenters))
	switch {
	case len(notReady) == 0:
		set(aaav1.ConditionPolicingReady, true, ReasonReady, "policing is available in every data center")
	case len(st.dcs) == 0 && stepErr == nil && !cs.initialized:
		set(aaav1.ConditionPolicingReady, false, ReasonWaitingCassandra, "policing starts once Cassandra is initialized and the schema migrated")
	case len(deployed) == 0 && len(st.dcs) > 0:
		set(aaav1.ConditionPolicingReady, false, ReasonWaitingForSchema, "policing starts once the schema is migrated")
	case len(ready) == 0:
		set(aaav1.ConditionPolicingReady, false, ReasonUnavailable, "policing is not available in: "+strings.Join(notReady, ", "))
	default:
		set(aaav1.ConditionPolicingReady, false, ReasonPartiallyAvailable, "policing is not available in: "+strings.Join(notReady, ", "))
	}

	// MonitoringReady
	switch {
	case st.monitoring != nil:
		set(aaav1.ConditionMonitoringReady, false, st.monitoring.reason, st.monitoring.message)
	case st.monitoringWanted:
		set(aaav1.ConditionMonitoringReady, true, ReasonReady, "monitoring objects are in place")
	case stepErr == nil:
		meta.RemoveStatusCondition(&s.Conditions, aaav1.ConditionMonitoringReady)
	}

	// Degraded: serving, but not fully.
	switch {
	case st.radsecProblem != nil:
		set(aaav1.ConditionDegraded, true, st.radsecProblem.reason, st.radsecProblem.message)
	case sc.failed:
		set(aaav1.ConditionDegraded, true, ReasonMigrationFailed, sc.message)
	case len(ready) > 0 && len(notReady) > 0:
		set(aaav1.ConditionDegraded, true, ReasonPartiallyAvailable, "policing is not available in: "+strings.Join(notReady, ", "))
	case cs.initialized && !cs.ready && len(ready) > 0:
		set(aaav1.ConditionDegraded, true, ReasonDatacenterNotReady, cs.message)
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
	set(aaav1.ConditionReady, true, ReasonReady, fmt.Sprintf("AAA cluster ready in %d data centers", len(spec.Datacenters)))
	return s
}

func findDC(list []aaav1.DatacenterStatus, name string) *aaav1.DatacenterStatus {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

func truncate(s string) string {
	const max = 1024
	if len(s) > max {
		return s[:max-3] + "..."
	}
	return s
}

// writeStatus is the one writer of status: it patches it only when it changed, and records
// an event (also logged) for each condition that changed status or reason.
func (r *AAAClusterReconciler) writeStatus(ctx context.Context, st *state, stepErr error) error {
	c := st.cluster
	next := computeStatus(st, stepErr)
	if equality.Semantic.DeepEqual(c.Status, next) {
		return nil
	}
	for _, typ := range []string{aaav1.ConditionCassandraReady, aaav1.ConditionSchemaReady, aaav1.ConditionPolicingReady,
		aaav1.ConditionMonitoringReady, aaav1.ConditionDegraded, aaav1.ConditionReady} {
		n := meta.FindStatusCondition(next.Conditions, typ)
		if n == nil {
			continue
		}
		o := meta.FindStatusCondition(c.Status.Conditions, typ)
		if o != nil && o.Status == n.Status && o.Reason == n.Reason {
			continue
		}
		eventType := corev1.EventTypeNormal
		if warningReasons[n.Reason] || (typ == aaav1.ConditionDegraded && n.Status == metav1.ConditionTrue) {
			eventType = corev1.EventTypeWarning
		}
		r.event(ctx, c, eventType, n.Reason, "%s=%s: %s", typ, n.Status, n.Message)
	}
	orig := c.DeepCopy()
	c.Status = next
	return r.Status().Patch(ctx, c, client.MergeFrom(orig))
}
