// Package cassandraimage inspects the Cassandra test images hack/cassandra-image.sh builds
// (issue 31): umoci unpacks each archive; the runtime config has the entrypoint, args and
// user cass-operator relies on; the server image holds java, sh, cp, curl, Cassandra's jars
// and our base config, with /var/lib/cassandra, /var/log/cassandra and /config owned by 999;
// and the init containers' flow (cp the base config, `config build`) runs on what is inside.
//
// The archives are in $CASSANDRA_IMAGE_DIR (default ~/.cache/openaaa/cassandra-image). The
// tests skip without them unless CASSANDRA_IMAGE_REQUIRE or OPENAAA_INTEGRATION=require (make test), or CASSANDRA_IMAGE_REQUIRE
// is set (make test-cassandra-image).
package cassandraimage

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/openaaa/openaaa/internal/testenv"
)

const tag = "5.0.9"

func imageDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("CASSANDRA_IMAGE_DIR")
	if dir == "" {
		home, _ := os.UserHomeDir()
		cache := os.Getenv("CACHE")
		if cache == "" {
			cache = filepath.Join(home, ".cache", "openaaa")
		}
		dir = filepath.Join(cache, "cassandra-image")
	}
	if _, err := os.Stat(filepath.Join(dir, "cassandra-mgmt.oci.tar")); err != nil {
		// make test builds them in the add-ons' lane, before this package (ADDONS_TESTS).
		if os.Getenv("CASSANDRA_IMAGE_REQUIRE") != "" || os.Getenv("OPENAAA_INTEGRATION") == "require" {
			t.Fatalf("the Cassandra test images are required but missing in %s: make cassandra-image", dir)
		}
		t.Skipf("no Cassandra test images in %s (make cassandra-image)", dir)
	}
	return dir
}

// unpacked caches the bundles by archive: the server image (~20 s to unpack) serves both tests.
var (
	unpackMu sync.Mutex
	unpacked = map[string][2]string{}
	workRoot string
)

func TestMain(m *testing.M) {
	var err error
	workRoot, err = os.MkdirTemp("", "cassandraimage-")
	if err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(workRoot)
	os.Exit(code)
}

// unpack extracts an OCI archive and unpacks its image with umoci into a bundle; it returns the
// layout and bundle directories.
func unpack(t *testing.T, archive string) (string, string) {
	t.Helper()
	unpackMu.Lock()
	defer unpackMu.Unlock()
	if d, ok := unpacked[archive]; ok {
		return d[0], d[1]
	}
	umoci := testenv.LookPath(t, "umoci", "Debian package umoci; `make umoci`")
	work, err := os.MkdirTemp(workRoot, filepath.Base(archive))
	if err != nil {
		t.Fatal(err)
	}
	layout := filepath.Join(work, "layout")
	if err := os.MkdirAll(layout, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("tar", "-xf", archive, "-C", layout).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	var index struct {
		Manifests []struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"manifests"`
	}
	b, err := os.ReadFile(filepath.Join(layout, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index.json: %v %s", err, b)
	}
	// ctr images import --base-name REPO names the image REPO:<this annotation>.
	if got := index.Manifests[0].Annotations["org.opencontainers.image.ref.name"]; got != tag {
		t.Fatalf("ref.name %q, want %q", got, tag)
	}
	bundle := filepath.Join(work, "bundle")
	if out, err := exec.Command(umoci, "unpack", "--rootless", "--image", layout+":"+tag, bundle).CombinedOutput(); err != nil {
		t.Fatalf("umoci unpack: %v\n%s", err, out)
	}
	unpacked[archive] = [2]string{layout, bundle}
	return layout, bundle
}

type runtimeSpec struct {
	Process struct {
		User struct {
			UID int `json:"uid"`
			GID int `json:"gid"`
		} `json:"user"`
		Args []string `json:"args"`
	} `json:"process"`
}

func spec(t *testing.T, bundle string) runtimeSpec {
	t.Helper()
	var s runtimeSpec
	b, err := os.ReadFile(filepath.Join(bundle, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// resolve follows symlinks inside rootfs (Debian's java is /usr/bin/java →
// /etc/alternatives/java → /usr/lib/jvm/...; /bin is /usr/bin).
func resolve(rootfs, p string) (string, error) {
	for range 16 {
		full := filepath.Join(rootfs, p)
		// Resolve the directories first (merged /usr: /bin → usr/bin).
		dir, base := filepath.Split(p)
		if dir != "/" && dir != "" {
			rd, err := resolve(rootfs, filepath.Clean(dir))
			if err != nil {
				return "", err
			}
			p = filepath.Join(rd, base)
			full = filepath.Join(rootfs, p)
		}
		fi, err := os.Lstat(full)
		if err != nil {
			return "", err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			return p, nil
		}
		target, err := os.Readlink(full)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		p = filepath.Clean(target)
	}
	return "", errors.New("too many symlinks: " + p)
}

func TestServerImage(t *testing.T) {
	dir := imageDir(t)
	layout, bundle := unpack(t, filepath.Join(dir, "cassandra-mgmt.oci.tar"))
	s := spec(t, bundle)
	if !slices.Equal(s.Process.Args, []string{"/usr/local/bin/cassandra-mgmt"}) {
		t.Errorf("args %v: want the binary alone (no args = mgmtapi)", s.Process.Args)
	}
	if s.Process.User.UID != 999 || s.Process.User.GID != 999 {
		t.Errorf("user %d:%d, want 999:999", s.Process.User.UID, s.Process.User.GID)
	}
	rootfs := filepath.Join(bundle, "rootfs")
	for _, p := range []string{"/usr/bin/java", "/bin/sh", "/bin/cp", "/usr/bin/curl", "/usr/bin/pgrep",
		"/usr/local/bin/cassandra-mgmt", "/usr/local/bin/nodetool", "/etc/cassandra/cassandra.yaml", "/etc/cassandra/logback.xml",
		"/etc/cassandra/cassandra-rackdc.properties", "/opt/cassandra/lib/cassandra-all-" + tag + ".jar"} {
		r, err := resolve(rootfs, p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		fi, err := os.Stat(filepath.Join(rootfs, r))
		if err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s → %s: not a regular file (%v)", p, r, err)
		}
	}
	jars, _ := filepath.Glob(filepath.Join(rootfs, "opt/cassandra/lib/*.jar"))
	if len(jars) < 90 {
		t.Errorf("%d jars in /opt/cassandra/lib", len(jars))
	}
	if j, _ := filepath.Glob(filepath.Join(rootfs, "opt/cassandra/lib/jamm-*.jar")); len(j) != 1 {
		t.Errorf("jamm (the -javaagent): %v", j)
	}
	// /etc/passwd knows user 999, and the directories the pod mounts belong to it (from the
	// layers' tar headers: a rootless unpack does not keep owners on disk).
	passwd, _ := os.ReadFile(filepath.Join(rootfs, "etc/passwd"))
	if !strings.Contains(string(passwd), "cassandra:x:999:999:") {
		t.Errorf("/etc/passwd has no cassandra 999")
	}
	owners := layerOwners(t, layout)
	for _, d := range []string{"var/lib/cassandra/", "var/log/cassandra/", "config/"} {
		if o, ok := owners[d]; !ok || o != [2]int{999, 999} {
			t.Errorf("%s owner %v (present %v), want 999:999", d, o, ok)
		}
	}
	if o := owners["usr/local/bin/cassandra-mgmt"]; o != [2]int{0, 0} {
		t.Errorf("cassandra-mgmt owner %v", o)
	}
	if _, err := os.Stat(filepath.Join(rootfs, "usr/share/doc/curl")); err == nil {
		t.Error("/usr/share/doc was not stripped")
	}
	// As root, the image's own tools run (cass-operator's init container is `sh -c cp ...`).
	if os.Getuid() == 0 {
		// (Not java: its launcher needs /proc, which a chroot lacks. The image's nodetool runs
		// on the cluster: TestManagedCassandra's repair.)
		for _, c := range [][]string{{"/bin/sh", "-c", "cp --version >/dev/null && echo ok"}, {"/usr/bin/curl", "--version"}} {
			out, err := exec.Command("chroot", append([]string{rootfs}, c...)...).CombinedOutput()
			if err != nil {
				t.Errorf("chroot %v: %v\n%s", c, err, out)
			}
		}
		if l, err := os.Readlink(filepath.Join(rootfs, "usr/local/bin/nodetool")); err != nil || l != "cassandra-mgmt" {
			t.Errorf("/usr/local/bin/nodetool → %q (%v), want the link to cassandra-mgmt", l, err)
		}
	}
}

// layerOwners reads uid:gid of every entry of the image's layers (the last layer wins).
func layerOwners(t *testing.T, layout string) map[string][2]int {
	t.Helper()
	var index struct {
		Manifests []struct{ Digest string } `json:"manifests"`
	}
	readJSON(t, filepath.Join(layout, "index.json"), &index)
	var manifest struct {
		Layers []struct{ Digest string } `json:"layers"`
	}
	readJSON(t, blob(layout, index.Manifests[0].Digest), &manifest)
	owners := map[string][2]int{}
	for _, l := range manifest.Layers {
		f, err := os.Open(blob(layout, l.Digest))
		if err != nil {
			t.Fatal(err)
		}
		gz, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(gz)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			name := strings.TrimPrefix(h.Name, "./")
			owners[name] = [2]int{h.Uid, h.Gid}
		}
		f.Close()
	}
	return owners
}

func blob(layout, digest string) string {
	return filepath.Join(layout, "blobs", "sha256", strings.TrimPrefix(digest, "sha256:"))
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

// TestHelperImages: the config image's entrypoint takes cass-operator's args `config build`;
// the logger image runs `logger` with no args given; and the init containers' flow works with
// the binary and base config from the images.
func TestHelperImages(t *testing.T) {
	dir := imageDir(t)
	_, cfgBundle := unpack(t, filepath.Join(dir, "cassandra-config.oci.tar"))
	s := spec(t, cfgBundle)
	if !slices.Equal(s.Process.Args, []string{"/usr/local/bin/cassandra-config"}) {
		t.Errorf("config image args %v: want the entrypoint alone, cass-operator appends `config build`", s.Process.Args)
	}
	if s.Process.User.UID == 0 {
		t.Error("config image runs as root")
	}
	_, logBundle := unpack(t, filepath.Join(dir, "cassandra-logger.oci.tar"))
	if s := spec(t, logBundle); !slices.Equal(s.Process.Args, []string{"/usr/local/bin/cassandra-logger", "logger"}) {
		t.Errorf("logger image args %v", s.Process.Args)
	}

	// server-config-init-base copies the server image's /etc/cassandra; server-config-init runs
	// the config image with CONFIG_FILE_DATA.
	_, srvBundle := unpack(t, filepath.Join(dir, "cassandra-mgmt.oci.tar"))
	base, out := t.TempDir(), t.TempDir()
	if b, err := exec.Command("sh", "-c", "cp -rf "+filepath.Join(srvBundle, "rootfs", "etc", "cassandra")+"/* "+base+"/").CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, b)
	}
	cmd := exec.Command(filepath.Join(cfgBundle, "rootfs", "usr", "local", "bin", "cassandra-config"), "config", "build")
	cmd.Env = []string{
		`CONFIG_FILE_DATA={"cluster-info":{"name":"demo","seeds":"demo-seed-service,demo-dc1-additional-seed-service"},"datacenter-info":{"name":"dc1"},"cassandra-yaml":{"authenticator":"PasswordAuthenticator","num_tokens":16}}`,
		"POD_IP=10.244.0.9", "HOST_IP=192.168.0.2", "RACK_NAME=r1", "PRODUCT_VERSION=" + tag, "POD_NAME=demo-dc1-r1-sts-0",
		"USE_HOST_IP_FOR_BROADCAST=false", "CONFIG_BASE_DIR=" + base, "CONFIG_OUT_DIR=" + out,
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("config build: %v\n%s", err, b)
	}
	y, err := os.ReadFile(filepath.Join(out, "cassandra.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"cluster_name: demo", "listen_address: 10.244.0.9", "authenticator: PasswordAuthenticator", "demo-seed-service"} {
		if !strings.Contains(string(y), w) {
			t.Errorf("cassandra.yaml lacks %q", w)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "logback.xml")); err != nil {
		t.Error("logback.xml not carried into /config")
	}
}
