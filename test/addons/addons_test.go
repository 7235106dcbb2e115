package addons

import (
	"archive/tar"
	"context"
	"debug/elf"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/openaaa/openaaa/internal/testenv"
)

// What each binary prints for its version or help, and the argument that makes it print it.
var smoke = map[string]struct {
	arg  string
	want func(env map[string]string) string
}{
	"prometheus-operator":        {"--version", func(e map[string]string) string { return strings.TrimPrefix(e["PROMETHEUS_OPERATOR_VERSION"], "v") }},
	"prometheus-config-reloader": {"--version", func(e map[string]string) string { return strings.TrimPrefix(e["PROMETHEUS_OPERATOR_VERSION"], "v") }},
	"prometheus": {"--version", func(e map[string]string) string {
		return "prometheus, version " + strings.TrimPrefix(e["PROMETHEUS_VERSION"], "v")
	}},
	"metrics-server": {"--version", func(e map[string]string) string { return e["METRICS_SERVER_VERSION"] }},
	"cert-manager-controller": {"--version", func(e map[string]string) string {
		return "cert-manager-controller " + e["CERT_MANAGER_VERSION"]
	}},
	"cert-manager-webhook": {"--version", func(e map[string]string) string {
		return "cert-manager-webhook " + e["CERT_MANAGER_VERSION"]
	}},
	"cert-manager-cainjector": {"--version", func(e map[string]string) string {
		return "cert-manager-cainjector " + e["CERT_MANAGER_VERSION"]
	}},
	// Neither operator has a version flag: its usage, which names a flag of its own.
	"cass-operator":      {"--help", func(map[string]string) string { return "-webhook-cert-path" }},
	"k8ssandra-operator": {"--help", func(map[string]string) string { return "-health-probe-bind-address" }},
}

// TestBinariesStart: every add-on binary is static (no ELF interpreter: it runs in a
// distroless image) and starts, printing its version or help.
func TestBinariesStart(t *testing.T) {
	NeedBuilt(t)
	env, err := Env()
	if err != nil {
		t.Fatal(err)
	}
	imgs := Images(t)
	if len(imgs) != len(smoke) {
		t.Fatalf("hack/addons.sh lists %d binaries, the test knows %d", len(imgs), len(smoke))
	}
	for _, img := range imgs {
		t.Run(img.Name, func(t *testing.T) {
			s, ok := smoke[img.Name]
			if !ok {
				t.Fatalf("no smoke check for %s", img.Name)
			}
			bin := filepath.Join(CacheDir(), "bin", img.Name)
			f, err := elf.Open(bin)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP {
					t.Errorf("%s is dynamically linked", bin)
				}
			}
			f.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, bin, s.arg).CombinedOutput()
			if err != nil {
				t.Fatalf("%s %s: %v\n%s", img.Name, s.arg, err, out)
			}
			if want := s.want(env); !strings.Contains(string(out), want) {
				t.Errorf("%s %s: output lacks %q:\n%.600s", img.Name, s.arg, want, out)
			}
		})
	}
}

// TestImages: each OCI archive carries the tag the manifests use, runs as non-root, and puts
// the binary where its entrypoint says (prometheus-operator calls the reloader by path).
func TestImages(t *testing.T) {
	NeedBuilt(t)
	for _, img := range Images(t) {
		t.Run(img.Name, func(t *testing.T) {
			files := readTar(t, img.Archive)
			var index struct {
				Manifests []struct {
					Digest      string
					Annotations map[string]string
				}
			}
			mustJSON(t, files["index.json"], &index)
			if len(index.Manifests) != 1 {
				t.Fatalf("index has %d manifests", len(index.Manifests))
			}
			tag := img.Ref[strings.LastIndex(img.Ref, ":")+1:]
			if got := index.Manifests[0].Annotations["org.opencontainers.image.ref.name"]; got != tag {
				t.Errorf("ref.name %q, want %q (from %s)", got, tag, img.Ref)
			}
			var manifest struct {
				Config struct{ Digest string }
				Layers []struct{ Digest string }
			}
			mustJSON(t, files[blobPath(index.Manifests[0].Digest)], &manifest)
			var cfg struct {
				Config struct {
					User       string
					Entrypoint []string
				}
			}
			mustJSON(t, files[blobPath(manifest.Config.Digest)], &cfg)
			if cfg.Config.User == "" || strings.HasPrefix(cfg.Config.User, "0") {
				t.Errorf("image runs as %q, want non-root", cfg.Config.User)
			}
			if len(cfg.Config.Entrypoint) != 1 || filepath.Base(cfg.Config.Entrypoint[0]) != img.Name {
				t.Errorf("entrypoint %v", cfg.Config.Entrypoint)
			}
			if img.Name == "prometheus-config-reloader" && cfg.Config.Entrypoint[0] != "/bin/prometheus-config-reloader" {
				t.Errorf("reloader at %s: prometheus-operator runs /bin/prometheus-config-reloader", cfg.Config.Entrypoint[0])
			}
		})
	}
}

func blobPath(digest string) string { return "blobs/sha256/" + strings.TrimPrefix(digest, "sha256:") }

func readTar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		// layers are big; only the small JSON files are read
		if h.Typeflag == tar.TypeReg && h.Size < 1<<20 {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			out[h.Name] = b
		}
	}
}

func mustJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if len(b) == 0 {
		t.Fatal("missing file in the OCI archive")
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

// rendered returns the objects `hack/addons.sh render` prints: exactly what install applies.
func rendered(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	out, err := Script(context.Background(), "render")
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`@[A-Z_]+@`).FindString(out); m != "" {
		t.Fatalf("placeholder %s left after render: add it to hack/addons/images.env", m)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if err == io.EOF {
				return objs
			}
			t.Fatalf("decoding the rendered manifests: %v", err)
		}
		if len(m) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

// TestManifestsLocalOnly: every container runs one of our images, never pulled; nothing
// points outside the machine (no remote write, no Alertmanager, no registry).
func TestManifestsLocalOnly(t *testing.T) {
	env, err := Env()
	if err != nil {
		t.Fatal(err)
	}
	ours := map[string]bool{}
	for k, v := range env {
		if strings.HasPrefix(k, "IMAGE_") {
			ours[v] = true
		}
	}
	objs := rendered(t)
	for _, o := range objs {
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			c := c.(map[string]any)
			if !ours[c["image"].(string)] || c["imagePullPolicy"] != "Never" {
				t.Errorf("%s %s: container %v runs %v (pull %v), want one of images.env, imagePullPolicy Never", o.GetKind(), o.GetName(), c["name"], c["image"], c["imagePullPolicy"])
			}
		}
		if o.GetKind() == "Prometheus" {
			spec, _, _ := unstructured.NestedMap(o.Object, "spec")
			for _, k := range []string{"remoteWrite", "alerting", "additionalAlertManagerConfigs", "storage"} {
				if _, ok := spec[k]; ok {
					t.Errorf("Prometheus sets %s: data must stay in the cluster, in an emptyDir", k)
				}
			}
			if !ours[spec["image"].(string)] || spec["imagePullPolicy"] != "Never" {
				t.Errorf("Prometheus image %v (pull %v)", spec["image"], spec["imagePullPolicy"])
			}
		}
	}
	out, _ := Script(context.Background(), "render")
	// ghcr.io/openaaa/ is hack/cluster.sh import's prefix: the k8ssandra operators' images
	// and the Cassandra images of cass-operator's ImageConfig are imported under it, never
	// pulled (no registry is reachable); any other name on ghcr.io would be a pull.
	out = strings.ReplaceAll(out, "ghcr.io/openaaa/", "")
	out = regexp.MustCompile(`(?m)^(\s+)registry: ghcr\.io\n(\s+)repository: openaaa$`).ReplaceAllString(out, "")
	for _, host := range []string{"quay.io/", "gcr.io/", "docker.io/", "registry.k8s.io/", "ghcr.io"} {
		if strings.Contains(out, host) {
			t.Errorf("rendered manifests name %s", host)
		}
	}
}

// TestManifestsServerSideDryRun applies every rendered object to a real kube-apiserver with
// the CRDs install applies (server-side apply, dry-run): the API server's schemas, the CRDs'
// schemas and their CEL rules validate them. The namespaces are created for real first.
func TestManifestsServerSideDryRun(t *testing.T) {
	c := apiClient(t)
	objs := rendered(t)
	kinds := map[string]int{}
	for _, o := range objs {
		if o.GetKind() != "Namespace" {
			continue
		}
		err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.GetName()}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	for _, o := range objs {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o),
			client.FieldOwner("openaaa-addons"), client.ForceOwnership, client.DryRunAll)
		cancel()
		if err != nil {
			t.Errorf("%s %s/%s rejected: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
		kinds[o.GetKind()]++
	}
	t.Logf("%d objects accepted: %v", len(objs), kinds)
	for _, want := range []string{"Deployment", "APIService", "Prometheus", "ServiceMonitor", "PrometheusRule", "ClusterIssuer", "Certificate"} {
		if kinds[want] == 0 {
			t.Errorf("no %s in the manifests", want)
		}
	}
}

var apiServer struct {
	env *envtest.Environment
	c   client.Client
}

// apiClient starts a kube-apiserver (envtest assets, hack/envtest.sh) with the CRDs
// `hack/addons.sh crds` lists: the third-party CRDs envtest has and the add-ons' own.
func apiClient(t *testing.T) client.Client {
	t.Helper()
	if apiServer.c != nil {
		return apiServer.c
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(filepath.Dir(CacheDir()), "envtest", "k8s-1.34.4", "bin")
	}
	_, errAPI := os.Stat(filepath.Join(assets, "kube-apiserver"))
	_, errCRDs := os.Stat(filepath.Join(CacheDir(), "crds", ".stamp"))
	testenv.Need(t, errAPI == nil && errCRDs == nil, "envtest assets in "+assets+" and the add-on CRDs (`make addons`)")
	out, err := Script(context.Background(), "crds")
	if err != nil {
		t.Fatal(err)
	}
	paths := strings.Fields(out)
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDInstallOptions: envtest.CRDInstallOptions{
			Paths:   paths,
			MaxTime: 2 * time.Minute, // the machine may be shared with other builds (2 cores)
		},
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop() // Start leaves the control plane running when installing the CRDs fails
		t.Fatalf("envtest: %v", err)
	}
	apiServer.env = env
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	apiServer.c = c
	t.Logf("envtest with %d CRDs", len(paths))
	return c
}

func TestMain(m *testing.M) {
	code := m.Run()
	if apiServer.env != nil {
		_ = apiServer.env.Stop()
	}
	os.Exit(code)
}

// TestDryRunCatchesUnknownFields shows the dry-run is strict: a misspelt field in a custom
// resource is rejected, not silently pruned.
func TestDryRunCatchesUnknownFields(t *testing.T) {
	c := apiClient(t)
	for _, o := range rendered(t) {
		if o.GetKind() != "Prometheus" {
			continue
		}
		o = o.DeepCopy()
		if err := unstructured.SetNestedField(o.Object, "10s", "spec", "scrapeIntervall"); err != nil {
			t.Fatal(err)
		}
		err := c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(o),
			client.FieldOwner("openaaa-addons"), client.ForceOwnership, client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), "scrapeIntervall") {
			t.Errorf("a Prometheus with spec.scrapeIntervall: %v, want rejected naming the field", err)
		}
		return
	}
	t.Fatal("no Prometheus in the manifests")
}

// TestInstallOnCluster installs the add-ons on the running cluster named by
// OPENAAA_ADDONS_KUBECONFIG (images already imported: hack/addons.sh import hack/cluster.sh
// import) and checks they work. Skipped without it: the cluster tests (test/cluster) start
// their own cluster and call Install themselves.
func TestInstallOnCluster(t *testing.T) {
	kcfg := os.Getenv("OPENAAA_ADDONS_KUBECONFIG")
	if kcfg == "" {
		t.Skip("OPENAAA_ADDONS_KUBECONFIG not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	Install(t, ctx, kcfg)
	t.Logf("add-ons installed and verified in %s", time.Since(start).Round(time.Second))
}
