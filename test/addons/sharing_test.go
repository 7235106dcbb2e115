package addons

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/openaaa/openaaa/internal/testenv"
)

// The builds a cold machine runs, each from its own module: this repository's (the images,
// helm, kubectl, CoreDNS), the Kubernetes binaries' and etcd's wrappers
// (hack/lib/kube-build.sh), the add-ons' (hack/addons.sh), Argo CD's (hack/argocd.sh). dir is
// relative to the cache ($CACHE, ~/.cache/openaaa) unless it starts with "repo:". apart: the
// modules a build must have at other versions than the root module's, as its go.mod explains.
var builds = []struct {
	name, dir string
	pkgs      []string
	apart     []string
}{
	{"kubernetes", "envtest/src/kube-apiserver", []string{
		"k8s.io/kubernetes/cmd/kube-apiserver", "k8s.io/kubernetes/cmd/kubelet", "k8s.io/kubernetes/cmd/kube-controller-manager",
		"k8s.io/kubernetes/cmd/kube-scheduler", "k8s.io/kubernetes/cmd/kube-proxy"}, nil},
	{"etcd", "envtest/src/etcd", []string{"."}, nil},
	{"monitoring add-ons", "addons/src/monitoring", []string{
		"github.com/prometheus-operator/prometheus-operator/cmd/operator",
		"github.com/prometheus-operator/prometheus-operator/cmd/prometheus-config-reloader",
		"github.com/prometheus/prometheus/cmd/prometheus", "sigs.k8s.io/metrics-server/cmd/metrics-server"}, nil},
	{"cert-manager", "repo:hack/addons/cert-manager", []string{"./..."}, nil},
	{"k8ssandra add-ons", "addons/src/k8ssandra", []string{
		"github.com/k8ssandra/cass-operator/cmd", "github.com/k8ssandra/k8ssandra-operator"}, nil},
	{"argocd", "repo:hack/argocd", []string{"."}, []string{"github.com/cyphar/filepath-securejoin",
		"dario.cat/mergo", "github.com/chai2010/gettext-go", "github.com/go-errors/errors", "github.com/google/uuid",
		"github.com/spf13/cast", "sigs.k8s.io/structured-merge-diff/v6"}},
}

// TestBuildsShareRootVersions: every package that the Kubernetes binaries or the add-ons
// compile and this repository's binaries compile too comes from the same module version in
// both graphs, so that the Go build cache compiles it once on a cold machine (k8s.io/api,
// client-go, grpc, protobuf, golang.org/x...: about 800 packages per graph; issue 12's
// budget). The wrappers require the root module's build list (root_requirements in
// hack/lib/kube-build.sh); this fails when a wrapper needs a newer version than the root
// module has, naming it: raise it in go.mod (`go get MODULE@VERSION`), or for cert-manager's
// committed module align hack/addons/cert-manager/go.mod.
func TestBuildsShareRootVersions(t *testing.T) {
	NeedBuilt(t)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	env, err := Env()
	if err != nil {
		t.Fatal(err)
	}
	rootPkgs := goDeps(t, root, "-mod=readonly", "", rootBuilds(t, root)...)
	for _, b := range builds {
		dir := filepath.Join(cacheRoot(), b.dir)
		if r, ok := strings.CutPrefix(b.dir, "repo:"); ok {
			dir = filepath.Join(root, r)
		}
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
			t.Fatalf("%s: no module in %s (provisioned?): %v", b.name, dir, err)
		}
		// -mod=mod as the builds run (the wrappers' go.sum is the build's); cert-manager's
		// and Argo CD's are committed and complete.
		mode := "-mod=mod"
		if strings.HasPrefix(b.dir, "repo:") {
			mode = "-mod=readonly"
		}
		pkgs := goDeps(t, dir, mode, env["GONOSUMDB"], b.pkgs...)
		shared, differ := 0, map[string]string{}
		for p, mv := range pkgs {
			rmv, ok := rootPkgs[p]
			if !ok {
				continue
			}
			shared++
			if rmv != mv && !slices.Contains(b.apart, mv[:strings.LastIndex(mv, "@")]) {
				differ[fmt.Sprintf("%s: root %s", mv, rmv)] = p
			}
		}
		if len(differ) > 0 {
			lines := make([]string, 0, len(differ))
			for k, p := range differ {
				lines = append(lines, fmt.Sprintf("%s (e.g. %s)", k, p))
			}
			sort.Strings(lines)
			t.Errorf("%s: %d of its %d shared packages come from other module versions than the root module's, so a cold machine compiles them twice:\n%s",
				b.name, len(differ), shared, strings.Join(lines, "\n"))
			continue
		}
		if shared < 100 {
			t.Errorf("%s: only %d packages shared with the root module: the package lists above are stale?", b.name, shared)
		}
		apart := ""
		if len(b.apart) > 0 {
			apart = fmt.Sprintf(" but for the %d modules its go.mod sets apart", len(b.apart))
		}
		t.Logf("%s: %d packages of %d shared with the root module, all at its versions%s", b.name, shared, len(pkgs), apart)
	}
}

// rootBuilds: the root module's package patterns the wrappers align with, read from
// hack/lib/kube-build.sh (ROOT_BUILDS), the one list both use.
func rootBuilds(t *testing.T, root string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "hack", "lib", "kube-build.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^ROOT_BUILDS="([^"]+)"$`).FindSubmatch(b)
	if m == nil {
		t.Fatal(`hack/lib/kube-build.sh: no ROOT_BUILDS="..." line`)
	}
	return strings.Fields(string(m[1]))
}

// goDeps: the non-standard packages the patterns build in the module at dir (CGO_ENABLED=0,
// as every build here), each with MODULE@VERSION after replacements.
func goDeps(t *testing.T, dir, mode, gonosumdb string, patterns ...string) map[string]string {
	t.Helper()
	goBin := os.Getenv("GO")
	if goBin == "" {
		goBin = "go"
	}
	args := append([]string{"list", "-deps", "-f",
		`{{with .Module}}{{$.ImportPath}} {{with .Replace}}{{.Path}}@{{.Version}}{{else}}{{.Path}}@{{.Version}}{{end}}{{end}}`}, patterns...)
	cmd := exec.Command(goBin, args...)
	cmd.Dir = dir
	// GONOSUMDB as hack/addons.sh builds (images.env).
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOTOOLCHAIN=local", "GOFLAGS="+mode, "GONOSUMDB="+gonosumdb)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps in %s: %v\n%s", dir, err, stderr.String())
	}
	pkgs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if p, mv, ok := strings.Cut(line, " "); ok {
			pkgs[p] = mv
		}
	}
	return pkgs
}
