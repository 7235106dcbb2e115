package cluster

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/openaaa/openaaa/test/addons"
	"github.com/openaaa/openaaa/test/cluster/clustertest"
)

// Two lanes share the cluster, because the managed-Cassandra test mostly waits (JVMs boot,
// operators reconcile, a data center decommissions) and so do the others: the cold `make
// test` budget. TestManagedCassandra runs beside the serial lane (TestAAAClusterOnCluster,
// the monitoring and autoscaling test, the RadSec one), which takes turns on laneMu: they
// share the host's Cassandra and the namespace aaa. The serial tests (the docs' blocks, the
// smoke tests) run first, alone, as Go runs parallel tests after every serial one.
//
// Each lane has its own operator, confined to its namespaces (the chart's watchNamespace), so
// that no AAACluster has two. The managed lane's operator does not install the CRDs: ensureCRDs
// creates them once, owned by the openaaa-operator release as Helm adopts them, so that the
// serial lane's and the docs' `helm install openaaa-operator` take them over as if they had made
// them.
var laneMu sync.Mutex

// inSerialLane makes t a parallel test that runs after the serial ones, one at a time with the
// other tests of the serial lane. It first waits for what the test needs (needAddons,
// needArgoCD), so that a test that needs nothing still building runs meanwhile: under make test
// the add-ons and Argo CD are still compiling when the lane starts.
func inSerialLane(t *testing.T, needs ...func(*testing.T)) {
	t.Helper()
	t.Parallel()
	for _, need := range needs {
		need(t)
	}
	laneMu.Lock()
	t.Cleanup(laneMu.Unlock)
}

// needAddons waits until every add-on is built, installed and working (clusterAddons).
func needAddons(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
	defer cancel()
	clusterAddons.Wait(t, ctx)
}

// needArgoCD waits for make test's build of Argo CD.
func needArgoCD(t *testing.T) {
	t.Helper()
	addons.WaitPart(t, addons.PartArgoCD)
}

// parallel is -test.parallel for the package: more than its parallel tests, so that each runs
// as soon as the serial ones end. With fewer slots (the default is GOMAXPROCS, 2 here), the
// serial lane's tests can take them all, waiting on laneMu, and hold the managed test back
// until one of them ends: who gets a slot first is a race.
const parallel = 8

// setParallel sets -test.parallel unless the command line does.
func setParallel() {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", fmt.Sprint(parallel))
	}
}

// ensureCRDs creates the chart's CRDs that do not exist yet, with the label and annotations by
// which `helm install openaaa-operator -n openaaa-system` adopts them.
func ensureCRDs(c *clustertest.Cluster) (stop func()) {
	stop = func() {}
	root, err := clustertest.RepoRoot()
	if err != nil {
		fmt.Fprintf(os.Stderr, "ensureCRDs: %v\n", err)
		return stop
	}
	s := runtime.NewScheme()
	_ = apiextv1.AddToScheme(s)
	cl, err := client.New(c.Config, client.Options{Scheme: s})
	if err != nil {
		fmt.Fprintf(os.Stderr, "ensureCRDs: %v\n", err)
		return stop
	}
	files, _ := filepath.Glob(filepath.Join(root, "charts", "openaaa-operator", "files", "crds", "*.yaml"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintf(os.Stderr, "ensureCRDs: %v\n", err)
			continue
		}
		crd := &apiextv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(b, crd); err != nil {
			fmt.Fprintf(os.Stderr, "ensureCRDs: %s: %v\n", f, err)
			continue
		}
		if crd.Labels == nil {
			crd.Labels = map[string]string{}
		}
		if crd.Annotations == nil {
			crd.Annotations = map[string]string{}
		}
		crd.Labels["app.kubernetes.io/managed-by"] = "Helm"
		crd.Annotations["meta.helm.sh/release-name"] = "openaaa-operator"
		crd.Annotations["meta.helm.sh/release-namespace"] = operatorNS
		crd.Annotations["helm.sh/resource-policy"] = "keep"
		if err := cl.Create(context.Background(), crd); err != nil && !apierrors.IsAlreadyExists(err) {
			fmt.Fprintf(os.Stderr, "ensureCRDs: %s: %v\n", crd.Name, err)
		}
	}
	return stop
}
