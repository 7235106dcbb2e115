package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// FuzzParseConfig loads arbitrary YAML with an arbitrary --set override: nothing may panic,
// an accepted configuration must be valid, and writing it back out must load to the same.
func FuzzParseConfig(f *testing.F) {
	f.Add(minimal, "radius.workers=8")
	f.Add(minimal, "clients.0.name=x")
	f.Add(minimal, "radius.maxQueueWait=1.5")
	f.Add(minimal+"radius: {duplicateWindow: 10s, queueSize: 4}\n", "session.expiry.grace=90s")
	f.Add("clients: [{name: a, address: '::1', secretFile: /s}]\nsubscribers: {file: /f}\n", "clients.0.coaPort=3799")
	f.Add("", "")
	f.Add("- a\n- b\n", "a.b.c=1")
	f.Add("radius: null\n", "radius.workers=")
	dir := f.TempDir()
	path := filepath.Join(dir, "policing.yaml")
	f.Fuzz(func(t *testing.T, text, set string) {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		var sets []string
		if set != "" {
			sets = strings.Split(set, "\n")
		}
		c, err := Load(path, sets, nil)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Load accepted an invalid configuration: %v", err)
		}
		js, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		y, err := yaml.JSONToYAML(js)
		if err != nil {
			t.Fatalf("to YAML: %v", err)
		}
		if err := os.WriteFile(path, y, 0o600); err != nil {
			t.Fatal(err)
		}
		back, err := Load(path, nil, nil)
		if err != nil {
			t.Fatalf("written configuration does not load: %v\n%s", err, y)
		}
		if !reflect.DeepEqual(normalize(c), normalize(back)) {
			t.Fatalf("round trip changed the configuration:\n%+v\n%+v", c, back)
		}
	})
}

// normalize maps empty and nil slices alike (omitempty drops empty lists).
func normalize(c *Config) string {
	b, _ := json.Marshal(c)
	return string(b)
}
