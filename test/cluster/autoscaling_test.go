package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
)

// autoscalingValues: dc1 autoscales between 1 and 3 pods on CPU. The request is small (50m,
// target 50 %: 25m a pod) so that the bounded load below is far above it and an idle pod far
// below; scale-down looks back 15 s instead of Kubernetes' 300 s
// (spec.datacenters[].autoscaling.scaleDownStabilizationSeconds).
const autoscalingValues = `datacenters:
  - name: dc1
    service: {type: NodePort}
    cassandra: {replicationFactor: 1}
    resources: {requests: {cpu: 50m}}
    autoscaling: {minReplicas: 1, maxReplicas: 3, targetCPUUtilizationPercentage: 50, scaleDownStabilizationSeconds: 15}
`

// checkAutoscaling (TestMonitoringAndAutoscalingOnCluster): the HorizontalPodAutoscaler the
// operator makes for spec.datacenters[].autoscaling, fed by the real metrics-server, adds
// policing pods while an AAALoadTest (aaa-loadgen, up to 90 s, 16 concurrent sessions) loads
// the data center; deleting the AAALoadTest stops the load, and the HPA takes the pods away
// after it, within the stabilization window the spec asks for.
func checkAutoscaling(t *testing.T, ctx context.Context, c client.Client) {
	key := client.ObjectKey{Namespace: aaaNS, Name: release + "-dc1"}
	hpa := &autoscalingv2.HorizontalPodAutoscaler{}
	dep := &appsv1.Deployment{}
	hpaState := func() string {
		b, _ := json.Marshal(hpa.Status)
		return string(b)
	}

	// Idle: the HPA reads the pods' CPU from metrics.k8s.io and keeps the minimum. The first
	// samples may still hold the pod's start (a loaded machine stretches it): idle is a state
	// to reach, below the target, before the load; one that never comes fails the test.
	start := time.Now()
	eventually(t, 3*time.Minute, "the HPA reading the CPU of idle policing below its target", func() error {
		if err := c.Get(ctx, key, hpa); err != nil {
			return err
		}
		if len(hpa.Status.CurrentMetrics) == 0 || hpa.Status.CurrentMetrics[0].Resource == nil ||
			hpa.Status.CurrentMetrics[0].Resource.Current.AverageUtilization == nil {
			return fmt.Errorf("no CPU metric yet: %s", hpaState())
		}
		if u := *hpa.Status.CurrentMetrics[0].Resource.Current.AverageUtilization; u >= 50 || hpa.Status.DesiredReplicas != 1 {
			return fmt.Errorf("idle policing at %d %% of its CPU request, %d replicas desired: the load below would prove nothing: %s", u, hpa.Status.DesiredReplicas, hpaState())
		}
		return nil
	})
	t.Logf("HPA has metrics of idle policing %s after Ready: %s", time.Since(start).Round(time.Second), hpaState())
	if b := hpa.Spec.Behavior; b == nil || b.ScaleDown == nil || b.ScaleDown.StabilizationWindowSeconds == nil || *b.ScaleDown.StabilizationWindowSeconds != 15 {
		t.Fatalf("HPA behavior %+v; want scaleDown.stabilizationWindowSeconds 15 from the spec", b)
	}

	// Under load: more pods, and they become ready.
	lt := createLoadTest(t, ctx, c, "autoscaling", aaav1.LoadTestLoad{Duration: "90s", Concurrency: 16})
	loadStart := time.Now()
	eventually(t, 3*time.Minute, "policing scaled up under load", func() error {
		if err := c.Get(ctx, key, hpa); err != nil {
			return err
		}
		if err := c.Get(ctx, key, dep); err != nil {
			return err
		}
		if dep.Status.ReadyReplicas < 2 {
			return fmt.Errorf("deployment %d/%d ready; HPA %s", dep.Status.ReadyReplicas, *dep.Spec.Replicas, hpaState())
		}
		return nil
	})
	t.Logf("scaled up to %d ready pods %s after the load started: HPA %s", dep.Status.ReadyReplicas, time.Since(loadStart).Round(time.Second), hpaState())

	// The scale-up is proven: deleting the running AAALoadTest ends its load (its Job and the
	// Job's pods are its dependents), which is what a user who stops a test expects, and spares
	// the rest of the 90 s.
	if err := c.Get(ctx, client.ObjectKeyFromObject(lt), lt); err != nil {
		t.Fatal(err)
	}
	job := lt.Status.Job
	if job == "" {
		t.Fatalf("the running AAALoadTest names no Job: %+v", lt.Status)
	}
	if err := c.Delete(ctx, lt, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	eventually(t, 2*time.Minute, "the deleted AAALoadTest's aaa-loadgen pods gone", func() error {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(aaaNS), client.MatchingLabels{"batch.kubernetes.io/job-name": job}); err != nil {
			return err
		}
		if len(pods.Items) > 0 {
			return fmt.Errorf("%d aaa-loadgen pods of Job %s left", len(pods.Items), job)
		}
		return nil
	})
	t.Logf("load stopped: AAALoadTest deleted, its pods gone in %s", time.Since(stopped).Round(time.Second))

	// After the load: back to the minimum. Each scale-down waits for metrics-server's next
	// window and the 15 s stabilization; on a machine busy with other tests a pod that starts
	// late in the scale-up can cost a round more, hence the margin.
	after := time.Now()
	eventually(t, 6*time.Minute, "policing scaled back down after the load", func() error {
		if err := c.Get(ctx, key, hpa); err != nil {
			return err
		}
		if err := c.Get(ctx, key, dep); err != nil {
			return err
		}
		if *dep.Spec.Replicas != 1 || dep.Status.Replicas != 1 {
			return fmt.Errorf("deployment wants %d, has %d; HPA %s", *dep.Spec.Replicas, dep.Status.Replicas, hpaState())
		}
		return nil
	})
	t.Logf("back to 1 pod %s after the load stopped: HPA %s", time.Since(after).Round(time.Second), hpaState())
	// The pods taken away are still draining (preStop, then drain): the next check's load
	// would meet them on their way out (a run saw 12 socket errors so). It starts once they
	// are gone.
	eventually(t, 3*time.Minute, "the scaled-down policing pods gone", func() error {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(aaaNS),
			client.MatchingLabels{"aaa.openaaa.io/cluster": release, "aaa.openaaa.io/datacenter": "dc1", "app.kubernetes.io/component": "radius"}); err != nil {
			return err
		}
		if len(pods.Items) != 1 || pods.Items[0].DeletionTimestamp != nil {
			return fmt.Errorf("%d policing pods of dc1, want the one left", len(pods.Items))
		}
		return nil
	})
}
