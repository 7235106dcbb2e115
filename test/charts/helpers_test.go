// Package charts tests the Helm charts of charts/: helm lint, helm template with default and
// full values against golden files (-update rewrites them), the files the operator chart
// copies from config/ kept equal, its RBAC equal to controller-gen's, values documented in the
// README and the schema, stable output for GitOps, and every rendered object applied with a
// server-side dry-run to a real kube-apiserver (envtest) with all the CRDs loaded.
package charts

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/openaaa/openaaa/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite the golden files and the chart READMEs")

func repoRoot() string {
	root, err := testenv.RepoRoot()
	if err != nil {
		panic(err) // go test runs in the package's directory, below go.mod
	}
	return root
}

// helmBin finds helm: $BIN/helm, bin/helm of the repository, then PATH.
func helmBin(t testing.TB) string {
	t.Helper()
	var candidates []string
	if b := os.Getenv("BIN"); b != "" {
		candidates = append(candidates, filepath.Join(b, "helm"))
	}
	candidates = append(candidates, filepath.Join(repoRoot(), "bin", "helm"))
	for _, c := range candidates {
		if st, err := os.Stat(c); err == nil && !st.IsDir() {
			return c
		}
	}
	return testenv.LookPath(t, "helm", "`make helm` builds it into bin/")
}

func helm(t testing.TB, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helmBin(t), args...)
	cmd.Dir = repoRoot()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// render is one way of rendering a chart.
type render struct {
	name      string // golden file name
	chart     string // charts/<chart>
	release   string
	namespace string
	args      []string
}

var renders = []render{
	{"openaaa-operator-default", "openaaa-operator", "openaaa-operator", "openaaa-system", nil},
	{"openaaa-operator-full", "openaaa-operator", "openaaa-operator", "openaaa-system", []string{"-f", "charts/openaaa-operator/ci/full-values.yaml"}},
	{"aaacluster-default", "aaacluster", "radius", "aaa", nil},
	{"aaacluster-full", "aaacluster", "radius", "aaa", []string{"-f", "charts/aaacluster/ci/full-values.yaml"}},
}

func (r render) template(t testing.TB, extra ...string) string {
	t.Helper()
	args := append([]string{"template", r.release, "charts/" + r.chart, "--namespace", r.namespace}, r.args...)
	out, err := helm(t, append(args, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// objects splits a rendered manifest into objects.
func objects(t testing.TB, manifest string) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatalf("decoding the rendered manifest: %v", err)
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && (name == "" || o.GetName() == name) {
			return o
		}
	}
	return nil
}
