package main

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
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

// TestRebuildInPlace: a rebuild never leaves the layout unreadable to a reader beside it (a
// test reading bin/images while docs/local-cluster.md's `make images` ran again failed so:
// "OCI image policing ... missing", CI of 2026-11-29), and a rebuild of another binary
// leaves only the new image's blobs, in the layout and in the archive.
func TestRebuildInPlace(t *testing.T) {
	dir, bin, ca := inputs(t)
	out := filepath.Join(dir, "out")
	build1 := func() error {
		return build("app", bin, "v1", "v1", out, ca, "amd64", "https://example.net", "serve", "/usr/local/bin")
	}
	if err := build1(); err != nil {
		t.Fatal(err)
	}
	layout := filepath.Join(out, "app")
	// read opens what a reader opens: index.json, then every blob it names down to the layers.
	read := func() error {
		b, err := os.ReadFile(filepath.Join(layout, "index.json"))
		if err != nil {
			return err
		}
		var index struct{ Manifests []descriptor }
		if err := json.Unmarshal(b, &index); err != nil {
			return fmt.Errorf("index.json %q: %w", b, err)
		}
		if len(index.Manifests) != 1 {
			return fmt.Errorf("index.json: %d manifests", len(index.Manifests))
		}
		var manifest struct {
			Config descriptor
			Layers []descriptor
		}
		b, err = os.ReadFile(filepath.Join(layout, "blobs", "sha256", strings.TrimPrefix(index.Manifests[0].Digest, "sha256:")))
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &manifest); err != nil {
			return fmt.Errorf("manifest %q: %w", b, err)
		}
		for _, d := range append(manifest.Layers, manifest.Config) {
			st, err := os.Stat(filepath.Join(layout, "blobs", "sha256", strings.TrimPrefix(d.Digest, "sha256:")))
			if err != nil {
				return err
			}
			if st.Size() != d.Size {
				return fmt.Errorf("blob %s: %d bytes, want %d", d.Digest, st.Size(), d.Size)
			}
		}
		return nil
	}
	done := make(chan error, 1)
	go func() {
		for i := 0; i < 20; i++ {
			if err := build1(); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	reads := 0
	for building := true; building; reads++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			building = false
		default:
		}
		if err := read(); err != nil {
			t.Fatalf("read %d, beside a rebuild: %v", reads, err)
		}
	}
	t.Logf("%d reads beside 20 rebuilds", reads)

	// Another binary: the old image's binary layer, config and manifest are gone.
	if err := os.WriteFile(bin, []byte("\x7fELF another"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := build1(); err != nil {
		t.Fatal(err)
	}
	if err := read(); err != nil {
		t.Fatal(err)
	}
	blobs, err := os.ReadDir(filepath.Join(layout, "blobs", "sha256"))
	if err != nil {
		t.Fatal(err)
	}
	// base layer, binary layer, config, manifest.
	if len(blobs) != 4 {
		var names []string
		for _, b := range blobs {
			names = append(names, b.Name())
		}
		t.Errorf("blobs after a rebuild of another binary: %d, want 4: %v", len(blobs), names)
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "app" && e.Name() != "app.oci.tar" {
			t.Errorf("left in the output directory: %s", e.Name())
		}
	}
	f, err := os.Open(filepath.Join(out, "app.oci.tar"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	n := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(h.Name, "blobs/sha256/") && h.Typeflag == tar.TypeReg {
			n++
		}
	}
	if n != 4 {
		t.Errorf("archive: %d blobs, want 4", n)
	}
}
