// Package images inspects the OCI images `make images` builds into bin/images (the tool is
// internal/tools/ocibuild): a valid OCI layout whose blobs match their digests, a non-root
// user, the entrypoint a static binary that runs `--version`, no shell; and umoci, an
// independent OCI implementation (Debian), unpacks it.
package images

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openaaa/openaaa/internal/testenv"
)

// imageNames are the images `make images` builds; each is named like its binary.
var imageNames = []string{"policing", "openaaa-operator", "aaa-loadgen"}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations"`
}

type imageConfig struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Config       struct {
		User       string            `json:"User"`
		Entrypoint []string          `json:"Entrypoint"`
		Cmd        []string          `json:"Cmd"`
		Env        []string          `json:"Env"`
		Labels     map[string]string `json:"Labels"`
	} `json:"config"`
	RootFS struct {
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

func imageDir(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("BIN")
	if bin == "" {
		bin = filepath.Join(testenv.Root(t), "bin")
	}
	dir := filepath.Join(bin, "images")
	for _, name := range imageNames {
		_, err := os.Stat(filepath.Join(dir, name, "index.json"))
		testenv.Need(t, err == nil, "OCI image "+name+" in "+dir+" (`make images`)")
	}
	return dir
}

// blob reads a blob and checks its digest and size.
func blob(t *testing.T, layout string, d descriptor) []byte {
	t.Helper()
	hexsum, ok := strings.CutPrefix(d.Digest, "sha256:")
	if !ok {
		t.Fatalf("digest %q is not sha256", d.Digest)
	}
	b, err := os.ReadFile(filepath.Join(layout, "blobs", "sha256", hexsum))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if hex.EncodeToString(sum[:]) != hexsum || int64(len(b)) != d.Size {
		t.Fatalf("blob %s: content does not match its digest or size", d.Digest)
	}
	return b
}

// files reads the layers into path -> (header, content), later layers winning.
type imageIndex struct {
	Manifests []descriptor `json:"manifests"`
}

type imageManifest struct {
	Config descriptor   `json:"config"`
	Layers []descriptor `json:"layers"`
}

// readIndex reads an OCI layout's index.json.
func readIndex(t *testing.T, layout string) imageIndex {
	t.Helper()
	var index imageIndex
	raw, err := os.ReadFile(filepath.Join(layout, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &index); err != nil {
		t.Fatalf("index.json: %v", err)
	}
	return index
}

// readImage reads what an index entry points at: the manifest and the image configuration.
func readImage(t *testing.T, layout string, d descriptor) (imageManifest, imageConfig) {
	t.Helper()
	var manifest imageManifest
	if err := json.Unmarshal(blob(t, layout, d), &manifest); err != nil {
		t.Fatal(err)
	}
	var cfg imageConfig
	if err := json.Unmarshal(blob(t, layout, manifest.Config), &cfg); err != nil {
		t.Fatal(err)
	}
	return manifest, cfg
}

func files(t *testing.T, layout string, layers []descriptor, diffIDs []string) map[string]*tar.Header {
	t.Helper()
	out := map[string]*tar.Header{}
	if len(layers) != len(diffIDs) {
		t.Fatalf("%d layers but %d diff_ids", len(layers), len(diffIDs))
	}
	for i, l := range layers {
		if l.MediaType != "application/vnd.oci.image.layer.v1.tar+gzip" {
			t.Errorf("layer %d media type %q", i, l.MediaType)
		}
		zr, err := gzip.NewReader(bytes.NewReader(blob(t, layout, l)))
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(raw)
		if "sha256:"+hex.EncodeToString(sum[:]) != diffIDs[i] {
			t.Errorf("layer %d: diff_id does not match the uncompressed layer", i)
		}
		tr := tar.NewReader(bytes.NewReader(raw))
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			name := "/" + strings.TrimSuffix(strings.TrimPrefix(h.Name, "./"), "/")
			content, _ := io.ReadAll(tr)
			h.PAXRecords = map[string]string{"content": string(content)}
			out[name] = h
		}
	}
	return out
}

func TestImages(t *testing.T) {
	dir := imageDir(t)
	for _, name := range imageNames {
		t.Run(name, func(t *testing.T) {
			layout := filepath.Join(dir, name)
			if b, err := os.ReadFile(filepath.Join(layout, "oci-layout")); err != nil || !strings.Contains(string(b), `"imageLayoutVersion":"1.0.0"`) {
				t.Fatalf("oci-layout: %s %v", b, err)
			}
			index := readIndex(t, layout)
			if len(index.Manifests) != 1 {
				t.Fatalf("index.json: %d manifests", len(index.Manifests))
			}
			tag := index.Manifests[0].Annotations["org.opencontainers.image.ref.name"]
			manifest, cfg := readImage(t, layout, index.Manifests[0])

			// a non-root user that exists in /etc/passwd
			uidStr, _, _ := strings.Cut(cfg.Config.User, ":")
			uid, err := strconv.Atoi(uidStr)
			if err != nil || uid == 0 {
				t.Errorf("User %q: want a numeric non-root user", cfg.Config.User)
			}
			fs := files(t, layout, manifest.Layers, cfg.RootFS.DiffIDs)
			passwd := fs["/etc/passwd"]
			if passwd == nil || !strings.Contains(passwd.PAXRecords["content"], fmt.Sprintf(":x:%d:%d:", uid, uid)) {
				t.Errorf("/etc/passwd has no user %d", uid)
			}
			for _, f := range []string{"/etc/ssl/certs/ca-certificates.crt", "/etc/group", "/tmp"} {
				if fs[f] == nil {
					t.Errorf("image lacks %s", f)
				}
			}
			if tmp := fs["/tmp"]; tmp != nil && tmp.Mode&0o1777 != 0o1777 {
				t.Errorf("/tmp mode %o, want 1777", tmp.Mode)
			}
			for _, sh := range []string{"/bin/sh", "/bin/bash", "/usr/bin/sh"} {
				if fs[sh] != nil {
					t.Errorf("image has a shell: %s", sh)
				}
			}

			// the entrypoint: a static executable that runs --version
			want := "/usr/local/bin/" + name
			if len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != want {
				t.Fatalf("Entrypoint %v, want [%s]", cfg.Config.Entrypoint, want)
			}
			h := fs[want]
			if h == nil || h.Mode&0o111 == 0 {
				t.Fatalf("%s missing or not executable", want)
			}
			exe := filepath.Join(t.TempDir(), name)
			if err := os.WriteFile(exe, []byte(h.PAXRecords["content"]), 0o755); err != nil {
				t.Fatal(err)
			}
			assertStatic(t, exe)
			version := cfg.Config.Labels["org.opencontainers.image.version"]
			if version == "" || version != tag {
				t.Errorf("version label %q, tag %q", version, tag)
			}
			runVersion(t, name, exe, version)
		})
	}
}

func assertStatic(t *testing.T, exe string) {
	t.Helper()
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatalf("entrypoint is not an ELF executable: %v", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("entrypoint is dynamically linked: the image has no libc (build with CGO_ENABLED=0)")
		}
	}
}

func runVersion(t *testing.T, name, exe, version string) {
	t.Helper()
	cmd := exec.Command(exe, "--version")
	cmd.Env = []string{"PATH=/nonexistent"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s --version: %v\n%s", name, err, out.String())
		}
		if !strings.Contains(out.String(), version) {
			t.Errorf("%s --version printed %q, want the version %s", name, strings.TrimSpace(out.String()), version)
		}
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%s --version did not exit", name)
	}
}

// TestUmociUnpacks: umoci (Debian), an OCI implementation independent of ours, unpacks each
// image into a runtime bundle whose entrypoint runs and whose process user is non-root.
func TestUmociUnpacks(t *testing.T) {
	dir := imageDir(t)
	umoci := testenv.LookPath(t, "umoci", "Debian package umoci; `make provision`")
	for _, name := range imageNames {
		t.Run(name, func(t *testing.T) {
			layout := filepath.Join(dir, name)
			index := readIndex(t, layout)
			if len(index.Manifests) == 0 {
				t.Fatal("index.json: no manifest")
			}
			tag := index.Manifests[0].Annotations["org.opencontainers.image.ref.name"]
			bundle := filepath.Join(t.TempDir(), "bundle")
			out, err := exec.Command(umoci, "unpack", "--rootless", "--image", layout+":"+tag, bundle).CombinedOutput()
			if err != nil {
				t.Fatalf("umoci unpack: %v\n%s", err, out)
			}
			var spec struct {
				Process struct {
					User struct {
						UID int `json:"uid"`
					} `json:"user"`
					Args []string `json:"args"`
				} `json:"process"`
			}
			raw, err := os.ReadFile(filepath.Join(bundle, "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(raw, &spec); err != nil {
				t.Fatal(err)
			}
			if spec.Process.User.UID == 0 {
				t.Errorf("runtime config runs as root")
			}
			if len(spec.Process.Args) == 0 || spec.Process.Args[0] != "/usr/local/bin/"+name {
				t.Errorf("runtime args %v", spec.Process.Args)
			}
			runVersion(t, name, filepath.Join(bundle, "rootfs", "usr", "local", "bin", name), tag)
		})
	}
}

// TestArchive: the OCI archive holds the same layout.
func TestArchive(t *testing.T) {
	dir := imageDir(t)
	for _, name := range imageNames {
		f, err := os.Open(filepath.Join(dir, name+".oci.tar"))
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(f)
		seen := map[string]bool{}
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			seen[h.Name] = true
		}
		f.Close()
		for _, want := range []string{"oci-layout", "index.json", "blobs/"} {
			if !seen[want] {
				t.Errorf("%s.oci.tar lacks %s", name, want)
			}
		}
	}
}
