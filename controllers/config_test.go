package controllers

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
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

// TestSchemaDefaultsArePolicings: the CRD's defaults of policing's own settings (kubebuilder
// markers, which cannot name a Go constant) are policing's defaults.
func TestSchemaDefaultsArePolicings(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "config", "crd", "bases", "aaa.openaaa.io_aaaclusters.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	pd := policing.Default()
	for _, tc := range []struct {
		path string
		want any
	}{
		{"spec.logLevel", pd.Log.Level},
		{"spec.cassandra.keyspace", pd.Session.Cassandra.Keyspace},
		{"spec.radius.authPort", policing.DefaultAuthPort},
		{"spec.radius.acctPort", policing.DefaultAcctPort},
		{"spec.radius.requireMessageAuthenticator", pd.Radius.RequireMessageAuthenticator},
		{"spec.diameter.port", policing.DefaultDiameterPort},
		{"spec.eap.tlsIdentity", pd.EAP.TLSIdentity},
		{"spec.eap.maxConversations", pd.EAP.MaxConversations},
	} {
		for _, v := range crd.Spec.Versions {
			s := v.Schema.OpenAPIV3Schema
			for _, p := range strings.Split(tc.path, ".") {
				if s != nil {
					next := s.Properties[p]
					s = &next
				}
			}
			want, _ := json.Marshal(tc.want)
			if s == nil || s.Default == nil || string(s.Default.Raw) != string(want) {
				t.Errorf("%s %s: the CRD's default is not policing's %s", v.Name, tc.path, want)
			}
		}
	}
}
