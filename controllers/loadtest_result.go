package controllers

import (
	"context"
	"fmt"
	"sort"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
	"github.com/openaaa/openaaa/services/loadgen/summary"
)

// observeJob reads the run's state from its Job and, once it ended, the report from the
// termination message of the load generator's container (never from its logs).
func (r *AAALoadTestReconciler) observeJob(ctx context.Context, lt *aaav1.AAALoadTest, job *batchv1.Job) (loadTestOutcome, error) {
	done, jobFailed, jobReason, jobMessage := jobOutcome(job)
	started := job.CreationTimestamp
	if !done {
		return loadTestOutcome{phase: aaav1.LoadTestRunning, reason: ReasonRunning, job: job.Name, startTime: &started,
			message: fmt.Sprintf("Job %s runs aaa-loadgen", job.Name)}, nil
	}
	msg, err := r.terminationMessage(ctx, job)
	if err != nil {
		return loadTestOutcome{}, err
	}
	o := loadTestFromJob(job, jobFailed, jobReason, jobMessage, msg, lt.Spec.SuccessCriteria)
	o.startTime = &started
	return o, nil
}

// loadTestFromJob is the outcome of an ended Job, given its pod's termination message and the
// run's success criteria: a report that misses them is Failed, with the report. Pure.
func loadTestFromJob(job *batchv1.Job, jobFailed bool, jobReason, jobMessage, message string, crit aaav1.LoadTestSuccessCriteria) loadTestOutcome {
	ended := jobEndTime(job)
	o := loadTestOutcome{phase: aaav1.LoadTestFailed, job: job.Name, completionTime: ended}
	s, parseErr := summary.Parse([]byte(message))
	switch {
	case parseErr == nil && s.Error != "":
		o.reason, o.message = ReasonLoadgenFailed, "aaa-loadgen: "+s.Error
	case jobFailed:
		o.reason = ReasonLoadTestJobFailed
		if jobReason == batchv1.JobReasonDeadlineExceeded {
			o.reason = ReasonDeadlineExceeded
		}
		o.message = fmt.Sprintf("Job %s failed (%s): %s", job.Name, jobReason, jobMessage)
		if message != "" {
			// FallbackToLogsOnError: the end of the log when aaa-loadgen wrote no summary.
			o.message += "; aaa-loadgen: " + strings.TrimSpace(message)
		}
	case parseErr != nil:
		o.reason = ReasonReportUnreadable
		o.message = fmt.Sprintf("Job %s completed but its pod's termination message holds no report: %v", job.Name, parseErr)
	default:
		o.summary = s
		if reason, why := loadTestVerdict(crit, s); reason != "" {
			o.reason, o.message = reason, fmt.Sprintf("aaa-loadgen ran %.1f s (Job %s): %s", s.Seconds, job.Name, why)
			break
		}
		o.phase, o.reason = aaav1.LoadTestSucceeded, ReasonCompleted
		o.message = fmt.Sprintf("aaa-loadgen ran %.1f s (Job %s)", s.Seconds, job.Name)
	}
	return o
}

// jobEndTime is when the Job ended: its completionTime, else the time of its terminal
// condition, else now.
func jobEndTime(job *batchv1.Job) *metav1.Time {
	if t := job.Status.CompletionTime; t != nil {
		return t.DeepCopy()
	}
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobFailed || c.Type == batchv1.JobComplete) && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			t := c.LastTransitionTime
			return &t
		}
	}
	now := metav1.Now()
	return &now
}

// terminationMessage is the termination message of the load generator container of the Job's
// pod ("" when there is none, e.g. the pod never started).
func (r *AAALoadTestReconciler) terminationMessage(ctx context.Context, job *batchv1.Job) (string, error) {
	if job.Spec.Selector == nil {
		return "", nil
	}
	sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		return "", err
	}
	pods := &corev1.PodList{}
	if err := r.APIReader.List(ctx, pods, client.InNamespace(job.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return "", fmt.Errorf("list the pods of Job %s: %w", job.Name, err)
	}
	return loadgenMessage(pods.Items), nil
}

// loadgenMessage picks the termination message of the load generator container: of a pod
// that succeeded if any, else of the last pod to start. Pure.
func loadgenMessage(pods []corev1.Pod) string {
	var msg string
	for _, p := range sortedPods(pods) {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name != loadgenContainer || cs.State.Terminated == nil {
				continue
			}
			if cs.State.Terminated.ExitCode == 0 {
				return cs.State.Terminated.Message
			}
			msg = cs.State.Terminated.Message
		}
	}
	return msg
}

// sortedPods orders pods by creation time, then name.
func sortedPods(pods []corev1.Pod) []corev1.Pod {
	out := append([]corev1.Pod(nil), pods...)
	sort.SliceStable(out, func(i, j int) bool {
		ti, tj := out[i].CreationTimestamp, out[j].CreationTimestamp
		if !ti.Equal(&tj) {
			return ti.Before(&tj)
		}
		return out[i].Name < out[j].Name
	})
	return out
}
