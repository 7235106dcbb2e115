package controllers

// AAALoadTest: the field's capacity test as a Kubernetes object. Reconcile is a short chain:
// an existing Job is observed (loadtest_result.go reads the report from its pod's termination
// message); otherwise the target is checked and the Job created (loadtest_job.go builds it,
// purely); loadtest_status.go is the one writer of status. A finished run is final: its
// reconciles read and write nothing.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
)

// indexLoadTestTarget indexes AAALoadTests by their target AAACluster, "namespace/name".
const indexLoadTestTarget = "aaa.openaaa.io/loadtest-target"

// requeueWaiting is how often a load test waiting for a Secret or a cluster looks again (the
// AAACluster watch usually comes first).
const requeueWaiting = 30 * time.Second

// AAALoadTestReconciler runs AAALoadTests.
type AAALoadTestReconciler struct {
	client.Client
	// APIReader reads pods without a cache: the policing pods' addresses once per run and the
	// load generator's pod once at its end, rather than caching every pod of the cluster.
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  record.EventRecorder
	Options   Options
}

// +kubebuilder:rbac:groups=aaa.openaaa.io,resources=aaaloadtests,verbs=get;list;watch
// +kubebuilder:rbac:groups=aaa.openaaa.io,resources=aaaloadtests/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=aaa.openaaa.io,resources=aaaloadtests/finalizers,verbs=update
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile observes or starts the run, then writes the status once.
func (r *AAALoadTestReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	lt := &aaav1.AAALoadTest{}
	if err := r.Get(ctx, req.NamespacedName, lt); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !lt.DeletionTimestamp.IsZero() || loadTestFinished(lt) {
		return ctrl.Result{}, nil
	}
	o, requeue, runErr := r.run(ctx, lt)
	if runErr != nil {
		// Said in the status too; the error retries with back-off.
		logf.FromContext(ctx).Error(runErr, "load test reconcile failed")
		phase := lt.Status.Phase
		if phase == "" {
			phase = aaav1.LoadTestPending
		}
		o = loadTestOutcome{phase: phase, reason: ReasonReconcileError, message: runErr.Error()}
	}
	if err := r.writeLoadTestStatus(ctx, lt, o); err != nil {
		if apierrors.IsConflict(err) && runErr == nil {
			return ctrl.Result{RequeueAfter: 200 * time.Millisecond}, nil
		}
		return ctrl.Result{}, errors.Join(runErr, err)
	}
	if runErr != nil {
		return ctrl.Result{}, runErr
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// loadTestFinished: a run that succeeded or failed stays as it is.
func loadTestFinished(lt *aaav1.AAALoadTest) bool {
	return (lt.Status.Phase == aaav1.LoadTestSucceeded || lt.Status.Phase == aaav1.LoadTestFailed) &&
		lt.Status.ObservedGeneration == lt.Generation
}

// run observes the Job if there is one, else starts it once the target is ready.
func (r *AAALoadTestReconciler) run(ctx context.Context, lt *aaav1.AAALoadTest) (loadTestOutcome, time.Duration, error) {
	job := &batchv1.Job{}
	err := r.Get(ctx, client.ObjectKey{Namespace: lt.Namespace, Name: loadgenJobName(lt)}, job)
	switch {
	case err == nil:
		if !metav1.IsControlledBy(job, lt) {
			return failed(ReasonInvalidSpec, fmt.Sprintf("Job %s exists and is not this AAALoadTest's", job.Name)), 0, nil
		}
		o, err := r.observeJob(ctx, lt, job)
		return o, 0, err
	case !apierrors.IsNotFound(err):
		return loadTestOutcome{}, 0, err
	}
	if lt.Status.StartTime != nil {
		// Started before: the cache may lag behind the create; the API server says for sure.
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(job), job); err == nil || !apierrors.IsNotFound(err) {
			return loadTestOutcome{}, time.Second, client.IgnoreNotFound(err)
		}
		return failed(ReasonJobDeleted, fmt.Sprintf("Job %s was deleted before the run ended", loadgenJobName(lt))), 0, nil
	}
	return r.start(ctx, lt)
}

func failed(reason, message string) loadTestOutcome {
	now := metav1.Now()
	return loadTestOutcome{phase: aaav1.LoadTestFailed, reason: reason, message: message, completionTime: &now}
}

func pending(reason, message string) loadTestOutcome {
	return loadTestOutcome{phase: aaav1.LoadTestPending, reason: reason, message: message}
}

// start checks the target (namespace, cluster, data centers, Secret) and creates the Job.
func (r *AAALoadTestReconciler) start(ctx context.Context, lt *aaav1.AAALoadTest) (loadTestOutcome, time.Duration, error) {
	spec := loadTestDefaults(lt.Spec, r.Options)
	ns := loadTestNamespace(lt)
	if ns != lt.Namespace && !r.Options.AllowCrossNamespaceLoadTests {
		return failed(ReasonCrossNamespace, fmt.Sprintf(
			"spec.cluster.namespace %q: an AAALoadTest may only target an AAACluster of its own namespace %q unless the operator runs with --loadtest-allow-cross-namespace",
			ns, lt.Namespace)), 0, nil
	}
	c := &aaav1.AAACluster{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: lt.Spec.Cluster.Name}, c); err != nil {
		if apierrors.IsNotFound(err) {
			return pending(ReasonClusterNotFound, fmt.Sprintf("AAACluster %s/%s not found", ns, lt.Spec.Cluster.Name)), requeueWaiting, nil
		}
		return loadTestOutcome{}, 0, err
	}
	cspec := withDefaults(c.Spec, r.Options)
	dcs, err := loadTestDatacenters(spec, cspec)
	if err != nil {
		return failed(ReasonDatacenterNotInSpec, err.Error()), 0, nil
	}
	if notReady := unreadyDatacenters(c, dcs); len(notReady) > 0 {
		return pending(ReasonClusterNotReady, fmt.Sprintf("waiting for policing to be ready in %s of AAACluster %s/%s",
			strings.Join(notReady, ", "), ns, c.Name)), 0, nil
	}
	if msg, err := r.checkSecret(ctx, lt.Namespace, spec.SecretRef); err != nil || msg != "" {
		return pending(ReasonSecretNotFound, msg), requeueWaiting, err
	}
	metrics, err := r.policingMetricsAddresses(ctx, c, dcs, spec)
	if err != nil {
		return loadTestOutcome{}, 0, err
	}
	job, err := buildLoadgenJob(lt, spec, c, cspec, dcs, metrics)
	if err != nil {
		return failed(ReasonInvalidSpec, err.Error()), 0, nil
	}
	if err := controllerutil.SetControllerReference(lt, job, r.Scheme); err != nil {
		return loadTestOutcome{}, 0, err
	}
	if err := r.Create(ctx, job); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return loadTestOutcome{}, time.Second, nil
		}
		return loadTestOutcome{}, 0, fmt.Errorf("create Job %s: %w", job.Name, err)
	}
	recordEvent(ctx, r.Recorder, lt, corev1.EventTypeNormal, ReasonLoadTestStarted,
		"started Job %s: aaa-loadgen against %s of AAACluster %s/%s for %s", job.Name, strings.Join(dcs, ", "), ns, c.Name, spec.Load.Duration)
	now := metav1.Now()
	return loadTestOutcome{phase: aaav1.LoadTestRunning, reason: ReasonRunning, job: job.Name, startTime: &now,
		message: fmt.Sprintf("Job %s runs aaa-loadgen against %s for %s", job.Name, strings.Join(dcs, ", "), spec.Load.Duration)}, 0, nil
}

// unreadyDatacenters are the data centers of dcs whose policing the cluster's status does not
// report ready. Pure.
func unreadyDatacenters(c *aaav1.AAACluster, dcs []string) []string {
	var out []string
	for _, dc := range dcs {
		if s := findDC(c.Status.Datacenters, dc); s == nil || !s.Ready {
			out = append(out, dc)
		}
	}
	return out
}

// checkSecret returns why the NAS secret cannot be used ("" when it can).
func (r *AAALoadTestReconciler) checkSecret(ctx context.Context, ns string, ref aaav1.SecretKeyRef) (string, error) {
	s := &corev1.Secret{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			if hidden, uerr := unlabelled(ctx, r.APIReader, "Secret", client.ObjectKey{Namespace: ns, Name: ref.Name}); uerr != nil {
				return "", uerr
			} else if hidden {
				return "spec.secretRef: " + notLabelledMessage([]string{"Secret " + ns + "/" + ref.Name}), nil
			}
			return fmt.Sprintf("spec.secretRef: Secret %s/%s not found", ns, ref.Name), nil
		}
		return "", err
	}
	if len(s.Data[ref.Key]) == 0 {
		return fmt.Sprintf("spec.secretRef: Secret %s/%s has no key %q", ns, ref.Name, ref.Key), nil
	}
	return "", nil
}

// policingMetricsAddresses lists the ready policing pods of each data center: aaa-loadgen reads
// each pod's /metrics, since a scrape through the admin Service would reach any pod and mix
// their counters. Pods that start after the Job are not read.
func (r *AAALoadTestReconciler) policingMetricsAddresses(ctx context.Context, c *aaav1.AAACluster, dcs []string, spec aaav1.AAALoadTestSpec) (map[string][]string, error) {
	out := map[string][]string{}
	if spec.ServerMetrics != nil && !*spec.ServerMetrics {
		return out, nil
	}
	for _, dc := range dcs {
		pods := &corev1.PodList{}
		if err := r.APIReader.List(ctx, pods, client.InNamespace(c.Namespace), client.MatchingLabels(podSelector(c, dc))); err != nil {
			return nil, fmt.Errorf("list the policing pods of %s: %w", dc, err)
		}
		out[dc] = readyPodAddresses(pods.Items, AdminPort)
	}
	return out, nil
}

// readyPodAddresses are ip:port of the ready pods, in name order. Pure.
func readyPodAddresses(pods []corev1.Pod, port int32) []string {
	var out []string
	for _, p := range sortedPods(pods) {
		if p.Status.PodIP == "" || !p.DeletionTimestamp.IsZero() || !podReady(&p) {
			continue
		}
		out = append(out, fmt.Sprintf("%s:%d", p.Status.PodIP, port))
	}
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// SetupWithManager registers the controller: AAALoadTests, their Jobs, and the AAAClusters
// they wait for; nothing when the AAALoadTest CRD is not installed.
func (r *AAALoadTestReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.APIReader == nil {
		return errors.New("AAALoadTestReconciler: APIReader is required")
	}
	// An operator upgraded where CRDs are managed apart may run before the AAALoadTest CRD is
	// installed: it keeps reconciling AAAClusters and says so.
	if _, err := mgr.GetRESTMapper().RESTMapping(aaav1.GroupVersion.WithKind("AAALoadTest").GroupKind(), aaav1.GroupVersion.Version); err != nil {
		if isNoMatch(err) {
			mgr.GetLogger().Info("AAALoadTest CRD not installed: load tests are off until it is installed and the operator restarted")
			return nil
		}
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &aaav1.AAALoadTest{}, indexLoadTestTarget,
		func(o client.Object) []string {
			lt := o.(*aaav1.AAALoadTest)
			return []string{loadTestNamespace(lt) + "/" + lt.Spec.Cluster.Name}
		}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("aaaloadtest").
		For(&aaav1.AAALoadTest{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&batchv1.Job{}).
		Watches(&aaav1.AAACluster{}, handler.EnqueueRequestsFromMapFunc(r.loadTestsOf)).
		Complete(r)
}

// loadTestsOf maps an AAACluster to the unfinished AAALoadTests targeting it.
func (r *AAALoadTestReconciler) loadTestsOf(ctx context.Context, o client.Object) []reconcile.Request {
	list := &aaav1.AAALoadTestList{}
	if err := r.List(ctx, list, client.MatchingFields{indexLoadTestTarget: o.GetNamespace() + "/" + o.GetName()}); err != nil {
		logf.FromContext(ctx).Error(err, "list AAALoadTests targeting", "cluster", o.GetName())
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if !loadTestFinished(&list.Items[i]) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}
