package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Response shapes, parsed the way cass-operator v1.28.0's httphelper does (its field names).
type endpointState struct {
	Datacenter           string `json:"DC,omitempty"`
	Rack                 string `json:"RACK,omitempty"`
	SchemaVersion        string `json:"SCHEMA,omitempty"`
	HostID               string `json:"HOST_ID,omitempty"`
	IsAlive              string `json:"IS_ALIVE,omitempty"`
	IsLocal              string `json:"IS_LOCAL,omitempty"`
	EndpointIP           string `json:"ENDPOINT_IP,omitempty"`
	NativeAddressAndPort string `json:"NATIVE_ADDRESS_AND_PORT,omitempty"`
	Status               string `json:"STATUS,omitempty"`
	StatusWithPort       string `json:"STATUS_WITH_PORT,omitempty"`
	ReleaseVersion       string `json:"RELEASE_VERSION,omitempty"`
}

type jobDetails struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

func TestGossipEntity(t *testing.T) {
	live := newLiveness()
	now := time.Unix(1000, 0)
	row := map[string]any{
		"address": "10.0.0.2", "port": 7000, "hostname": "x", "generation": 17, "heartbeat": 42,
		"status": "NORMAL,-9000", "status_version": 12, "status_with_port": "NORMAL,-9000",
		"host_id": "6b8a2f0e-0000-4000-8000-000000000001", "dc": "dc2", "rack": "r1",
		"native_address_and_port": "10.0.0.2:9042", "schema": "3f2c...", "release_version": "5.0.9",
		"tokens": "<hidden>", "load": nil,
	}
	e := gossipEntity(row, "10.0.0.1", live, now)
	b, _ := json.Marshal(map[string]any{"entity": []map[string]string{e}})
	var parsed struct {
		Entity []endpointState `json:"entity"`
	}
	if err := json.Unmarshal(b, &parsed); err != nil {
		t.Fatal(err)
	}
	got := parsed.Entity[0]
	want := endpointState{Datacenter: "dc2", Rack: "r1", SchemaVersion: "3f2c...", HostID: "6b8a2f0e-0000-4000-8000-000000000001",
		IsAlive: "true", IsLocal: "false", EndpointIP: "10.0.0.2", NativeAddressAndPort: "10.0.0.2:9042",
		Status: "NORMAL,-9000", StatusWithPort: "NORMAL,-9000", ReleaseVersion: "5.0.9"}
	if got != want {
		t.Errorf("entity\n got %+v\nwant %+v", got, want)
	}
	for _, k := range []string{"STATUS_VERSION", "TOKENS", "HEARTBEAT", "GENERATION", "LOAD", "PORT"} {
		if _, ok := e[k]; ok {
			t.Errorf("entity has %s", k)
		}
	}
	// The heartbeat stalls: alive until deadAfter, then not.
	if e := gossipEntity(row, "10.0.0.1", live, now.Add(deadAfter-time.Second)); e["IS_ALIVE"] != "true" {
		t.Error("dead too early")
	}
	if e := gossipEntity(row, "10.0.0.1", live, now.Add(deadAfter+time.Second)); e["IS_ALIVE"] != "false" {
		t.Error("alive after its heartbeat stalled")
	}
	row["heartbeat"] = 43
	if e := gossipEntity(row, "10.0.0.1", live, now.Add(deadAfter+2*time.Second)); e["IS_ALIVE"] != "true" {
		t.Error("not alive after a new heartbeat")
	}
	// The local node is always alive.
	if e := gossipEntity(row, "10.0.0.2", live, now.Add(time.Hour)); e["IS_ALIVE"] != "true" || e["IS_LOCAL"] != "true" {
		t.Errorf("local: %v", e)
	}
}

func TestClusterProblems(t *testing.T) {
	eps := []map[string]string{
		{"DC": "dc1", "STATUS": "NORMAL,1", "IS_ALIVE": "true", "IS_LOCAL": "true"},
		{"DC": "dc1", "STATUS": "NORMAL,2", "IS_ALIVE": "true"},
		{"DC": "dc1", "STATUS": "NORMAL,3", "IS_ALIVE": "false"},
		{"DC": "dc2", "STATUS_WITH_PORT": "NORMAL,4", "IS_ALIVE": "false"}, // a lost DC
		{"DC": "dc3", "STATUS": "LEFT,5", "IS_ALIVE": "false"},
	}
	for _, c := range []struct {
		cl      string
		rf      int
		problem string // the DCs with a problem ("*": over all DCs)
	}{
		{"LOCAL_QUORUM", 3, ""},       // 2 of 3 replicas alive in the local DC; dc2 not asked
		{"LOCAL_ONE", 3, ""},          //
		{"LOCAL_QUORUM", 1, "dc1"},    // rf 1: the ranges of the down node have no replica
		{"EACH_QUORUM", 3, "dc2"},     // the lost DC
		{"EACH_QUORUM", 1, "dc1,dc2"}, //
		{"ALL", 3, "dc1,dc2"},         //
		{"QUORUM", 3, "*"},            // 2 live of 4 replicas (3 + 1): 2 < 3
		{"ONE", 3, ""},                //
		{"ONE", 1, "*"},               // a range whose only dc1 replica is down, and dc2 lost
	} {
		got := clusterProblems(eps, c.cl, c.rf)
		if dcs := strings.Join(sortedKeys(got), ","); dcs != c.problem {
			t.Errorf("%s rf %d: %v, want problems in %q", c.cl, c.rf, got, c.problem)
		}
	}
	// The local DC with one node down of two, rf 2: LOCAL_QUORUM needs both.
	eps[2]["DC"], eps[2]["IS_ALIVE"] = "dc9", "true"
	eps[1]["IS_ALIVE"] = "false"
	if got := clusterProblems(eps, "LOCAL_QUORUM", 2); len(got["dc1"]) != 1 {
		t.Errorf("rf 2, one of two down: %v", got)
	}
}

func TestParseSeeds(t *testing.T) {
	got := parseSeeds("Updated seed node IP list, excluding the current node's IP: /10.244.0.7:7000 10.244.0.9:7000\n")
	if strings.Join(got, ",") != "10.244.0.7,10.244.0.9" {
		t.Errorf("%v", got)
	}
	if got := parseSeeds("Seed node list does not contain any remote node IPs\n"); got == nil || len(got) != 0 {
		t.Errorf("%v", got)
	}
}

func TestReplicationCQL(t *testing.T) {
	var b keyspaceRequestBody
	// As k8ssandra-operator's createReplicationConfig renders it: the factor as a string.
	if err := json.Unmarshal([]byte(`{"keyspace_name":"system_auth","replication_settings":[{"dc_name":"dc1","replication_factor":"3"},{"dc_name":"dc2","replication_factor":1}]}`), &b); err != nil {
		t.Fatal(err)
	}
	got, err := replicationCQL(b)
	if err != nil || got != "{'class': 'NetworkTopologyStrategy', 'dc1': 3, 'dc2': 1}" {
		t.Errorf("%q %v", got, err)
	}
	for _, bad := range []string{`{"keyspace_name":"a;b","replication_settings":[{"dc_name":"dc1","replication_factor":1}]}`,
		`{"keyspace_name":"ks","replication_settings":[]}`,
		`{"keyspace_name":"ks","replication_settings":[{"dc_name":"d'c","replication_factor":1}]}`} {
		var b keyspaceRequestBody
		_ = json.Unmarshal([]byte(bad), &b)
		if _, err := replicationCQL(b); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// The endpoints that need no running Cassandra, through the router, as the operators call them.
func TestRoutesWithoutCassandra(t *testing.T) {
	n := newNode(settings{Version: "5.0.9", Conf: t.TempDir()}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	srv := httptest.NewServer((&api{n: n, log: n.log}).routes())
	defer srv.Close()
	call := func(method, path string) (int, string) {
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if c, _ := call("GET", "/api/v0/probes/liveness"); c != 200 {
		t.Errorf("liveness %d", c)
	}
	if c, _ := call("GET", "/api/v0/probes/readiness"); c != 500 {
		t.Errorf("readiness before start %d", c)
	}
	c, body := call("GET", "/api/v0/metadata/versions/features")
	var fs map[string]any
	if err := json.Unmarshal([]byte(body), &fs); c != 200 || err != nil || fs["cassandra_version"] != "5.0.9" {
		t.Errorf("features %d %s", c, body)
	}
	if !strings.Contains(body, `"rebuild"`) || !strings.Contains(body, `"async_sstable_tasks"`) {
		t.Errorf("features %s", body)
	}
	if c, body := call("GET", "/api/v0/metadata/versions/release"); c != 200 || body != "5.0.9" {
		t.Errorf("release %d %q", c, body)
	}
	if c, _ := call("GET", "/api/v0/ops/executor/job?job_id=nope"); c != 404 {
		t.Errorf("unknown job %d", c)
	}
	id := n.jobs.run("rebuild", func() error { return nil })
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, body := call("GET", "/api/v0/ops/executor/job?job_id="+id)
		var j jobDetails
		if c != 200 || json.Unmarshal([]byte(body), &j) != nil {
			t.Fatalf("job %d %s", c, body)
		}
		if j.Status == "COMPLETED" && j.ID == id && j.Type == "rebuild" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %+v", j)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Lifecycle start without a config: an error, not a crash; the server stays live.
	if c, _ := call("POST", "/api/v0/lifecycle/start"); c != 500 {
		t.Errorf("start without config %d", c)
	}
	if c, _ := call("GET", "/api/v0/probes/liveness"); c != 200 {
		t.Errorf("liveness after a failed start %d", c)
	}
	if c, _ := call("GET", "/api/v0/lifecycle/start"); c != 405 {
		t.Errorf("GET lifecycle/start %d (only POST starts Cassandra)", c)
	}
	if c, _ := call("POST", "/api/v0/ops/keyspace/create"); c != 400 {
		t.Errorf("keyspace create without a body %d", c)
	}
}

// The keyspace operations' bodies as cass-operator's createKeySpaceRequest writes them (jobs as
// a string, keys left out when unset) become nodetool arguments.
func TestNodetoolKeyspaceArgs(t *testing.T) {
	a := &api{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for body, want := range map[string]string{
		`{"jobs":"2","keyspace_name":"ks","tables":["t1","t2"]}`: "cleanup -j 2 -- ks t1 t2",
		`{"jobs":"0"}`:                     "cleanup",
		`{"keyspace_name":"ks"}`:           "cleanup -- ks",
		`{"jobs":3,"keyspace_name":"ALL"}`: "cleanup -j 3",
		``:                                 "cleanup",
	} {
		r := httptest.NewRequest("POST", "/api/v1/ops/keyspace/cleanup", strings.NewReader(body))
		if body == "" {
			r.ContentLength = 0
		}
		w := httptest.NewRecorder()
		args, ok := a.nodetoolKeyspaceArgs(w, r, "cleanup", true)
		if !ok || strings.Join(args, " ") != want {
			t.Errorf("%s: %v %v (%d %s), want %s", body, args, ok, w.Code, w.Body, want)
		}
	}
	for _, bad := range []string{`{"jobs":"x"}`, `{"keyspace_name":"k;s"}`, `{"keyspace_name":"ks","tables":["a b"]}`} {
		w := httptest.NewRecorder()
		if _, ok := a.nodetoolKeyspaceArgs(w, httptest.NewRequest("POST", "/x", strings.NewReader(bad)), "cleanup", true); ok || w.Code != 400 {
			t.Errorf("%s: ok %v code %d", bad, ok, w.Code)
		}
	}
}
