package config

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestClientsFileList: the clients file as the operator's samples and the aaacluster chart
// write it (a top-level list) loads like the `clients:` document.
func TestClientsFileList(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clients.yaml")
	if err := os.WriteFile(path, []byte("- {name: a, address: 192.0.2.1, secretFile: /s}\n- {name: b, address: 192.0.2.0/24, secretFile: /t}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := LoadClientsFile(path)
	if err != nil || len(got) != 2 || got[0].Name != "a" || got[1].Address != "192.0.2.0/24" {
		t.Fatalf("LoadClientsFile = %+v, %v", got, err)
	}
	for _, empty := range []string{"", "[]\n", "clients: []\n"} {
		if err := os.WriteFile(path, []byte(empty), 0o600); err != nil {
			t.Fatal(err)
		}
		if got, err := LoadClientsFile(path); err != nil || len(got) != 0 {
			t.Errorf("%q: %+v, %v; want no clients and no error", empty, got, err)
		}
	}
}

// TestClientsFileErrors: every error names the file and a non-empty place in it.
func TestClientsFileErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clients.yaml")
	for text, want := range map[string]string{
		"42\n":    "a list of clients or a mapping with a clients: list",
		"hello\n": "a list of clients or a mapping with a clients: list",
		"- {name: a, address: nope, secretFile: /s}\n": "clients[0].address",
		"- {name: a, adress: 192.0.2.1}\n":             "clients[0].adress: unknown key; did you mean address?",
		"- 7\n":                                        "1:3: clients[0]: the number 7 where a mapping (name, address",
		"clients: 7\n":                                 "1:10: clients: the number 7 where a list of mappings",
		"clients:\n  - {name: a, address: 192.0.2.1, secretFile: /s, port: x}\n": "2:51: clients[0].port: unknown key",
	} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadClientsFile(path)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%q: %v, want an error naming %s and %q", text, err, path, want)
			continue
		}
		if strings.Contains(err.Error(), ": :") {
			t.Errorf("%q: %v: an empty segment in the message", text, err)
		}
	}
}

// TestShippedClientsFiles is the contract between what users deploy and what policing reads:
// the clients.yaml of every Secret in config/samples and in the aaacluster chart's rendered
// output (the golden files that test/charts keeps equal to `helm template`) must load.
func TestShippedClientsFiles(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	files := []string{filepath.Join(root, "config", "samples", "secrets.yaml")}
	golden, _ := filepath.Glob(filepath.Join(root, "test", "charts", "testdata", "golden", "aaacluster-*.yaml"))
	if len(golden) == 0 {
		t.Fatal("no aaacluster golden files found")
	}
	files = append(files, golden...)
	found := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range bytes.Split(raw, []byte("\n---")) {
			var s struct {
				Kind       string            `json:"kind"`
				Data       map[string]string `json:"data"`
				StringData map[string]string `json:"stringData"`
			}
			if err := yaml.Unmarshal(doc, &s); err != nil || s.Kind != "Secret" {
				continue
			}
			text, ok := s.StringData["clients.yaml"]
			if enc, isData := s.Data["clients.yaml"]; isData {
				b, err := base64.StdEncoding.DecodeString(enc)
				if err != nil {
					t.Fatalf("%s: clients.yaml: %v", f, err)
				}
				text, ok = string(b), true
			}
			if !ok {
				continue
			}
			found++
			path := filepath.Join(t.TempDir(), "clients.yaml")
			if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			clients, err := LoadClientsFile(path)
			if err != nil || len(clients) == 0 {
				t.Errorf("%s: the shipped clients.yaml does not load: %v (%d clients)", f, err, len(clients))
			}
		}
	}
	if found < 2 { // the sample and the chart with nasClients.create
		t.Errorf("found %d clients.yaml in %v; want the sample's and the full chart's", found, files)
	}
}
