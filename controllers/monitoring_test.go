package controllers

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/openaaa/openaaa/config/grafana"
	promrules "github.com/openaaa/openaaa/config/prometheus"
)

// TestDashboardsAreTheShippedFiles: spec.monitoring.grafanaDashboards ships the dashboards of
// config/grafana byte for byte, under their file names (the chart's keys too).
func TestDashboardsAreTheShippedFiles(t *testing.T) {
	c, spec := sampleForBuilders(t)
	got := buildDashboardConfigMap(c, spec).Data
	want := grafana.Dashboards()
	if len(got) != len(want) {
		t.Errorf("the operator ships %d dashboards, config/grafana has %d", len(got), len(want))
	}
	for name, b := range want {
		if got[name] != string(b) {
			t.Errorf("%s: the operator's dashboard is not config/grafana/%s", name, name)
		}
	}
}

// TestPrometheusRuleIsTheShippedFile: the operator's alerts are the chart's (the
// ClusterGroups of config/prometheus/prometheusrule.yaml), each selector narrowed to the
// AAACluster and nothing else changed.
func TestPrometheusRuleIsTheShippedFile(t *testing.T) {
	c, spec := sampleForBuilders(t)
	var file struct {
		Spec struct {
			Groups []map[string]any `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(promrules.RuleFile(), &file); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]any{}
	for _, g := range file.Spec.Groups {
		want[g["name"].(string)] = g
	}
	raw, err := json.Marshal(buildPrometheusRule(c, spec).Object["spec"])
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Groups []map[string]any `json:"groups"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	unscope := strings.NewReplacer(
		fmt.Sprintf(`, namespace=%q, aaa_openaaa_io_cluster=%q`, c.Namespace, c.Name), "",
		fmt.Sprintf(`namespace=%q, name=%q`, c.Namespace, c.Name), promrules.ClusterScope)
	var names []string
	for _, g := range got.Groups {
		name := g["name"].(string)
		names = append(names, name)
		for _, r := range g["rules"].([]any) {
			r := r.(map[string]any)
			expr := r["expr"].(string)
			if !strings.Contains(expr, fmt.Sprintf("namespace=%q", c.Namespace)) {
				t.Errorf("%s: not narrowed to the AAACluster: %s", r["alert"], expr)
			}
			if r["alert"] == policingDownAlert { // its absent() terms are the operator's own (TestPolicingDownAlert)
				expr = strings.TrimSuffix(expr, policingAbsent(c, spec)) + "\n"
			}
			r["expr"] = unscope.Replace(expr)
		}
		a, _ := json.Marshal(g)
		b, _ := json.Marshal(want[name])
		if string(a) != string(b) {
			t.Errorf("group %s differs from config/prometheus/prometheusrule.yaml beyond the scope:\n got %s\nwant %s", name, a, b)
		}
	}
	if strings.Join(names, ",") != strings.Join(promrules.ClusterGroups, ",") {
		t.Errorf("groups %v, want the file's cluster groups %v", names, promrules.ClusterGroups)
	}
}
