package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// Event and condition reasons. Constants only: dashboards and alerts match on them.
const (
	ReasonCreated = "Created"
	ReasonUpdated = "Updated"
	ReasonDeleted = "Deleted"

	ReasonReady                = "Ready"
	ReasonAsExpected           = "AsExpected"
	ReasonReconcileError       = "ReconcileError"
	ReasonK8ssandraMissing     = "K8ssandraNotInstalled"
	ReasonK8ssandraError       = "K8ssandraOperatorError"
	ReasonCRDNotInstalled      = "CRDNotInstalled"
	ReasonCassandraInit        = "CassandraInitializing"
	ReasonDatacenterNotReady   = "CassandraDatacenterNotReady"
	ReasonCredentialsMissing   = "CredentialsNotFound"
	ReasonNotLabelled          = "NotLabelled"
	ReasonExternalCassandra    = "ExternalCassandra"
	ReasonCassandraUnreachable = "CassandraUnreachable"
	ReasonWaitingCassandra     = "WaitingForCassandra"
	ReasonMigrating            = "Migrating"
	ReasonMigrationStarted     = "MigrationStarted"
	ReasonMigrationSucceeded   = "MigrationSucceeded"
	ReasonMigrationFailed      = "MigrationFailed"
	ReasonWaitingForSchema     = "WaitingForSchema"
	ReasonUnavailable          = "DeploymentsUnavailable"
	ReasonPartiallyAvailable   = "PartiallyAvailable"
	ReasonDatacenterJoining    = "DatacenterJoining"
	ReasonCertManagerMissing   = "CertManagerNotInstalled"
	ReasonNotRequested         = "NotRequested"

	// AAALoadTest
	ReasonClusterNotFound     = "ClusterNotFound"
	ReasonClusterNotReady     = "ClusterNotReady"
	ReasonCrossNamespace      = "CrossNamespaceRefused"
	ReasonDatacenterNotInSpec = "DatacenterNotInCluster"
	ReasonSecretNotFound      = "SecretNotFound"
	ReasonLoadTestStarted     = "LoadTestStarted"
	ReasonRunning             = "Running"
	ReasonCompleted           = "Completed"
	ReasonReportUnreadable    = "ReportUnreadable"
	ReasonLoadgenFailed       = "LoadgenFailed"
	ReasonJobDeleted          = "JobDeleted"
	ReasonInvalidSpec         = "InvalidSpec"
	ReasonLoadTestJobFailed   = "JobFailed"
	ReasonDeadlineExceeded    = "DeadlineExceeded"
)

// event records an event on obj and logs it: every event is also in the log.
func (r *AAAClusterReconciler) event(ctx context.Context, obj runtime.Object, eventType, reason, format string, args ...any) {
	recordEvent(ctx, r.Recorder, obj, eventType, reason, format, args...)
}

// recordEvent records an event on obj (when there is a recorder) and logs it.
func recordEvent(ctx context.Context, recorder record.EventRecorder, obj runtime.Object, eventType, reason, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	log := logf.FromContext(ctx).WithValues("reason", reason)
	if eventType == corev1.EventTypeWarning {
		log.Info("warning: "+msg, "eventType", eventType)
	} else {
		log.Info(msg, "eventType", eventType)
	}
	if recorder != nil {
		recorder.Event(obj, eventType, reason, msg)
	}
}
