// Package cassandratest starts real Cassandra nodes for tests through hack/cassandra.sh.
//
// Integration tests call Main from TestMain. Without Java 17 or the Cassandra jars (make
// provision) the tests skip, unless OPENAAA_INTEGRATION=require, where they fail. A file
// lock serialises the test packages that need Cassandra on loopback (2 cores, fixed ports: one
// such cluster at a time). Nodes on other addresses (CASSANDRA_ADDRESSES: the local Kubernetes
// node's address, test/cluster) take a lock and JMX ports of their own, so the cluster tests'
// node, held for their whole package, does not keep the loopback tests waiting.
package cassandratest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openaaa/openaaa/internal/testenv"
)

// Ports used by test clusters (not the defaults, so a dev node on 9042 does not clash).
const (
	CQLPort     = 19042
	StoragePort = 17000
	JMXPort     = 17199
)

// Cluster is a running test cluster: node i listens on 127.0.0.i (127.0.<subnet>.i with
// StartOn), alone in DC dci.
type Cluster struct {
	Dir    string
	Nodes  int
	script string
	lock   *os.File
	addrs  string // CASSANDRA_ADDRESSES at Start ("" for 127.0.0.i)
	jmx    int
}

// lockAndJMX: the lock file and JMX base port of a cluster on addrs (CASSANDRA_ADDRESSES).
// JMX listens on 127.0.0.1 whatever the node's address, so a second cluster needs other ports.
func lockAndJMX(addrs string) (string, int) {
	if addrs == "" {
		return filepath.Join(os.TempDir(), "openaaa-cassandra-test.lock"), JMXPort
	}
	name := strings.NewReplacer(" ", "_", ":", "_", "/", "_").Replace(strings.TrimSpace(addrs))
	return filepath.Join(os.TempDir(), "openaaa-cassandra-test-"+name+".lock"), JMXPort + 1000
}

// subnetAddrs: n nodes on 127.0.<subnet>.1 .. 127.0.<subnet>.n.
func subnetAddrs(subnet, n int) string {
	a := make([]string, n)
	for i := range a {
		a[i] = fmt.Sprintf("127.0.%d.%d", subnet, i+1)
	}
	return strings.Join(a, " ")
}

// Required reports whether OPENAAA_INTEGRATION=require.
func Required() bool { return os.Getenv("OPENAAA_INTEGRATION") == "require" }

// Script returns the path of hack/cassandra.sh.
func Script() (string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "hack", "cassandra.sh"), nil
}

// Available returns nil when Java 17+ and the jars are there.
func Available() error {
	s, err := Script()
	if err != nil {
		return err
	}
	if out, err := exec.Command(s, "check").CombinedOutput(); err != nil {
		return fmt.Errorf("cassandra is not provisioned (Java 17 and the jars: run `make provision` or `hack/cassandra.sh fetch`): %v %s", err, out)
	}
	return nil
}

// TestJVMOpts are the nodes' extra JVM flags under test (CASSANDRA_JVM_OPTS, unless set):
// the client JIT only and one processor's worth of GC, compiler and pool threads. A test's
// node lives minutes at a few hundred requests per second, where the server JIT's compiling
// and G1's threads cost more CPU than its faster code saves; several nodes share two cores
// with the rest of make test (issue 12's budget). And no flush of the schema tables on each
// schema change (Cassandra's own tests skip it too): the tests create a keyspace each, and
// a migration took 2.3 times as long and 2.4 times the node's CPU with it (6 migrations of a
// fresh keyspace, 2026-11-29). `hack/cassandra.sh kill` flushes the schema before the SIGKILL,
// so that a killed node keeps its tables as a production node would. Benchmarks keep
// Cassandra's own flags.
const TestJVMOpts = "-XX:TieredStopAtLevel=1 -XX:ActiveProcessorCount=1 -Dcassandra.test.flush_local_schema_changes=false"

func (c *Cluster) env() []string {
	env := os.Environ()
	if os.Getenv("CASSANDRA_JVM_OPTS") == "" {
		env = append(env, "CASSANDRA_JVM_OPTS="+TestJVMOpts)
	}
	return append(env,
		"CASSANDRA_DIR="+c.Dir,
		"CASSANDRA_CQL_PORT="+strconv.Itoa(CQLPort),
		"CASSANDRA_STORAGE_PORT="+strconv.Itoa(StoragePort),
		"CASSANDRA_JMX_PORT="+strconv.Itoa(c.jmx),
		"CASSANDRA_ADDRESSES="+c.addrs,
		// Acknowledged means on disk: the fault tests SIGKILL nodes.
		"CASSANDRA_COMMITLOG_SYNC=group",
	)
}

func (c *Cluster) run(args ...string) error { return c.runEnv(nil, args...) }

// runEnv runs hack/cassandra.sh with extra environment.
func (c *Cluster) runEnv(extra []string, args ...string) error {
	cmd := exec.Command(c.script, args...)
	cmd.Env = append(c.env(), extra...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hack/cassandra.sh %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return nil
}

// Start takes the machine-wide test lock and starts n nodes, one after another.
func Start(n int) (*Cluster, error) {
	addrs := os.Getenv("CASSANDRA_ADDRESSES")
	lockFile, jmx := lockAndJMX(addrs)
	return start(n, addrs, lockFile, jmx)
}

// StartOn starts n nodes on 127.0.<subnet>.i (subnet 1..9), with a lock and JMX ports of
// their own: a package that starts its nodes there does not wait for the nodes of the packages
// on the default addresses (go test runs packages at once), nor they for it. The multi-DC e2e
// does, so that the longest package of `make test` starts at once (issue 12's budget).
func StartOn(subnet, n int) (*Cluster, error) {
	if subnet < 1 || subnet > 9 {
		return nil, fmt.Errorf("cassandratest: subnet %d: want 1..9", subnet)
	}
	addrs := subnetAddrs(subnet, n)
	return start(n, addrs, filepath.Join(os.TempDir(), fmt.Sprintf("openaaa-cassandra-test-127.0.%d.lock", subnet)), JMXPort+100*subnet)
}

func start(n int, addrs, lockFile string, jmx int) (*Cluster, error) {
	s, err := Script()
	if err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(lockFile, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		lock.Close()
		return nil, err
	}
	dir, err := os.MkdirTemp("", "openaaa-cassandra-")
	if err != nil {
		lock.Close()
		return nil, err
	}
	c := &Cluster{Dir: dir, Nodes: n, script: s, lock: lock, addrs: addrs, jmx: jmx}
	if err := c.run("start", strconv.Itoa(n)); err != nil {
		_ = c.Stop()
		return nil, err
	}
	return c, nil
}

// Kill SIGKILLs node i.
func (c *Cluster) Kill(i int) error { return c.run("kill", strconv.Itoa(i)) }

// Pause stops node i (SIGSTOP) without killing it: a stall, like a long GC pause. Resume ends it.
func (c *Cluster) Pause(i int) error { return c.run("pause", strconv.Itoa(i)) }

// Resume continues node i after Pause (SIGCONT).
func (c *Cluster) Resume(i int) error { return c.run("resume", strconv.Itoa(i)) }

// Restart starts node i again and waits for its CQL port.
func (c *Cluster) Restart(i int) error {
	// A node killed under load replays its commit log before it opens CQL: on a busy 2-core
	// machine that took more than hack/cassandra.sh's default 180 s once.
	if os.Getenv("CASSANDRA_START_TIMEOUT") == "" {
		return c.runEnv([]string{"CASSANDRA_START_TIMEOUT=480"}, "restart", strconv.Itoa(i))
	}
	return c.run("restart", strconv.Itoa(i))
}

// FlushSchema writes node i's schema tables to disk now. The tests' nodes skip the flush of
// each schema change (TestJVMOpts) and `kill` flushes before its SIGKILL, but that flush is a
// JVM started under the test's load: in a cold make test (load average near 100) it did not
// finish within its bound, and the killed node came back without the keyspace's tables
// (INCOMPATIBLE_SCHEMA, 2026-11-29). A test that will kill a node flushes it once its schema
// is made, before the load.
func (c *Cluster) FlushSchema(i int) error { return c.Nodetool(i, "flush", "system_schema") }

// Nodetool runs nodetool against node i.
func (c *Cluster) Nodetool(i int, args ...string) error {
	return c.run(append([]string{"nodetool", strconv.Itoa(i)}, args...)...)
}

// Stop stops every node by PID, removes the data and releases the lock.
func (c *Cluster) Stop() error {
	err := c.run("stop")
	if err == nil {
		_ = os.RemoveAll(c.Dir)
	}
	if c.lock != nil {
		_ = c.lock.Close()
		c.lock = nil
	}
	return err
}

// Host returns node i's address.
func (c *Cluster) Host(i int) string {
	if a := strings.Fields(c.addrs); i >= 1 && i <= len(a) {
		return a[i-1]
	}
	return fmt.Sprintf("127.0.0.%d", i)
}

// ContactPoint returns node i's host:port.
func (c *Cluster) ContactPoint(i int) string {
	return net.JoinHostPort(c.Host(i), strconv.Itoa(CQLPort))
}

// DC returns node i's datacenter.
func (c *Cluster) DC(i int) string { return fmt.Sprintf("dc%d", i) }

// Main runs the tests of a package against an n-node cluster it starts and stops.
// cluster is set for the tests; it stays nil when the tests are skipped.
func Main(m *testing.M, n int, cluster **Cluster) int {
	if isChild() {
		return m.Run()
	}
	short := false
	for _, a := range os.Args {
		if a == "-test.short=true" || a == "-test.short" {
			short = true
		}
	}
	if short && !Required() {
		fmt.Println("cassandratest: -short: Cassandra integration tests skip")
		return m.Run()
	}
	if err := Available(); err != nil {
		if Required() {
			fmt.Fprintf(os.Stderr, "FAIL: OPENAAA_INTEGRATION=require: %v\n", err)
			return 1
		}
		fmt.Printf("cassandratest: %v: integration tests skip\n", err)
		return m.Run()
	}
	start := time.Now()
	c, err := Start(n)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: starting Cassandra: %v\n", err)
		return 1
	}
	fmt.Printf("cassandratest: %d node(s) up in %s\n", n, time.Since(start).Round(100*time.Millisecond))
	*cluster = c
	code := m.Run()
	if err := c.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "cassandratest: stopping: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// ChildEnv marks a re-executed test binary (e.g. a second migrate process).
const ChildEnv = "OPENAAA_CASSANDRATEST_CHILD"

func isChild() bool { return os.Getenv(ChildEnv) != "" }

// Skip skips t when no cluster was started.
func Skip(t testing.TB, c *Cluster) {
	t.Helper()
	if c == nil {
		t.Skip("Cassandra not available (set OPENAAA_INTEGRATION=require to fail instead)")
	}
}
