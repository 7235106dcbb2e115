// Package clustertest starts the local single-node Kubernetes cluster of hack/cluster.sh for
// tests (docs/local-cluster.md) and hands them a client, the addresses and helpers.
//
// One cluster per host: Start takes the machine-wide lock hack/cluster.sh uses
// (/tmp/openaaa-cluster.lock), so test packages that need the cluster run one after another.
// Without root or without `make provision` the tests skip, unless OPENAAA_INTEGRATION=require
// (make test), where they fail. OPENAAA_CLUSTER_KEEP=1 leaves the cluster up after the tests
// for debugging (hack/cluster.sh status | kubectl | down).
package clustertest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openaaa/openaaa/internal/testenv"
)

// Addresses and names fixed by hack/cluster.sh (all in 198.18.0.0/15, RFC 2544).
const (
	NodeName = "openaaa-node"
	// NodeIP is the node's address: API server, kubelet and NodePorts; a server bound to it
	// on the host (e.g. Cassandra) is reachable from pods and from the NAS.
	NodeIP = "198.18.0.1"
	// NASIP is the address of the NAS network namespace NASNetns.
	NASIP    = "198.18.0.2"
	NASNetns = "openaaa-nas"
	PodCIDR  = "198.18.16.0/24"
	// DNSIP is the ClusterIP of kube-dns (CoreDNS, cluster.local only).
	DNSIP          = "198.18.32.10"
	ServiceCIDR    = "198.18.32.0/24"
	NodePortMin    = 31000
	NodePortMax    = 31999
	ImagePrefix    = "ghcr.io/openaaa" // the repositories the chart and the operator use
	DefaultLock    = "/tmp/openaaa-cluster.lock"
	KeepEnv        = "OPENAAA_CLUSTER_KEEP"
	lockWaitEnv    = "OPENAAA_CLUSTER_LOCK_WAIT"
	defaultLockFor = 30 * time.Minute
)

// Cluster is a running cluster.
type Cluster struct {
	Kubeconfig string
	Config     *rest.Config
	Client     client.Client
	Clientset  kubernetes.Interface
	// The addresses (the constants of the same names, for convenience).
	NodeIP, NASIP, NASNetns, DNSIP string
	// Dir is the cluster's state directory (logs in Dir/logs).
	Dir string
	// LockWait is how long Up waited for the machine-wide lock (another cluster's tests);
	// UpTime how long `hack/cluster.sh up` took; NodeReady the part until the node was Ready.
	LockWait, UpTime, NodeReady time.Duration

	root   string
	script string
	lock   *os.File
	before host
}

// RepoRoot returns the repository root (the directory with go.mod above the working directory).
func RepoRoot() (string, error) { return testenv.RepoRoot() }

// Available returns nil when the cluster can be started here: root, and provisioned.
func Available() error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return errors.New("the local cluster needs root (network namespaces, iptables, cgroups)")
	}
	out, err := exec.Command(filepath.Join(root, "hack", "cluster.sh"), "check").CombinedOutput()
	if err != nil {
		return fmt.Errorf("the local cluster is not provisioned (make provision or hack/cluster.sh provision): %s", bytes.TrimSpace(out))
	}
	return nil
}

func lockPath() string {
	if p := os.Getenv("CLUSTER_LOCK"); p != "" {
		return p
	}
	return DefaultLock
}

// Lock takes the machine-wide cluster lock as Up does, waiting up to wait (unless
// OPENAAA_CLUSTER_LOCK_WAIT says otherwise); closing the file releases it. For a test that
// starts and stops the cluster itself with hack/cluster.sh and CLUSTER_LOCK_HELD=1
// (test/cluster/lifecycle runs docs/local-cluster.md's first block so).
func Lock(wait time.Duration) (*os.File, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	return lockCleared(lockWait(wait), filepath.Join(root, "hack", "cluster.sh"))
}

// lockWait is how long to wait for the lock: def, unless OPENAAA_CLUSTER_LOCK_WAIT says.
func lockWait(def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(lockWaitEnv)); err == nil {
		return d
	}
	return def
}

// lockCleared takes the lock, then tears down what a cluster whose owner died left (a killed
// test run): the host state a test takes next must be the host's own. Left to `up`, that
// teardown would come after the test's snapshot and restore the sysctls the orphan found,
// which the snapshot had seen changed by the orphan's kubelet.
func lockCleared(wait time.Duration, script string) (*os.File, error) {
	f, err := takeLockFor(wait)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(script, "down")
	cmd.Env = append(os.Environ(), "CLUSTER_LOCK_HELD=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		f.Close()
		return nil, fmt.Errorf("tearing down a cluster left behind (hack/cluster.sh down): %v\n%s", err, out)
	}
	return f, nil
}

func takeLockFor(wait time.Duration) (*os.File, error) {
	f, err := os.OpenFile(lockPath(), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if errors.Is(err, syscall.EWOULDBLOCK) && manualCluster() {
			f.Close()
			return nil, fmt.Errorf("a cluster started by hand (hack/cluster.sh up) holds %s: make cluster-down", lockPath())
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("lock %s (another cluster is up or starting; waited %s): %w", lockPath(), wait, err)
		}
		time.Sleep(time.Second)
	}
}

// manualCluster reports whether `hack/cluster.sh up` run by hand holds the lock: its holder
// process is alive. Waiting for it would be waiting for a person.
func manualCluster() bool {
	dir := os.Getenv("CLUSTER_DIR")
	if dir == "" {
		dir = "/tmp/openaaa-cluster"
	}
	b, err := os.ReadFile(filepath.Join(dir, "run", "lock-holder.pid"))
	if err != nil {
		return false
	}
	var pid int
	if _, err := fmt.Sscan(string(b), &pid); err != nil || pid <= 0 {
		return false
	}
	return syscall.Kill(pid, 0) == nil
}

func (c *Cluster) run(args ...string) (string, error) {
	return c.runCtx(context.Background(), args...)
}

func (c *Cluster) runCtx(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, c.script, args...)
	// The lock is ours: the script must not take it again, nor leave a holder behind.
	cmd.Env = append(os.Environ(), "CLUSTER_LOCK_HELD=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("hack/cluster.sh %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// Up takes the lock, starts the cluster and connects to it. Stop undoes both.
func Up() (*Cluster, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	return up(root, filepath.Join(root, "hack", "cluster.sh"))
}

func up(root, script string) (*Cluster, error) {
	waitStart := time.Now()
	lock, err := lockCleared(lockWait(defaultLockFor), script)
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		LockWait: time.Since(waitStart),
		NodeIP:   NodeIP, NASIP: NASIP, NASNetns: NASNetns, DNSIP: DNSIP,
		root: root, script: script, lock: lock,
	}
	c.before = readHost()
	start := time.Now()
	out, err := c.run("up")
	if err != nil {
		c.release()
		return nil, err
	}
	c.UpTime = time.Since(start)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	c.Kubeconfig = lines[len(lines)-1]
	c.Dir = filepath.Dir(c.Kubeconfig)
	c.NodeReady = readTimings(filepath.Join(c.Dir, "run", "timings"))
	if err := c.connect(); err != nil {
		_ = c.Stop()
		return nil, err
	}
	return c, nil
}

func readTimings(path string) time.Duration {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	var s int
	for _, f := range strings.Fields(string(b)) {
		if _, err := fmt.Sscanf(f, "node_ready_s=%d", &s); err == nil {
			return time.Duration(s) * time.Second
		}
	}
	return 0
}

func (c *Cluster) connect() error {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 50, 100
	c.Config = cfg
	if c.Clientset, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	c.Client, err = client.New(cfg, client.Options{})
	return err
}

func (c *Cluster) release() {
	if c.lock != nil {
		_ = c.lock.Close()
		c.lock = nil
	}
}

// Stop runs `hack/cluster.sh down` and releases the lock; with OPENAAA_CLUSTER_KEEP=1 it only
// releases the lock and leaves the cluster up (`hack/cluster.sh down` removes it later).
func (c *Cluster) Stop() error {
	defer c.release()
	if os.Getenv(KeepEnv) == "1" {
		fmt.Fprintf(os.Stderr, "clustertest: %s=1: the cluster stays up (KUBECONFIG=%s; hack/cluster.sh down)\n", KeepEnv, c.Kubeconfig)
		return nil
	}
	_, err := c.run("down")
	if err != nil {
		return err
	}
	// Still holding the lock: nobody else's cluster can be there.
	if left := readHost().diff(c.before); left != "" {
		return fmt.Errorf("hack/cluster.sh down left the host changed: %s", left)
	}
	return nil
}

// host is what the cluster changes on the host and must give back.
type host struct {
	sysctls  map[string]string
	leftover []string
}

var hostSysctls = []string{"vm.overcommit_memory", "vm.panic_on_oom", "kernel.panic", "kernel.panic_on_oops",
	"kernel.keys.root_maxkeys", "kernel.keys.root_maxbytes", "net.ipv4.ip_forward", "net.ipv4.conf.all.route_localnet"}

// readHost reads the host's state (a variable: the unit test records when it is read).
var readHost = hostState

func hostState() host {
	h := host{sysctls: map[string]string{}}
	for _, k := range hostSysctls {
		b, _ := os.ReadFile("/proc/sys/" + strings.ReplaceAll(k, ".", "/"))
		h.sysctls[k] = strings.TrimSpace(string(b))
	}
	for _, p := range []string{"/sys/class/net/oaaa-br0", "/sys/class/net/oaaa-nas0", "/run/netns/" + NASNetns,
		"/sys/fs/cgroup/pids/openaaa-cluster", "/sys/fs/cgroup/memory/openaaa-cluster"} {
		if _, err := os.Stat(p); err == nil {
			h.leftover = append(h.leftover, p)
		}
	}
	if out, err := exec.Command("iptables-save").Output(); err == nil && bytes.Contains(out, []byte("KUBE-")) {
		h.leftover = append(h.leftover, "iptables KUBE-* chains")
	}
	if mounts, err := os.ReadFile("/proc/self/mounts"); err == nil && bytes.Contains(mounts, []byte("/openaaa-cluster/")) {
		h.leftover = append(h.leftover, "mounts under the cluster directory")
	}
	return h
}

// HostState is what the cluster changes on the host (sysctls, links, the NAS namespace,
// cgroups, iptables chains, mounts), taken before `hack/cluster.sh up`.
type HostState struct{ h host }

// SnapshotHost returns the host's state now.
func SnapshotHost() HostState { return HostState{readHost()} }

// Changed names what differs on the host now from s ("" when it is as it was).
func (s HostState) Changed() string { return readHost().diff(s.h) }

func (h host) diff(before host) string {
	var d []string
	for _, k := range hostSysctls {
		if h.sysctls[k] != before.sysctls[k] {
			d = append(d, fmt.Sprintf("%s=%s (was %s)", k, h.sysctls[k], before.sysctls[k]))
		}
	}
	d = append(d, h.leftover...)
	return strings.Join(d, ", ")
}

// Start starts a cluster for one test (or skips/fails it through testenv.Need) and stops it
// when the test ends. On failure the components' log tails are in the test output.
func Start(t testing.TB) *Cluster {
	t.Helper()
	if testing.Short() && !testenv.Required() {
		t.Skip("-short: the local cluster's tests skip")
	}
	err := Available()
	testenv.Need(t, err == nil, fmt.Sprint("local Kubernetes cluster: ", err))
	c, err := Up()
	if err != nil {
		t.Fatalf("cluster up: %v", err)
	}
	t.Logf("waited %s for the lock; cluster up in %s (node Ready after %s)",
		c.LockWait.Round(100*time.Millisecond), c.UpTime.Round(100*time.Millisecond), c.NodeReady)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(c.Diagnostics())
		}
		if err := c.Stop(); err != nil {
			t.Errorf("cluster down: %v", err)
		}
	})
	return c
}

// Main runs a package's tests against one cluster it starts and stops (call it from
// TestMain). *cluster stays nil when the tests are to skip; tests call Skip first. Each onUp
// runs once the cluster is up, before the tests (e.g. to start work in the background); the
// function it returns runs after them, before the cluster stops.
func Main(m *testing.M, cluster **Cluster, onUp ...func(*Cluster) (stop func())) int {
	for _, a := range os.Args { // flags are parsed by m.Run, after this
		if (a == "-test.short" || a == "-test.short=true") && !testenv.Required() {
			fmt.Println("clustertest: -short: the local cluster's tests skip")
			return m.Run()
		}
	}
	if err := Available(); err != nil {
		if testenv.Required() {
			fmt.Fprintf(os.Stderr, "FAIL: OPENAAA_INTEGRATION=require: %v\n", err)
			return 1
		}
		fmt.Printf("clustertest: %v: cluster tests skip\n", err)
		return m.Run()
	}
	c, err := Up()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: cluster up: %v\n", err)
		return 1
	}
	fmt.Printf("clustertest: waited %s for the lock; cluster up in %s (node Ready after %s)\n",
		c.LockWait.Round(100*time.Millisecond), c.UpTime.Round(100*time.Millisecond), c.NodeReady)
	*cluster = c
	var stops []func()
	for _, f := range onUp {
		stops = append(stops, f(c))
	}
	testsStart := time.Now()
	code := m.Run()
	fmt.Printf("clustertest: tests took %s\n", time.Since(testsStart).Round(100*time.Millisecond))
	for _, stop := range stops {
		stop()
	}
	if code != 0 {
		fmt.Println(c.Diagnostics())
	}
	downStart := time.Now()
	defer func() {
		fmt.Printf("clustertest: cluster down in %s\n", time.Since(downStart).Round(100*time.Millisecond))
	}()
	if err := c.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "clustertest: cluster down: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Skip skips t when Main started no cluster.
func Skip(t testing.TB, c *Cluster) {
	t.Helper()
	if c == nil {
		t.Skip("local Kubernetes cluster not available (OPENAAA_INTEGRATION=require fails instead)")
	}
}

// Diagnostics returns the pods of every namespace and the tail of each component's log.
func (c *Cluster) Diagnostics() string {
	var b strings.Builder
	if out, err := c.Kubectl(context.Background(), "get", "pods", "-A", "-o", "wide"); err == nil {
		b.WriteString(out)
	}
	logs, _ := filepath.Glob(filepath.Join(c.Dir, "logs", "*.log"))
	for _, l := range logs {
		data, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		if len(lines) > 15 {
			lines = lines[len(lines)-15:]
		}
		fmt.Fprintf(&b, "--- %s (last %d lines)\n%s\n", filepath.Base(l), len(lines), strings.Join(lines, "\n"))
	}
	return b.String()
}

// Kubectl runs the provisioned kubectl against the cluster and returns its output.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) (string, error) {
	return c.runCtx(ctx, append([]string{"kubectl"}, args...)...)
}

// Status returns `hack/cluster.sh status`: each component's PID and RSS, the shims', the
// pods' and the total, then the node and the pods.
func (c *Cluster) Status(ctx context.Context) (string, error) { return c.runCtx(ctx, "status") }

// ImageArchive returns bin/images/<name>.oci.tar (written by `make images`) and the image
// reference it is imported as: ghcr.io/openaaa/<name>:<tag of the archive>.
func (c *Cluster) ImageArchive(name string) (path, ref string, err error) {
	path = filepath.Join(c.root, "bin", "images", name+".oci.tar")
	if _, err := os.Stat(path); err != nil {
		return "", "", fmt.Errorf("%w (make images)", err)
	}
	idx, err := os.ReadFile(filepath.Join(c.root, "bin", "images", name, "index.json"))
	if err != nil {
		return "", "", fmt.Errorf("%w (make images)", err)
	}
	var index struct {
		Manifests []struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(idx, &index); err != nil || len(index.Manifests) == 0 {
		return "", "", fmt.Errorf("bin/images/%s/index.json: no manifest (%v)", name, err)
	}
	tag := index.Manifests[0].Annotations["org.opencontainers.image.ref.name"]
	if tag == "" {
		return "", "", fmt.Errorf("bin/images/%s/index.json: no tag", name)
	}
	return path, ImagePrefix + "/" + name + ":" + tag, nil
}

// Import imports the images `make images` built (by name: policing, openaaa-operator,
// aaa-loadgen...) into the node's containerd and returns their references, in order. Pods
// use them with imagePullPolicy IfNotPresent or Never (there is no registry).
func (c *Cluster) Import(names ...string) ([]string, error) {
	var args, refs []string
	for _, n := range names {
		p, ref, err := c.ImageArchive(n)
		if err != nil {
			return nil, err
		}
		args = append(args, p)
		refs = append(refs, ref)
	}
	out, err := c.run(append([]string{"import"}, args...)...)
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		have[strings.TrimSpace(sc.Text())] = true
	}
	for _, r := range refs {
		if !have[r] {
			return nil, fmt.Errorf("import: %s not in containerd after the import:\n%s", r, out)
		}
	}
	return refs, nil
}

// ImportArchives imports OCI archives into the node's containerd as `hack/cluster.sh import`
// takes them: PATH, or PATH=REPOSITORY for an index that carries only a tag (the add-ons'
// archives: test/addons.ImportArgs).
func (c *Cluster) ImportArchives(args ...string) error {
	_, err := c.run(append([]string{"import"}, args...)...)
	return err
}

// NASExec returns a command that runs name args... inside the NAS network namespace: its
// packets come from NASIP, as an external NAS's would.
func NASExec(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", NASNetns, name}, args...)...)
}
