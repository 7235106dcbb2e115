package monitoring

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/openaaa/openaaa/internal/testenv"
)

func promtool(t *testing.T, dir string, args ...string) string {
	t.Helper()
	bin := testenv.LookPath(t, "promtool", "Debian package prometheus; `make provision`")
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// writeRules writes the PrometheusRule's spec as a plain Prometheus rule file.
func writeRules(t *testing.T, dir string) string {
	t.Helper()
	_, spec := rules(t)
	b, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "openaaa-rules.yaml")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPromtoolCheckRules(t *testing.T) {
	dir := t.TempDir()
	writeRules(t, dir)
	out := promtool(t, dir, "check", "rules", "openaaa-rules.yaml")
	t.Log(strings.TrimSpace(out))
}

func TestPromtoolTestRules(t *testing.T) {
	dir := t.TempDir()
	writeRules(t, dir)
	src, err := os.ReadFile(filepath.Join(repoRoot(t), "config", "prometheus", "tests", "openaaa-rules.test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "openaaa-rules.test.yaml"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	out := promtool(t, dir, "test", "rules", "openaaa-rules.test.yaml")
	t.Log(strings.TrimSpace(out))

	// Every alert has at least one unit test that expects it to fire.
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(src, &tests); err != nil {
		t.Fatal(err)
	}
	fires := map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			}
		}
	}
	_, spec := rules(t)
	groups, _ := spec["groups"].([]any)
	for _, g := range groups {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			name, _ := r.(map[string]any)["alert"].(string)
			if name != "" && !fires[name] {
				t.Errorf("alert %s has no promtool test in which it fires", name)
			}
		}
	}
}

// TestPromtoolDashboardQueries parses every dashboard query with Prometheus' own parser:
// they go into a rule file as recording rules and `promtool check rules` checks it.
func TestPromtoolDashboardQueries(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("groups:\n")
	for name, d := range loadDashboards(t) {
		fmt.Fprintf(&b, "  - name: %s\n    rules:\n", strings.TrimSuffix(name, ".json"))
		for i, e := range dashboardExpressions(t, name, d) {
			q, _ := json.Marshal(grafanaVars.Replace(e.expr)) // a JSON string is a YAML flow scalar
			fmt.Fprintf(&b, "      - record: dashboard:%s:%d\n        expr: %s\n", strings.ReplaceAll(strings.TrimSuffix(name, ".json"), "-", "_"), i, q)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "dashboards.yaml"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := promtool(t, dir, "check", "rules", "dashboards.yaml")
	t.Log(strings.TrimSpace(out))
}
