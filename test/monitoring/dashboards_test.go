package monitoring

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/openaaa/openaaa/config/grafana"
	"github.com/openaaa/openaaa/controllers"
)

type dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID      int     `json:"id"`
	Type    string  `json:"type"`
	Title   string  `json:"title"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
}

// expression is one PromQL expression and where it comes from.
type expression struct{ where, expr string }

func loadDashboards(t *testing.T) map[string]dashboard {
	t.Helper()
	out := map[string]dashboard{}
	for name, raw := range grafana.Dashboards() {
		var d dashboard
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = d
	}
	if len(out) < 2 {
		t.Fatalf("want the policing and operator dashboards, got %d", len(out))
	}
	return out
}

func dashboardExpressions(t *testing.T, name string, d dashboard) []expression {
	t.Helper()
	var out []expression
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			walk(p.Panels)
			for _, tg := range p.Targets {
				if strings.TrimSpace(tg.Expr) == "" {
					t.Errorf("%s: panel %q target %s has no expression", name, p.Title, tg.RefID)
					continue
				}
				out = append(out, expression{fmt.Sprintf("%s panel %d %q %s", name, p.ID, p.Title, tg.RefID), tg.Expr})
			}
		}
	}
	walk(d.Panels)
	return out
}

var labelValues = regexp.MustCompile(`^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)`)

// TestDashboardMetricsExist checks every query of every dashboard against the registries of
// the program it watches: policing for openaaa-policing.json, the operator for
// openaaa-operator.json.
func TestDashboardMetricsExist(t *testing.T) {
	registries := map[string]map[string]bool{
		"openaaa-policing.json": seriesNames(policingFamilies(t)),
		"openaaa-operator.json": seriesNames(operatorFamilies(t)),
	}
	for name, d := range loadDashboards(t) {
		known, ok := registries[name]
		if !ok {
			t.Errorf("%s: no registry to check it against; add it to TestDashboardMetricsExist", name)
			continue
		}
		exprs := dashboardExpressions(t, name, d)
		for _, v := range d.Templating.List {
			if v.Type != "query" {
				continue
			}
			q := grafana.VariableQuery(v.Query)
			m := labelValues.FindStringSubmatch(q)
			if m == nil {
				t.Errorf("%s: variable %s: query %q is not label_values(metric...)", name, v.Name, q)
				continue
			}
			exprs = append(exprs, expression{name + " variable " + v.Name, m[1]})
		}
		used := map[string]bool{}
		for _, e := range exprs {
			names := metricNames(e.expr)
			if len(names) == 0 {
				t.Errorf("%s: no metric in %q", e.where, e.expr)
			}
			for _, n := range names {
				used[n] = true
				if !known[n] {
					t.Errorf("%s: %s is not exported (expression %s)", e.where, n, e.expr)
				}
			}
		}
		t.Logf("%s: %d expressions over %d series names", name, len(exprs), len(used))
	}
}

// TestDashboardCoversDiameter: every Diameter and Gx metric policing registers has a panel
// (the "Diameter / Gx" row), so that a metric added there is not left off the dashboard.
func TestDashboardCoversDiameter(t *testing.T) {
	name := "openaaa-policing.json"
	used := map[string]bool{}
	for _, e := range dashboardExpressions(t, name, loadDashboards(t)[name]) {
		for _, n := range metricNames(e.expr) {
			used[n] = true
		}
	}
	var families int
	for family, kind := range policingFamilies(t) {
		if !strings.HasPrefix(family, "openaaa_diameter_") && !strings.HasPrefix(family, "openaaa_gx_") {
			continue
		}
		families++
		shown := false
		for n := range seriesNames(map[string]string{family: kind}) {
			shown = shown || used[n]
		}
		if !shown {
			t.Errorf("%s: no panel shows %s", name, family)
		}
	}
	if families < 10 {
		t.Errorf("policing registers %d Diameter and Gx metrics, want at least the 10 of docs/diameter-gx.md", families)
	}
}

// TestDashboardsShape checks what the Grafana sidecar and the operator's labels rely on.
func TestDashboardsShape(t *testing.T) {
	dcLabel := strings.NewReplacer(".", "_", "/", "_", "-", "_").Replace(controllers.LabelDC)
	for name, d := range loadDashboards(t) {
		if d.UID == "" || d.Title == "" {
			t.Errorf("%s: uid and title are required", name)
		}
		ids := map[int]bool{}
		var walk func([]panel)
		walk = func(ps []panel) {
			for _, p := range ps {
				if ids[p.ID] {
					t.Errorf("%s: duplicate panel id %d", name, p.ID)
				}
				ids[p.ID] = true
				walk(p.Panels)
			}
		}
		walk(d.Panels)
		hasDS := false
		for _, v := range d.Templating.List {
			hasDS = hasDS || (v.Type == "datasource" && v.Name == "datasource")
		}
		if !hasDS {
			t.Errorf("%s: no datasource variable", name)
		}
	}
	raw := string(grafana.Dashboards()["openaaa-policing.json"])
	if !strings.Contains(raw, dcLabel) {
		t.Errorf("openaaa-policing.json never groups by %s (the operator's ServiceMonitor target label %s)", dcLabel, controllers.LabelDC)
	}
	for _, want := range []string{"Incoming TPS per data center", "Outgoing TPS per data center", "Authentication latency p50 / p99",
		"Accounting latency p50 / p99", "Accepts and rejects", "Drops by reason", "Active sessions", "Busy workers",
		"Upstream accounting servers up", "CoA and Disconnect by result", "LDAP up", "Cassandra client latency p50 / p99",
		"Accounting spool depth", "Diameter requests by command and Result-Code", "Diameter latency p50 / p99",
		"Diameter peers up", "RARs sent", "Gx usage reported"} {
		if !strings.Contains(raw, fmt.Sprintf("%q", want)) {
			t.Errorf("openaaa-policing.json: no panel %q", want)
		}
	}
}

// rules reads the PrometheusRule of config/prometheus.
func rules(t *testing.T) (raw []byte, spec map[string]any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "config", "prometheus", "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pr struct {
		Kind string         `json:"kind"`
		Spec map[string]any `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &pr); err != nil {
		t.Fatal(err)
	}
	if pr.Kind != "PrometheusRule" {
		t.Fatalf("prometheusrule.yaml: kind %q", pr.Kind)
	}
	return b, pr.Spec
}

type ruleGroups struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert  string            `json:"alert"`
			Record string            `json:"record"`
			Expr   string            `json:"expr"`
			Labels map[string]string `json:"labels"`
		} `json:"rules"`
	} `json:"groups"`
}

// ksmNames are the metrics kube-state-metrics exports with our Custom Resource State config.
func ksmNames(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "config", "prometheus", "kube-state-metrics-aaacluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Kind string `json:"kind"`
		Spec struct {
			Resources []struct {
				GroupVersionKind struct{ Group, Version, Kind string } `json:"groupVersionKind"`
				MetricNamePrefix *string                               `json:"metricNamePrefix"`
				Metrics          []struct {
					Name string `json:"name"`
				} `json:"metrics"`
			} `json:"resources"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, r := range cfg.Spec.Resources {
		prefix := "kube_customresource"
		if r.MetricNamePrefix != nil {
			prefix = *r.MetricNamePrefix
		}
		for _, m := range r.Metrics {
			out[prefix+"_"+m.Name] = true
		}
	}
	return out
}

// TestAlertMetricsExist checks every alert's metric names: policing's and the operator's
// registries, kube-state-metrics' AAACluster metrics (our config) and Prometheus' own `up`.
func TestAlertMetricsExist(t *testing.T) {
	known := knownNames(t)
	_, spec := rules(t)
	b, _ := json.Marshal(spec)
	var g ruleGroups
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	var alerts []string
	for _, grp := range g.Groups {
		for _, r := range grp.Rules {
			alerts = append(alerts, r.Alert)
			if r.Labels["severity"] == "" {
				t.Errorf("%s: no severity label", r.Alert)
			}
			for _, n := range metricNames(r.Expr) {
				if !known[n] {
					t.Errorf("%s: %s is not exported by policing, the operator or kube-state-metrics", r.Alert, n)
				}
			}
		}
	}
	sort.Strings(alerts)
	for _, want := range []string{"OpenAAAPolicingDown", "OpenAAAAuthLatencyHigh", "OpenAAAAccountingLatencyHigh",
		"OpenAAARequestsDropped", "OpenAAAAccountingSpoolGrowing", "OpenAAALDAPUnreachable",
		"OpenAAAUpstreamProxyUnreachable", "OpenAAASchemaMigrationFailed", "OpenAAAClusterNotReady",
		"OpenAAADiameterPeerDown", "OpenAAAGxPermanentFailures"} {
		if sort.SearchStrings(alerts, want) == len(alerts) || alerts[sort.SearchStrings(alerts, want)] != want {
			t.Errorf("no alert %s", want)
		}
	}
	// Every alert has a runbook section in docs/monitoring.md.
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "monitoring.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range alerts {
		if !strings.Contains(string(doc), "### "+a+"\n") {
			t.Errorf("docs/monitoring.md has no section \"### %s\" (the alert's runbook_url)", a)
		}
	}
}
