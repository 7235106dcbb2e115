package monitoring

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	promrules "github.com/openaaa/openaaa/config/prometheus"
)

// knownNames are the series the alerts may read: policing's and the operator's registries,
// kube-state-metrics' AAACluster metrics (our config) and Prometheus' own `up`.
func knownNames(t *testing.T) map[string]bool {
	t.Helper()
	known := map[string]bool{"up": true}
	for _, set := range []map[string]bool{seriesNames(policingFamilies(t)), seriesNames(operatorFamilies(t)), ksmNames(t)} {
		for n := range set {
			known[n] = true
		}
	}
	return known
}

// TestOperatorPrometheusRule checks the PrometheusRule the operator generates per AAACluster
// (spec.monitoring.prometheusRule; controllers/testdata/golden/prometheusrule.yaml, which the
// controllers' tests keep equal to the builder's output and to the shipped rules): its metric
// names exist and promtool accepts it. The dashboards the operator ships are config/grafana's
// files themselves (controllers' TestDashboardsAreTheShippedFiles), checked by
// TestDashboardMetricsExist.
func TestOperatorPrometheusRule(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "controllers", "testdata", "golden", "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pr struct {
		Spec ruleGroups `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &pr); err != nil {
		t.Fatal(err)
	}
	known := knownNames(t)
	checked := 0
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			for _, n := range metricNames(r.Expr) {
				if !known[n] {
					t.Errorf("operator's %s: %s is not exported by policing, the operator or kube-state-metrics", r.Alert, n)
				}
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("the operator's PrometheusRule has no rules")
	}
	var spec map[string]any
	if err := yaml.Unmarshal(raw, &struct {
		Spec *map[string]any `json:"spec"`
	}{&spec}); err != nil {
		t.Fatal(err)
	}
	b, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "operator-rules.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Log(strings.TrimSpace(promtool(t, dir, "check", "rules", "operator-rules.yaml")))
}

// TestClusterGroupsScoped: every selector of the rules the operator narrows to one AAACluster
// carries the matcher it narrows (config/prometheus/prometheus.go), so that no alert of one
// AAACluster's PrometheusRule watches the others.
func TestClusterGroupsScoped(t *testing.T) {
	_, spec := rules(t)
	b, _ := json.Marshal(spec)
	var g ruleGroups
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, grp := range g.Groups {
		if !slices.Contains(promrules.ClusterGroups, grp.Name) {
			continue
		}
		seen++
		for _, r := range grp.Rules {
			selectors := len(metricNames(r.Expr))
			scoped := strings.Count(r.Expr, promrules.PolicingScope) + strings.Count(r.Expr, promrules.ClusterScope)
			if selectors == 0 || scoped != selectors {
				t.Errorf("%s: %d selectors, %d carry %s or %s: %s", r.Alert, selectors, scoped, promrules.PolicingScope, promrules.ClusterScope, r.Expr)
			}
		}
	}
	if seen != len(promrules.ClusterGroups) {
		t.Errorf("prometheusrule.yaml has %d of the groups %v", seen, promrules.ClusterGroups)
	}
}
