package controllers

// The envtest harness: a real kube-apiserver and etcd (built by hack/envtest.sh into the
// cache), the AAACluster CRD from config/crd/bases, the third-party CRDs of k8ssandra-operator,
// cert-manager and prometheus-operator, and the operator running in a manager.
//
// Without the assets the envtest tests skip, unless OPENAAA_INTEGRATION=require (make test),
// where they fail and say how to build them.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
)

const envtestK8sVersion = "1.34.4"

var testScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(aaav1.AddToScheme(s))
	return s
}()

func cacheDir() string {
	if d := os.Getenv("CACHE"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "openaaa")
}

// envtestAssets finds kube-apiserver and etcd: KUBEBUILDER_ASSETS, else the cache of
// hack/envtest.sh.
func envtestAssets() (dir string, ok bool) {
	dir = os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		dir = filepath.Join(cacheDir(), "envtest", "k8s-"+envtestK8sVersion, "bin")
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if st, err := os.Stat(filepath.Join(dir, b)); err != nil || st.IsDir() {
			return dir, false
		}
	}
	return dir, true
}

// thirdPartyCRDs finds the CRDs fetched by hack/envtest.sh.
func thirdPartyCRDs() (dir string, ok bool) {
	dir = os.Getenv("OPENAAA_THIRD_PARTY_CRDS")
	if dir == "" {
		dir = filepath.Join(cacheDir(), "envtest", "k8s-"+envtestK8sVersion, "crds")
	}
	_, err := os.Stat(filepath.Join(dir, "k8ssandra.io_k8ssandraclusters.yaml"))
	return dir, err == nil
}

// requireEnvtest skips (or fails under OPENAAA_INTEGRATION=require) when the assets are missing.
func requireEnvtest(t *testing.T, needThirdParty bool) (assets, crds string) {
	t.Helper()
	if testing.Short() && os.Getenv("OPENAAA_INTEGRATION") != "require" {
		t.Skip("envtest: skipped in -short mode")
	}
	assets, ok := envtestAssets()
	crds, okCRDs := thirdPartyCRDs()
	missing := ""
	switch {
	case !ok:
		missing = fmt.Sprintf("kube-apiserver and etcd not found in %s", assets)
	case needThirdParty && !okCRDs:
		missing = fmt.Sprintf("third-party CRDs not found in %s", crds)
	}
	if missing != "" {
		if os.Getenv("OPENAAA_INTEGRATION") == "require" {
			t.Fatalf("envtest: %s; build them with `make provision` (hack/envtest.sh, cached in %s) or set KUBEBUILDER_ASSETS", missing, cacheDir())
		}
		t.Skipf("envtest: %s; run `make provision` or set OPENAAA_INTEGRATION=require to make this a failure", missing)
	}
	return assets, crds
}

// testEnv is one API server with the operator running against it.
type testEnv struct {
	env      *envtest.Environment
	cfg      *rest.Config
	c        client.Client // direct client (no cache) for the test's own reads and writes
	r        *AAAClusterReconciler
	lt       *AAALoadTestReconciler // in the load test env only
	cancel   context.CancelFunc
	done     chan struct{}
	writes   *writeCounter
	recorder *countingRecorder
}

var (
	fullEnvOnce sync.Once
	fullEnv     *testEnv
	fullEnvErr  error
	stopEnvs    []func()
	stopMu      sync.Mutex
)

func TestMain(m *testing.M) {
	logf.SetLogger(zap.New(zap.UseDevMode(false), zap.WriteTo(os.Stderr), zap.Level(zapLevel())))
	code := m.Run()
	stopMu.Lock()
	for _, stop := range stopEnvs {
		stop()
	}
	stopMu.Unlock()
	os.Exit(code)
}

// sharedEnv is the API server with every CRD, shared by the tests (each in its namespace).
func sharedEnv(t *testing.T) *testEnv {
	t.Helper()
	assets, crds := requireEnvtest(t, true)
	fullEnvOnce.Do(func() {
		fullEnv, fullEnvErr = startEnv(assets, []string{filepath.Join("..", "config", "crd", "bases"), crds})
	})
	if fullEnvErr != nil {
		t.Fatalf("envtest: %v", fullEnvErr)
	}
	return fullEnv
}

// startEnv starts an API server with the CRDs of dirs and the AAACluster controller.
func startEnv(assets string, crdDirs []string) (*testEnv, error) {
	return startEnvWith(assets, crdDirs, func(mgr ctrl.Manager, te *testEnv) error {
		te.r = &AAAClusterReconciler{
			Client:    interceptor.NewClient(noWatch{mgr.GetClient()}, te.writes.funcs()),
			APIReader: mgr.GetAPIReader(),
			Scheme:    mgr.GetScheme(),
			Recorder:  te.recorder,
			Options:   Options{PolicingImage: "registry.test/openaaa/policing", Version: "v9.9.9"},
		}
		return te.r.SetupWithManager(mgr)
	})
}

// startEnvWith starts an API server with the CRDs of dirs and the controllers setup registers.
func startEnvWith(assets string, crdDirs []string, setup func(ctrl.Manager, *testEnv) error) (*testEnv, error) {
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     crdDirs,
		ErrorIfCRDPathMissing: true,
		// envtest waits 10 s for the CRDs by default: on a machine busy with the other
		// lanes the API server took longer (as test/charts allows too).
		CRDInstallOptions: envtest.CRDInstallOptions{MaxTime: 2 * time.Minute},
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("start kube-apiserver and etcd: %w", err)
	}
	stop := func() { _ = env.Stop() }
	te := &testEnv{env: env, cfg: cfg, writes: &writeCounter{}, done: make(chan struct{})}
	te.c, err = client.New(cfg, client.Options{Scheme: testScheme})
	if err != nil {
		stop()
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 testScheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
		Client:                 client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		Cache:                  cache.Options{ByObject: CacheByObject()}, // as main.go
	})
	if err != nil {
		stop()
		return nil, err
	}
	te.recorder = &countingRecorder{inner: mgr.GetEventRecorderFor("openaaa-operator")}
	if err := setup(mgr, te); err != nil {
		stop()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	te.cancel = cancel
	go func() {
		defer close(te.done)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "manager: %v\n", err)
		}
	}()
	stopMu.Lock()
	stopEnvs = append(stopEnvs, func() {
		cancel()
		select {
		case <-te.done:
		case <-time.After(30 * time.Second):
		}
		stop()
	})
	stopMu.Unlock()
	return te, nil
}

// zapLevel: errors only, everything with OPENAAA_TEST_VERBOSE=1.
func zapLevel() zapcore.Level {
	if os.Getenv("OPENAAA_TEST_VERBOSE") != "" {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel
}

// writeCounter counts the writes of the reconciler per namespace, and fails the calls that
// a test's failure function (setFail) answers with an error.
type writeCounter struct {
	mu     sync.Mutex
	counts map[string]int
	log    map[string][]string
	fail   func(verb string, o client.Object) error
}

// setFail makes the reconciler's calls answer fail's error (nil: go through); nil removes it.
func (w *writeCounter) setFail(fail func(verb string, o client.Object) error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fail = fail
}

func (w *writeCounter) injected(verb string, o client.Object) error {
	w.mu.Lock()
	fail := w.fail
	w.mu.Unlock()
	if fail == nil {
		return nil
	}
	return fail(verb, o)
}

func (w *writeCounter) add(ns, what string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.counts == nil {
		w.counts, w.log = map[string]int{}, map[string][]string{}
	}
	w.counts[ns]++
	w.log[ns] = append(w.log[ns], what)
}

func (w *writeCounter) get(ns string) (int, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.counts[ns], append([]string(nil), w.log[ns]...)
}

func (w *writeCounter) funcs() interceptor.Funcs {
	name := func(verb string, o client.Object) string {
		return fmt.Sprintf("%s %T %s", verb, o, o.GetName())
	}
	return interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, o client.Object, opts ...client.GetOption) error {
			o.SetNamespace(key.Namespace)
			o.SetName(key.Name)
			if err := w.injected("get", o); err != nil {
				return err
			}
			return c.Get(ctx, key, o, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			if err := w.injected("create", o); err != nil {
				return err
			}
			w.add(o.GetNamespace(), name("create", o))
			return c.Create(ctx, o, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
			w.add(o.GetNamespace(), name("update", o))
			return c.Update(ctx, o, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			w.add(o.GetNamespace(), name("patch", o))
			return c.Patch(ctx, o, p, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteOption) error {
			w.add(o.GetNamespace(), name("delete", o))
			return c.Delete(ctx, o, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, o client.Object, opts ...client.SubResourceUpdateOption) error {
			w.add(o.GetNamespace(), name("update/"+sub, o))
			return c.SubResource(sub).Update(ctx, o, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			w.add(o.GetNamespace(), name("patch/"+sub, o))
			return c.SubResource(sub).Patch(ctx, o, p, opts...)
		},
	}
}

// countingRecorder forwards events and remembers their reasons per namespace.
type countingRecorder struct {
	inner record.EventRecorder
	mu    sync.Mutex
	seen  map[string][]string // namespace -> "Type Reason"
	total atomic.Int64
}

func (r *countingRecorder) note(obj runtime.Object, eventType, reason string) {
	ns := ""
	if m, ok := obj.(metav1.Object); ok {
		ns = m.GetNamespace()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen = map[string][]string{}
	}
	r.seen[ns] = append(r.seen[ns], eventType+" "+reason)
	r.total.Add(1)
}

func (r *countingRecorder) Event(obj runtime.Object, eventType, reason, message string) {
	r.note(obj, eventType, reason)
	r.inner.Event(obj, eventType, reason, message)
}

func (r *countingRecorder) Eventf(obj runtime.Object, eventType, reason, format string, args ...any) {
	r.note(obj, eventType, reason)
	r.inner.Eventf(obj, eventType, reason, format, args...)
}

func (r *countingRecorder) AnnotatedEventf(obj runtime.Object, ann map[string]string, eventType, reason, format string, args ...any) {
	r.note(obj, eventType, reason)
	r.inner.AnnotatedEventf(obj, ann, eventType, reason, format, args...)
}

func (r *countingRecorder) events(ns string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen[ns]...)
}

func (r *countingRecorder) has(ns, typeAndReason string) bool {
	for _, e := range r.events(ns) {
		if e == typeAndReason {
			return true
		}
	}
	return false
}

// newNamespace creates a namespace for one test.
func (te *testEnv) newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := te.c.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return ns.Name
}

// eventually polls cond every 100ms until it returns nil or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for {
		if err = cond(); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %v", timeout, what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// consistently checks cond for d: it must hold every time.
func consistently(t *testing.T, d time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if err := cond(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func joinErr(parts []string) error {
	if len(parts) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(parts, "; "))
}

// noWatch lets the interceptor wrap the manager's client, which does not watch.
type noWatch struct{ client.Client }

func (noWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, fmt.Errorf("watch not supported")
}
