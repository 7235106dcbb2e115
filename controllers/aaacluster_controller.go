// Package controllers reconciles AAACluster objects.
//
// Reconcile is a thin chain of steps, one file per concern: config.go (ConfigMaps and the
// hashes that roll pods), certificates.go (RadSec), monitoring.go, cassandra.go
// (K8ssandraCluster), schema.go (the migration Job), datacenters.go (per-DC Deployment,
// Services, PodDisruptionBudget, HorizontalPodAutoscaler) and status.go, the one writer of
// status. Builders (build*, render*) are pure functions of the spec; only the steps call the
// API, through apply (apply.go), which writes nothing when nothing changed.
package controllers

import (
	"context"
	"errors"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
)

// Kinds of the optional CRDs.
var (
	K8ssandraClusterGVK = schema.GroupVersionKind{Group: "k8ssandra.io", Version: "v1alpha1", Kind: "K8ssandraCluster"}
	CertificateGVK      = schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}
	ServiceMonitorGVK   = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"}
	PrometheusRuleGVK   = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PrometheusRule"}
)

// requeueOptional is how often a cluster waiting on a missing optional CRD looks again.
const requeueOptional = time.Minute

// indexReferencedObjects indexes AAAClusters by the Secrets and ConfigMaps they reference.
const indexReferencedObjects = "aaa.openaaa.io/referenced"

// AAAClusterReconciler reconciles AAACluster objects.
type AAAClusterReconciler struct {
	client.Client
	// APIReader reads past the cache: only to tell why a referenced Secret or ConfigMap is
	// not in it (watched.go). Nil: the reason is not told.
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  record.EventRecorder
	Options   Options
	// CassandraProbeInterval: how often the external Cassandra's contact points are dialled
	// between reconciles (cassandra_probe.go). Zero: 5 s.
	CassandraProbeInterval time.Duration
}

// state is what the steps of one reconcile share. Steps read the spec (with defaults) and
// fill in what they observed; status.go turns it into the status.
type state struct {
	cluster *aaav1.AAACluster
	spec    aaav1.AAAClusterSpec // with defaults
	status  aaav1.AAAClusterStatus

	// completed: the steps that returned without error, so their observations are whole.
	// What a step did not observe keeps its previous status.
	completed map[string]bool

	// config.go
	configHash map[string]string // per DC: hash of its ConfigMap and the Secrets that roll pods
	unwatched  []string          // "Secret/x" that exist without the watch label (watched.go)
	// cassandra.go
	cassandra cassandraState
	// schema.go: the DCs the applied schema replicates to, so policing may run there
	schemaDCs map[string]bool
	schema    schemaState
	// datacenters.go
	dcs map[string]*dcObserved
	// certificates.go: a problem that degrades the cluster without stopping it
	certProblem *problem
	// monitoring.go
	monitoring       *problem
	monitoringWanted bool
}

// Names of the steps.
const (
	stepConfig       = "config"
	stepCertificates = "certificates"
	stepMonitoring   = "monitoring"
	stepCassandra    = "cassandra"
	stepSchema       = "schema"
	stepDatacenters  = "datacenters"
)

func newState(cluster *aaav1.AAACluster, opts Options) *state {
	return &state{
		cluster:    cluster,
		spec:       withDefaults(cluster.Spec, opts),
		status:     *cluster.Status.DeepCopy(),
		completed:  map[string]bool{},
		configHash: map[string]string{},
		dcs:        map[string]*dcObserved{},
	}
}

type problem struct{ reason, message string }

// result of a step: go on, or stop the chain (the status step still runs).
type result struct {
	stop         bool
	requeueAfter time.Duration
}

type step struct {
	name string
	run  func(context.Context, *state) (result, error)
}

// +kubebuilder:rbac:groups=aaa.openaaa.io,resources=aaaclusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=aaa.openaaa.io,resources=aaaclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=aaa.openaaa.io,resources=aaaclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=configmaps;services,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=k8ssandra.io,resources=k8ssandraclusters,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
// +kubebuilder:rbac:groups=monitoring.coreos.com,resources=servicemonitors;prometheusrules,verbs=get;list;watch;create;update;patch;delete

// Reconcile runs the chain of steps, then writes the status once.
func (r *AAAClusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	cluster := &aaav1.AAACluster{}
	if err := r.Get(ctx, req.NamespacedName, cluster); err != nil {
		// Deleted: owner references let the garbage collector remove the rest.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !cluster.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	st := newState(cluster, r.Options)
	steps := []step{
		{stepConfig, r.reconcileConfig},
		{stepCertificates, r.reconcileCertificates},
		{stepMonitoring, r.reconcileMonitoring},
		{stepCassandra, r.reconcileCassandra},
		{stepSchema, r.reconcileSchema},
		{stepDatacenters, r.reconcileDatacenters},
	}
	var requeue time.Duration
	var stepErr error
	for _, s := range steps {
		res, err := s.run(ctx, st)
		if err != nil {
			log.Error(err, "reconcile step failed", "step", s.name)
			stepErr = err
			break
		}
		st.completed[s.name] = true
		if res.requeueAfter > 0 && (requeue == 0 || res.requeueAfter < requeue) {
			requeue = res.requeueAfter
		}
		if res.stop {
			break
		}
	}
	if err := r.writeStatus(ctx, st, stepErr); err != nil {
		if apierrors.IsConflict(err) && stepErr == nil {
			// Still in conflict after the retries: reconcile again on the fresh copy soon.
			return ctrl.Result{RequeueAfter: 200 * time.Millisecond}, nil
		}
		return ctrl.Result{}, errors.Join(stepErr, err)
	}
	if stepErr != nil {
		return ctrl.Result{}, stepErr
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// SetupWithManager registers the controller. Optional kinds (K8ssandraCluster, Certificate,
// ServiceMonitor, PrometheusRule) are watched only when their CRDs are installed.
func (r *AAAClusterReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &aaav1.AAACluster{}, indexReferencedObjects,
		func(o client.Object) []string { return referencedObjects(o.(*aaav1.AAACluster)) }); err != nil {
		return err
	}
	prober := newCassandraProber(mgr.GetClient(), r.CassandraProbeInterval)
	if err := mgr.Add(prober); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("aaacluster").
		For(&aaav1.AAACluster{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.Service{}).
		Owns(&appsv1.Deployment{}).
		Owns(&appsv1.StatefulSet{}).
		Owns(&batchv1.Job{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Owns(&autoscalingv2.HorizontalPodAutoscaler{}).
		Owns(&networkingv1.NetworkPolicy{}).
		Owns(&corev1.Secret{}). // the admin token: deleted, it is made again
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.referencing("Secret"))).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.referencing("ConfigMap"))).
		// cass-operator's StatefulSets: a Cassandra node lost or back changes CassandraReady
		// at once (k8ssandra-operator's status lags it).
		Watches(&appsv1.StatefulSet{}, handler.EnqueueRequestsFromMapFunc(cassandraStatefulSetCluster)).
		WatchesRawSource(source.Channel(prober.events, &handler.EnqueueRequestForObject{}))
	for _, gvk := range []schema.GroupVersionKind{K8ssandraClusterGVK, CertificateGVK, ServiceMonitorGVK, PrometheusRuleGVK} {
		ok, err := r.hasKindIn(mgr, gvk)
		if err != nil {
			return err
		}
		if !ok {
			mgr.GetLogger().Info("CRD not installed: not watching it; AAAClusters that need it report it in their status", "kind", gvk.String())
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		b = b.Owns(u)
	}
	return b.Complete(r)
}

func (r *AAAClusterReconciler) hasKindIn(mgr ctrl.Manager, gvk schema.GroupVersionKind) (bool, error) {
	_, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err == nil {
		return true, nil
	}
	if isNoMatch(err) {
		return false, nil
	}
	return false, err
}

// referencing maps a Secret or ConfigMap to the AAAClusters that reference it.
func (r *AAAClusterReconciler) referencing(kind string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		list := &aaav1.AAAClusterList{}
		if err := r.List(ctx, list, client.InNamespace(o.GetNamespace()),
			client.MatchingFields{indexReferencedObjects: kind + "/" + o.GetName()}); err != nil {
			logf.FromContext(ctx).Error(err, "list AAAClusters referencing", "kind", kind, "name", o.GetName())
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(list.Items))
		for _, c := range list.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&c)})
		}
		return reqs
	}
}
