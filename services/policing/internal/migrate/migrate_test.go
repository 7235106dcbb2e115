package migrate

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"testing/fstest"
)

func TestEmbeddedMigrations(t *testing.T) {
	migs, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(migs) < 2 || migs[0].Name != "0001_sessions" || migs[1].Name != "0002_history" {
		t.Fatalf("migrations: %+v", migs)
	}
	for _, m := range migs {
		for _, s := range m.Statements {
			up := strings.ToUpper(s)
			if strings.Contains(up, "MATERIALIZED VIEW") || strings.Contains(up, "CREATE INDEX") {
				t.Errorf("%s: no materialized views or secondary indexes: %s", m.Name, s)
			}
			if strings.HasPrefix(up, "CREATE TABLE") && !strings.Contains(up, "IF NOT EXISTS") {
				t.Errorf("%s: CREATE TABLE must be idempotent: %s", m.Name, s)
			}
		}
	}
}

func TestLoadRejectsGapsAndBadNames(t *testing.T) {
	if _, err := load(fstest.MapFS{"m/0001_a.cql": {Data: []byte("X;")}, "m/0003_b.cql": {Data: []byte("Y;")}}, "m"); err == nil {
		t.Fatal("a gap was accepted")
	}
	if _, err := load(fstest.MapFS{"m/1_a.cql": {Data: []byte("X;")}}, "m"); err == nil {
		t.Fatal("a bad name was accepted")
	}
}

func TestSplitStatements(t *testing.T) {
	got := SplitStatements("-- a comment; with a semicolon\nCREATE TABLE a (k int PRIMARY KEY);\n\n  ALTER TABLE a ADD v text -- trailing\n;\n")
	if len(got) != 2 || got[0] != "CREATE TABLE a (k int PRIMARY KEY)" || got[1] != "ALTER TABLE a ADD v text" {
		t.Fatalf("%q", got)
	}
}

func TestQualify(t *testing.T) {
	for in, want := range map[string]string{
		"CREATE TABLE IF NOT EXISTS sessions (k int)": "CREATE TABLE IF NOT EXISTS ks.sessions (k int)",
		"create table x (k int)":                      "create table ks.x (k int)",
		"ALTER TABLE sessions ADD v text":             "ALTER TABLE ks.sessions ADD v text",
		"DROP TABLE IF EXISTS old":                    "DROP TABLE IF EXISTS ks.old",
	} {
		if got := qualify(in, "ks"); got != want {
			t.Errorf("qualify(%q) = %q", in, got)
		}
	}
}

func TestParseReplication(t *testing.T) {
	r, err := ParseReplication("dc1:3, dc2:3")
	if err != nil || r.String() != "dc1:3,dc2:3" || r.cql() != "{'class': 'NetworkTopologyStrategy', 'dc1': 3, 'dc2': 3}" {
		t.Fatalf("%v %v %s", r, err, r.cql())
	}
	for _, bad := range []string{"", "dc1", "dc1:x", "dc1:3,dc1:2", ":3", "dc1:10"} {
		if _, err := ParseReplication(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if !sameReplication(Replication{{"dc2", 3}, {"dc1", 3}}, Replication{{"dc1", 3}, {"dc2", 3}, {"dc3", 0}}) {
		t.Fatal("order or zero factors should not matter")
	}
}

func TestTableIDIsStablePerKeyspace(t *testing.T) {
	a, b := tableID("ks1", "schema_migrations"), tableID("ks2", "schema_migrations")
	if a == b || a != tableID("ks1", "schema_migrations") || len(a) != 36 || a[14] != '5' {
		t.Fatalf("%s %s", a, b)
	}
}

func TestMainFlags(t *testing.T) {
	var out bytes.Buffer
	for _, args := range [][]string{
		{"--keyspace", "x"},                             // no --local-dc
		{"--local-dc", "dc1", "--keyspace", "bad-name"}, // invalid keyspace
		{"--local-dc", "dc1", "--replication", "dc1"},   // bad replication
		{"--local-dc", "dc1", "--username-file", "/nonexistent", "--password-file", "/nonexistent"},
		{"--local-dc", "dc1", "extra"},
	} {
		out.Reset()
		if code := Main(context.Background(), args, &out, &out); code != 2 {
			t.Errorf("%v: exit %d\n%s", args, code, out.String())
		}
	}
}
