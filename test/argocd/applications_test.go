package argocd

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestApplicationsSyncWaves: the GitOps example installs the platform operators and the CRDs
// before the OpenAAA operator, and the OpenAAA operator before the AAACluster; the charts it
// points at exist.
func TestApplicationsSyncWaves(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(dir(t), "applications.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	waves := map[string]int{}
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var app struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name        string            `json:"name"`
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
			Spec struct {
				Source struct {
					Path  string `json:"path"`
					Chart string `json:"chart"`
					Helm  struct {
						ValueFiles []string `json:"valueFiles"`
					} `json:"helm"`
				} `json:"source"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(doc), &app); err != nil {
			t.Fatal(err)
		}
		if app.Kind != "Application" {
			t.Fatalf("%s: kind %q", app.Metadata.Name, app.Kind)
		}
		w, err := strconv.Atoi(app.Metadata.Annotations["argocd.argoproj.io/sync-wave"])
		if err != nil {
			t.Fatalf("%s: no sync wave", app.Metadata.Name)
		}
		waves[app.Metadata.Name] = w
		if p := app.Spec.Source.Path; p != "" {
			chart := filepath.Join(dir(t), "..", "..", p)
			if _, err := os.Stat(filepath.Join(chart, "Chart.yaml")); err != nil {
				t.Errorf("%s: path %s is not a chart of this repository", app.Metadata.Name, p)
			}
			for _, vf := range app.Spec.Source.Helm.ValueFiles {
				if strings.HasPrefix(vf, "../../values/") {
					continue // the user's, at the root of their repository (TestArgoCDOnCluster writes them)
				}
				if _, err := os.Stat(filepath.Join(chart, vf)); err != nil {
					t.Errorf("%s: value file %s missing", app.Metadata.Name, vf)
				}
			}
		}
	}
	for _, before := range []string{"cert-manager", "kube-prometheus-stack", "k8ssandra-operator"} {
		if waves[before] >= waves["openaaa-operator"] {
			t.Errorf("%s (wave %d) must come before openaaa-operator (wave %d)", before, waves[before], waves["openaaa-operator"])
		}
	}
	if waves["openaaa-operator"] >= waves["radius"] {
		t.Errorf("openaaa-operator (wave %d) must come before the AAACluster radius (wave %d)", waves["openaaa-operator"], waves["radius"])
	}
}

// TestApplicationHealth runs the Application health check of argocd-cm.yaml.
func TestApplicationHealth(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(dir(t), "argocd-cm.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(raw, &cm); err != nil {
		t.Fatal(err)
	}
	script := cm.Data["resource.customizations.health.argoproj.io_Application"]
	if script == "" {
		t.Fatal("no Application health check")
	}
	healthy := map[string]any{"status": map[string]any{"health": map[string]any{"status": "Healthy"}}}
	if got := runHealth(t, script, healthy); got.Status != "Healthy" {
		t.Errorf("healthy Application: %+v", got)
	}
	if got := runHealth(t, script, map[string]any{}); got.Status != "Progressing" {
		t.Errorf("Application without status: %+v", got)
	}
}
