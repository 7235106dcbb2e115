// Package migrate implements `policing migrate`: versioned CQL schema migrations for the
// Cassandra session store, embedded in the binary and applied in order.
//
// Each migration is migrations/NNNN_name.cql. Applied migrations are recorded in the
// keyspace's schema_migrations table (version, name, checksum, status, who, when, error).
// A lightweight-transaction lease (schema_migrations_lease, SERIAL) makes sure only one
// process applies migrations at a time, even when the Jobs of several DCs start at once.
// The keyspace itself (NetworkTopologyStrategy, a replication factor per DC) is created or
// altered by the same command (--replication dc1:3,dc2:3).
package migrate

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/store/cassandra"
)

// Options of one run.
type Options struct {
	Conn        cassandra.ConnOptions // Keyspace is the keyspace to manage
	Replication Replication           // nil: keep the existing one, or 3 (at most the nodes) per DC
	DryRun      bool
	Owner       string        // lease owner (default host:pid:random)
	LeaseTTL    time.Duration // default 60s
	LeaseWait   time.Duration // how long to wait for another process's lease (default 5m)
	Out         io.Writer
	// FS replaces the embedded migrations (tests): NNNN_name.cql files in its "migrations" dir.
	FS fs.FS

	// Test hooks: beforeStatement runs before each statement of a migration (a slow step);
	// renewErr, when it returns an error, stands for a failed lease renewal.
	beforeStatement func(ctx context.Context) error
	renewErr        func() error
}

// Result says what a run did.
type Result struct {
	Applied        []string // migrations applied by this run
	Version        int      // schema version after the run
	KeyspaceAction string   // "", "created", "altered"
	RepairNeeded   []string // DCs whose replication factor grew
}

// tableID derives a fixed table ID from the keyspace and table names: concurrent
// CREATE TABLE IF NOT EXISTS of the bookkeeping tables from two DCs then converge on one
// table instead of two with different IDs (IDs are unique in the whole cluster).
func tableID(ks, table string) string {
	h := sha256.Sum256([]byte("openaaa:" + ks + "." + table))
	h[6] = h[6]&0x0f | 0x50 // version 5 layout (name-based)
	h[8] = h[8]&0x3f | 0x80
	x := hex.EncodeToString(h[:16])
	return x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
}

type record struct {
	version  int
	name     string
	checksum string
	status   string
	by       string
	at       time.Time
	errText  string
}

// Run plans and (unless DryRun) applies the migrations.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = 60 * time.Second
	}
	if o.LeaseWait <= 0 {
		o.LeaseWait = 5 * time.Minute
	}
	if o.Owner == "" {
		host, _ := os.Hostname()
		var b [4]byte
		_, _ = rand.Read(b[:])
		o.Owner = fmt.Sprintf("%s:%d:%x", host, os.Getpid(), b)
	}
	ks := o.Conn.Keyspace
	if !config.ValidKeyspaceName(ks) {
		return nil, fmt.Errorf("keyspace %q is not a valid name", ks)
	}
	migs, err := Migrations()
	if o.FS != nil {
		migs, err = load(o.FS, "migrations")
	}
	if err != nil {
		return nil, err
	}
	conn := o.Conn
	conn.Keyspace = ""
	conn.Consistency = gocql.Quorum
	sess, err := cassandra.Connect(ctx, conn)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	m := &migrator{o: o, s: sess, ks: ks, migs: migs, res: &Result{}}
	return m.run(ctx)
}

type migrator struct {
	o    Options
	s    *gocql.Session
	ks   string
	migs []Migration
	res  *Result
}

func (m *migrator) say(format string, a ...any) { fmt.Fprintf(m.o.Out, format+"\n", a...) }

func (m *migrator) run(ctx context.Context) (_ *Result, err error) {
	dcs, err := m.topology(ctx)
	if err != nil {
		return nil, err
	}
	current, exists, err := m.keyspaceReplication(ctx)
	if err != nil {
		return nil, err
	}
	want := m.o.Replication
	if want == nil {
		if exists {
			want = current
		} else {
			for _, dc := range sortedKeys(dcs) {
				want = append(want, DCFactor{dc, min(3, dcs[dc])})
			}
		}
	}
	for _, f := range want {
		n, ok := dcs[f.DC]
		if !ok && f.RF > 0 {
			return nil, fmt.Errorf("--replication: datacenter %s has no node in the cluster (have %s)", f.DC, strings.Join(sortedKeys(dcs), ", "))
		}
		if f.RF > n {
			return nil, fmt.Errorf("--replication: %s:%d is more than the %d node(s) of %s", f.DC, f.RF, n, f.DC)
		}
	}
	alter := exists && !sameReplication(current, want)
	records, err := m.records(ctx, exists)
	if err != nil {
		return nil, err
	}
	pending, err := m.pending(records)
	if err != nil {
		return nil, err
	}

	// The plan.
	switch {
	case !exists:
		m.say("keyspace %s: create with replication %s", m.ks, want)
	case alter:
		m.say("keyspace %s: change replication %s -> %s", m.ks, current, want)
	default:
		m.say("keyspace %s: replication %s (unchanged)", m.ks, current)
	}
	for _, mg := range pending {
		verb := "apply"
		if r, ok := records[mg.Version]; ok && r.status != "applied" {
			verb = "retry (" + r.status + " before)"
		}
		m.say("migration %s: %s (%d statements)", mg.Name, verb, len(mg.Statements))
	}
	if len(pending) == 0 {
		m.say("migrations: up to date (version %d)", len(m.migs))
	}
	if m.o.DryRun {
		m.say("dry run: nothing changed")
		m.res.Version = len(m.migs) - len(pending)
		return m.res, nil
	}

	if !exists {
		if err := m.exec(ctx, fmt.Sprintf("CREATE KEYSPACE IF NOT EXISTS %s WITH replication = %s", m.ks, want.cql())); err != nil {
			return nil, fmt.Errorf("create keyspace %s: %w", m.ks, err)
		}
		m.res.KeyspaceAction = "created"
	}
	if err := m.bookkeeping(ctx); err != nil {
		return nil, err
	}
	lctx, release, err := m.lease(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	// Everything from here runs under the lease's context, which ends if the lease is lost:
	// then the error says so (not just "context canceled").
	ctx = lctx
	defer func() {
		if lost := leaseLost(lctx); lost != nil && err != nil {
			m.say("stopped: %v", lost)
			err = fmt.Errorf("%w (stopped: %v)", lost, err)
		}
	}()

	// Under the lease: look again, another process may have done the work meanwhile.
	current, _, err = m.keyspaceReplication(ctx)
	if err != nil {
		return nil, err
	}
	if m.o.Replication != nil && !sameReplication(current, want) {
		if err := m.exec(ctx, fmt.Sprintf("ALTER KEYSPACE %s WITH replication = %s", m.ks, want.cql())); err != nil {
			return nil, fmt.Errorf("alter keyspace %s: %w", m.ks, err)
		}
		if m.res.KeyspaceAction == "" {
			m.res.KeyspaceAction = "altered"
		}
		m.say("keyspace %s: replication is now %s", m.ks, want)
		for _, f := range want {
			if f.RF > current.get(f.DC) {
				m.res.RepairNeeded = append(m.res.RepairNeeded, f.DC)
			}
		}
		if len(m.res.RepairNeeded) > 0 {
			m.say("REPAIR NEEDED: the replication factor grew in %s: run `nodetool repair -full %s` on every node of %s, one node at a time",
				strings.Join(m.res.RepairNeeded, ", "), m.ks, strings.Join(m.res.RepairNeeded, ", "))
		}
		for _, f := range current {
			if want.get(f.DC) < f.RF {
				m.say("note: the replication factor shrank in %s: run `nodetool cleanup %s` on its nodes", f.DC, m.ks)
			}
		}
	}
	records, err = m.records(ctx, true)
	if err != nil {
		return nil, err
	}
	pending, err = m.pending(records)
	if err != nil {
		return nil, err
	}
	for _, mg := range pending {
		if err := m.apply(ctx, mg); err != nil {
			return m.res, err
		}
		m.res.Applied = append(m.res.Applied, mg.Name)
	}
	m.res.Version = len(m.migs)
	if len(m.res.Applied) > 0 {
		m.say("applied %d migration(s); schema version %d", len(m.res.Applied), m.res.Version)
	} else {
		m.say("nothing applied: schema version %d", m.res.Version)
	}
	return m.res, nil
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func sameReplication(a, b Replication) bool {
	norm := func(r Replication) string {
		var parts []string
		for _, f := range r {
			if f.RF > 0 {
				parts = append(parts, fmt.Sprintf("%s:%d", f.DC, f.RF))
			}
		}
		slices.Sort(parts)
		return strings.Join(parts, ",")
	}
	return norm(a) == norm(b)
}

// topology returns the number of nodes per DC.
func (m *migrator) topology(ctx context.Context) (map[string]int, error) {
	out := map[string]int{}
	var dc string
	if err := m.s.Query("SELECT data_center FROM system.local").Consistency(gocql.One).ScanContext(ctx, &dc); err != nil {
		return nil, fmt.Errorf("reading the topology: %w", err)
	}
	out[dc]++
	it := m.s.Query("SELECT data_center FROM system.peers").Consistency(gocql.One).IterContext(ctx)
	for it.Scan(&dc) {
		out[dc]++
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("reading the topology: %w", err)
	}
	return out, nil
}

func (m *migrator) keyspaceReplication(ctx context.Context) (Replication, bool, error) {
	var repl map[string]string
	err := m.s.Query("SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = ?", m.ks).
		Consistency(gocql.One).ScanContext(ctx, &repl)
	if errors.Is(err, gocql.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading keyspace %s: %w", m.ks, err)
	}
	var out Replication
	for _, k := range sortedKeys(toInts(repl)) {
		n, _ := strconv.Atoi(repl[k])
		out = append(out, DCFactor{k, n})
	}
	if !strings.HasSuffix(repl["class"], "NetworkTopologyStrategy") {
		out = append(out, DCFactor{"(class " + repl["class"] + ")", 1})
	}
	return out, true, nil
}

func toInts(repl map[string]string) map[string]int {
	out := map[string]int{}
	for k, v := range repl {
		if k == "class" || k == "replication_factor" {
			continue
		}
		n, _ := strconv.Atoi(v)
		out[k] = n
	}
	return out
}

func (m *migrator) records(ctx context.Context, keyspaceExists bool) (map[int]record, error) {
	out := map[int]record{}
	if !keyspaceExists {
		return out, nil
	}
	var n int
	if err := m.s.Query("SELECT count(*) FROM system_schema.tables WHERE keyspace_name = ? AND table_name = 'schema_migrations'", m.ks).
		Consistency(gocql.One).ScanContext(ctx, &n); err != nil {
		return nil, fmt.Errorf("reading %s.schema_migrations: %w", m.ks, err)
	}
	if n == 0 {
		return out, nil
	}
	it := m.s.Query(fmt.Sprintf("SELECT version, name, checksum, status, applied_by, applied_at, error FROM %s.schema_migrations", m.ks)).
		Consistency(gocql.Quorum).IterContext(ctx)
	var r record
	for it.Scan(&r.version, &r.name, &r.checksum, &r.status, &r.by, &r.at, &r.errText) {
		out[r.version] = r
	}
	if err := it.Close(); err != nil {
		if strings.Contains(err.Error(), "does not exist") {
			// Another process created it a moment ago: system_schema lists it before this
			// coordinator can read it. Nothing is recorded yet; the records are read again
			// under the lease, after this process's own bookkeeping.
			return out, nil
		}
		return nil, fmt.Errorf("reading %s.schema_migrations: %w", m.ks, err)
	}
	return out, nil
}

func (m *migrator) pending(records map[int]record) ([]Migration, error) {
	var out []Migration
	for _, mg := range m.migs {
		r, ok := records[mg.Version]
		if ok && r.status == "applied" {
			if r.checksum != mg.Checksum {
				return nil, fmt.Errorf("migration %s was changed after it was applied (checksum %s, now %s): add a new migration instead",
					mg.Name, short(r.checksum), short(mg.Checksum))
			}
			continue
		}
		out = append(out, mg)
	}
	for v, r := range records {
		if v > len(m.migs) && r.status == "applied" {
			return nil, fmt.Errorf("the keyspace is at version %d (%s), newer than this binary (%d): use a newer policing", v, r.name, len(m.migs))
		}
	}
	return out, nil
}

func short(s string) string { return s[:min(12, len(s))] }

// ddlRetries: a schema statement that times out is sent again, up to this many times. A
// loaded node can take longer than the query timeout to apply a schema change; every
// statement of a migration is idempotent (IF NOT EXISTS, fixed table ids), so the driver may
// send it again (gocql retries only queries marked idempotent).
var ddlRetries = &gocql.SimpleRetryPolicy{NumRetries: 3}

func (m *migrator) exec(ctx context.Context, stmt string) error {
	if err := m.s.Query(stmt).Consistency(gocql.Quorum).Idempotent(true).RetryPolicy(ddlRetries).ExecContext(ctx); err != nil {
		return err
	}
	return m.s.AwaitSchemaAgreement(ctx)
}

func (m *migrator) bookkeeping(ctx context.Context) error {
	stmts := []string{
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s.schema_migrations (
			version int PRIMARY KEY, name text, checksum text, status text,
			applied_by text, applied_at timestamp, error text, statements int)
			WITH ID = %s`, m.ks, tableID(m.ks, "schema_migrations")),
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s.schema_migrations_lease (
			name text PRIMARY KEY, owner text, acquired_at timestamp)
			WITH ID = %s`, m.ks, tableID(m.ks, "schema_migrations_lease")),
	}
	for _, s := range stmts {
		if err := m.exec(ctx, s); err != nil {
			return fmt.Errorf("creating the migration tables: %w", err)
		}
	}
	return nil
}

func (m *migrator) mark(ctx context.Context, mg Migration, status, errText string) error {
	return m.s.Query(fmt.Sprintf(`INSERT INTO %s.schema_migrations (version, name, checksum, status, applied_by, applied_at, error, statements)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, m.ks),
		mg.Version, mg.Name, mg.Checksum, status, m.o.Owner, time.Now(), errText, len(mg.Statements)).
		Consistency(gocql.Quorum).ExecContext(ctx)
}

func (m *migrator) apply(ctx context.Context, mg Migration) error {
	if err := m.mark(ctx, mg, "running", ""); err != nil {
		return fmt.Errorf("migration %s: recording its start: %w", mg.Name, err)
	}
	for i, stmt := range mg.Statements {
		var err error
		if m.o.beforeStatement != nil {
			err = m.o.beforeStatement(ctx)
		}
		if err == nil {
			err = m.exec(ctx, qualify(stmt, m.ks))
		}
		if err != nil {
			msg := fmt.Sprintf("statement %d of %d: %v", i+1, len(mg.Statements), err)
			if leaseLost(ctx) != nil {
				// The record is the new holder's now: leave it alone ("running": retried later).
				return fmt.Errorf("migration %s: %s", mg.Name, msg)
			}
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			if merr := m.mark(rctx, mg, "failed", msg); merr != nil {
				msg += fmt.Sprintf(" (and recording the failure failed too: %v)", merr)
			}
			cancel()
			return fmt.Errorf("migration %s failed: %s", mg.Name, msg)
		}
	}
	if err := m.mark(ctx, mg, "applied", ""); err != nil {
		return fmt.Errorf("migration %s: recording it: %w", mg.Name, err)
	}
	m.say("migration %s: applied", mg.Name)
	return nil
}
