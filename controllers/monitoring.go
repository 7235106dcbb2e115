package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
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
			"targetLabels": []any{LabelDC},
		},
	}}
	u.SetLabels(mergeLabels(clusterLabels(c, "monitoring"), sm.Labels))
	return u
}

// policingDownExpr is OpenAAAPolicingDown's expression: every scraped policing pod of a data
// center down, or none scraped at all while the data center wants pods (all gone with their
// node, Pending, evicted): then there is no `up` series to be 0, and only absent() sees it.
// A data center scaled to 0 on purpose is left out. Pure.
func policingDownExpr(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec, sel string) string {
	expr := fmt.Sprintf(`sum by (namespace, service) (up{%s}) == 0`, sel)
	for _, dc := range spec.Datacenters {
		if dc.Autoscaling == nil && dc.Replicas != nil && *dc.Replicas == 0 {
			continue
		}
		expr += fmt.Sprintf(` or absent(up{namespace=%q,service=%q})`, c.Namespace, adminServiceName(c, dc.Name))
	}
	return expr
}

// alertRules are the alerts of an AAACluster. Pure.
func alertRules(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec) []any {
	sel := fmt.Sprintf(`namespace=%q,service=~%q`, c.Namespace, c.Name+"-.+-admin")
	rule := func(name, expr, forDur, severity, summary string) map[string]any {
		return map[string]any{
			"alert":  name,
			"expr":   expr,
			"for":    forDur,
			"labels": map[string]any{"severity": severity},
			"annotations": map[string]any{
				"summary": summary,
			},
		}
	}
	return []any{
		rule("OpenAAAPolicingDown", policingDownExpr(c, spec, sel), spec.Monitoring.PrometheusRule.PolicingDownFor, "critical",
			"No policing pod of {{ $labels.service }} answers: RADIUS is down in this data center."),
		rule("OpenAAARequestsDropped",
			fmt.Sprintf(`sum by (namespace, service) (rate(openaaa_radius_requests_dropped_total{%s}[5m])) > 0`, sel), "10m", "warning",
			"{{ $labels.service }} drops RADIUS requests (queue full or too old): add replicas or Cassandra nodes."),
		rule("OpenAAAWorkersSaturated",
			fmt.Sprintf(`sum by (namespace, service) (openaaa_radius_workers_busy{%s}) / sum by (namespace, service) (openaaa_radius_workers{%s}) > 0.9`, sel, sel), "10m", "warning",
			"Over 90% of the workers of {{ $labels.service }} are busy."),
		rule("OpenAAASlowRequests",
			fmt.Sprintf(`histogram_quantile(0.99, sum by (le, namespace, service) (rate(openaaa_radius_request_duration_seconds_bucket{%s}[5m]))) > 0.05`, sel), "10m", "warning",
			"p99 RADIUS processing time of {{ $labels.service }} is above 50 ms (Cassandra is the usual bottleneck)."),
	}
}

// buildPrometheusRule holds the alerts. Pure.
func buildPrometheusRule(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": PrometheusRuleGVK.GroupVersion().String(),
		"kind":       PrometheusRuleGVK.Kind,
		"metadata":   map[string]any{"name": prometheusRuleName(c), "namespace": c.Namespace},
		"spec": map[string]any{
			"groups": []any{map[string]any{"name": "openaaa." + c.Name, "rules": alertRules(c, spec)}},
		},
	}}
	u.SetLabels(mergeLabels(clusterLabels(c, "monitoring"), spec.Monitoring.PrometheusRule.Labels))
	return u
}

// renderDashboard is a Grafana dashboard of the cluster (JSON). Pure.
func renderDashboard(c *aaav1.AAACluster) string {
	sel := fmt.Sprintf(`namespace=%q,service=~%q`, c.Namespace, c.Name+"-.+-admin")
	type target struct {
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
	}
	type panel struct {
		ID      int               `json:"id"`
		Title   string            `json:"title"`
		Type    string            `json:"type"`
		GridPos map[string]int    `json:"gridPos"`
		Targets []target          `json:"targets"`
		Options map[string]string `json:"options,omitempty"`
	}
	panels := []panel{}
	add := func(title, expr, legend string) {
		i := len(panels)
		panels = append(panels, panel{
			ID: i + 1, Title: title, Type: "timeseries",
			GridPos: map[string]int{"h": 8, "w": 12, "x": (i % 2) * 12, "y": (i / 2) * 8},
			Targets: []target{{Expr: expr, LegendFormat: legend}},
		})
	}
	add("RADIUS requests/s by data center",
		fmt.Sprintf(`sum by (aaa_openaaa_io_datacenter) (rate(openaaa_radius_requests_total{%s}[1m]))`, sel), "{{aaa_openaaa_io_datacenter}}")
	add("Transactions/s (incoming and outgoing)",
		fmt.Sprintf(`sum by (aaa_openaaa_io_datacenter) (rate(openaaa_transactions_total{%s}[1m]))`, sel), "{{aaa_openaaa_io_datacenter}}")
	add("p99 processing time",
		fmt.Sprintf(`histogram_quantile(0.99, sum by (le, aaa_openaaa_io_datacenter) (rate(openaaa_radius_request_duration_seconds_bucket{%s}[5m])))`, sel), "{{aaa_openaaa_io_datacenter}}")
	add("Dropped requests/s",
		fmt.Sprintf(`sum by (aaa_openaaa_io_datacenter) (rate(openaaa_radius_requests_dropped_total{%s}[5m]))`, sel), "{{aaa_openaaa_io_datacenter}}")
	add("Workers busy",
		fmt.Sprintf(`sum by (aaa_openaaa_io_datacenter) (openaaa_radius_workers_busy{%s})`, sel), "{{aaa_openaaa_io_datacenter}}")
	add("Active sessions",
		fmt.Sprintf(`sum by (aaa_openaaa_io_datacenter) (openaaa_sessions_active{%s})`, sel), "{{aaa_openaaa_io_datacenter}}")
	d := map[string]any{
		"uid":           "openaaa-" + hashOf([]string{c.Namespace, c.Name})[:8],
		"title":         fmt.Sprintf("OpenAAA %s/%s", c.Namespace, c.Name),
		"tags":          []string{"openaaa", "radius"},
		"schemaVersion": 39,
		"time":          map[string]string{"from": "now-1h", "to": "now"},
		"refresh":       "30s",
		"panels":        panels,
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		panic(err)
	}
	return string(b)
}

// buildDashboardConfigMap holds the dashboard for the Grafana sidecar. Pure.
func buildDashboardConfigMap(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:      dashboardConfigMapName(c),
			Namespace: c.Namespace,
			Labels:    mergeLabels(clusterLabels(c, componentDashboard), spec.Monitoring.GrafanaDashboards.Labels),
		},
		Data: map[string]string{"openaaa-" + c.Name + ".json": renderDashboard(c)},
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
