package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestReproducible: the same inputs give byte-identical layouts and archives.
func TestReproducible(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "app")
	ca := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(bin, []byte("\x7fELF not really"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var archives [][]byte
	for _, out := range []string{filepath.Join(dir, "a"), filepath.Join(dir, "b")} {
		if err := build("app", bin, "v1", "v1", out, ca, "amd64", "https://example.net", "serve"); err != nil {
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
