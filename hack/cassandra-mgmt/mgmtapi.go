package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"golang.org/x/crypto/bcrypt"
)

// api serves the part of the Management API for Apache Cassandra that cass-operator v1.28.0
// (pkg/httphelper/client.go) and k8ssandra-operator v1.26.0 (pkg/cassandra/management.go)
// call, on Cassandra's own means: CQL to the local node and nodetool over local JMX.
type api struct {
	n   *node
	log *slog.Logger
}

// features the server advertises (GET /api/v0/metadata/versions/features). async_sstable_tasks
// covers the v1 decommission and cleanup; rebuild the v1 rebuild. The rest is not implemented,
// so it is not advertised (cass-operator then keeps away from it or uses the v0 form).
var features = []string{"async_sstable_tasks", "rebuild"}

func (a *api) routes() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("GET /api/v0/probes/liveness", a.liveness)
	m.HandleFunc("GET /api/v0/probes/readiness", a.readiness)
	m.HandleFunc("GET /api/v0/probes/cluster", a.probeCluster)
	m.HandleFunc("POST /api/v0/lifecycle/start", a.lifecycleStart)
	m.HandleFunc("POST /api/v0/lifecycle/stop", a.lifecycleStop)
	m.HandleFunc("GET /api/v0/lifecycle/pid", a.lifecyclePid)
	m.HandleFunc("GET /api/v0/metadata/versions/release", a.release)
	m.HandleFunc("GET /api/v0/metadata/versions/features", a.features)
	m.HandleFunc("GET /api/v0/metadata/endpoints", a.endpoints)
	m.HandleFunc("GET /api/v0/metadata/localdc", a.localDC)
	m.HandleFunc("POST /api/v0/ops/seeds/reload", a.reloadSeeds)
	m.HandleFunc("POST /api/v0/ops/node/drain", a.drain)
	m.HandleFunc("POST /api/v0/ops/node/decommission", a.decommissionV0)
	m.HandleFunc("POST /api/v1/ops/node/decommission", a.decommissionV1)
	m.HandleFunc("POST /api/v1/ops/node/rebuild", a.rebuild)
	m.HandleFunc("POST /api/v1/ops/keyspace/cleanup", a.keyspaceJob("cleanup", true))
	m.HandleFunc("POST /api/v0/ops/keyspace/cleanup", a.keyspaceBlocking("cleanup", true))
	m.HandleFunc("POST /api/v0/ops/tables/flush", a.keyspaceBlocking("flush", false))
	m.HandleFunc("POST /api/v0/ops/tables/garbagecollect", a.keyspaceBlocking("garbagecollect", true))
	m.HandleFunc("POST /api/v0/ops/tables/sstables/upgrade", a.keyspaceBlocking("upgradesstables", true))
	m.HandleFunc("GET /api/v0/ops/executor/job", a.jobDetails)
	m.HandleFunc("GET /api/v1/ops/node/schema/versions", a.schemaVersions)
	m.HandleFunc("GET /api/v0/ops/keyspace", a.listKeyspaces)
	m.HandleFunc("GET /api/v0/ops/keyspace/replication", a.keyspaceReplication)
	m.HandleFunc("POST /api/v0/ops/keyspace/create", a.keyspaceCreateOrAlter("create"))
	m.HandleFunc("POST /api/v0/ops/keyspace/alter", a.keyspaceCreateOrAlter("alter"))
	m.HandleFunc("GET /api/v0/ops/tables", a.listTables)
	m.HandleFunc("POST /api/v0/ops/auth/role", a.createRole)
	m.HandleFunc("GET /api/v0/ops/auth/role", a.listRoles)
	m.HandleFunc("DELETE /api/v0/ops/auth/role", a.dropRole)
	m.HandleFunc("GET /api/v0/ops/node/fullquerylogging", a.fqlStatus)
	return m
}

func text(w http.ResponseWriter, code int, s string) {
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(s))
}

func jsonBody(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		text(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

func (a *api) fail(w http.ResponseWriter, r *http.Request, code int, err error) {
	a.log.Warn("request failed", "method", r.Method, "path", r.URL.Path, "code", code, "err", err)
	text(w, code, err.Error())
}

// session returns the CQL session or answers 500 (Cassandra not up yet).
func (a *api) session(w http.ResponseWriter, r *http.Request) (*gocql.Session, bool) {
	s, err := a.n.cql(r.Context())
	if err != nil {
		a.fail(w, r, http.StatusInternalServerError, err)
		return nil, false
	}
	return s, true
}

// liveness: the server is up; 500 once the JVM it started has died unasked (the kubelet then
// restarts the container, as it would the upstream image).
func (a *api) liveness(w http.ResponseWriter, r *http.Request) {
	if _, _, crashed := a.n.state(); crashed {
		text(w, http.StatusInternalServerError, "cassandra exited\n")
		return
	}
	text(w, http.StatusOK, "OK")
}

// readiness: the local node has finished bootstrapping and answers CQL. The first check logs
// in and reads system.local; once it has seen COMPLETED, the CQL port alone decides (closed
// after a drain), so that readiness does not hang on auth while a data center is down.
func (a *api) readiness(w http.ResponseWriter, r *http.Request) {
	if _, running, _ := a.n.state(); !running {
		text(w, http.StatusInternalServerError, "cassandra is not running\n")
		return
	}
	if a.n.isBootstrapped() {
		if err := a.n.cqlPortOpen(r.Context()); err != nil {
			text(w, http.StatusInternalServerError, err.Error())
			return
		}
		text(w, http.StatusOK, "OK")
		return
	}
	s, err := a.n.cql(r.Context())
	if err != nil {
		text(w, http.StatusInternalServerError, err.Error())
		return
	}
	var boot string
	if err := s.Query("SELECT bootstrapped FROM system.local WHERE key = 'local'").WithContext(r.Context()).Scan(&boot); err != nil {
		text(w, http.StatusInternalServerError, err.Error())
		return
	}
	if !strings.EqualFold(boot, "COMPLETED") {
		text(w, http.StatusInternalServerError, "bootstrapped: "+boot+"\n")
		return
	}
	a.n.setBootstrapped()
	text(w, http.StatusOK, "OK")
}

func (a *api) lifecycleStart(w http.ResponseWriter, r *http.Request) {
	err := a.n.start(r.URL.Query().Get("replace_ip"))
	switch {
	case errors.Is(err, errAlreadyStarted):
		// As upstream: 202 when it already answers, 206 while it is still coming up.
		if _, err := a.n.cql(r.Context()); err == nil {
			w.WriteHeader(http.StatusAccepted)
		} else {
			w.WriteHeader(http.StatusPartialContent)
		}
	case err != nil:
		a.fail(w, r, http.StatusInternalServerError, err)
	default:
		text(w, http.StatusCreated, "OK\n")
	}
}

func (a *api) lifecycleStop(w http.ResponseWriter, r *http.Request) {
	a.n.stop(2 * time.Minute)
	text(w, http.StatusOK, "OK\n")
}

func (a *api) lifecyclePid(w http.ResponseWriter, r *http.Request) {
	a.n.mu.Lock()
	cmd := a.n.cmd
	a.n.mu.Unlock()
	if _, running, _ := a.n.state(); !running || cmd == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	text(w, http.StatusOK, strconv.Itoa(cmd.Process.Pid))
}

func (a *api) release(w http.ResponseWriter, r *http.Request) {
	text(w, http.StatusOK, a.n.s.Version)
}

func (a *api) features(w http.ResponseWriter, r *http.Request) {
	jsonBody(w, http.StatusOK, map[string]any{"cassandra_version": a.n.s.Version, "features": features})
}

func (a *api) localDC(w http.ResponseWriter, r *http.Request) {
	s, ok := a.session(w, r)
	if !ok {
		return
	}
	var dc string
	if err := s.Query("SELECT data_center FROM system.local WHERE key = 'local'").WithContext(r.Context()).Scan(&dc); err != nil {
		a.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	text(w, http.StatusOK, dc)
}

// endpointStates reads the local node's gossip view (system_views.gossip_info, Cassandra 5.0):
// one entity per endpoint, its application states under the Management API's upper-case
// names (STATUS, STATUS_WITH_PORT, HOST_ID, DC, RACK, NATIVE_ADDRESS_AND_PORT, SCHEMA, ...),
// plus ENDPOINT_IP, IS_LOCAL and IS_ALIVE.
func (a *api) endpointStates(ctx context.Context, s *gocql.Session) ([]map[string]string, error) {
	var local string
	if err := s.Query("SELECT broadcast_address FROM system.local WHERE key = 'local'").WithContext(ctx).Scan(&local); err != nil {
		return nil, err
	}
	iter := s.Query("SELECT * FROM system_views.gossip_info").WithContext(ctx).Iter()
	now := time.Now()
	var out []map[string]string
	for {
		row := map[string]any{}
		if !iter.MapScan(row) {
			break
		}
		out = append(out, gossipEntity(row, local, a.n.live, now))
	}
	if err := iter.Close(); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i]["ENDPOINT_IP"] < out[j]["ENDPOINT_IP"] })
	return out, nil
}

// gossipEntity maps one gossip_info row to an endpoint entity.
func gossipEntity(row map[string]any, local string, live *liveness, now time.Time) map[string]string {
	e := map[string]string{}
	addr := fmt.Sprint(row["address"])
	e["ENDPOINT_IP"] = addr
	for k, v := range row {
		if v == nil || strings.HasSuffix(k, "_version") && k != "release_version" || k == "address" || k == "port" || k == "hostname" || k == "generation" || k == "heartbeat" || k == "tokens" {
			continue
		}
		s := fmt.Sprint(v)
		if s == "" {
			continue
		}
		e[strings.ToUpper(k)] = s
	}
	var hb int64
	switch x := row["heartbeat"].(type) {
	case int:
		hb = int64(x)
	case int32:
		hb = int64(x)
	case int64:
		hb = x
	}
	e["IS_LOCAL"] = strconv.FormatBool(addr == local)
	alive := addr == local || live.observe(addr, hb, now)
	e["IS_ALIVE"] = strconv.FormatBool(alive)
	return e
}

func (a *api) endpoints(w http.ResponseWriter, r *http.Request) {
	s, ok := a.session(w, r)
	if !ok {
		return
	}
	eps, err := a.endpointStates(r.Context(), s)
	if err != nil {
		a.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	jsonBody(w, http.StatusOK, map[string]any{"entity": eps})
}

// probeCluster: could a read at consistency_level succeed for every token range, were every
// keyspace NetworkTopologyStrategy with rf_per_dc replicas in each DC, given the endpoints
// gossip hears from? As upstream, the LOCAL_* levels look at the local DC only (cass-operator
// asks LOCAL_QUORUM before starting more nodes). Counted per DC rather than per range: a down
// node is taken to be a replica of the worst range, as it is of some range.
func (a *api) probeCluster(w http.ResponseWriter, r *http.Request) {
	s, ok := a.session(w, r)
	if !ok {
		return
	}
	cl := r.URL.Query().Get("consistency_level")
	if cl == "" {
		cl = "LOCAL_QUORUM"
	}
	rf := 3
	if v := r.URL.Query().Get("rf_per_dc"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			a.fail(w, r, http.StatusBadRequest, fmt.Errorf("rf_per_dc %q", v))
			return
		}
		rf = n
	}
	eps, err := a.endpointStates(r.Context(), s)
	if err != nil {
		a.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	problems := clusterProblems(eps, cl, rf)
	if len(problems) == 0 {
		w.WriteHeader(http.StatusOK)
		return
	}
	jsonBody(w, http.StatusInternalServerError, problems)
}

// clusterProblems: the DCs whose live replicas cannot serve cl at rf per DC, with the reason.
func clusterProblems(eps []map[string]string, cl string, rf int) map[string][]string {
	type dcCount struct{ nodes, alive int }
	dcs := map[string]*dcCount{}
	localDC := ""
	for _, e := range eps {
		if e["IS_LOCAL"] == "true" {
			localDC = e["DC"]
		}
		if !strings.HasPrefix(e["STATUS"], "NORMAL") && !strings.HasPrefix(e["STATUS_WITH_PORT"], "NORMAL") {
			continue
		}
		c := dcs[e["DC"]]
		if c == nil {
			c = &dcCount{}
			dcs[e["DC"]] = c
		}
		c.nodes++
		if e["IS_ALIVE"] == "true" {
			c.alive++
		}
	}
	// Per DC: the replicas of the worst range and how many of them are alive.
	replicas := func(c *dcCount) (int, int) {
		r := min(rf, c.nodes)
		return r, max(0, r-(c.nodes-c.alive))
	}
	quorum := func(n int) int { return n/2 + 1 }
	out := map[string][]string{}
	check := func(dc string, need int) {
		c := dcs[dc]
		if c == nil {
			out[dc] = append(out[dc], fmt.Sprintf("%d replicas required at %s, but no node in the ring", need, cl))
			return
		}
		if _, live := replicas(c); live < need {
			out[dc] = append(out[dc], fmt.Sprintf("%d replicas required at %s (rf %d), but only %d live of %d nodes in the ring", need, cl, rf, c.alive, c.nodes))
		}
	}
	switch strings.ToUpper(cl) {
	case "LOCAL_ONE":
		check(localDC, 1)
	case "LOCAL_QUORUM", "LOCAL_SERIAL":
		check(localDC, quorum(rf))
	case "EACH_QUORUM":
		for _, dc := range sortedKeys(dcs) {
			check(dc, quorum(rf))
		}
	case "ALL":
		for _, dc := range sortedKeys(dcs) {
			check(dc, rf)
		}
	default: // ONE, TWO, THREE, QUORUM, SERIAL, ANY: replicas counted over all DCs
		total, live := 0, 0
		for _, dc := range sortedKeys(dcs) {
			_, l := replicas(dcs[dc])
			total, live = total+rf, live+l
		}
		need := map[string]int{"ONE": 1, "ANY": 1, "TWO": 2, "THREE": 3}[strings.ToUpper(cl)]
		if need == 0 {
			need = quorum(total)
		}
		if live < need {
			out["*"] = append(out["*"], fmt.Sprintf("%d replicas required at %s (rf %d per DC), but only %d live", need, cl, rf, live))
		}
	}
	return out
}

// reloadSeeds runs a nodetool JVM on each call, and cass-operator calls it for every started
// pod on each reconcile. Answering repeated calls from the last run instead (tried 2026-11-29)
// made reconciles so quick that cass-operator v1.28.0 looked at a restarted pod less than 10 s
// after its management API came up, which it skips without requeueing (isMgmtApiRunning): a
// lost data center's Cassandra then started about 3 min after its pod instead of 23 s.
func (a *api) reloadSeeds(w http.ResponseWriter, r *http.Request) {
	out, err := a.n.nodetool(r.Context(), "reloadseeds")
	if err != nil {
		a.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	jsonBody(w, http.StatusOK, parseSeeds(out))
}

var ipv4 = regexp.MustCompile(`\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b`)

// parseSeeds: the addresses nodetool reloadseeds printed ("Updated seed node IP list, excluding
// the current node's IP: 10.0.0.1:7000 10.0.0.2:7000"), without their ports.
func parseSeeds(out string) []string {
	seeds := []string{}
	for _, m := range ipv4.FindAllString(out, -1) {
		host, _, ok := strings.Cut(m, ":")
		if !ok {
			host = m
		}
		seeds = append(seeds, host)
	}
	return seeds
}

func (a *api) drain(w http.ResponseWriter, r *http.Request) {
	if _, running, _ := a.n.state(); !running {
		text(w, http.StatusOK, "OK")
		return
	}
	if _, err := a.n.nodetool(r.Context(), "drain"); err != nil {
		a.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	text(w, http.StatusOK, "OK")
}

func (a *api) decommissionArgs(r *http.Request) []string {
	args := []string{"decommission"}
	if r.URL.Query().Get("force") == "true" {
		args = append(args, "--force")
	}
	return args
}

// decommissionV0 starts the decommission and answers at once: cass-operator watches the
// endpoint go LEAVING then LEFT (its request times out after 60 s, a decommission streams
// for longer).
func (a *api) decommissionV0(w http.ResponseWriter, r *http.Request) {
	args := a.decommissionArgs(r)
	a.n.jobs.run("decommission", func() error { _, err := a.n.nodetool(context.Background(), args...); return err })
	text(w, http.StatusOK, "OK")
}

func (a *api) decommissionV1(w http.ResponseWriter, r *http.Request) {
	args := a.decommissionArgs(r)
	id := a.n.jobs.run("decommission", func() error { _, err := a.n.nodetool(context.Background(), args...); return err })
	text(w, http.StatusAccepted, id)
}

func (a *api) rebuild(w http.ResponseWriter, r *http.Request) {
	args := []string{"rebuild"}
	if dc := r.URL.Query().Get("src_dc"); dc != "" {
		args = append(args, "--", dc)
	}
	id := a.n.jobs.run("rebuild", func() error { _, err := a.n.nodetool(context.Background(), args...); return err })
	text(w, http.StatusAccepted, id)
}

// keyspaceRequest is the body of the keyspace/table operations (cleanup, flush,
// garbagecollect, upgradesstables). cass-operator sends jobs as a string ("2"); a number is
// accepted too.
type keyspaceRequest struct {
	Keyspace string   `json:"keyspace_name"`
	Tables   []string `json:"tables"`
	Jobs     flexInt  `json:"jobs"`
}

type flexInt int

func (f *flexInt) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		*f = 0
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("jobs %s: %w", b, err)
	}
	*f = flexInt(n)
	return nil
}

// nodetoolKeyspaceArgs: `nodetool CMD [-j jobs] [-- keyspace [tables...]]` from the request.
func (a *api) nodetoolKeyspaceArgs(w http.ResponseWriter, r *http.Request, cmd string, withJobs bool) ([]string, bool) {
	var req keyspaceRequest
	if r.ContentLength != 0 {
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			a.fail(w, r, http.StatusBadRequest, err)
			return nil, false
		}
	}
	args := []string{cmd}
	if withJobs && req.Jobs > 0 {
		args = append(args, "-j", strconv.Itoa(int(req.Jobs)))
	}
	if req.Keyspace != "" && !strings.EqualFold(req.Keyspace, "ALL") {
		if !cqlName.MatchString(req.Keyspace) {
			a.fail(w, r, http.StatusBadRequest, fmt.Errorf("keyspace name %q", req.Keyspace))
			return nil, false
		}
		for _, t := range req.Tables {
			if !cqlName.MatchString(t) {
				a.fail(w, r, http.StatusBadRequest, fmt.Errorf("table name %q", t))
				return nil, false
			}
		}
		args = append(args, "--", req.Keyspace)
		args = append(args, req.Tables...)
	}
	return args, true
}

// keyspaceJob: the v1 form, a job (only cleanup is advertised, through async_sstable_tasks).
func (a *api) keyspaceJob(cmd string, withJobs bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		args, ok := a.nodetoolKeyspaceArgs(w, r, cmd, withJobs)
		if !ok {
			return
		}
		id := a.n.jobs.run(cmd, func() error { _, err := a.n.nodetool(context.Background(), args...); return err })
		text(w, http.StatusAccepted, id)
	}
}

// keyspaceBlocking: the v0 form, which answers when nodetool is done.
func (a *api) keyspaceBlocking(cmd string, withJobs bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		args, ok := a.nodetoolKeyspaceArgs(w, r, cmd, withJobs)
		if !ok {
			return
		}
		if _, err := a.n.nodetool(r.Context(), args...); err != nil {
			a.fail(w, r, http.StatusInternalServerError, err)
			return
		}
		text(w, http.StatusOK, "OK")
	}
}

func (a *api) jobDetails(w http.ResponseWriter, r *http.Request) {
	j, ok := a.n.jobs.get(r.URL.Query().Get("job_id"))
	if !ok {
		jsonBody(w, http.StatusNotFound, map[string]string{})
		return
	}
	jsonBody(w, http.StatusOK, j)
}

// schemaVersions: schema version → the nodes at it, as the local node knows them
// (system.local + system.peers_v2); peers gossip does not hear from are UNREACHABLE, as
// Cassandra's describeSchemaVersions reports them.
func (a *api) schemaVersions(w http.ResponseWriter, r *http.Request) {
	s, ok := a.session(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	out := map[string][]string{}
	var addr string
	var ver gocql.UUID
	if err := s.Query("SELECT broadcast_address, schema_version FROM system.local WHERE key = 'local'").WithContext(ctx).Scan(&addr, &ver); err != nil {
		a.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	out[ver.String()] = append(out[ver.String()], addr)
	eps, err := a.endpointStates(ctx, s)
	if err != nil {
		a.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	alive := map[string]bool{}
	for _, e := range eps {
		alive[e["ENDPOINT_IP"]] = e["IS_ALIVE"] == "true"
	}
	iter := s.Query("SELECT peer, schema_version FROM system.peers_v2").WithContext(ctx).Iter()
	var peer string
	var pv gocql.UUID
	for iter.Scan(&peer, &pv) {
		key := pv.String()
		if !alive[peer] {
			key = "UNREACHABLE"
		}
		out[key] = append(out[key], peer)
	}
	if err := iter.Close(); err != nil {
		a.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	jsonBody(w, http.StatusOK, out)
}

var cqlName = regexp.MustCompile(`^[A-Za-z0-9_]{1,48}$`)

func (a *api) listKeyspaces(w http.ResponseWriter, r *http.Request) {
	s, ok := a.session(w, r)
	if !ok {
		return
	}
	want := r.URL.Query().Get("keyspaceName")
	iter := s.Query("SELECT keyspace_name FROM system_schema.keyspaces").WithContext(r.Context()).Iter()
	names := []string{}
	var name string
	for iter.Scan(&name) {
		if want == "" || name == want {
			names = append(names, name)
		}
	}
	if err := iter.Close(); err != nil {
		a.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	sort.Strings(names)
	jsonBody(w, http.StatusOK, names)
}

func (a *api) keyspaceReplication(w http.ResponseWriter, r *http.Request) {
	s, ok := a.session(w, r)
	if !ok {
		return
	}
	ks := r.URL.Query().Get("keyspaceName")
	if ks == "" {
		a.fail(w, r, http.StatusBadRequest, errors.New("keyspaceName is required"))
		return
	}
	var repl map[string]string
	err := s.Query("SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = ?", ks).WithContext(r.Context()).Scan(&repl)
	if errors.Is(err, gocql.ErrNotFound) {
		a.fail(w, r, http.StatusNotFound, fmt.Errorf("keyspace %s does not exist", ks))
		return
	}
	if err != nil {
		a.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	jsonBody(w, http.StatusOK, repl)
}

// keyspaceRequestBody is what CreateKeyspace/AlterKeyspace post. k8ssandra-operator sends
// replication_factor as a string ("3"); a number is accepted too.
type keyspaceRequestBody struct {
	Keyspace    string `json:"keyspace_name"`
	Replication []struct {
		DC string  `json:"dc_name"`
		RF flexInt `json:"replication_factor"`
	} `json:"replication_settings"`
}

// replicationCQL renders a NetworkTopologyStrategy replication map.
func replicationCQL(b keyspaceRequestBody) (string, error) {
	if !cqlName.MatchString(b.Keyspace) {
		return "", fmt.Errorf("keyspace name %q", b.Keyspace)
	}
	if len(b.Replication) == 0 {
		return "", errors.New("replication_settings is empty")
	}
	parts := []string{"'class': 'NetworkTopologyStrategy'"}
	for _, rs := range b.Replication {
		if rs.DC == "" || strings.ContainsAny(rs.DC, "'\\") || rs.RF < 0 {
			return "", fmt.Errorf("replication setting %q: %d", rs.DC, rs.RF)
		}
		parts = append(parts, fmt.Sprintf("'%s': %d", rs.DC, int(rs.RF)))
	}
	return "{" + strings.Join(parts, ", ") + "}", nil
}

func (a *api) keyspaceCreateOrAlter(op string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var b keyspaceRequestBody
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
			a.fail(w, r, http.StatusBadRequest, err)
			return
		}
		repl, err := replicationCQL(b)
		if err != nil {
			a.fail(w, r, http.StatusBadRequest, err)
			return
		}
		s, ok := a.session(w, r)
		if !ok {
			return
		}
		stmt := fmt.Sprintf(`CREATE KEYSPACE IF NOT EXISTS "%s" WITH replication = %s`, b.Keyspace, repl)
		if op == "alter" {
			stmt = fmt.Sprintf(`ALTER KEYSPACE "%s" WITH replication = %s`, b.Keyspace, repl)
		}
		if err := s.Query(stmt).WithContext(r.Context()).Exec(); err != nil {
			a.fail(w, r, http.StatusInternalServerError, err)
			return
		}
		text(w, http.StatusOK, "OK")
	}
}

func (a *api) listTables(w http.ResponseWriter, r *http.Request) {
	s, ok := a.session(w, r)
	if !ok {
		return
	}
	ks := r.URL.Query().Get("keyspaceName")
	iter := s.Query("SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?", ks).WithContext(r.Context()).Iter()
	names := []string{}
	var name string
	for iter.Scan(&name) {
		names = append(names, name)
	}
	if err := iter.Close(); err != nil {
		a.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	jsonBody(w, http.StatusOK, names)
}

// createRole: CREATE ROLE, or ALTER ROLE when it exists (the upstream call is idempotent).
// A superuser created here is remembered (in the data directory) as this server's own login,
// so it keeps working if the default cassandra role goes away.
func (a *api) createRole(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	user, pass := q.Get("username"), q.Get("password")
	if user == "" || pass == "" {
		a.fail(w, r, http.StatusBadRequest, errors.New("username and password are required"))
		return
	}
	super := q.Get("is_superuser") == "true"
	login := q.Get("can_login") != "false"
	s, ok := a.session(w, r)
	if !ok {
		return
	}
	ident := `"` + strings.ReplaceAll(user, `"`, `""`) + `"`
	// A password cannot be a bind marker in CREATE/ALTER ROLE: a string literal, quotes doubled.
	password := "PASSWORD = '" + strings.ReplaceAll(pass, "'", "''") + "'"
	flags := fmt.Sprintf("SUPERUSER = %t AND LOGIN = %t", super, login)
	redact := func(op string, err error) error {
		msg := err.Error()
		if len(pass) >= 4 { // a shorter one would garble the message more than it hides
			msg = strings.ReplaceAll(msg, pass, "******")
		}
		return fmt.Errorf("%s role %s: %s", op, user, msg)
	}
	var hash string
	var isSuper, canLogin bool
	err := s.Query("SELECT salted_hash, is_superuser, can_login FROM system_auth.roles WHERE role = ?", user).WithContext(r.Context()).Scan(&hash, &isSuper, &canLogin)
	switch {
	case errors.Is(err, gocql.ErrNotFound):
		if err := s.Query("CREATE ROLE IF NOT EXISTS " + ident + " WITH " + password + " AND " + flags).WithContext(r.Context()).Exec(); err != nil {
			a.fail(w, r, http.StatusInternalServerError, redact("create", err))
			return
		}
	case err != nil:
		a.fail(w, r, http.StatusInternalServerError, err)
		return
	default:
		// It exists: change only what differs. Cassandra 5.0 refuses a password change more
		// often than every 5 s, and a role's own SUPERUSER clause once this server logs in as
		// that role ("You aren't allowed to alter your own superuser status"), while
		// cass-operator upserts its users again and again.
		var set []string
		if isSuper != super {
			set = append(set, fmt.Sprintf("SUPERUSER = %t", super))
		}
		if canLogin != login {
			set = append(set, fmt.Sprintf("LOGIN = %t", login))
		}
		if bcrypt.CompareHashAndPassword([]byte(hash), []byte(pass)) != nil {
			set = append(set, password)
		}
		if len(set) == 0 {
			break
		}
		if err := s.Query("ALTER ROLE " + ident + " WITH " + strings.Join(set, " AND ")).WithContext(r.Context()).Exec(); err != nil {
			a.fail(w, r, http.StatusInternalServerError, redact("alter", err))
			return
		}
	}
	if super && login {
		// From now on log in as this role: Cassandra reads the default cassandra role at
		// QUORUM, which a lost data center denies; the operator's superuser at the
		// auth_read_consistency_level (LOCAL_QUORUM in 5.0).
		a.n.saveSuperuser(credentials{user, pass})
		a.n.dropSession()
	}
	text(w, http.StatusOK, "OK")
}

func (a *api) listRoles(w http.ResponseWriter, r *http.Request) {
	s, ok := a.session(w, r)
	if !ok {
		return
	}
	iter := s.Query("SELECT role, is_superuser, can_login FROM system_auth.roles").WithContext(r.Context()).Iter()
	type role struct {
		Name        string `json:"name"`
		Super       string `json:"super"`
		Login       string `json:"login"`
		Options     string `json:"options"`
		Datacenters string `json:"datacenters"`
	}
	roles := []role{}
	var name string
	var super, login bool
	for iter.Scan(&name, &super, &login) {
		roles = append(roles, role{Name: name, Super: strconv.FormatBool(super), Login: strconv.FormatBool(login), Options: "{}", Datacenters: "ALL"})
	}
	if err := iter.Close(); err != nil {
		a.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	jsonBody(w, http.StatusOK, roles)
}

func (a *api) dropRole(w http.ResponseWriter, r *http.Request) {
	user := r.URL.Query().Get("username")
	if user == "" {
		a.fail(w, r, http.StatusBadRequest, errors.New("username is required"))
		return
	}
	s, ok := a.session(w, r)
	if !ok {
		return
	}
	ident := `"` + strings.ReplaceAll(user, `"`, `""`) + `"`
	if err := s.Query("DROP ROLE IF EXISTS " + ident).WithContext(r.Context()).Exec(); err != nil {
		a.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	text(w, http.StatusOK, "OK")
}

// fqlStatus: full query logging is never on here (the feature is not advertised).
func (a *api) fqlStatus(w http.ResponseWriter, r *http.Request) {
	jsonBody(w, http.StatusOK, map[string]any{"entity": false})
}
