package config

import (
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// Every scalar key a user can set must be documented (docs/*.md names it in backticks), so
// the reference stays true as keys are added.
func TestEveryKeyIsDocumented(t *testing.T) {
	docs := allDocs(t)
	for _, kv := range EnvNames() {
		if !strings.Contains(docs, "`"+kv[1]+"`") {
			t.Errorf("config key %s is not documented in docs/*.md", kv[1])
		}
	}
}

// allDocs returns every docs/*.md, one after the other.
func allDocs(t *testing.T) string {
	t.Helper()
	files, err := filepath.Glob("../../../docs/*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs found: %v", err)
	}
	var all strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
	}
	return all.String()
}

// readDoc returns docs/NAME (the repository's documentation, four levels up).
func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// listenDefaults returns the dotted key and value of every listen address that has a port by
// default (radius.authAddress ":1812", ...), walking Default() as the loader names its keys.
func listenDefaults(v reflect.Value, prefix string, out map[string]string) {
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		switch fv := v.Field(i); {
		case fv.Kind() == reflect.Struct:
			listenDefaults(fv, prefix+name+".", out)
		case fv.Kind() == reflect.String && strings.HasSuffix(strings.ToLower(name), "address"):
			if _, port, err := net.SplitHostPort(fv.String()); err == nil && port != "" {
				out[prefix+name] = fv.String()
			}
		}
	}
}

// keyRow returns the cells of the docs' table row whose first cell names key in backticks.
func keyRow(docs, key string) []string {
	for _, line := range strings.Split(docs, "\n") {
		if !strings.HasPrefix(line, "| ") {
			continue
		}
		cells := strings.Split(line, " | ")
		if len(cells) >= 2 && strings.Contains(cells[0], "`"+key+"`") {
			return cells
		}
	}
	return nil
}

// Every port policing listens on by default, and the CoA port it sends to, is the default the
// key tables of docs/*.md give and has its row in docs/security.md's port table.
func TestDocumentedPorts(t *testing.T) {
	docs := allDocs(t)
	security := readDoc(t, "security.md")

	listen := map[string]string{}
	listenDefaults(reflect.ValueOf(Default()), "", listen)
	if len(listen) == 0 {
		t.Fatal("no listen address with a default port found in Default()")
	}
	for key, value := range listen {
		row := keyRow(docs, key)
		if row == nil {
			t.Errorf("%s (default %q): no row `%s` in a key table of docs/*.md", key, value, key)
		} else if !strings.Contains(row[1], "`"+value+"`") {
			t.Errorf("%s: docs give the default %s, the code %q", key, row[1], value)
		}
		_, port, _ := net.SplitHostPort(value)
		if !strings.Contains(security, "\n| "+port+"/") {
			t.Errorf("%s: docs/security.md's port table has no row for port %s", key, port)
		}
	}

	coa := strconv.Itoa(DefaultCoAPort)
	if row := keyRow(docs, "coaPort"); row == nil || !strings.Contains(row[1], "`"+coa+"`") {
		t.Errorf("coaPort: docs give the default %q, the code %s", row, coa)
	}
	found := false
	for _, line := range strings.Split(security, "\n") {
		if strings.Contains(line, "`coaPort`") {
			found = true
			if !strings.Contains(line, coa) {
				t.Errorf("docs/security.md names coaPort without its default %s: %s", coa, line)
			}
		}
	}
	if !found {
		t.Error("docs/security.md does not name coaPort, where CoA goes out to")
	}
	t.Logf("listen defaults: %v; coaPort %s", listen, coa)
}

// samplesDir is the repository's config/ directory.
const samplesDir = "../../../config"

// policingSamples returns every policing configuration under config/: the YAML files most of
// whose top-level keys are keys of Config (Kubernetes objects, Helm values and subscriber files
// have others).
func policingSamples(t *testing.T) []string {
	t.Helper()
	keys := map[string]bool{}
	ct := reflect.TypeOf(Config{})
	for i := 0; i < ct.NumField(); i++ {
		name, _, _ := strings.Cut(ct.Field(i).Tag.Get("json"), ",")
		keys[name] = true
	}
	var out []string
	err := filepath.WalkDir(samplesDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (!strings.HasSuffix(path, ".yaml") && !strings.HasSuffix(path, ".yml")) {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var top map[string]any
		if yaml.Unmarshal(raw, &top) != nil || len(top) == 0 {
			return nil // several documents, or not a mapping: not a policing configuration
		}
		known := 0
		for k := range top {
			if keys[k] {
				known++
			}
		}
		if 2*known > len(top) { // a misspelled key or two still count it in, to fail its load
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Every policing configuration committed under config/ loads: known keys, valid values (the
// files it names are checked by `policing check-config`, which test/docs runs on the loopback
// sample as README.md does).
func TestSampleConfigsLoad(t *testing.T) {
	samples := policingSamples(t)
	for _, want := range []string{"policing.yaml", "loopback.yaml"} {
		if !slices.Contains(samples, filepath.Join(samplesDir, "samples", "policing", want)) {
			t.Errorf("config/samples/policing/%s is not taken for a policing configuration (found %v)", want, samples)
		}
	}
	for _, path := range samples {
		if _, err := Load(path, nil, nil); err != nil {
			t.Errorf("%s does not load:\n%v", path, err)
		}
	}
}

// config/samples/policing/policing.yaml says each of its keys is at its default except the
// clients, the subscriber file and the snapshot file: so it is.
func TestReferenceSampleAtDefaults(t *testing.T) {
	cfg, err := Load(filepath.Join(samplesDir, "samples", "policing", "policing.yaml"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	def := Default()
	cfg.Clients = def.Clients
	cfg.Subscribers.File = def.Subscribers.File
	cfg.Session.Embedded.SnapshotFile = def.Session.Embedded.SnapshotFile
	for _, d := range differences(reflect.ValueOf(*cfg), reflect.ValueOf(def), "") {
		t.Errorf("config/samples/policing/policing.yaml sets %s", d)
	}
}

// differences lists the keys where got and want differ, as "key: got, the default want"; an
// empty list and none are the same.
func differences(got, want reflect.Value, key string) []string {
	switch got.Kind() {
	case reflect.Struct:
		var out []string
		for i := 0; i < got.NumField(); i++ {
			name, _, _ := strings.Cut(got.Type().Field(i).Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			k := name
			if key != "" {
				k = key + "." + name
			}
			out = append(out, differences(got.Field(i), want.Field(i), k)...)
		}
		return out
	case reflect.Slice, reflect.Map:
		if got.Len() == 0 && want.Len() == 0 {
			return nil
		}
	}
	if !reflect.DeepEqual(got.Interface(), want.Interface()) {
		return []string{fmt.Sprintf("%s: %v, the default %v", key, got.Interface(), want.Interface())}
	}
	return nil
}
