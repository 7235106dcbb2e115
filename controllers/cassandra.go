package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
)

// cassandraState is what the Cassandra step observed.
type cassandraState struct {
	// initialized: the cluster has been ready once (K8ssandraCluster CassandraInitialized, or
	// the external cluster's credentials exist).
	initialized bool
	// dcReady per data center of the spec.
	dcReady map[string]bool
	// ready: initialized and every data center of the spec ready.
	ready           bool
	reason, message string
	// problem: Cassandra serves, but its operator cannot finish what the spec asks (a
	// data center's decommission); Degraded says it.
	problem string
}

// buildK8ssandraCluster is the K8ssandraCluster (k8ssandra.io/v1alpha1) with one datacenter per
// data center of the spec, named like it. retained are datacenter entries to keep although
// they left the spec: the keyspace still replicates to them until the next migration, and a
// datacenter must leave the replication before Cassandra decommissions it. Pure.
func buildK8ssandraCluster(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec, retained []any) *unstructured.Unstructured {
	dcs := make([]any, 0, len(spec.Datacenters)+len(retained))
	for _, dc := range spec.Datacenters {
		claim := map[string]any{
			"accessModes": []any{"ReadWriteOnce"},
			"resources": map[string]any{
				"requests": map[string]any{"storage": dc.Cassandra.Storage.Size.String()},
			},
		}
		if sc := dc.Cassandra.Storage.StorageClassName; sc != nil {
			claim["storageClassName"] = *sc
		}
		entry := map[string]any{
			"metadata":      map[string]any{"name": dc.Name},
			"size":          int64(*dc.Cassandra.Size),
			"storageConfig": map[string]any{"cassandraDataVolumeClaimSpec": claim},
		}
		if res := toUnstructured(&dc.Cassandra.Resources); len(res) > 0 {
			entry["resources"] = res
			// The config init container (k8ssandra-operator makes it cass-operator's
			// configBuilderResources) asks for what the datacenter asks for: its default, a
			// whole CPU, would be the pod's request on a small node.
			entry["initContainers"] = []any{map[string]any{"name": "server-config-init", "resources": res}}
		}
		dcs = append(dcs, entry)
	}
	dcs = append(dcs, retained...)
	cassandra := map[string]any{
		"serverVersion": spec.Cassandra.Managed.ServerVersion,
		"datacenters":   dcs,
		// Cassandra 5's own default. With fewer tokens k8ssandra-operator computes each
		// node's initial token in an init container of its own image (k8ssandra-client).
		"config": map[string]any{"cassandraYaml": map[string]any{"num_tokens": int64(16)}},
	}
	if opts := spec.Cassandra.Managed.JvmOptions; len(opts) > 0 {
		l := make([]any, len(opts))
		for i, o := range opts {
			l[i] = o
		}
		cassandra["config"].(map[string]any)["jvmOptions"] = map[string]any{"additionalOptions": l}
	}
	if spec.Cassandra.Managed.SoftPodAntiAffinity {
		cassandra["softPodAntiAffinity"] = true
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": K8ssandraClusterGVK.GroupVersion().String(),
		"kind":       K8ssandraClusterGVK.Kind,
		"metadata": map[string]any{
			"name":      k8ssandraName(c),
			"namespace": c.Namespace,
		},
		"spec": map[string]any{
			"cassandra": cassandra,
		},
	}}
	u.SetLabels(clusterLabels(c, "cassandra"))
	u.SetAnnotations(map[string]string{dcReplicationAnnotation: dcReplication(spec)})
	return u
}

// dcReplicationAnnotation tells k8ssandra-operator the keyspace's replication factor in each
// data center. It applies it only to a data center being added to an initialized cluster,
// before that datacenter rebuilds from an existing one: the rebuild then streams the sessions.
// The migration sets the same factors (desiredReplication).
const dcReplicationAnnotation = "k8ssandra.io/dc-replication"

// dcReplication is the annotation's value: {"<dc>": {"<keyspace>": <rf>}, ...}. Pure.
func dcReplication(spec aaav1.AAAClusterSpec) string {
	m := make(map[string]map[string]int32, len(spec.Datacenters))
	for _, dc := range spec.Datacenters {
		m[dc.Name] = map[string]int32{spec.Cassandra.Keyspace: *dc.Cassandra.ReplicationFactor}
	}
	b, err := json.Marshal(m) // sorted keys: the same spec, the same annotation
	if err != nil {
		panic(err)
	}
	return string(b)
}

// retainedDatacenters returns the datacenter entries of the existing K8ssandraCluster that left
// the spec but that the applied schema still replicates to. Pure.
func retainedDatacenters(existing *unstructured.Unstructured, spec aaav1.AAAClusterSpec, applied map[string]bool) []any {
	if existing == nil {
		return nil
	}
	inSpec := map[string]bool{}
	for _, dc := range spec.Datacenters {
		inSpec[dc.Name] = true
	}
	list, _, _ := unstructured.NestedSlice(existing.Object, "spec", "cassandra", "datacenters")
	var out []any
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		name, _, _ := unstructured.NestedString(m, "metadata", "name")
		if name != "" && !inSpec[name] && applied[name] {
			out = append(out, m)
		}
	}
	return out
}

// Labels cass-operator puts on its StatefulSets and pods.
const (
	cassClusterLabel = "cassandra.datastax.com/cluster"
	cassDCLabel      = "cassandra.datastax.com/datacenter"
)

// cassandraNodes counts the ready and desired Cassandra nodes of each datacenter of cluster from
// cass-operator's StatefulSets (one per rack). Pure.
func cassandraNodes(stss []appsv1.StatefulSet, cluster string) map[string][2]int32 {
	out := map[string][2]int32{}
	for _, s := range stss {
		dc := s.Labels[cassDCLabel]
		if s.Labels[cassClusterLabel] != cluster || dc == "" {
			continue
		}
		n := out[dc]
		n[0] += s.Status.ReadyReplicas
		if s.Spec.Replicas != nil {
			n[1] += *s.Spec.Replicas
		}
		out[dc] = n
	}
	return out
}

// cassandraStatefulSetCluster maps a cass-operator StatefulSet to the AAACluster whose
// K8ssandraCluster it belongs to (k8ssandraName: the AAACluster's own name).
func cassandraStatefulSetCluster(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[cassClusterLabel]
	if name == "" || o.GetLabels()[cassDCLabel] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

// k8ssandraStatus reads initialization, per-datacenter readiness and a line on the progress of
// each datacenter of the spec ("dc1 ready, dc2 Updating, dc3 not created yet": k8ssandra-operator
// creates them one after another). nodes (ready, desired; cassandraNodes) overrules a Ready
// datacenter with nodes down: cass-operator's status lags a lost pod, and may never see one
// that cannot be recreated. Pure.
func k8ssandraStatus(u *unstructured.Unstructured, dcs []aaav1.Datacenter, nodes map[string][2]int32) (initialized bool, ready map[string]bool, progress string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "CassandraInitialized" && m["status"] == string(corev1.ConditionTrue) {
			initialized = true
		}
	}
	ready = map[string]bool{}
	var lines []string
	for _, dc := range dcs {
		cass, _, _ := unstructured.NestedMap(u.Object, "status", "datacenters", dc.Name, "cassandra")
		if cass == nil {
			lines = append(lines, dc.Name+" not created yet")
			continue
		}
		op, _ := cass["cassandraOperatorProgress"].(string)
		if op == "Ready" {
			ready[dc.Name] = true
		}
		dcConds, _, _ := unstructured.NestedSlice(cass, "conditions")
		for _, c := range dcConds {
			m, _ := c.(map[string]any)
			if m["type"] == "Ready" {
				ready[dc.Name] = m["status"] == string(corev1.ConditionTrue)
			}
		}
		if n, ok := nodes[dc.Name]; ok && ready[dc.Name] && n[0] < n[1] {
			ready[dc.Name] = false
			lines = append(lines, fmt.Sprintf("%s %d/%d Cassandra nodes ready", dc.Name, n[0], n[1]))
			continue
		}
		switch {
		case ready[dc.Name]:
			lines = append(lines, dc.Name+" ready")
		case op == "Ready": // cass-operator done, the datacenter's Ready condition not (yet) True
			lines = append(lines, dc.Name+" not ready")
		case op != "":
			lines = append(lines, dc.Name+" "+op)
		default:
			lines = append(lines, dc.Name+" created")
		}
	}
	// Datacenters that left the spec and that k8ssandra-operator is still taking out.
	inSpec := map[string]bool{}
	for _, dc := range dcs {
		inSpec[dc.Name] = true
	}
	status, _, _ := unstructured.NestedMap(u.Object, "status", "datacenters")
	var leaving []string
	for name, v := range status {
		m, _ := v.(map[string]any)
		if p, _ := m["decommissionProgress"].(string); !inSpec[name] && p != "" {
			leaving = append(leaving, fmt.Sprintf("%s leaving (%s)", name, p))
		}
	}
	sort.Strings(leaving)
	return initialized, ready, strings.Join(append(lines, leaving...), ", ")
}

// k8ssandraError is the error k8ssandra-operator's last reconcile of u ended with ("" for none:
// it writes "None"). Pure.
func k8ssandraError(u *unstructured.Unstructured) string {
	e, _, _ := unstructured.NestedString(u.Object, "status", "error")
	if e == "None" {
		return ""
	}
	return e
}

func toUnstructured(obj any) map[string]any {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		panic(err)
	}
	return m
}

// How often an external Cassandra's contact points are probed again by a reconcile: soon while
// none answers, and now and then while one does. Between reconciles the prober
// (cassandra_probe.go) dials them every 5 s and triggers a reconcile when the answer changes,
// so that CassandraReady follows an outage that changes no Kubernetes object within 15 s.
const (
	requeueExternalUnreachable = 15 * time.Second
	requeueExternalReachable   = time.Minute
	contactPointTimeout        = 2 * time.Second
)

// DialContactPoints opens a TCP connection to each contact point (host or host:port, port
// 9042 by default) at once and returns nil as soon as one connects, else an error naming each
// contact point and why it failed. A TCP connection is what an unreachable, stopped or
// mis-addressed Cassandra fails; credentials and the schema are the migration Job's to check.
func DialContactPoints(ctx context.Context, contactPoints []string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type res struct {
		addr string
		err  error
	}
	ch := make(chan res, len(contactPoints))
	for _, cp := range contactPoints {
		addr := cp
		if _, _, err := net.SplitHostPort(cp); err != nil {
			addr = net.JoinHostPort(cp, "9042")
		}
		go func() {
			var d net.Dialer
			c, err := d.DialContext(ctx, "tcp", addr)
			if err == nil {
				_ = c.Close()
			}
			ch <- res{addr, err}
		}()
	}
	var failed []string
	for range contactPoints {
		r := <-ch
		if r.err == nil {
			return nil
		}
		failed = append(failed, r.err.Error())
	}
	sort.Strings(failed)
	return fmt.Errorf("no contact point of the external Cassandra answers: %s", strings.Join(failed, "; "))
}

// reconcileCassandra applies the K8ssandraCluster (managed) or checks the credentials
// (external). It stops the chain until Cassandra has been initialized.
func (r *AAAClusterReconciler) reconcileCassandra(ctx context.Context, st *state) (result, error) {
	c, spec := st.cluster, st.spec
	cs := &st.cassandra
	cs.dcReady = map[string]bool{}

	if !managed(spec) {
		secret := &corev1.Secret{}
		name := spec.Cassandra.External.CredentialsSecret.Name
		err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, secret)
		if apierrors.IsNotFound(err) || (err == nil && (len(secret.Data["username"]) == 0 || len(secret.Data["password"]) == 0)) {
			cs.reason = ReasonCredentialsMissing
			cs.message = fmt.Sprintf("Secret %s with the keys username and password not found", name)
			if hidden, uerr := unlabelled(ctx, r.APIReader, "Secret", client.ObjectKey{Namespace: c.Namespace, Name: name}); uerr != nil {
				return result{}, uerr
			} else if hidden && err != nil {
				cs.reason, cs.message = ReasonNotLabelled, notLabelledMessage([]string{"Secret/" + name})
			}
			return result{stop: true}, nil
		}
		if err != nil {
			return result{}, fmt.Errorf("get Secret %s: %w", name, err)
		}
		// Initialized: the chain goes on, so policing and its configuration stay reconciled
		// through an outage (running pods stay ready and spool accounting; a pod that starts
		// meanwhile waits for its store, not ready, and says why: docs/cassandra.md).
		cs.initialized = true
		if err := DialContactPoints(ctx, spec.Cassandra.External.ContactPoints, contactPointTimeout); err != nil {
			cs.reason, cs.message = ReasonCassandraUnreachable, err.Error()
			return result{requeueAfter: requeueExternalUnreachable}, nil
		}
		cs.ready = true
		for _, dc := range spec.Datacenters {
			cs.dcReady[dc.Name] = true
		}
		cs.reason, cs.message = ReasonExternalCassandra, "external Cassandra cluster: credentials found, a contact point answers"
		return result{requeueAfter: requeueExternalReachable}, nil
	}

	ok, err := r.hasKind(K8ssandraClusterGVK)
	if err != nil {
		return result{}, err
	}
	if !ok {
		cs.reason = ReasonK8ssandraMissing
		cs.message = "the K8ssandraCluster CRD (k8ssandra.io/v1alpha1) is not installed: install k8ssandra-operator or use spec.cassandra.external"
		return result{stop: true, requeueAfter: requeueOptional}, nil
	}
	existing := &unstructured.Unstructured{}
	existing.SetGroupVersionKind(K8ssandraClusterGVK)
	err = r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: k8ssandraName(c)}, existing)
	if apierrors.IsNotFound(err) {
		existing = nil
	} else if err != nil {
		return result{}, fmt.Errorf("get K8ssandraCluster: %w", err)
	}
	retained := retainedDatacenters(existing, spec, st.appliedDCs())
	live, err := r.apply(ctx, c, buildK8ssandraCluster(c, spec, retained))
	if err != nil {
		return result{}, err
	}
	var stss appsv1.StatefulSetList
	if err := r.List(ctx, &stss, client.InNamespace(c.Namespace), client.MatchingLabels{cassClusterLabel: k8ssandraName(c)}); err != nil {
		return result{}, fmt.Errorf("list Cassandra StatefulSets: %w", err)
	}
	var progress string
	cs.initialized, cs.dcReady, progress = k8ssandraStatus(live.(*unstructured.Unstructured), spec.Datacenters, cassandraNodes(stss.Items, k8ssandraName(c)))
	if !cs.initialized {
		cs.reason = ReasonCassandraInit
		cs.message = fmt.Sprintf("waiting for K8ssandraCluster %s to be initialized (condition CassandraInitialized): %s", k8ssandraName(c), progress)
		return result{stop: true}, nil
	}
	var notReady []string
	for _, dc := range spec.Datacenters {
		if !cs.dcReady[dc.Name] {
			notReady = append(notReady, dc.Name)
		}
	}
	if len(notReady) > 0 {
		cs.reason = ReasonDatacenterNotReady
		cs.message = fmt.Sprintf("Cassandra datacenters not ready: %s (%s)", strings.Join(notReady, ", "), progress)
		return result{}, nil
	}
	cs.ready = true
	cs.reason, cs.message = ReasonReady, fmt.Sprintf("K8ssandraCluster %s is ready in every datacenter", k8ssandraName(c))
	if e := k8ssandraError(live.(*unstructured.Unstructured)); e != "" || strings.Contains(progress, " leaving (") {
		cs.message += " (" + progress + ")"
		if e != "" {
			cs.problem = fmt.Sprintf("k8ssandra-operator: %s (%s)", e, progress)
		}
	}
	return result{}, nil
}
