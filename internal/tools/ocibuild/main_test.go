package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// inputs writes a fake binary and CA bundle into a temporary directory.
func inputs(t *testing.T) (dir, bin, ca string) {
	t.Helper()
	dir = t.TempDir()
	bin = filepath.Join(dir, "app")
	ca = filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(bin, []byte("\x7fELF not really"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, bin, ca
}

// TestReproducible: the same inputs give byte-identical layouts and archives.
func TestReproducible(t *testing.T) {
	dir, bin, ca := inputs(t)
	var archives [][]byte
	for _, out := range []string{filepath.Join(dir, "a"), filepath.Join(dir, "b")} {
		if err := build("app", bin, "v1", "v1", out, ca, "amd64", "https://example.net", "serve", "/usr/local/bin"); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(out, "app.oci.tar"))
		if err != nil {
			t.Fatal(err)
		}
		archives = append(archives, b)
	}
	if string(archives[0]) != string(archives[1]) {
		t.Error("two builds of the same inputs differ")
	}
}

// TestBinDir: -bindir puts the binary and the entrypoint where an operator expects them
// (prometheus-operator runs /bin/prometheus-config-reloader by path).
func TestBinDir(t *testing.T) {
	dir, bin, ca := inputs(t)
	out := filepath.Join(dir, "out")
	if err := build("app", bin, "v1", "v1", out, ca, "amd64", "https://example.net", "", "/bin/"); err != nil {
		t.Fatal(err)
	}
	blob := func(digest string) []byte {
		b, err := os.ReadFile(filepath.Join(out, "app", "blobs", "sha256", strings.TrimPrefix(digest, "sha256:")))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var index struct{ Manifests []descriptor }
	b, err := os.ReadFile(filepath.Join(out, "app", "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var manifest struct{ Config descriptor }
	var cfg struct{ Config struct{ Entrypoint []string } }
	if err := json.Unmarshal(b, &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index: %v %s", err, b)
	}
	if err := json.Unmarshal(blob(index.Manifests[0].Digest), &manifest); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(blob(manifest.Config.Digest), &cfg); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.Config.Entrypoint, " "); got != "/bin/app" {
		t.Errorf("entrypoint %q, want /bin/app", got)
	}
	if err := build("app", bin, "v1", "v1", out, ca, "amd64", "https://example.net", "", "/etc"); err == nil {
		t.Error("-bindir /etc accepted: it would shadow the base layer's /etc")
	}
}
