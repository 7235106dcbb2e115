package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
	"github.com/openaaa/openaaa/config/grafana"
	promrules "github.com/openaaa/openaaa/config/prometheus"
)

// buildServiceMonitor scrapes /metrics on the admin Service of every data center. Pure.
func buildServiceMonitor(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec) *unstructured.Unstructured {
	sm := spec.Monitoring.ServiceMonitor
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": ServiceMonitorGVK.GroupVersion().String(),
		"kind":       ServiceMonitorGVK.Kind,
		"metadata":   map[string]any{"name": serviceMonitorName(c), "namespace": c.Namespace},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{LabelCluster: c.Name, LabelComponent: componentAdmin}},
			"endpoints": []any{map[string]any{
				"port":     portAdmin,
				"path":     "/metrics",
				"interval": sm.Interval,
			}},
			"targetLabels": []any{LabelCluster, LabelDC},
		},
	}}
	u.SetLabels(mergeLabels(clusterLabels(c, "monitoring"), sm.Labels))
	return u
}

// clusterRuleGroups are the ClusterGroups of config/prometheus/prometheusrule.yaml, every
// selector narrowed to this AAACluster: the same alerts as the chart's rule, for one cluster.
// Pure.
func clusterRuleGroups(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec) []any {
	var pr struct {
		Spec struct {
			Groups []map[string]any `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(promrules.RuleFile(), &pr); err != nil {
		panic(err) // embedded and checked by test/monitoring: cannot happen
	}
	scope := strings.NewReplacer(
		promrules.PolicingScope, fmt.Sprintf(`%s, namespace=%q, %s=%q`, promrules.PolicingScope, c.Namespace, promLabel(LabelCluster), c.Name),
		promrules.ClusterScope, fmt.Sprintf(`namespace=%q, name=%q`, c.Namespace, c.Name))
	var out []any
	for _, g := range pr.Spec.Groups {
		if name, _ := g["name"].(string); !slices.Contains(promrules.ClusterGroups, name) {
			continue
		}
		for _, r := range g["rules"].([]any) {
			r := r.(map[string]any)
			r["expr"] = scope.Replace(r["expr"].(string))
			if r["alert"] == policingDownAlert {
				r["expr"] = strings.TrimSpace(r["expr"].(string)) + policingAbsent(c, spec)
				if f := spec.Monitoring.PrometheusRule.PolicingDownFor; f != "" {
					// The file's description names its own `for`: say the one in force.
					ann := r["annotations"].(map[string]any)
					ann["description"] = strings.Replace(ann["description"].(string), "down for "+humanFor(r["for"].(string)), "down for "+f, 1)
					r["for"] = f
				}
			}
		}
		out = append(out, g)
	}
	return out
}

const policingDownAlert = "OpenAAAPolicingDown"

// humanFor is how the rule file's descriptions spell a `for` of whole minutes ("3m": "3
// minutes"). Pure.
func humanFor(f string) string {
	return strings.TrimSuffix(f, "m") + " minutes"
}

// policingAbsent extends OpenAAAPolicingDown (every scraped policing pod of a data center
// down) to a data center with no policing target at all while it should have pods (all gone
// with their node, Pending, evicted): no `up` series is left to be 0 then, only absent() sees
// it. The shared rule file cannot say this: it knows no data centers. A data center scaled to
// 0 on purpose is left out. Pure.
func policingAbsent(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec) string {
	var b strings.Builder
	for _, dc := range spec.Datacenters {
		if dc.Autoscaling == nil && dc.Replicas != nil && *dc.Replicas == 0 {
			continue
		}
		fmt.Fprintf(&b, "\nor absent(up{namespace=%q, %s=%q, %s=%q})", c.Namespace,
			promLabel(LabelCluster), c.Name, promLabel(LabelDC), dc.Name)
	}
	return b.String()
}

// promLabel is how Prometheus spells a Kubernetes label it copies onto series.
func promLabel(k string) string {
	return strings.NewReplacer(".", "_", "/", "_", "-", "_").Replace(k)
}

// buildPrometheusRule holds the alerts of the cluster. Pure.
func buildPrometheusRule(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": PrometheusRuleGVK.GroupVersion().String(),
		"kind":       PrometheusRuleGVK.Kind,
		"metadata":   map[string]any{"name": prometheusRuleName(c), "namespace": c.Namespace},
		"spec":       map[string]any{"groups": clusterRuleGroups(c, spec)},
	}}
	u.SetLabels(mergeLabels(clusterLabels(c, "monitoring"), spec.Monitoring.PrometheusRule.Labels))
	return u
}

// buildDashboardConfigMap holds the dashboards of config/grafana for the Grafana sidecar,
// under the file names the chart uses too, so that Grafana shows each once. Pure.
func buildDashboardConfigMap(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec) *corev1.ConfigMap {
	data := map[string]string{}
	for name, b := range grafana.Dashboards() {
		data[name] = string(b)
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:      dashboardConfigMapName(c),
			Namespace: c.Namespace,
			Labels:    mergeLabels(clusterLabels(c, componentDashboard), spec.Monitoring.GrafanaDashboards.Labels),
		},
		Data: data,
	}
}

// reconcileMonitoring applies the monitoring objects asked for. A missing CRD is reported in
// the MonitoringReady condition, never an error.
func (r *AAAClusterReconciler) reconcileMonitoring(ctx context.Context, st *state) (result, error) {
	c, spec := st.cluster, st.spec
	m := spec.Monitoring
	var missing []string
	var requeue bool
	optional := func(enabled bool, gvk schema.GroupVersionKind, name string, build func() *unstructured.Unstructured) error {
		if enabled {
			st.monitoringWanted = true
		}
		ok, err := r.hasKind(gvk)
		if err != nil {
			return err
		}
		switch {
		case !ok && enabled:
			missing = append(missing, gvk.Kind+" ("+gvk.Group+")")
			requeue = true
			return nil
		case !ok:
			return nil
		case !enabled:
			return r.deleteIfExists(ctx, c, gvk, name)
		}
		_, err = r.apply(ctx, c, build())
		return err
	}
	smOn := m.ServiceMonitor != nil && m.ServiceMonitor.Enabled
	if err := optional(smOn, ServiceMonitorGVK, serviceMonitorName(c), func() *unstructured.Unstructured { return buildServiceMonitor(c, spec) }); err != nil {
		return result{}, err
	}
	prOn := m.PrometheusRule != nil && m.PrometheusRule.Enabled
	if err := optional(prOn, PrometheusRuleGVK, prometheusRuleName(c), func() *unstructured.Unstructured { return buildPrometheusRule(c, spec) }); err != nil {
		return result{}, err
	}
	if m.GrafanaDashboards != nil && m.GrafanaDashboards.Enabled {
		st.monitoringWanted = true
		if _, err := r.apply(ctx, c, buildDashboardConfigMap(c, spec)); err != nil {
			return result{}, err
		}
	} else if err := r.deleteIfExists(ctx, c, corev1.SchemeGroupVersion.WithKind("ConfigMap"), dashboardConfigMapName(c)); err != nil {
		return result{}, err
	}
	if len(missing) > 0 {
		st.monitoring = &problem{ReasonCRDNotInstalled, "not installed in the cluster, skipped: " + strings.Join(missing, ", ") +
			" (install prometheus-operator's CRDs or disable them in spec.monitoring)"}
	}
	if requeue {
		return result{requeueAfter: requeueOptional}, nil
	}
	return result{}, nil
}
