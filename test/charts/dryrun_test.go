package charts

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/openaaa/openaaa/internal/testenv"
)

// The envtest assets and third-party CRDs that hack/envtest.sh builds and fetches (the same
// places the operator's tests look: KUBEBUILDER_ASSETS and OPENAAA_THIRD_PARTY_CRDS, else
// the cache).
const envtestK8sVersion = "1.34.4"

func cacheDir() string {
	if d := os.Getenv("CACHE"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "openaaa")
}

func envtestDirs(t *testing.T) (assets, crds string) {
	t.Helper()
	assets = os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(cacheDir(), "envtest", "k8s-"+envtestK8sVersion, "bin")
	}
	crds = os.Getenv("OPENAAA_THIRD_PARTY_CRDS")
	if crds == "" {
		crds = filepath.Join(cacheDir(), "envtest", "k8s-"+envtestK8sVersion, "crds")
	}
	ok := true
	for _, f := range []string{filepath.Join(assets, "kube-apiserver"), filepath.Join(assets, "etcd"),
		filepath.Join(crds, "k8ssandra.io_k8ssandraclusters.yaml"), filepath.Join(crds, "monitoring.coreos.com_prometheusrules.yaml")} {
		if _, err := os.Stat(f); err != nil {
			ok = false
		}
	}
	testenv.Need(t, ok, fmt.Sprintf("envtest assets in %s and third-party CRDs in %s (hack/envtest.sh, `make envtest-assets`)", assets, crds))
	return assets, crds
}

var apiServer struct {
	once sync.Once
	env  *envtest.Environment
	c    client.Client
	err  error
}

// apiClient starts (once) a kube-apiserver with the AAACluster CRD and the third-party CRDs.
func apiClient(t *testing.T) client.Client {
	t.Helper()
	assets, crds := envtestDirs(t)
	apiServer.once.Do(func() {
		env := &envtest.Environment{
			BinaryAssetsDirectory: assets,
			CRDDirectoryPaths:     []string{filepath.Join(repoRoot(), "config", "crd", "bases"), crds},
			ErrorIfCRDPathMissing: true,
			// generous: the machine may be shared with other builds (2 cores)
			CRDInstallOptions:        envtest.CRDInstallOptions{MaxTime: 2 * time.Minute},
			ControlPlaneStartTimeout: 2 * time.Minute,
			ControlPlaneStopTimeout:  time.Minute,
		}
		cfg, err := env.Start()
		if err != nil {
			// Start leaves the control plane running when installing the CRDs fails
			_ = env.Stop()
			apiServer.err = err
			return
		}
		apiServer.env = env
		scheme := runtime.NewScheme()
		_ = clientgoscheme.AddToScheme(scheme)
		apiServer.c, apiServer.err = client.New(cfg, client.Options{Scheme: scheme})
	})
	if apiServer.err != nil {
		t.Fatalf("envtest: %v", apiServer.err)
	}
	return apiServer.c
}

func TestMain(m *testing.M) {
	code := m.Run()
	if apiServer.env != nil {
		_ = apiServer.env.Stop()
	}
	os.Exit(code)
}

func ensureNamespace(t *testing.T, c client.Client, name string) {
	t.Helper()
	err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// TestServerSideDryRun applies every object each chart renders, with default and full
// values, to a real API server (server-side apply, dry-run): the API server's and the CRDs'
// schemas and CEL rules validate them.
func TestServerSideDryRun(t *testing.T) {
	c := apiClient(t)
	for _, ns := range []string{"openaaa-system", "aaa", "monitoring"} {
		ensureNamespace(t, c, ns)
	}
	for _, r := range renders {
		t.Run(r.name, func(t *testing.T) {
			objs := objects(t, r.template(t))
			kinds := map[string]int{}
			for _, o := range objs {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o),
					client.FieldOwner("openaaa-chart-test"), client.ForceOwnership, client.DryRunAll)
				cancel()
				if err != nil {
					t.Errorf("%s %s/%s rejected: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
				}
				kinds[o.GetKind()]++
			}
			t.Logf("%d objects accepted: %v", len(objs), kinds)
		})
	}
}

// TestServerRejectsInvalidAAACluster shows that the dry-run validates for real: values the
// CRD's CEL rules forbid are rejected, with the field named.
func TestServerRejectsInvalidAAACluster(t *testing.T) {
	c := apiClient(t)
	ensureNamespace(t, c, "aaa")
	cases := map[string][]string{
		"replicationFactor must not exceed size":                   {"--set", "datacenters[0].name=dc1", "--set", "datacenters[0].cassandra.size=3", "--set", "datacenters[0].cassandra.replicationFactor=5"},
		"maxReplicas must be greater than or equal to minReplicas": {"--set", "datacenters[0].name=dc1", "--set", "datacenters[0].autoscaling.minReplicas=5", "--set", "datacenters[0].autoscaling.maxReplicas=2"},
		"spec.diameter.realm is required when enabled":             {"--set", "diameter.enabled=true", "--set", "diameter.peers[0].realm=epc.example.net"},
	}
	for want, args := range cases {
		objs := objects(t, renders[2].template(t, args...))
		var applied bool
		for _, o := range objs {
			if o.GetKind() != "AAACluster" {
				continue
			}
			applied = true
			err := c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(o),
				client.FieldOwner("openaaa-chart-test"), client.ForceOwnership, client.DryRunAll)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%v: err = %v, want one saying %q", args, err, want)
			}
		}
		if !applied {
			t.Errorf("%v: no AAACluster rendered", args)
		}
	}
}

// TestClusterDemoSamplesDryRun: what `make cluster-demo` and docs/kubernetes.md apply —
// the aaacluster chart with config/samples/cluster-demo-values.yaml, the objects beside it
// (config/samples/cluster-demo-objects.yaml) and the AAALoadTest
// (config/samples/cluster-demo-loadtest.yaml) — passes the API server's and the CRDs'
// validation (server-side apply, dry-run).
func TestClusterDemoSamplesDryRun(t *testing.T) {
	c := apiClient(t)
	ensureNamespace(t, c, "aaa")
	r := render{"cluster-demo", "aaacluster", "edge", "aaa", []string{"-f", "config/samples/cluster-demo-values.yaml"}}
	manifest := r.template(t)
	for _, f := range []string{"cluster-demo-objects.yaml", "cluster-demo-loadtest.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", f))
		if err != nil {
			t.Fatal(err)
		}
		manifest += "\n---\n" + string(b)
	}
	kinds := map[string]int{}
	for _, o := range objects(t, manifest) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o),
			client.FieldOwner("openaaa-chart-test"), client.ForceOwnership, client.DryRunAll)
		cancel()
		if err != nil {
			t.Errorf("%s %s/%s rejected: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
		kinds[o.GetKind()]++
	}
	for _, k := range []string{"AAACluster", "AAALoadTest", "Secret", "ConfigMap", "Namespace"} {
		if kinds[k] == 0 {
			t.Errorf("no %s among the cluster demo's objects: %v", k, kinds)
		}
	}
	t.Logf("accepted: %v", kinds)
}
