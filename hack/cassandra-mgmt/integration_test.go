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
// → cluster probe → seeds → a v1 job → drain → SIGTERM. Bounded: about a minute.
func TestMgmtAPIWithCassandra(t *testing.T) {
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
	lib := strings.TrimSpace(string(libOut))

	// One such node at a time on this machine (2 cores).
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "openaaa-cassandra-test-"+itAddr+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}

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
