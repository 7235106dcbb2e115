package controllers

import (
	"context"
	"fmt"
	"path"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
)

// schemaState is what the schema step observed.
type schemaState struct {
	ready           bool
	failed          bool
	reason, message string
}

// desiredReplication is the replication map of the keyspace, "dc1:3,dc2:3" in spec order: every
// data center of the spec already replicated to, and those whose Cassandra datacenter is
// ready (a new datacenter joins the map once it runs; one that is down stays in it). Pure.
func desiredReplication(spec aaav1.AAAClusterSpec, dcReady, applied map[string]bool) string {
	var parts []string
	for _, dc := range spec.Datacenters {
		if dcReady[dc.Name] || applied[dc.Name] {
			parts = append(parts, fmt.Sprintf("%s:%d", dc.Name, *dc.Cassandra.ReplicationFactor))
		}
	}
	return strings.Join(parts, ",")
}

// replicationDCs returns the data centers of a replication map. Pure.
func replicationDCs(replication string) map[string]bool {
	out := map[string]bool{}
	for _, p := range strings.Split(replication, ",") {
		if name, _, ok := strings.Cut(p, ":"); ok && name != "" {
			out[name] = true
		}
	}
	return out
}

// appliedDCs are the data centers the applied schema replicates to.
func (st *state) appliedDCs() map[string]bool {
	if st.status.Schema == nil {
		return map[string]bool{}
	}
	return replicationDCs(st.status.Schema.Replication)
}

// migrationContactPoints are the Services of the datacenters in the replication map.
func migrationContactPoints(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec, replication string) []string {
	if !managed(spec) {
		return spec.Cassandra.External.ContactPoints
	}
	var out []string
	for _, p := range strings.Split(replication, ",") {
		name, _, _ := strings.Cut(p, ":")
		out = append(out, fmt.Sprintf("%s.%s.svc", cassandraServiceName(c, name), c.Namespace))
	}
	return out
}

// buildMigrationJob is the Job running `policing migrate` for a replication map. Its name
// carries a hash of what it runs, so a new image or map gets a new Job. Pure.
func buildMigrationJob(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec, replication string) *batchv1.Job {
	localDC, _, _ := strings.Cut(replication, ":")
	args := []string{
		"migrate",
		"--local-dc", localDC,
		"--replication", replication,
		"--contact-points", strings.Join(migrationContactPoints(c, spec, replication), ","),
		"--keyspace", spec.Cassandra.Keyspace,
		"--username-file", path.Join(cassandraCredsDir, "username"),
		"--password-file", path.Join(cassandraCredsDir, "password"),
	}
	image := imageRef(spec)
	name := fmt.Sprintf("%s-migrate-%s", c.Name, hashOf([]any{image, args})[:10])
	labels := clusterLabels(c, componentMigration)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: c.Namespace,
			Labels:    labels,
			Annotations: map[string]string{
				annotationSchemaVersion: spec.Image.Tag,
				annotationReplication:   replication,
			},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To[int32](4),
			ActiveDeadlineSeconds: ptr.To[int64](900),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: ptr.To(false),
					SecurityContext:              podSecurityContext(),
					ImagePullSecrets:             spec.Image.PullSecrets,
					Containers: []corev1.Container{{
						Name:            "migrate",
						Image:           image,
						ImagePullPolicy: spec.Image.PullPolicy,
						Command:         []string{"policing"},
						Args:            args,
						SecurityContext: containerSecurityContext(),
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: mustQty("100m"), corev1.ResourceMemory: mustQty("64Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: mustQty("256Mi")},
						},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "cassandra-credentials", MountPath: cassandraCredsDir, ReadOnly: true},
							{Name: "tmp", MountPath: "/tmp"},
						},
					}},
					Volumes: []corev1.Volume{
						credentialsVolume(c, spec),
						{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
				},
			},
		},
	}
}

const (
	annotationSchemaVersion = "aaa.openaaa.io/schema-version"
	annotationReplication   = "aaa.openaaa.io/replication"
)

// jobOutcome reads a Job's terminal condition. Pure.
func jobOutcome(job *batchv1.Job) (done, failed bool, reason, message string) {
	for _, cond := range job.Status.Conditions {
		if cond.Status != corev1.ConditionTrue {
			continue
		}
		switch cond.Type {
		case batchv1.JobComplete:
			return true, false, "", ""
		case batchv1.JobFailed:
			return true, true, cond.Reason, cond.Message
		}
	}
	return false, false, "", ""
}

// reconcileSchema runs the migration Job when the schema version (the image tag) or the
// replication map changed, and records what was applied. Policing runs only in data centers
// the applied schema replicates to.
func (r *AAAClusterReconciler) reconcileSchema(ctx context.Context, st *state) (result, error) {
	c, spec := st.cluster, st.spec
	applied := st.appliedDCs()
	replication := desiredReplication(spec, st.cassandra.dcReady, applied)
	st.schemaDCs = applied
	sc := &st.schema
	if replication == "" {
		sc.reason, sc.message = ReasonWaitingCassandra, "no Cassandra datacenter is ready yet"
		return result{stop: true}, nil
	}
	job := buildMigrationJob(c, spec, replication)
	if s := st.status.Schema; s != nil && s.Version == spec.Image.Tag && s.Replication == replication {
		sc.ready = true
		sc.reason, sc.message = ReasonReady, fmt.Sprintf("schema %s applied with replication %s", s.Version, s.Replication)
		return result{}, r.pruneMigrationJobs(ctx, c, s.Job)
	}
	live, op, err := r.applyOp(ctx, c, job)
	if err != nil {
		return result{}, err
	}
	if op == opCreated {
		r.event(ctx, c, corev1.EventTypeNormal, ReasonMigrationStarted,
			"migrating keyspace %s to schema %s with replication %s (Job %s)", spec.Cassandra.Keyspace, spec.Image.Tag, replication, job.Name)
	}
	done, failed, reason, message := jobOutcome(live.(*batchv1.Job))
	switch {
	case done && !failed:
		st.status.Schema = &aaav1.SchemaStatus{Version: spec.Image.Tag, Replication: replication, Job: job.Name}
		st.schemaDCs = replicationDCs(replication)
		sc.ready = true
		sc.reason, sc.message = ReasonReady, fmt.Sprintf("schema %s applied with replication %s", spec.Image.Tag, replication)
		r.event(ctx, c, corev1.EventTypeNormal, ReasonMigrationSucceeded,
			"keyspace %s migrated to schema %s with replication %s", spec.Cassandra.Keyspace, spec.Image.Tag, replication)
		if err := r.pruneMigrationJobs(ctx, c, job.Name); err != nil {
			return result{}, err
		}
		// The applied map may let Cassandra drop a datacenter: reconcile again at once.
		return result{requeueAfter: time.Second}, nil
	case failed:
		sc.failed = true
		if reason == "" {
			reason = ReasonMigrationFailed
		}
		sc.reason = reason
		sc.message = fmt.Sprintf("migration Job %s failed: %s", job.Name, message)
	default:
		sc.reason = ReasonMigrating
		sc.message = fmt.Sprintf("migration Job %s running: schema %s, replication %s", job.Name, spec.Image.Tag, replication)
	}
	if len(applied) == 0 {
		return result{stop: true}, nil
	}
	return result{}, nil
}

// pruneMigrationJobs deletes the migration Jobs other than keep (Jobs have no TTL: a TTL would
// show as drift in GitOps tools).
func (r *AAAClusterReconciler) pruneMigrationJobs(ctx context.Context, c *aaav1.AAACluster, keep string) error {
	list := &batchv1.JobList{}
	if err := r.List(ctx, list, client.InNamespace(c.Namespace),
		client.MatchingLabels{LabelCluster: c.Name, LabelComponent: componentMigration}); err != nil {
		return err
	}
	objs := make([]client.Object, 0, len(list.Items))
	for i := range list.Items {
		objs = append(objs, &list.Items[i])
	}
	return r.pruneOwned(ctx, c, objs, map[string]bool{keep: true})
}
