package migrate

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

//go:embed migrations/*.cql
var embedded embed.FS

// Migration is one versioned CQL file.
type Migration struct {
	Version    int
	Name       string // e.g. 0001_sessions
	Statements []string
	Checksum   string // sha256 of the file
}

var fileRE = regexp.MustCompile(`^(\d{4})_([a-z0-9_]+)\.cql$`)

// Migrations returns the embedded migrations in order.
func Migrations() ([]Migration, error) { return load(embedded, "migrations") }

func load(fsys fs.FS, dir string) ([]Migration, error) {
	ents, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, e := range ents {
		m := fileRE.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migration file %s: name must be NNNN_name.cql", e.Name())
		}
		raw, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		v, _ := strconv.Atoi(m[1])
		sum := sha256.Sum256(raw)
		stmts := SplitStatements(string(raw))
		if len(stmts) == 0 {
			return nil, fmt.Errorf("migration %s has no statement", e.Name())
		}
		out = append(out, Migration{
			Version: v, Name: strings.TrimSuffix(e.Name(), ".cql"),
			Statements: stmts, Checksum: hex.EncodeToString(sum[:]),
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i := range out {
		if out[i].Version != i+1 {
			return nil, fmt.Errorf("migration %s: versions must be 1, 2, 3... without gaps", out[i].Name)
		}
	}
	return out, nil
}

// SplitStatements removes -- comments and splits CQL text on semicolons.
func SplitStatements(text string) []string {
	var b strings.Builder
	for line := range strings.SplitSeq(text, "\n") {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	var out []string
	for s := range strings.SplitSeq(b.String(), ";") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Replication is a replication factor per DC, in the order given.
type Replication []DCFactor

// DCFactor is one DC's replication factor.
type DCFactor struct {
	DC string
	RF int
}

// ParseReplication parses "dc1:3,dc2:3".
func ParseReplication(s string) (Replication, error) {
	var out Replication
	seen := map[string]bool{}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		dc, rf, ok := strings.Cut(part, ":")
		if !ok || dc == "" {
			return nil, fmt.Errorf("--replication: %q is not dc:factor", part)
		}
		n, err := strconv.Atoi(rf)
		if err != nil || n < 0 || n > 9 {
			return nil, fmt.Errorf("--replication: %q: factor must be 0..9", part)
		}
		if seen[dc] {
			return nil, fmt.Errorf("--replication: %s given twice", dc)
		}
		seen[dc] = true
		out = append(out, DCFactor{dc, n})
	}
	if len(out) == 0 {
		return nil, errors.New("--replication: empty")
	}
	return out, nil
}

func (r Replication) String() string {
	var parts []string
	for _, f := range r {
		parts = append(parts, fmt.Sprintf("%s:%d", f.DC, f.RF))
	}
	return strings.Join(parts, ",")
}

func (r Replication) cql() string {
	parts := []string{"'class': 'NetworkTopologyStrategy'"}
	for _, f := range r {
		if f.RF > 0 {
			parts = append(parts, fmt.Sprintf("'%s': %d", strings.ReplaceAll(f.DC, "'", "''"), f.RF))
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func (r Replication) get(dc string) int {
	for _, f := range r {
		if f.DC == dc {
			return f.RF
		}
	}
	return 0
}

var tableRE = regexp.MustCompile(`(?i)^(CREATE\s+TABLE\s+IF\s+NOT\s+EXISTS|CREATE\s+TABLE|ALTER\s+TABLE|DROP\s+TABLE\s+IF\s+EXISTS|DROP\s+TABLE|CREATE\s+TYPE\s+IF\s+NOT\s+EXISTS|CREATE\s+TYPE)\s+([a-z_][a-z0-9_]*)\b`)

// qualify prefixes the table of a DDL statement with the keyspace: migrations name tables
// without a keyspace so that the same files serve any keyspace.
func qualify(stmt, ks string) string {
	if loc := tableRE.FindStringSubmatchIndex(stmt); loc != nil {
		return stmt[:loc[4]] + ks + "." + stmt[loc[4]:]
	}
	return stmt
}
