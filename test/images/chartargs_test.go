package images

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/openaaa/openaaa/internal/testenv"
)

// TestOperatorAcceptsChartArgs runs the operator binary of the image with the arguments the
// openaaa-operator chart gives it (default and full values) followed by --help: the flag
// parser stops at the first flag it does not know (exit 2), so exit 0 proves that the chart
// and the operator agree on every flag.
func TestOperatorAcceptsChartArgs(t *testing.T) {
	dir := imageDir(t)
	root := testenv.Root(t)
	helmPath := filepath.Join(root, "bin", "helm")
	if b := os.Getenv("BIN"); b != "" {
		helmPath = filepath.Join(b, "helm")
	}
	if _, err := os.Stat(helmPath); err != nil {
		helmPath = testenv.LookPath(t, "helm", "`make helm`")
	}

	// the operator binary, from the image's layers
	layout := filepath.Join(dir, "openaaa-operator")
	index := readIndex(t, layout)
	if len(index.Manifests) == 0 {
		t.Fatal("index.json: no manifest")
	}
	manifest, cfg := readImage(t, layout, index.Manifests[0])
	fs := files(t, layout, manifest.Layers, cfg.RootFS.DiffIDs)
	exe := filepath.Join(t.TempDir(), "openaaa-operator")
	if err := os.WriteFile(exe, []byte(fs["/usr/local/bin/openaaa-operator"].PAXRecords["content"]), 0o755); err != nil {
		t.Fatal(err)
	}

	for _, values := range [][]string{nil, {"-f", "charts/openaaa-operator/ci/full-values.yaml"}} {
		cmd := exec.Command(helmPath, append([]string{"template", "openaaa-operator", "charts/openaaa-operator", "--show-only", "templates/deployment.yaml"}, values...)...)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("helm template: %v", err)
		}
		var dep struct {
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Args []string `json:"args"`
						} `json:"containers"`
					} `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(out, &dep); err != nil || len(dep.Spec.Template.Spec.Containers) != 1 {
			t.Fatalf("rendered Deployment: %v", err)
		}
		args := dep.Spec.Template.Spec.Containers[0].Args
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		run := exec.CommandContext(ctx, exe, append(append([]string{}, args...), "--help")...)
		var combined bytes.Buffer
		run.Stdout, run.Stderr = &combined, &combined
		err = run.Run()
		cancel()
		if err != nil {
			first, _, _ := strings.Cut(combined.String(), "\n")
			t.Errorf("operator rejects the chart's arguments %v: %v: %s", args, err, first)
		}
	}
}
