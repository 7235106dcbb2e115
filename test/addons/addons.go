// Package addons gives tests the real add-ons of the local cluster (issue 12):
// prometheus-operator with a Prometheus, metrics-server, cert-manager. hack/addons.sh builds
// them and installs them; this package reads the same hack/addons/images.env and calls the
// same script. A cluster test package starts their install when its cluster is up and each
// test that needs them waits for it:
//
//	b := addons.StartBackground(kubeconfig, cluster.ImportArchives) // import, install, verify
//	b.Wait(t, ctx)                                                  // in a test
//
// docs/addons.md says what each step checks and costs. `make provision` builds them
// (`make addons`); without them the tests skip, or fail under OPENAAA_INTEGRATION=require.
package addons

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openaaa/openaaa/internal/testenv"
)

// CacheDir is where hack/addons.sh keeps binaries, images and CRDs ($ADDONS_CACHE, else
// $CACHE/addons, else ~/.cache/openaaa/addons), as the script computes it.
func CacheDir() string {
	if d := os.Getenv("ADDONS_CACHE"); d != "" {
		return d
	}
	return filepath.Join(cacheRoot(), "addons")
}

// cacheRoot is the project's cache ($CACHE, else ~/.cache/openaaa), as the scripts compute it.
func cacheRoot() string {
	if c := os.Getenv("CACHE"); c != "" {
		return c
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "openaaa")
}

// Env reads hack/addons/images.env: versions and image references.
func Env() (map[string]string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(root, "hack", "addons", "images.env"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("images.env: not KEY=value: %q", line)
		}
		env[k] = v
	}
	return env, sc.Err()
}

// Image is one add-on image: its binary's name, the reference the manifests use, the OCI
// archive to import (tag-only index: import it under Ref's repository).
type Image struct {
	Name, Ref, Archive string
}

// Images lists the add-on images (`hack/addons.sh list`).
func Images(t testing.TB) []Image {
	t.Helper()
	imgs, err := images()
	if err != nil {
		t.Fatal(err)
	}
	return imgs
}

func images() ([]Image, error) {
	out, err := Script(context.Background(), "list")
	if err != nil {
		return nil, err
	}
	var imgs []Image
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			return nil, fmt.Errorf("hack/addons.sh list: unexpected line %q", l)
		}
		imgs = append(imgs, Image{Name: f[0], Ref: f[1], Archive: f[2]})
	}
	return imgs, nil
}

// ImportArg is the image's `hack/cluster.sh import` argument: ARCHIVE=REPO.
func (img Image) ImportArg() string {
	return img.Archive + "=" + img.Ref[:strings.LastIndex(img.Ref, ":")]
}

// BuildStatusEnv names the file that `make test` (hack/test.sh) has the add-ons' build write
// into, a line as each part of it ends: PartK8ssandra, then "ok" once every add-on is built,
// or "failed". The build runs beside the cluster tests, and a test waits for the part it needs.
const BuildStatusEnv = "OPENAAA_ADDONS_BUILD_STATUS"

// PartK8ssandra is what managed Cassandra needs (`make addons-k8ssandra cassandra-image`:
// cert-manager, cass-operator, k8ssandra-operator and the Cassandra test images), built before
// the monitoring add-ons: the managed-Cassandra test is the cluster package's longest.
const PartK8ssandra = "k8ssandra"

// PartArgoCD is Argo CD's components (`make argocd-gitops`: what a local Argo CD runs), built
// after every add-on and before its CLI. Not an add-on, but made by the same lane of make test.
const PartArgoCD = "argocd"

// partAll: every add-on.
const partAll = "ok"

// buildWait bounds the wait for that build (a cold build under load took 12 min).
const buildWait = 40 * time.Minute

// NeedBuilt skips the test when the add-ons are not built (`make addons`, part of
// `make provision`); with OPENAAA_INTEGRATION=require (make test) it fails instead. Under
// `make test` it first waits for the build running beside it (BuildStatusEnv).
func NeedBuilt(t testing.TB) {
	t.Helper()
	needBuilt(t, partAll, func(Image) bool { return true }, "make addons")
}

// NeedBuiltK8ssandra is NeedBuilt for PartK8ssandra's add-on images alone (the Cassandra test
// images are hack/addons.sh install-k8ssandra's to find).
func NeedBuiltK8ssandra(t testing.TB) {
	t.Helper()
	needBuilt(t, PartK8ssandra, inK8ssandraPart, "make addons-k8ssandra")
}

// inK8ssandraPart: the add-on images of PartK8ssandra (hack/make/addons.mk K8SSANDRA_ADDONS,
// the ones hack/addons.sh install-k8ssandra imports).
func inK8ssandraPart(img Image) bool {
	return img.Name == "cass-operator" || img.Name == "k8ssandra-operator" || strings.HasPrefix(img.Name, "cert-manager-")
}

func needBuilt(t testing.TB, part string, in func(Image) bool, target string) {
	t.Helper()
	WaitPart(t, part)
	missing := ""
	for _, img := range Images(t) {
		if _, err := os.Stat(img.Archive); in(img) && err != nil {
			missing += " " + img.Name
		}
	}
	testenv.Need(t, missing == "", "the add-on images"+missing+" in "+CacheDir()+" ("+target+")")
}

// WaitPart waits, under make test, until the build beside the tests has built part (a Part
// constant, or partAll); elsewhere it returns at once.
func WaitPart(t testing.TB, part string) {
	t.Helper()
	f := os.Getenv(BuildStatusEnv)
	if f == "" {
		return
	}
	waited, err := waitBuildStatus(context.Background(), f, part)
	if err != nil {
		t.Fatal(err)
	}
	if waited > time.Second {
		what := part
		if part == partAll {
			what = "every add-on"
		}
		t.Logf("waited %s for make test's build of %s (beside the cluster tests)", waited.Round(time.Second), what)
	}
}

// waitBuildStatus waits (at most buildWait, or until ctx ends) for the build that make test
// runs beside the tests to have built part: nil once the status file has its line (hack/test.sh
// writes them in build order), an error once it says "failed" without it.
func waitBuildStatus(ctx context.Context, status, part string) (time.Duration, error) {
	start := time.Now()
	for {
		b, err := os.ReadFile(status)
		if err != nil && !os.IsNotExist(err) {
			return time.Since(start), fmt.Errorf("the add-ons' build status %s: %v", status, err)
		}
		lines := strings.Fields(string(b))
		switch {
		case slices.Contains(lines, part):
			return time.Since(start), nil
		case slices.Contains(lines, "failed"):
			return time.Since(start), fmt.Errorf("the add-ons' build failed (%s says %q): see `make addons` in make test's output", status, b)
		}
		if time.Since(start) > buildWait {
			return time.Since(start), fmt.Errorf("the add-ons' build did not end within %s (%s)", buildWait, status)
		}
		select {
		case <-ctx.Done():
			return time.Since(start), ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// Script runs hack/addons.sh with args and returns its standard output; the error carries
// its standard error.
func Script(ctx context.Context, args ...string) (string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "addons.sh"), args...)
	cmd.Dir = root
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("hack/addons.sh %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// Install installs every add-on on the cluster of kubeconfig (images already imported) and
// waits until each works: Prometheus scrapes a ServiceMonitor target and evaluates a
// PrometheusRule, metrics.k8s.io returns pod metrics. The
// script's own bound is ADDONS_TIMEOUT seconds per step (default 300); ctx bounds it all.
func Install(t testing.TB, ctx context.Context, kubeconfig string) {
	t.Helper()
	for _, step := range []string{"install", "verify"} {
		out, err := Script(ctx, step, kubeconfig)
		if err != nil {
			t.Fatalf("%v%s", err, out)
		}
	}
}

// Prometheus names where the Prometheus of the add-ons answers, through the API server's
// service proxy: GET /api/v1/namespaces/<PrometheusNamespace>/services/<PrometheusService>/proxy/api/v1/...
const (
	PrometheusNamespace = "monitoring"
	PrometheusService   = "prometheus-operated:web"
)

// CertManagerCAIssuer is the ClusterIssuer of the local CA (51-cert-manager-issuers.yaml).
const CertManagerCAIssuer = "openaaa-local-ca"

// InstallK8ssandra installs managed Cassandra on the local cluster of kubeconfig
// (`hack/addons.sh install-k8ssandra`: imports the operators' and cert-manager's images and
// any Cassandra image archives, installs cert-manager, the CRDs, cass-operator,
// k8ssandra-operator, StorageClass K8ssandraStorageClass and its volumes) and waits until both
// operators are Available and their webhooks answer. Needs root (the import).
func InstallK8ssandra(t testing.TB, ctx context.Context, kubeconfig string) {
	t.Helper()
	if out, err := Script(ctx, "install-k8ssandra", kubeconfig); err != nil {
		t.Fatalf("%v%s", err, out)
	}
}

// K8ssandraStorageClass is the no-provisioner StorageClass of the static volumes that
// install-k8ssandra makes (62-k8ssandra-storage.yaml).
const K8ssandraStorageClass = "openaaa-local"
