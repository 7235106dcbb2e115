package charts

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
// the aaacluster chart with config/samples/cluster-demo-values.yaml (external Cassandra) and
// with config/samples/cluster-demo-managed-values.yaml over it (managed Cassandra, the demo's
// default), the objects beside it (config/samples/cluster-demo-objects.yaml) and the
// AAALoadTest (config/samples/cluster-demo-loadtest.yaml) — passes the API server's and the
// CRDs' validation (server-side apply, dry-run).
func TestClusterDemoSamplesDryRun(t *testing.T) {
	c := apiClient(t)
	ensureNamespace(t, c, "aaa")
	r := render{"cluster-demo", "aaacluster", "edge", "aaa", []string{"-f", "config/samples/cluster-demo-values.yaml"}}
	manifest := r.template(t)
	// The managed overlay trades spec.cassandra.external for spec.cassandra.managed and keeps
	// the rest of dc1; its Cassandra settings are those TestManagedCassandra runs
	// (config/samples/cluster-managed-values.yaml).
	tested := aaaCluster(t, render{"cluster-managed", "aaacluster", "geo", "aaa-managed", []string{"-f", "config/samples/cluster-managed-values.yaml"}}.template(t))
	var managedAAAClusters []*unstructured.Unstructured
	for _, o := range objects(t, r.template(t, "-f", "config/samples/cluster-demo-managed-values.yaml")) {
		if o.GetKind() != "AAACluster" {
			continue
		}
		for _, path := range [][]string{{"spec", "cassandra", "managed"}, {"spec", "datacenters", "0", "cassandra"}} {
			if got, want := field(o, path...), field(tested, path...); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: the managed overlay has %v, config/samples/cluster-managed-values.yaml %v", strings.Join(path, "."), got, want)
			}
		}
		if _, ok, _ := unstructured.NestedMap(o.Object, "spec", "cassandra", "external"); ok {
			t.Errorf("the managed overlay left spec.cassandra.external")
		}
		if soft, _, _ := unstructured.NestedBool(o.Object, "spec", "cassandra", "managed", "softPodAntiAffinity"); !soft {
			t.Errorf("the managed overlay: spec.cassandra.managed.softPodAntiAffinity not true")
		}
		dcs, _, _ := unstructured.NestedSlice(o.Object, "spec", "datacenters")
		if len(dcs) != 1 {
			t.Fatalf("the managed overlay: %d data centers, want dc1 alone", len(dcs))
		}
		dc, _ := dcs[0].(map[string]any)
		if st, _, _ := unstructured.NestedString(dc, "service", "type"); dc["name"] != "dc1" || st != "NodePort" {
			t.Errorf("the managed overlay's dc1 lost its name or its NodePort: %v", dc)
		}
		if size, _, _ := unstructured.NestedFieldNoCopy(dc, "cassandra", "size"); fmt.Sprint(size) != "1" {
			t.Errorf("the managed overlay's dc1: cassandra.size %v, want 1", size)
		}
		managedAAAClusters = append(managedAAAClusters, o)
	}
	for _, f := range []string{"cluster-demo-objects.yaml", "cluster-demo-loadtest.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", f))
		if err != nil {
			t.Fatal(err)
		}
		manifest += "\n---\n" + string(b)
	}
	kinds := map[string]int{}
	for _, o := range append(objects(t, manifest), managedAAAClusters...) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o),
			client.FieldOwner("openaaa-chart-test"), client.ForceOwnership, client.DryRunAll)
		cancel()
		if err != nil {
			t.Errorf("%s %s/%s rejected: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
		kinds[o.GetKind()]++
	}
	for k, n := range map[string]int{"AAACluster": 2, "AAALoadTest": 1, "Secret": 1, "ConfigMap": 1, "Namespace": 1} {
		if kinds[k] < n {
			t.Errorf("fewer than %d %s among the cluster demo's objects: %v", n, k, kinds)
		}
	}
	t.Logf("accepted: %v", kinds)
}

// aaaCluster: the AAACluster of a rendered manifest.
func aaaCluster(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objects(t, manifest) {
		if o.GetKind() == "AAACluster" {
			return o
		}
	}
	t.Fatal("no AAACluster rendered")
	return nil
}

// field: the value at path in o, a number an index into a list; nil when there is none.
func field(o *unstructured.Unstructured, path ...string) any {
	var v any = o.Object
	for _, p := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}
