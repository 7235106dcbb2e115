package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/openaaa/openaaa/internal/cassandratest"
	"github.com/openaaa/openaaa/internal/testenv"
)

// The integration test's node: an address and ports no other test uses (cassandratest takes
// 127.0.0.x and 127.0.1-9.x with 17000/19042/17199+; acct-check 127.0.4.x:39042).
const (
	itAddr        = "127.0.31.1"
	itCQLPort     = 23042
	itStoragePort = 23000
	itJMXPort     = 23199
	itMgmtPort    = 23080
)

// TestMgmtAPIWithCassandra runs `config build` and `mgmtapi` as the pod would, on the host's
// JRE and the cached Cassandra jars, and calls the endpoints the way cass-operator and
// k8ssandra-operator do: start → readiness → endpoints → roles → keyspaces → schema versions

// needNodeLock skips without OPENAAA_INTEGRATION, needs Java and the Cassandra jars, takes the
// machine-wide lock of the test node (one such node at a time on 2 cores) until the test ends,
// and returns the jars' directory.
func needNodeLock(t *testing.T) string {
	t.Helper()
	if os.Getenv("OPENAAA_INTEGRATION") == "" {
		t.Skip("OPENAAA_INTEGRATION is not set")
	}
	err := cassandratest.Available()
	testenv.Need(t, err == nil, fmt.Sprint("Java 17 and the Cassandra jars: ", err))
	script, err := cassandratest.Script()
	if err != nil {
		t.Fatal(err)
	}
	libOut, err := exec.Command(script, "print-lib").Output()
	if err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "openaaa-cassandra-test-"+itAddr+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lock.Close() })
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(libOut))
}

// → cluster probe → seeds → a v1 job → drain → SIGTERM. Bounded: about a minute.
func TestMgmtAPIWithCassandra(t *testing.T) {
	lib := needNodeLock(t)

	dir := t.TempDir()
	bin := filepath.Join(dir, "cassandra-mgmt")
	began := time.Now()
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Logf("go build: %v", time.Since(began).Round(100*time.Millisecond))
	conf, data, logs := filepath.Join(dir, "config"), filepath.Join(dir, "data"), filepath.Join(dir, "logs")

	// config build, with CONFIG_FILE_DATA as the operators render it (auth on, as
	// k8ssandra-operator defaults), ports of our own.
	cfgData := fmt.Sprintf(`{"cluster-info":{"name":"it","seeds":"%s"},
	  "datacenter-info":{"name":"dc31","graph-enabled":0,"solr-enabled":0,"spark-enabled":0},
	  "cassandra-yaml":{"authenticator":"PasswordAuthenticator","authorizer":"CassandraAuthorizer",
	    "role_manager":"CassandraRoleManager","num_tokens":16,"native_transport_port":%d,"storage_port":%d},
	  "jvm-server-options":{"initial_heap_size":"512M","max_heap_size":"512M",
	    "additional-jvm-opts":["-Dcom.sun.management.jmxremote.authenticate=true","-Dcassandra.jmx.remote.login.config=CassandraLogin"]}}`,
		itAddr, itCQLPort, itStoragePort)
	build := exec.Command(bin, "config", "build")
	build.Env = append(os.Environ(), "CONFIG_FILE_DATA="+cfgData, "POD_IP="+itAddr, "HOST_IP="+itAddr,
		"RACK_NAME=r1", "PRODUCT_VERSION=5.0.9", "POD_NAME=it-dc31-r1-sts-0", "USE_HOST_IP_FOR_BROADCAST=false",
		"CONFIG_BASE_DIR=etc", "CONFIG_OUT_DIR="+conf)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("config build: %v\n%s", err, out)
	}

	var stdout bytes.Buffer
	srv := exec.Command(bin) // no args: mgmtapi, as the image's entrypoint
	srv.Env = append(os.Environ(), "CASSANDRA_CONF="+conf, "CASSANDRA_LIB="+lib, "CASSANDRA_DATA="+data,
		"CASSANDRA_LOG_DIR="+logs, fmt.Sprintf("JMX_PORT=%d", itJMXPort),
		"MGMT_API_LISTEN_HOST="+itAddr, fmt.Sprintf("MGMT_API_LISTEN_TCP_PORT=%d", itMgmtPort),
		"MGMT_API_EXPLICIT_START=true", "MGMT_API_NO_KEEP_ALIVE=true",
		"CASSANDRA_JVM_OPTS="+cassandratest.TestJVMOpts+" -Dcassandra.superuser_setup_delay_ms=0 -Dcassandra.skip_wait_for_gossip_to_settle=0 -Dcassandra.ring_delay_ms=1000")
	srv.Stdout, srv.Stderr = &stdout, &stdout
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{}) // closed when the server has exited; waitErr is its Wait
	var waitErr error
	go func() { waitErr = srv.Wait(); close(exited) }()
	defer func() {
		select {
		case <-exited:
			return
		default:
		}
		_ = srv.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(60 * time.Second):
			_ = syscall.Kill(-srv.Process.Pid, syscall.SIGKILL)
			_ = srv.Process.Kill()
		}
		if t.Failed() {
			t.Logf("cassandra-mgmt output (tail):\n%s", lastLines(stdout.String(), 40))
			if b, err := os.ReadFile(filepath.Join(logs, "system.log")); err == nil {
				t.Logf("system.log (tail):\n%s", lastLines(string(b), 30))
			}
		}
	}()

	base := fmt.Sprintf("http://%s:%d", itAddr, itMgmtPort)
	client := &http.Client{Timeout: 90 * time.Second}
	call := func(method, path, body string) (int, string) {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, _ := http.NewRequest(method, base+path, rd)
		req.Close = true // as cass-operator
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		began := time.Now()
		res, err := client.Do(req)
		if d := time.Since(began); d > 2*time.Second {
			t.Logf("%s %s took %v", method, path, d.Round(100*time.Millisecond))
		}
		if err != nil {
			return 0, err.Error()
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	want := func(what string, code int, gotCode int, body string) {
		t.Helper()
		if gotCode != code {
			t.Fatalf("%s: HTTP %d, want %d: %s", what, gotCode, code, body)
		}
	}

	// The server is live before Cassandra starts, and not ready.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, _ := call("GET", "/api/v0/probes/liveness", ""); c == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("liveness never 200")
		}
		time.Sleep(100 * time.Millisecond)
	}
	c, b := call("GET", "/api/v0/probes/readiness", "")
	want("readiness before start", 500, c, b)

	start := time.Now()
	c, b = call("POST", "/api/v0/lifecycle/start", "")
	want("lifecycle start", 201, c, b)
	deadline = time.Now().Add(180 * time.Second)
	for {
		if c, _ := call("GET", "/api/v0/probes/readiness", ""); c == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not ready 180 s after lifecycle/start")
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("lifecycle/start → readiness 200: %v", time.Since(start).Round(100*time.Millisecond))
	c, _ = call("POST", "/api/v0/lifecycle/start", "")
	want("second lifecycle start", 202, c, "")

	// Endpoints, parsed with cass-operator's field names.
	c, b = call("GET", "/api/v0/metadata/endpoints", "")
	want("endpoints", 200, c, b)
	var eps struct {
		Entity []endpointState `json:"entity"`
	}
	if err := json.Unmarshal([]byte(b), &eps); err != nil || len(eps.Entity) != 1 {
		t.Fatalf("endpoints: %v %s", err, b)
	}
	e := eps.Entity[0]
	if e.EndpointIP != itAddr || e.NativeAddressAndPort != fmt.Sprintf("%s:%d", itAddr, itCQLPort) || e.HostID == "" ||
		!strings.HasPrefix(e.Status, "NORMAL") || !strings.HasPrefix(e.StatusWithPort, "NORMAL") ||
		e.IsLocal != "true" || e.IsAlive != "true" || e.Datacenter != "dc31" || e.Rack != "r1" || e.ReleaseVersion != "5.0.9" {
		t.Errorf("endpoint %+v", e)
	}
	t.Logf("endpoint: %s", b)

	// cass-operator's superuser, then a login with it.
	c, b = call("POST", "/api/v0/ops/auth/role?can_login=true&is_superuser=true&password=s3cret&username=it-superuser", "")
	want("create role", 200, c, b)
	c, b = call("POST", "/api/v0/ops/auth/role?can_login=true&is_superuser=true&password=s3cret&username=it-superuser", "")
	want("create role again (cass-operator upserts)", 200, c, b)
	cl := gocql.NewCluster(fmt.Sprintf("%s:%d", itAddr, itCQLPort))
	cl.DisableInitialHostLookup = true
	cl.Authenticator = gocql.PasswordAuthenticator{Username: "it-superuser", Password: "s3cret"}
	if sess, err := cl.CreateSession(); err != nil {
		t.Errorf("login as the created role: %v", err)
	} else {
		sess.Close()
	}
	c, b = call("GET", "/api/v0/ops/auth/role", "")
	want("list roles", 200, c, b)
	if !strings.Contains(b, `"name":"it-superuser","super":"true","login":"true"`) {
		t.Errorf("roles: %s", b)
	}

	// k8ssandra-operator's EnsureKeyspaceReplication: list, create, read replication, alter.
	c, b = call("GET", "/api/v0/ops/keyspace?keyspaceName=it_ks", "")
	want("get keyspace", 200, c, b)
	if b != "[]" {
		t.Errorf("keyspace before create: %s", b)
	}
	c, b = call("POST", "/api/v0/ops/keyspace/create", `{"keyspace_name":"it_ks","replication_settings":[{"dc_name":"dc31","replication_factor":"1"}]}`)
	want("create keyspace", 200, c, b)
	c, b = call("GET", "/api/v0/ops/keyspace?keyspaceName=it_ks", "")
	if c != 200 || b != `["it_ks"]` {
		t.Errorf("keyspace after create: %d %s", c, b)
	}
	c, b = call("POST", "/api/v0/ops/keyspace/alter", `{"keyspace_name":"it_ks","replication_settings":[{"dc_name":"dc31","replication_factor":"2"}]}`)
	want("alter keyspace", 200, c, b)
	c, b = call("GET", "/api/v0/ops/keyspace/replication?keyspaceName=it_ks", "")
	want("replication", 200, c, b)
	var repl map[string]string
	if err := json.Unmarshal([]byte(b), &repl); err != nil || repl["class"] != "org.apache.cassandra.locator.NetworkTopologyStrategy" ||
		repl["dc31"] != "2" || len(repl) != 2 {
		t.Errorf("replication: %s", b)
	}
	c, b = call("GET", "/api/v0/ops/keyspace", "")
	if c != 200 || !strings.Contains(b, `"system_auth"`) || !strings.Contains(b, `"it_ks"`) {
		t.Errorf("keyspaces: %d %s", c, b)
	}
	c, b = call("GET", "/api/v0/ops/tables?keyspaceName=system_auth", "")
	if c != 200 || !strings.Contains(b, `"roles"`) {
		t.Errorf("tables: %d %s", c, b)
	}

	// Schema agreement: one version, this node.
	c, b = call("GET", "/api/v1/ops/node/schema/versions", "")
	want("schema versions", 200, c, b)
	var sv map[string][]string
	if err := json.Unmarshal([]byte(b), &sv); err != nil || len(sv) != 1 {
		t.Errorf("schema versions: %s", b)
	}
	for _, ips := range sv {
		if len(ips) != 1 || ips[0] != itAddr {
			t.Errorf("schema versions: %s", b)
		}
	}

	// Cluster probe: RF 1 holds, RF 3 cannot (one node).
	c, b = call("GET", "/api/v0/probes/cluster?consistency_level=LOCAL_QUORUM&rf_per_dc=1", "")
	want("probe cluster rf 1", 200, c, b)
	c, b = call("GET", "/api/v0/probes/cluster?consistency_level=LOCAL_QUORUM&rf_per_dc=3", "")
	want("probe cluster rf 3", 500, c, b)

	// nodetool-backed: seeds reload, a v1 cleanup job, drain.
	step := time.Now()
	c, b = call("POST", "/api/v0/ops/seeds/reload", "")
	t.Logf("seeds reload: %v %s", time.Since(step).Round(100*time.Millisecond), b)
	step = time.Now()
	want("seeds reload", 200, c, b)
	var seeds []string
	if err := json.Unmarshal([]byte(b), &seeds); err != nil {
		t.Errorf("seeds: %s", b)
	}
	c, id := call("POST", "/api/v1/ops/keyspace/cleanup", `{"jobs":"1","keyspace_name":"it_ks"}`)
	want("v1 cleanup", 202, c, id)
	deadline = time.Now().Add(60 * time.Second)
	for {
		c, b = call("GET", "/api/v0/ops/executor/job?job_id="+id, "")
		want("job", 200, c, b)
		var j jobDetails
		_ = json.Unmarshal([]byte(b), &j)
		if j.Status == "COMPLETED" {
			break
		}
		if j.Status == "ERROR" || time.Now().After(deadline) {
			t.Fatalf("cleanup job: %s", b)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("v1 cleanup job done: %v", time.Since(step).Round(100*time.Millisecond))
	c, b = call("POST", "/api/v0/ops/tables/flush", `{"keyspace_name":"it_ks"}`)
	want("v0 flush", 200, c, b)
	step = time.Now()
	c, b = call("POST", "/api/v0/ops/node/drain", "")
	t.Logf("drain: %v", time.Since(step).Round(100*time.Millisecond))
	if c, _ := call("GET", "/api/v0/probes/readiness", ""); c != 500 {
		t.Errorf("readiness after drain: %d, want 500 (CQL closed)", c)
	}
	want("drain", 200, c, b)

	// SIGTERM: the server stops Cassandra and exits.
	stopAt := time.Now()
	_ = srv.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		if waitErr != nil {
			t.Errorf("cassandra-mgmt exit: %v", waitErr)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("cassandra-mgmt did not exit 90 s after SIGTERM")
	}
	t.Logf("SIGTERM → exit: %v", time.Since(stopAt).Round(100*time.Millisecond))
	if out, _ := exec.Command("pgrep", "-f", "cassandra.storagedir="+data).Output(); len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("a Cassandra JVM outlived cassandra-mgmt: %s", out)
	}

	t.Logf("elapsed: %v", time.Since(began).Round(100*time.Millisecond))
	// logger: follows system.log, exits on SIGTERM.
	var logOut bytes.Buffer
	lg := exec.Command(bin, "logger")
	lg.Env = append(os.Environ(), "LOG_FILE="+filepath.Join(logs, "system.log"))
	lg.Stdout = &logOut
	if err := lg.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	_ = lg.Process.Signal(syscall.SIGTERM)
	if err := lg.Wait(); err != nil {
		t.Errorf("logger exit: %v", err)
	}
	if !strings.Contains(logOut.String(), "CassandraDaemon") {
		t.Errorf("logger printed %d bytes, not the system.log", logOut.Len())
	}
}

// itNode is one cassandra-mgmt server (and its Cassandra) of TestMgmtAPITwoDCs.
type itNode struct {
	base   string
	cmd    *exec.Cmd
	out    *bytes.Buffer
	exited chan struct{}
	logs   string
}

func startItNode(t *testing.T, bin, lib, dir, addr, dc, seeds string, jmx int) *itNode {
	t.Helper()
	conf := filepath.Join(dir, "config")
	build := exec.Command(bin, "config", "build")
	build.Env = append(os.Environ(), fmt.Sprintf(`CONFIG_FILE_DATA={"cluster-info":{"name":"it2","seeds":"%s"},"datacenter-info":{"name":"%s"},
	  "cassandra-yaml":{"authenticator":"PasswordAuthenticator","authorizer":"CassandraAuthorizer","num_tokens":16,"native_transport_port":%d,"storage_port":%d},
	  "jvm-server-options":{"max_heap_size":"512M","initial_heap_size":"512M"}}`, seeds, dc, itCQLPort, itStoragePort),
		"POD_IP="+addr, "HOST_IP="+addr, "RACK_NAME=r1", "CONFIG_BASE_DIR=etc", "CONFIG_OUT_DIR="+conf)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("config build: %v\n%s", err, out)
	}
	n := &itNode{base: fmt.Sprintf("http://%s:%d", addr, itMgmtPort), out: &bytes.Buffer{}, exited: make(chan struct{}), logs: filepath.Join(dir, "logs")}
	n.cmd = exec.Command(bin)
	n.cmd.Env = append(os.Environ(), "CASSANDRA_CONF="+conf, "CASSANDRA_LIB="+lib, "CASSANDRA_DATA="+filepath.Join(dir, "data"),
		"CASSANDRA_LOG_DIR="+n.logs, fmt.Sprintf("JMX_PORT=%d", jmx), "MGMT_API_LISTEN_HOST="+addr,
		fmt.Sprintf("MGMT_API_LISTEN_TCP_PORT=%d", itMgmtPort), "MGMT_API_EXPLICIT_START=true",
		"CASSANDRA_JVM_OPTS="+cassandratest.TestJVMOpts+" -Dcassandra.superuser_setup_delay_ms=0 -Dcassandra.skip_wait_for_gossip_to_settle=0 -Dcassandra.ring_delay_ms=1000")
	n.cmd.Stdout, n.cmd.Stderr = n.out, n.out
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = n.cmd.Wait(); close(n.exited) }()
	t.Cleanup(func() {
		_ = n.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-n.exited:
		case <-time.After(60 * time.Second):
			_ = n.cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("%s output (tail):\n%s", addr, lastLines(n.out.String(), 20))
		}
	})
	return n
}

func (n *itNode) call(t *testing.T, method, path string, body ...string) (int, string) {
	t.Helper()
	var rd io.Reader
	if len(body) > 0 {
		rd = strings.NewReader(body[0])
	}
	req, _ := http.NewRequest(method, n.base+path, rd)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func (n *itNode) startAndWait(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for c, _ := n.call(t, "GET", "/api/v0/probes/liveness"); c != 200; c, _ = n.call(t, "GET", "/api/v0/probes/liveness") {
		if time.Now().After(deadline) {
			t.Fatalf("%s: liveness never 200", n.base)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if c, b := n.call(t, "POST", "/api/v0/lifecycle/start"); c != 201 {
		t.Fatalf("%s: lifecycle start %d %s", n.base, c, b)
	}
	deadline = time.Now().Add(180 * time.Second)
	for c, _ := n.call(t, "GET", "/api/v0/probes/readiness"); c != 200; c, _ = n.call(t, "GET", "/api/v0/probes/readiness") {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not ready after 180 s", n.base)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (n *itNode) endpoints(t *testing.T) map[string]endpointState {
	t.Helper()
	c, b := n.call(t, "GET", "/api/v0/metadata/endpoints")
	var eps struct {
		Entity []endpointState `json:"entity"`
	}
	if c != 200 || json.Unmarshal([]byte(b), &eps) != nil {
		t.Fatalf("endpoints: %d %s", c, b)
	}
	out := map[string]endpointState{}
	for _, e := range eps.Entity {
		out[e.EndpointIP] = e
	}
	return out
}

// TestMgmtAPITwoDCs: two nodes, one DC each, as two pods would be. Each server talks to its own
// node only (IS_LOCAL); when one node dies, the other reports it not alive, its schema version
// UNREACHABLE, and LOCAL_QUORUM in its own DC still healthy (cass-operator's check), while
// EACH_QUORUM is not. About a minute and a half.
func TestMgmtAPITwoDCs(t *testing.T) {
	lib := needNodeLock(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "cassandra-mgmt")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	const addr2 = "127.0.31.2"
	seeds := itAddr + "," + addr2
	n1 := startItNode(t, bin, lib, filepath.Join(dir, "n1"), itAddr, "dc31a", seeds, itJMXPort)
	n2 := startItNode(t, bin, lib, filepath.Join(dir, "n2"), addr2, "dc31b", seeds, itJMXPort-1)
	began := time.Now()
	n1.startAndWait(t)
	// As k8ssandra-operator creates a cluster: system_auth replicated in the first DC only
	// before another DC joins. Left at Cassandra's default (SimpleStrategy, RF 1), the
	// default superuser's row can fall into n2's token ranges, which n2 (a seed, not
	// bootstrapped) does not hold: n1 then no longer sees its login as a superuser.
	if c, b := n1.call(t, "POST", "/api/v0/ops/keyspace/alter", `{"keyspace_name":"system_auth","replication_settings":[{"dc_name":"dc31a","replication_factor":"1"}]}`); c != 200 {
		t.Fatalf("alter system_auth to dc31a: %d %s", c, b)
	}
	n2.startAndWait(t)
	t.Logf("two nodes ready in %v", time.Since(began).Round(100*time.Millisecond))

	deadline := time.Now().Add(30 * time.Second)
	for {
		e1, e2 := n1.endpoints(t), n2.endpoints(t)
		if len(e1) == 2 && len(e2) == 2 {
			if e1[itAddr].IsLocal != "true" || e1[addr2].IsLocal != "false" || e2[addr2].IsLocal != "true" || e2[itAddr].IsLocal != "false" {
				t.Fatalf("IS_LOCAL: n1 %+v\nn2 %+v", e1, e2)
			}
			if e1[addr2].Datacenter != "dc31b" || e1[addr2].HostID == "" || e1[addr2].IsAlive != "true" ||
				!strings.HasPrefix(e1[addr2].StatusWithPort, "NORMAL") {
				t.Fatalf("n1's view of n2: %+v", e1[addr2])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the nodes do not see each other: %v / %v", e1, e2)
		}
		time.Sleep(time.Second)
	}
	if c, b := n1.call(t, "GET", "/api/v1/ops/node/schema/versions"); c != 200 || strings.Count(b, "127.0.31.") != 2 || strings.Contains(b, "UNREACHABLE") {
		t.Errorf("schema versions: %d %s", c, b)
	}

	// As the operators do before a DC can be lost: system_auth replicated in each DC
	// (k8ssandra-operator), the superuser role created through each DC's first pod
	// (cass-operator). The servers then log in as it, not as the default cassandra role
	// (read at QUORUM).
	if c, b := n1.call(t, "POST", "/api/v0/ops/keyspace/alter", `{"keyspace_name":"system_auth","replication_settings":[{"dc_name":"dc31a","replication_factor":"1"},{"dc_name":"dc31b","replication_factor":"1"}]}`); c != 200 {
		t.Fatalf("alter system_auth: %d %s", c, b)
	}
	for _, n := range []*itNode{n1, n2} {
		if c, b := n.call(t, "POST", "/api/v0/ops/auth/role?can_login=true&is_superuser=true&password=it2-secret&username=it2-superuser"); c != 200 {
			t.Fatalf("%s: create role: %d %s", n.base, c, b)
		}
	}

	// n2's Cassandra dies (SIGKILL, as a lost DC).
	c, pid := n2.call(t, "GET", "/api/v0/lifecycle/pid")
	var jvm int
	if _, err := fmt.Sscan(pid, &jvm); c != 200 || err != nil {
		t.Fatalf("pid: %d %s", c, pid)
	}
	if err := syscall.Kill(jvm, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	deadline = time.Now().Add(60 * time.Second)
	for n1.endpoints(t)[addr2].IsAlive != "false" {
		if time.Now().After(deadline) {
			t.Fatal("n2 still alive in n1's view 60 s after its JVM was killed")
		}
		time.Sleep(time.Second)
	}
	t.Logf("n2 not alive in n1's view after %v", time.Since(killed).Round(100*time.Millisecond))
	if c, _ := n2.call(t, "GET", "/api/v0/probes/liveness"); c != 500 {
		t.Errorf("n2 liveness after its JVM died: %d", c)
	}
	if c, b := n1.call(t, "GET", "/api/v1/ops/node/schema/versions"); c != 200 || !strings.Contains(b, `"UNREACHABLE":["127.0.31.2"]`) {
		t.Errorf("schema versions with n2 down: %d %s", c, b)
	}
	if c, b := n1.call(t, "GET", "/api/v0/probes/cluster?consistency_level=LOCAL_QUORUM&rf_per_dc=1"); c != 200 {
		t.Errorf("LOCAL_QUORUM in n1's DC with n2's DC down: %d %s", c, b)
	}
	if c, b := n1.call(t, "GET", "/api/v0/probes/cluster?consistency_level=EACH_QUORUM&rf_per_dc=1"); c != 500 || !strings.Contains(b, "dc31b") {
		t.Errorf("EACH_QUORUM with dc31b down: %d %s", c, b)
	}
	if c, _ := n1.call(t, "GET", "/api/v0/probes/readiness"); c != 200 {
		t.Errorf("n1 readiness with n2 down: %d", c)
	}
}
