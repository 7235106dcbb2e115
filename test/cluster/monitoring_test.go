package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
	"github.com/openaaa/openaaa/config/grafana"
	"github.com/openaaa/openaaa/test/addons"
	"github.com/openaaa/openaaa/test/cluster/clustertest"
)

// clusterAddons installs every add-on from the moment the cluster is up, in the background
// (TestMain): the first test does not need them, the ones after it wait for them.
var clusterAddons *addons.Background

func startAddons(c *clustertest.Cluster) (stop func()) {
	clusterAddons = addons.StartBackground(c.Kubeconfig, c.ImportArchives)
	return clusterAddons.Stop
}

// startAAA is what the monitoring and autoscaling tests share: the add-ons (prometheus-operator
// with a Prometheus, metrics-server), the operator chart with its ServiceMonitor, Cassandra 5 on
// the node's address, and the AAACluster of aaaclusterValues with extraValues over it (a second
// values file: its keys replace those of the first) until it is Ready. Everything goes when the
// test ends.
func startAAA(t *testing.T, ctx context.Context, extraValues string) client.Client {
	t.Helper()
	clustertest.Skip(t, cluster)
	root, helm, tag := needOperatorImages(t)
	clusterAddons.Wait(t, ctx)

	c := aaaClient(t)
	mustApply(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: aaaNS}})
	mustApply(t, c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cassandra-credentials", Namespace: aaaNS, Labels: watched},
		StringData: map[string]string{"username": "cassandra", "password": "cassandra"}})
	mustApply(t, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "subscribers", Namespace: aaaNS, Labels: watched},
		Data: map[string]string{"subscribers.yaml": subscribersYAML(loadUsers, "")}})
	mustApply(t, c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "loadtest-nas", Namespace: aaaNS, Labels: watched},
		StringData: map[string]string{"secret": loadtestSecret}})

	// The operator's own metrics are scraped too: the operator dashboard reads them.
	installOperatorChart(t, ctx, helm, root, tag, aaaNS,
		"--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.serviceMonitor.interval=5s")
	t.Cleanup(func() {
		runHelm(t, context.Background(), helm, "uninstall", "openaaa-operator", "-n", operatorNS, "--wait", "--timeout", "2m")
	})
	cassandraUp(t)

	dir := t.TempDir()
	values, extra := filepath.Join(dir, "values.yaml"), filepath.Join(dir, "extra.yaml")
	if err := os.WriteFile(values, []byte(aaaclusterValues()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(extra, []byte(extraValues), 0o600); err != nil {
		t.Fatal(err)
	}
	runHelm(t, ctx, helm, "install", release, filepath.Join(root, "charts", "aaacluster"), "-n", aaaNS, "-f", values, "-f", extra)
	t.Cleanup(func() {
		runHelm(t, context.Background(), helm, "uninstall", release, "-n", aaaNS, "--wait", "--timeout", "2m")
	})
	start := time.Now()
	waitCondition(t, c, aaav1.ConditionReady, metav1.ConditionTrue, "", readyWithin)
	t.Logf("AAACluster Ready in %s", time.Since(start).Round(time.Second))
	return c
}

// monitoringValues: the AAACluster's ServiceMonitor, PrometheusRule and dashboard. The alert's
// `for` is 20s instead of the default 5m so that the outage below fires it within a minute:
// spec.monitoring.prometheusRule.policingDownFor is there for exactly this choice.
const monitoringValues = `monitoring:
  serviceMonitor: {enabled: true, interval: 5s}
  prometheusRule: {enabled: true, policingDownFor: 20s}
  grafanaDashboards: {enabled: true}
`

// TestMonitoringAndAutoscalingOnCluster: one AAACluster with spec.monitoring and dc1's
// autoscaling — one operator install and one Ready instead of one per check (issue 12's cold
// budget). The autoscaling comes first: it needs dc1 idle at its start and ends back at one
// pod; the monitoring's outage comes last.
func TestMonitoringAndAutoscalingOnCluster(t *testing.T) {
	clustertest.Skip(t, cluster)
	inSerialLane(t, needAddons)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	c := startAAA(t, ctx, monitoringValues+autoscalingValues)
	t.Run("autoscaling", func(t *testing.T) { checkAutoscaling(t, ctx, c) })
	t.Run("monitoring", func(t *testing.T) { checkMonitoring(t, ctx, c) })
}

// checkMonitoring: with spec.monitoring, the real Prometheus (prometheus-operator) scrapes the
// policing pods and the operator; the AAACluster's PrometheusRule loads and evaluates without
// errors; every query of every Grafana dashboard (config/grafana and the one the operator
// renders) returns data, or its metrics are ones policing does not expose in this
// configuration; and losing every policing pod of the data center fires OpenAAAPolicingDown,
// which resolves when they are back.
func checkMonitoring(t *testing.T, ctx context.Context, c client.Client) {
	adminSel := fmt.Sprintf(`namespace=%q,service="%s-dc1-admin"`, aaaNS, release)

	// 1. Scraped: the policing target is up and its own series are in Prometheus, with the
	// data center as a label (the ServiceMonitor's targetLabels).
	start := time.Now()
	eventually(t, 2*time.Minute, "the policing and operator targets up in Prometheus", func() error {
		if r := promQuery(t, ctx, fmt.Sprintf(`up{%s} == 1`, adminSel)); len(r) == 0 {
			return fmt.Errorf("no policing target up: %s", promTargets(t, ctx))
		}
		if r := promQuery(t, ctx, fmt.Sprintf(`up{namespace=%q} == 1`, operatorNS)); len(r) == 0 {
			return fmt.Errorf("no operator target up: %s", promTargets(t, ctx))
		}
		if r := promQuery(t, ctx, fmt.Sprintf(`openaaa_radius_workers{%s,aaa_openaaa_io_datacenter="dc1"}`, adminSel)); len(r) == 0 {
			return fmt.Errorf("no openaaa_radius_workers series of dc1")
		}
		return nil
	})
	t.Logf("policing and the operator scraped %s after Ready", time.Since(start).Round(time.Second))

	// 2. The AAACluster's rules (the groups of the PrometheusRule the operator made) are
	// loaded and evaluate without errors.
	pr := &unstructured.Unstructured{}
	pr.SetGroupVersionKind(schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PrometheusRule"})
	if err := c.Get(ctx, client.ObjectKey{Namespace: aaaNS, Name: release}, pr); err != nil {
		t.Fatalf("the AAACluster's PrometheusRule: %v", err)
	}
	groups, _, _ := unstructured.NestedSlice(pr.Object, "spec", "groups")
	if len(groups) == 0 {
		t.Fatal("the AAACluster's PrometheusRule has no groups")
	}
	for _, g := range groups {
		name, _ := g.(map[string]any)["name"].(string)
		rules, _ := g.(map[string]any)["rules"].([]any)
		eventually(t, time.Minute, "rule group "+name+" loaded and evaluated", func() error {
			return rulesHealthy(t, ctx, name, len(rules))
		})
	}
	// An evaluation from before the first scrape may have left it pending: with policing
	// scraped it must clear at the next ones (10 s apart), else the rule is wrong.
	eventually(t, time.Minute, "OpenAAAPolicingDown inactive while policing runs", func() error {
		if a := alertState(t, ctx, "OpenAAAPolicingDown"); a != "" {
			return fmt.Errorf("OpenAAAPolicingDown is %s", a)
		}
		return nil
	})

	// 3. Traffic, so that rates and latencies have samples; then every dashboard query.
	lt := createLoadTest(t, ctx, c, "dashboards", aaav1.LoadTestLoad{Duration: "20s", Concurrency: 4})
	waitLoadTest(t, ctx, c, lt, 4*time.Minute)
	checkDashboards(t, ctx, c)

	// 4. An outage as a node loss makes it: the node cordoned, the pods deleted; their
	// replacements stay Pending, no policing target is left (no `up` series either).
	if _, err := cluster.Kubectl(ctx, "cordon", clustertest.NodeName); err != nil {
		t.Fatal(err)
	}
	uncordoned := false
	uncordon := func() {
		if !uncordoned {
			if _, err := cluster.Kubectl(context.Background(), "uncordon", clustertest.NodeName); err != nil {
				t.Error(err)
			}
			uncordoned = true
		}
	}
	defer uncordon()
	if err := c.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(aaaNS),
		client.MatchingLabels{"aaa.openaaa.io/cluster": release, "app.kubernetes.io/component": "radius"}); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	eventually(t, 3*time.Minute, "OpenAAAPolicingDown firing", func() error {
		if s := alertState(t, ctx, "OpenAAAPolicingDown"); s != "firing" {
			return fmt.Errorf("OpenAAAPolicingDown %q; targets: %s", s, promTargets(t, ctx))
		}
		return nil
	})
	t.Logf("OpenAAAPolicingDown firing %s after the pods were deleted (for: 20s)", time.Since(down).Round(time.Second))
	uncordon()
	back := time.Now()
	eventually(t, 3*time.Minute, "OpenAAAPolicingDown resolved", func() error {
		if s := alertState(t, ctx, "OpenAAAPolicingDown"); s != "" {
			return fmt.Errorf("OpenAAAPolicingDown still %s", s)
		}
		return nil
	})
	t.Logf("OpenAAAPolicingDown resolved %s after the node was schedulable again", time.Since(back).Round(time.Second))
}

// promSample is one element of an instant vector from the Prometheus HTTP API.
type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// promAPI GETs path of the add-ons' Prometheus through the API server's service proxy.
func promAPI(ctx context.Context, path string, params url.Values) ([]byte, error) {
	req := cluster.Clientset.CoreV1().RESTClient().Get().
		AbsPath("/api/v1/namespaces", addons.PrometheusNamespace, "services", addons.PrometheusService, "proxy", path)
	for k, vs := range params {
		for _, v := range vs {
			req = req.Param(k, v)
		}
	}
	return req.DoRaw(ctx)
}

// promQuery runs an instant query; a query Prometheus rejects fails the test.
func promQuery(t *testing.T, ctx context.Context, q string) []promSample {
	t.Helper()
	raw, err := promAPI(ctx, "/api/v1/query", url.Values{"query": {q}})
	if err != nil {
		t.Fatalf("query %s: %v: %s", q, err, raw)
	}
	var resp struct {
		Status string `json:"status"`
		Data   struct {
			Result []promSample `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil || resp.Status != "success" {
		t.Fatalf("query %s: %v: %s", q, err, raw)
	}
	return resp.Data.Result
}

// promTargets summarises the active targets (for failure messages).
func promTargets(t *testing.T, ctx context.Context) string {
	raw, err := promAPI(ctx, "/api/v1/targets", url.Values{"state": {"active"}})
	if err != nil {
		return err.Error()
	}
	var resp struct {
		Data struct {
			ActiveTargets []struct {
				ScrapePool string `json:"scrapePool"`
				ScrapeURL  string `json:"scrapeUrl"`
				Health     string `json:"health"`
				LastError  string `json:"lastError"`
			} `json:"activeTargets"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil {
		return string(raw)
	}
	var out []string
	for _, tg := range resp.Data.ActiveTargets {
		out = append(out, fmt.Sprintf("%s %s %s %s", tg.ScrapePool, tg.ScrapeURL, tg.Health, tg.LastError))
	}
	return strings.Join(out, "; ")
}

// rulesHealthy: the rule group is loaded with want rules, each evaluated without error.
func rulesHealthy(t *testing.T, ctx context.Context, group string, want int) error {
	raw, err := promAPI(ctx, "/api/v1/rules", nil)
	if err != nil {
		return err
	}
	var resp struct {
		Data struct {
			Groups []struct {
				Name  string `json:"name"`
				Rules []struct {
					Name      string `json:"name"`
					Health    string `json:"health"`
					LastError string `json:"lastError"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil {
		return fmt.Errorf("%v: %s", err, raw)
	}
	var names []string
	for _, g := range resp.Data.Groups {
		names = append(names, g.Name)
		if g.Name != group {
			continue
		}
		if len(g.Rules) != want {
			t.Fatalf("group %s has %d rules, want %d", group, len(g.Rules), want)
		}
		for _, r := range g.Rules {
			if r.LastError != "" {
				t.Fatalf("rule %s: evaluation error: %s", r.Name, r.LastError)
			}
			if r.Health != "ok" {
				return fmt.Errorf("rule %s health %q", r.Name, r.Health)
			}
		}
		return nil
	}
	return fmt.Errorf("group %s not loaded; groups: %v", group, names)
}

// alertState is the state of the alert for the test's cluster: "", "pending" or "firing".
func alertState(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	raw, err := promAPI(ctx, "/api/v1/alerts", nil)
	if err != nil {
		t.Fatalf("alerts: %v", err)
	}
	var resp struct {
		Data struct {
			Alerts []struct {
				Labels map[string]string `json:"labels"`
				State  string            `json:"state"`
			} `json:"alerts"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil {
		t.Fatalf("alerts: %v: %s", err, raw)
	}
	state := ""
	for _, a := range resp.Data.Alerts {
		if a.Labels["alertname"] == name && a.Labels["namespace"] == aaaNS && (state == "" || a.State == "firing") {
			state = a.State
		}
	}
	return state
}

// grafanaDashboard is the part of a Grafana dashboard's JSON the check reads.
type grafanaDashboard struct {
	Title      string         `json:"title"`
	Panels     []grafanaPanel `json:"panels"`
	Templating struct {
		List []struct {
			Name     string `json:"name"`
			Type     string `json:"type"`
			Query    any    `json:"query"`
			AllValue string `json:"allValue"`
		} `json:"list"`
	} `json:"templating"`
}

type grafanaPanel struct {
	Title   string         `json:"title"`
	Panels  []grafanaPanel `json:"panels"` // a row's
	Targets []struct {
		Expr string `json:"expr"`
		Hide bool   `json:"hide"`
	} `json:"targets"`
}

var (
	labelValuesQuery = regexp.MustCompile(`^label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$`)
	selectorName     = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\{`)
	// Grafana's interval variables, as Grafana would set them for a 5s scrape interval.
	grafanaIntervals = strings.NewReplacer("${__rate_interval}", "1m", "$__rate_interval", "1m",
		"${__interval}", "15s", "$__interval", "15s", "${__range}", "1h", "$__range", "1h")
)

// checkDashboards runs every query of every dashboard, as Grafana would: config/grafana's
// files and the dashboards the operator rendered into ConfigMaps (grafana_dashboard label).
// Template variables take their first value from their own label_values() query against the
// same Prometheus. A query with no result fails unless none of its metrics has any series in
// Prometheus and the policing pod does not expose them either (a feature this AAACluster does
// not use: LDAP, the accounting proxy, Lua, CoA...): those are logged, not hidden.
func checkDashboards(t *testing.T, ctx context.Context, c client.Client) {
	t.Helper()
	raws := map[string][]byte{}
	for name, raw := range grafana.Dashboards() {
		raws["config/grafana/"+name] = raw
	}
	var cms corev1.ConfigMapList
	if err := c.List(ctx, &cms, client.InNamespace(aaaNS), client.HasLabels{"grafana_dashboard"}); err != nil {
		t.Fatal(err)
	}
	for _, cm := range cms.Items {
		for k, v := range cm.Data {
			raws["ConfigMap "+cm.Name+"/"+k] = []byte(v)
		}
	}
	if len(cms.Items) == 0 {
		t.Errorf("the operator rendered no dashboard ConfigMap in %s", aaaNS)
	}
	// A ready pod: the load may just have made the HPA add one that has no address yet.
	var ip string
	eventually(t, 2*time.Minute, "a ready policing pod of dc1", func() error {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(aaaNS),
			client.MatchingLabels{"aaa.openaaa.io/cluster": release, "aaa.openaaa.io/datacenter": "dc1", "app.kubernetes.io/component": "radius"}); err != nil {
			return err
		}
		for i := range pods.Items {
			if p := &pods.Items[i]; p.DeletionTimestamp == nil && podReady(p) && p.Status.PodIP != "" {
				ip = p.Status.PodIP
				return nil
			}
		}
		return fmt.Errorf("none of %d pods ready", len(pods.Items))
	})
	exposed := httpGet(t, fmt.Sprintf("http://%s:9812/metrics", ip))
	names := make([]string, 0, len(raws))
	for n := range raws {
		names = append(names, n)
	}
	sort.Strings(names)
	total, unused := 0, map[string]bool{}
	for _, name := range names {
		var d grafanaDashboard
		if err := json.Unmarshal(raws[name], &d); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		vars := resolveVariables(t, ctx, name, d)
		var walk func([]grafanaPanel)
		walk = func(ps []grafanaPanel) {
			for _, p := range ps {
				walk(p.Panels)
				for _, tg := range p.Targets {
					if tg.Hide || strings.TrimSpace(tg.Expr) == "" {
						continue
					}
					total++
					q := grafanaIntervals.Replace(vars.Replace(tg.Expr))
					if len(promQuery(t, ctx, q)) > 0 {
						continue
					}
					var present []string
					for _, m := range selectorName.FindAllStringSubmatch(q, -1) {
						if len(promQuery(t, ctx, fmt.Sprintf(`count({__name__=%q})`, m[1]))) > 0 || exposes(exposed, m[1]) {
							present = append(present, m[1])
						} else {
							unused[m[1]] = true
						}
					}
					if len(present) > 0 {
						t.Errorf("%s panel %q: no data, though %v are scraped:\n%s", name, p.Title, present, q)
					}
				}
			}
		}
		walk(d.Panels)
	}
	var u []string
	for n := range unused {
		u = append(u, n)
	}
	sort.Strings(u)
	t.Logf("%d dashboard queries in %d dashboards; without data because policing exposes no such series here (features not configured): %s",
		total, len(names), strings.Join(u, " "))
}

// resolveVariables gives each query variable of d the first value its label_values() query
// finds, in order (a variable may use the ones before it).
func resolveVariables(t *testing.T, ctx context.Context, name string, d grafanaDashboard) *strings.Replacer {
	t.Helper()
	var pairs []string
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q := grafana.VariableQuery(v.Query)
		m := labelValuesQuery.FindStringSubmatch(strings.TrimSpace(q))
		if m == nil {
			t.Errorf("%s: variable %s: %q is not label_values(selector, label)", name, v.Name, q)
			continue
		}
		sel := strings.NewReplacer(pairs...).Replace(m[1])
		var values []string
		for _, s := range promQuery(t, ctx, sel) {
			if val := s.Metric[m[2]]; val != "" {
				values = append(values, val)
			}
		}
		if len(values) == 0 {
			t.Errorf("%s: variable %s: %s has no %s values in Prometheus", name, v.Name, sel, m[2])
			continue
		}
		sort.Strings(values)
		pairs = append(pairs, "${"+v.Name+"}", values[0], "$"+v.Name, values[0], "[["+v.Name+"]]", values[0])
	}
	return strings.NewReplacer(pairs...)
}

// exposes tells whether a Prometheus text exposition has a series of the metric.
func exposes(exposition, metric string) bool {
	return strings.Contains(exposition, "\n"+metric+"{") || strings.Contains(exposition, "\n"+metric+" ")
}
