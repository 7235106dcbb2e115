package controllers

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
	policing "github.com/openaaa/openaaa/services/policing/config"
)

// TestRenderedConfigLoadsInPolicing: policing's own loader takes what the operator renders,
// with no error (the pods would not start) and no warning (policing would read something else
// than the operator meant), for every data center of the sample AAAClusters (config/samples,
// the aaacluster chart's rendered output) and for the golden files of the other tests.
func TestRenderedConfigLoadsInPolicing(t *testing.T) {
	dir := t.TempDir()
	check := func(name, file string) {
		t.Helper()
		_, warnings, err := policing.LoadWithWarnings(file, nil, nil)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		for _, w := range warnings {
			t.Errorf("%s: warning %v", name, w)
		}
	}
	clusters := map[string]*aaav1.AAACluster{"config/samples": loadSample(t)}
	charts, _ := filepath.Glob(filepath.Join("..", "test", "charts", "testdata", "golden", "aaacluster-*.yaml"))
	for _, f := range charts {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range bytes.Split(raw, []byte("\n---")) {
			var kind struct{ Kind string }
			if yaml.Unmarshal(doc, &kind) != nil || kind.Kind != "AAACluster" {
				continue
			}
			c := &aaav1.AAACluster{}
			if err := yaml.UnmarshalStrict(doc, c); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			clusters[filepath.Base(f)] = c
		}
	}
	if len(clusters) < 3 {
		t.Fatalf("sample AAAClusters: %d, want the sample and the chart's two", len(clusters))
	}
	for name, c := range clusters {
		spec := withDefaults(c.Spec, Options{})
		for _, dc := range spec.Datacenters {
			file := filepath.Join(dir, filepath.Base(name)+"-"+dc.Name+".yaml")
			if err := os.WriteFile(file, []byte(renderPolicingConfig(c, spec, dc.Name)), 0o600); err != nil {
				t.Fatal(err)
			}
			check(name+" "+dc.Name, file)
		}
	}
	goldens, _ := filepath.Glob(filepath.Join("testdata", "golden", "policing-*.yaml"))
	if len(goldens) == 0 {
		t.Fatal("no golden policing configurations")
	}
	for _, f := range goldens {
		check(f, f)
	}
}
