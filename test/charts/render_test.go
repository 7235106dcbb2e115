package charts

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func TestLint(t *testing.T) {
	for _, chart := range []string{"openaaa-operator", "aaacluster"} {
		for _, values := range [][]string{nil, {"-f", "charts/" + chart + "/ci/full-values.yaml"}} {
			args := append([]string{"lint", "--strict", "charts/" + chart}, values...)
			if out, err := helm(t, args...); err != nil {
				t.Error(err)
			} else if !strings.Contains(out, "0 chart(s) failed") {
				t.Errorf("helm %v:\n%s", args, out)
			}
		}
	}
}

// TestGolden renders each chart with default and full values and compares with
// testdata/golden (go test ./test/charts -update rewrites them).
func TestGolden(t *testing.T) {
	for _, r := range renders {
		t.Run(r.name, func(t *testing.T) {
			rendered := r.template(t)
			if len(objects(t, rendered)) == 0 {
				t.Fatal("nothing rendered")
			}
			got := elideCopies(t, rendered)
			golden := filepath.Join("testdata", "golden", r.name+".yaml")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (create it with -update)", err)
			}
			if got != string(want) {
				t.Errorf("helm template differs from %s; review and rerun with -update:\n%s", golden, firstDiff(string(want), got))
			}
		})
	}
}

func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return "line " + itoa(i+1) + ":\n  want: " + a + "\n  got:  " + b
		}
	}
	return ""
}

func itoa(i int) string { return strings.TrimSpace(strings.Repeat(" ", 0) + fmtInt(i)) }

func fmtInt(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

// TestStableOutput: the same values give the same manifest, and no template uses what
// drifts under GitOps (random values, lookup, the time).
func TestStableOutput(t *testing.T) {
	forbidden := regexp.MustCompile(`\b(lookup|randAlphaNum|randAlpha|randNumeric|randAscii|randBytes|randInt|uuidv4|now|date|dateInZone|genCA|genPrivateKey|genSelfSignedCert|genSignedCert|htpasswd|shuffle)\b|\.Release\.Revision|\.Release\.IsUpgrade|\.Release\.IsInstall`)
	for _, chart := range []string{"openaaa-operator", "aaacluster"} {
		files, _ := filepath.Glob(filepath.Join(repoRoot(), "charts", chart, "templates", "*"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			// only template actions matter
			for _, action := range regexp.MustCompile(`\{\{.*?\}\}`).FindAllString(string(b), -1) {
				if m := forbidden.FindString(action); m != "" && !strings.HasPrefix(action, "{{/*") && !strings.HasPrefix(action, "{{- /*") {
					t.Errorf("%s: %s uses %s, which drifts under GitOps", filepath.Base(f), action, m)
				}
			}
		}
	}
	for _, r := range renders {
		if a, b := r.template(t), r.template(t); a != b {
			t.Errorf("%s: two renders differ", r.name)
		}
	}
}

// TestFilesInStep: what the operator chart copies from config/ is equal to it (`make chart-sync`).
func TestFilesInStep(t *testing.T) {
	root := repoRoot()
	pairs := map[string]string{
		"config/rbac/role.yaml":                 "charts/openaaa-operator/files/rbac/role.yaml",
		"config/prometheus/prometheusrule.yaml": "charts/openaaa-operator/files/prometheus/prometheusrule.yaml",
		"config/grafana/openaaa-policing.json":  "charts/openaaa-operator/files/dashboards/openaaa-policing.json",
		"config/grafana/openaaa-operator.json":  "charts/openaaa-operator/files/dashboards/openaaa-operator.json",
	}
	crds, _ := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	if len(crds) == 0 {
		t.Fatal("no CRD in config/crd/bases")
	}
	for _, c := range crds {
		pairs["config/crd/bases/"+filepath.Base(c)] = "charts/openaaa-operator/files/crds/" + filepath.Base(c)
	}
	copies, _ := filepath.Glob(filepath.Join(root, "charts", "openaaa-operator", "files", "*", "*"))
	want := map[string]bool{}
	for src, dst := range pairs {
		want[dst] = true
		a, err := os.ReadFile(filepath.Join(root, src))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(root, dst))
		if err != nil || string(a) != string(b) {
			t.Errorf("%s is not a copy of %s: run `make chart-sync`", dst, src)
		}
	}
	for _, c := range copies {
		rel, _ := filepath.Rel(root, c)
		if !want[rel] {
			t.Errorf("%s has no source in config/: remove it or run `make chart-sync`", rel)
		}
	}
}

// TestRBACEqualsControllerGen: the chart's ClusterRole grants exactly the rules controller-gen
// generates from the operator's kubebuilder:rbac markers (config/rbac/role.yaml).
func TestRBACEqualsControllerGen(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot(), "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var generated struct {
		Rules []any `json:"rules"`
	}
	if err := yaml.Unmarshal(raw, &generated); err != nil {
		t.Fatal(err)
	}
	if len(generated.Rules) == 0 {
		t.Fatal("config/rbac/role.yaml has no rules")
	}
	for _, r := range renders[:2] {
		objs := objects(t, r.template(t))
		var role *unstructured.Unstructured
		for _, o := range objs {
			if o.GetKind() == "ClusterRole" && o.GetLabels()["rbac.authorization.k8s.io/aggregate-to-view"] == "" &&
				o.GetLabels()["rbac.authorization.k8s.io/aggregate-to-edit"] == "" {
				role = o
			}
		}
		if role == nil {
			t.Fatalf("%s: no operator ClusterRole", r.name)
		}
		got, _, _ := unstructured.NestedSlice(role.Object, "rules")
		if !reflect.DeepEqual(normalize(got), normalize(generated.Rules)) {
			t.Errorf("%s: ClusterRole %s rules differ from config/rbac/role.yaml", r.name, role.GetName())
		}
		// and the binding gives them to the operator's ServiceAccount
		crb := find(objs, "ClusterRoleBinding", role.GetName())
		dep := find(objs, "Deployment", "")
		if crb == nil || dep == nil {
			t.Fatalf("%s: no ClusterRoleBinding %s or Deployment", r.name, role.GetName())
		}
		sa, _, _ := unstructured.NestedString(dep.Object, "spec", "template", "spec", "serviceAccountName")
		subjects, _, _ := unstructured.NestedSlice(crb.Object, "subjects")
		if len(subjects) != 1 || subjects[0].(map[string]any)["name"] != sa {
			t.Errorf("%s: ClusterRoleBinding subjects %v, want the ServiceAccount %s", r.name, subjects, sa)
		}
	}
}

// normalize makes rules comparable after a YAML/JSON round trip.
func normalize(v []any) []any {
	b, _ := yaml.Marshal(v)
	var out []any
	_ = yaml.Unmarshal(b, &out)
	return out
}

func TestOperatorDeployment(t *testing.T) {
	for _, r := range renders[:2] {
		objs := objects(t, r.template(t))
		dep := find(objs, "Deployment", "")
		if dep == nil {
			t.Fatalf("%s: no Deployment", r.name)
		}
		pod, _, _ := unstructured.NestedMap(dep.Object, "spec", "template", "spec")
		if v, _, _ := unstructured.NestedBool(pod, "securityContext", "runAsNonRoot"); !v {
			t.Errorf("%s: pod runAsNonRoot not true", r.name)
		}
		if v, _, _ := unstructured.NestedString(pod, "securityContext", "seccompProfile", "type"); v != "RuntimeDefault" {
			t.Errorf("%s: pod seccompProfile %q", r.name, v)
		}
		containers, _, _ := unstructured.NestedSlice(pod, "containers")
		if len(containers) != 1 {
			t.Fatalf("%s: %d containers", r.name, len(containers))
		}
		c := containers[0].(map[string]any)
		if v, _, _ := unstructured.NestedBool(c, "securityContext", "readOnlyRootFilesystem"); !v {
			t.Errorf("%s: readOnlyRootFilesystem not true", r.name)
		}
		if v, found, _ := unstructured.NestedBool(c, "securityContext", "allowPrivilegeEscalation"); !found || v {
			t.Errorf("%s: allowPrivilegeEscalation not false", r.name)
		}
		if v, _, _ := unstructured.NestedStringSlice(c, "securityContext", "capabilities", "drop"); !reflect.DeepEqual(v, []string{"ALL"}) {
			t.Errorf("%s: capabilities.drop %v", r.name, v)
		}
		for _, probe := range []string{"livenessProbe", "readinessProbe"} {
			if _, ok := c[probe]; !ok {
				t.Errorf("%s: no %s", r.name, probe)
			}
		}
		args, _, _ := unstructured.NestedStringSlice(c, "args")
		joined := strings.Join(args, " ")
		for _, want := range []string{"--leader-elect=true", "--metrics-bind-address=:8080", "--health-probe-bind-address=:8081", "--policing-image="} {
			if !strings.Contains(joined, want) {
				t.Errorf("%s: args %v lack %s", r.name, args, want)
			}
		}
		if find(objs, "Service", "") == nil {
			t.Errorf("%s: no metrics Service", r.name)
		}
		if find(objs, "Role", "") == nil {
			t.Errorf("%s: no leader election Role", r.name)
		}
	}
	full := objects(t, renders[1].template(t))
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule", "PodDisruptionBudget"} {
		if find(full, kind, "") == nil {
			t.Errorf("full values: no %s", kind)
		}
	}
	dashboards := 0
	for _, o := range full {
		if o.GetKind() == "ConfigMap" && o.GetLabels()["grafana_dashboard"] == "1" {
			dashboards++
		}
	}
	if dashboards != 2 {
		t.Errorf("full values: %d dashboard ConfigMaps labelled grafana_dashboard=1, want 2", dashboards)
	}
}

func TestCRDToggles(t *testing.T) {
	r := renders[0]
	crd := find(objects(t, r.template(t)), "CustomResourceDefinition", "aaaclusters.aaa.openaaa.io")
	if crd == nil {
		t.Fatal("default values: no AAACluster CRD")
	}
	if crd.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
		t.Error("default values: the CRD is not kept on uninstall")
	}
	crd = find(objects(t, r.template(t, "--set", "crds.keep=false")), "CustomResourceDefinition", "")
	if crd == nil || crd.GetAnnotations()["helm.sh/resource-policy"] != "" {
		t.Error("crds.keep=false: want the CRD without the keep annotation")
	}
	if find(objects(t, r.template(t, "--set", "crds.enabled=false")), "CustomResourceDefinition", "") != nil {
		t.Error("crds.enabled=false: the CRD is still rendered")
	}
}

// TestSchemaRejects: values.schema.json rejects unknown and ill-typed values.
func TestSchemaRejects(t *testing.T) {
	cases := []struct {
		chart string
		args  []string
	}{
		{"openaaa-operator", []string{"--set", "unknownValue=1"}},
		{"openaaa-operator", []string{"--set", "crds.enabld=true"}},
		{"openaaa-operator", []string{"--set", "logLevel=verbose"}},
		{"openaaa-operator", []string{"--set", "replicaCount=two"}},
		{"aaacluster", []string{"--set", "sessionstore=hybrid"}},
		{"aaacluster", []string{"--set", "datacenters=null"}},
		{"aaacluster", []string{"--set", "nasClients.create=true"}},
	}
	for _, c := range cases {
		args := append([]string{"template", "x", "charts/" + c.chart}, c.args...)
		if _, err := helm(t, args...); err == nil {
			t.Errorf("helm %v succeeded, want an error", args)
		}
	}
}

func TestAAAClusterChart(t *testing.T) {
	objs := objects(t, renders[3].template(t))
	c := find(objs, "AAACluster", "radius")
	if c == nil {
		t.Fatal("no AAACluster radius")
	}
	s := find(objs, "Secret", "radius-nas-clients")
	if s == nil {
		t.Fatal("no Secret radius-nas-clients")
	}
	name, _, _ := unstructured.NestedString(c.Object, "spec", "radius", "clientsSecret", "name")
	if name != s.GetName() {
		t.Errorf("spec.radius.clientsSecret.name = %q, want %q", name, s.GetName())
	}
	data, _, _ := unstructured.NestedStringMap(s.Object, "data")
	for _, k := range []string{"clients.yaml", "bng-1.secret", "wifi-controllers.secret", "nat-bng-a.secret"} {
		if data[k] == "" {
			t.Errorf("Secret lacks %s", k)
		}
	}
	// diameter passes through to spec.diameter, a data center's identity with its data center.
	if realm, _, _ := unstructured.NestedString(c.Object, "spec", "diameter", "realm"); realm != "epc.example.net" {
		t.Errorf("spec.diameter.realm = %q, want the values' epc.example.net", realm)
	}
	dcs, _, _ := unstructured.NestedSlice(c.Object, "spec", "datacenters")
	if host, _, _ := unstructured.NestedString(dcs[2].(map[string]any), "diameter", "originHost"); host != "pcrf-edge.{realm}" {
		t.Errorf("spec.datacenters[2].diameter.originHost = %q, want the values' pcrf-edge.{realm}", host)
	}
	def := objects(t, renders[2].template(t))
	if find(def, "Secret", "") != nil {
		t.Error("default values render a Secret")
	}
	c = find(def, "AAACluster", "radius")
	if c == nil {
		t.Fatal("default values: no AAACluster named after the release")
	}
	// The CRD requires a subscriber source: without one in the values, a file in a ConfigMap.
	subs, _, _ := unstructured.NestedStringMap(c.Object, "spec", "subscribers", "file", "configMap")
	if subs["name"] != "radius-subscribers" || subs["key"] != "subscribers.yaml" {
		t.Errorf("default values: spec.subscribers.file.configMap = %v, want radius-subscribers, key subscribers.yaml", subs)
	}
}

// elideCopies keeps the golden files about what the templates do: the body of what the
// chart copies from config/ (the CRD's spec, the operator's RBAC rules, the dashboards' JSON)
// is replaced by a note — TestRBACEqualsControllerGen checks the rules,
// TestFilesInStep checks those copies and TestServerSideDryRun applies them — so that a
// `make manifests` in the operator needs `make chart-sync` only, not new golden files.
func elideCopies(t *testing.T, manifest string) string {
	t.Helper()
	docs := strings.Split(manifest, "\n---\n")
	for i, d := range docs {
		switch {
		case strings.Contains(d, "\nkind: CustomResourceDefinition\n"):
			var crd map[string]any
			if err := yaml.Unmarshal([]byte(d), &crd); err != nil {
				t.Fatal(err)
			}
			crd["spec"] = "(elided: files/crds, a copy of config/crd/bases)"
			b, err := yaml.Marshal(crd)
			if err != nil {
				t.Fatal(err)
			}
			head, _, _ := strings.Cut(d, "\napiVersion:")
			docs[i] = head + "\n" + string(b)
		case strings.Contains(d, "\nkind: ClusterRole\n") && !strings.Contains(d, "rbac.authorization.k8s.io/aggregate-to-"):
			var role map[string]any
			if err := yaml.Unmarshal([]byte(d), &role); err != nil {
				t.Fatal(err)
			}
			role["rules"] = "(elided: files/rbac/role.yaml, a copy of config/rbac/role.yaml)"
			b, err := yaml.Marshal(role)
			if err != nil {
				t.Fatal(err)
			}
			head, _, _ := strings.Cut(d, "\napiVersion:")
			docs[i] = head + "\n" + string(b)
		case strings.Contains(d, "\nkind: ConfigMap\n") && strings.Contains(d, "grafana_dashboard"):
			var cm map[string]any
			if err := yaml.Unmarshal([]byte(d), &cm); err != nil {
				t.Fatal(err)
			}
			data, _ := cm["data"].(map[string]any)
			for k, v := range data {
				data[k] = "(elided: " + itoa(len(v.(string))) + " bytes of files/dashboards/" + k + ")"
			}
			b, err := yaml.Marshal(cm)
			if err != nil {
				t.Fatal(err)
			}
			head, _, _ := strings.Cut(d, "\napiVersion:")
			docs[i] = head + "\n" + string(b)
		}
	}
	return strings.Join(docs, "\n---\n")
}
