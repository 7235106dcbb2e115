package monitoring

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestOperatorGeneratedMonitoring checks the metric names of what the operator generates per
// AAACluster (spec.monitoring: PrometheusRule and dashboard), as its golden files under
// controllers/testdata/golden show it, against policing's registry too.
func TestOperatorGeneratedMonitoring(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "controllers", "testdata", "golden")
	known := seriesNames(policingFamilies(t))
	known["up"] = true
	check := func(where, expr string) {
		for _, n := range metricNames(expr) {
			if !known[n] {
				t.Errorf("%s: %s is not exported by policing (expression %s)", where, n, expr)
			}
		}
	}
	checked := 0
	if raw, err := os.ReadFile(filepath.Join(dir, "prometheusrule.yaml")); err == nil {
		var pr struct {
			Spec ruleGroups `json:"spec"`
		}
		if err := yaml.Unmarshal(raw, &pr); err != nil {
			t.Fatal(err)
		}
		for _, g := range pr.Spec.Groups {
			for _, r := range g.Rules {
				check("controllers golden prometheusrule.yaml "+r.Alert, r.Expr)
				checked++
			}
		}
	}
	if raw, err := os.ReadFile(filepath.Join(dir, "dashboard.json")); err == nil {
		var d dashboard
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		for _, e := range dashboardExpressions(t, "controllers golden dashboard.json", d) {
			check(e.where, e.expr)
			checked++
		}
	}
	if checked == 0 {
		t.Skip("no operator golden files with monitoring objects (controllers/testdata/golden)")
	}
	t.Logf("%d expressions of the operator's generated monitoring objects checked", checked)
}
