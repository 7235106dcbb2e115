package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The loader reports every error of a file at once, in file order, each with
// file:line:column, the key's path and, for a misspelled key, the nearest one (issue 33).
func TestLoaderReportsEveryErrorWithLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policing.yaml")
	text := `radius:
  authAdress: ":1812"
  workers: many
  duplicateWindow: soon
clients:
  name: bng
  address: 192.0.2.1
subscribers: {source: fyle, file: /s}
session:
  store: embedded
  embedded: {shards: 3}
log: {levle: debug}
`
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path, nil, nil)
	if err == nil {
		t.Fatal("a broken file was accepted")
	}
	want := []string{
		path + `:2:3: radius.authAdress: unknown key; did you mean authAddress?`,
		path + `:3:12: radius.workers: "many" is not a whole number`,
		path + `:4:20: radius.duplicateWindow: "soon" is not a duration`,
		path + `:6:3: clients: a mapping (key: value lines) where a list of mappings, each item starting with "- " belongs`,
		path + `:8:15: subscribers.source: "fyle" is not one of file, ldap`,
		path + `:11:14: session.embedded.shards: must be a power of two, got 3`,
		path + `:12:7: log.levle: unknown key; did you mean level?`,
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(want) {
		t.Errorf("got %d errors, want %d:\n%v", len(lines), len(want), err)
	}
	for i, w := range want {
		if i >= len(lines) || !strings.HasPrefix(lines[i], w) {
			t.Errorf("error %d:\n got %q\nwant %q...", i+1, lines[min(i, len(lines)-1)], w)
		}
	}
	if strings.Contains(err.Error(), "config.Client") || strings.Contains(err.Error(), "converting YAML to JSON") {
		t.Errorf("Go or JSON words in a user's error:\n%v", err)
	}
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != len(want) {
		t.Errorf("the error is not config.Errors of %d: %T", len(want), err)
	}
}

// A YAML syntax error says where in plain words.
func TestLoaderSyntaxError(t *testing.T) {
	for text, want := range map[string]string{
		"radius:\n  authAddress: \":1812\"\n workers: 3\n": ":3:2: YAML syntax error: did not find expected key (check this line's indentation)",
		"radius:\n\tworkers: 3\n":                          ":2:1: YAML syntax error: found character that cannot start any token (a tab: indent with spaces)",
		"radius:\n  authAddress: a: b\n":                   ":2:17: YAML syntax error: mapping values are not allowed in this context (a second \": \" on the line: quote the value)",
		"clients:\n  - name: a\n   address: b\n":           ":3:4: YAML syntax error: did not find expected '-' indicator",
		"log: {level: info}\nclients: [\n":                 ":2:1: YAML syntax error:",
		"radius:\n  authAddress: \"x\n":                    ":2:3: YAML syntax error: found unexpected end of stream (a quote or bracket opened here is not closed)",
	} {
		_, err := load(t, text, nil, nil)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "converting YAML to JSON") {
			t.Errorf("%q: %v\nwant %q", text, err, want)
		}
	}
}

// A validation error of a key set by an override names the override, not a line.
func TestLoaderOverrideSource(t *testing.T) {
	_, err := load(t, minimal, []string{"radius.workers=0"}, []string{"POLICING_LOG_LEVEL=loud"})
	if err == nil || !strings.Contains(err.Error(), "--set radius.workers: radius.workers: must be at least 1") ||
		!strings.Contains(err.Error(), "POLICING_LOG_LEVEL: log.level:") {
		t.Fatalf("%v", err)
	}
}

// Two clients of one name in the file: both entries and their lines.
func TestDuplicateClientNamesLines(t *testing.T) {
	_, err := load(t, `subscribers: {source: file, file: /s}
clients:
  - {name: bng, address: 192.0.2.1, secretFile: /a}
  - {name: bng, address: 192.0.2.2, secretFile: /b}
`, nil, nil)
	if err == nil || !strings.Contains(err.Error(), `:4:6: clients[1].name: "bng" is also the name of clients[0] (line 3)`) {
		t.Fatalf("%v", err)
	}
}

// Warnings: an unknown POLICING_* variable (with the nearest one) and a client CIDR with host
// bits set; neither is fatal.
func TestLoaderWarnings(t *testing.T) {
	path := writeConfig(t, `subscribers: {source: file, file: /s}
clients:
  - {name: core, address: 10.1.2.3/8, secretFile: /a}
`)
	cfg, warnings, err := LoadWithWarnings(path, nil, []string{"POLICING_RADIUS_WORKER=8", "POLICING_CONFIG=/x", "POLICING_ADMIN_TOKEN=t", "HOME=/root"})
	if err != nil || cfg == nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range warnings {
		got = append(got, w.Error())
	}
	want := []string{
		"environment: POLICING_RADIUS_WORKER: unknown variable: it sets no key and is ignored; did you mean POLICING_RADIUS_WORKERS?",
		path + ":3:18: clients[0].address: 10.1.2.3/8 has host bits set: it means 10.0.0.0/8",
	}
	if len(got) != len(want) {
		t.Fatalf("warnings %q, want %d", got, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("warning %d:\n got %q\nwant %q...", i, got[i], want[i])
		}
	}
}

func TestNearest(t *testing.T) {
	names := []string{"authAddress", "acctAddress", "workers", "queueSize"}
	for in, want := range map[string]string{"authAdress": "authAddress", "AuthAddress": "authAddress", "wrokers": "workers", "colour": ""} {
		if got := nearest(in, names); got != want {
			t.Errorf("nearest(%q) = %q, want %q", in, got, want)
		}
	}
}

// YAML merge keys load as before; a key written twice in one mapping is a warning (the last
// one counts, as before).
func TestLoaderMergeAndDuplicateKey(t *testing.T) {
	path := writeConfig(t, `subscribers: {source: file, file: /s}
radius:
  workers: 3
  workers: 4
clients:
  - &c {name: a, address: 192.0.2.1, secretFile: /a}
  - <<: *c
    name: b
    address: 192.0.2.2
`)
	cfg, warnings, err := LoadWithWarnings(path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Radius.Workers != 4 || len(cfg.Clients) != 2 || cfg.Clients[1].SecretFile != "/a" {
		t.Fatalf("workers %d, clients %+v", cfg.Radius.Workers, cfg.Clients)
	}
	if len(warnings) != 1 || !strings.HasPrefix(warnings[0].Error(), path+":4:3: radius.workers: written twice (also on line 3)") {
		t.Fatalf("warnings %v", warnings)
	}
}
