package charts

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

const (
	valuesBegin = "<!-- values:begin (generated from values.yaml by `go test ./test/charts -update`) -->"
	valuesEnd   = "<!-- values:end -->"
)

// value is one documented key of values.yaml.
type value struct {
	path, typ, def, doc string
}

// documentedValues walks values.yaml: a key with a `# --` comment is documented (its value,
// whatever its type, is the default); a key without one must be a map of documented keys.
func documentedValues(t *testing.T, chart string) []value {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(), "charts", chart, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var out []value
	var walk func(prefix string, m *yaml.Node)
	walk = func(prefix string, m *yaml.Node) {
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], m.Content[i+1]
			path := prefix + k.Value
			comment := docComment(k.HeadComment)
			if comment == "" {
				if v.Kind == yaml.MappingNode && len(v.Content) > 0 {
					walk(path+".", v)
					continue
				}
				t.Errorf("%s values.yaml: %s has no `# --` comment", chart, path)
				continue
			}
			var x any
			if err := v.Decode(&x); err != nil {
				t.Fatal(err)
			}
			def, _ := json.Marshal(x)
			out = append(out, value{path: path, typ: typeOf(x), def: string(def), doc: comment})
		}
	}
	walk("", doc.Content[0])
	return out
}

// docComment returns the text of the last `# --` comment block of a head comment.
func docComment(head string) string {
	lines := strings.Split(head, "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "# --") {
			start = i
		}
	}
	if start < 0 {
		return ""
	}
	var parts []string
	for i, l := range lines[start:] {
		l = strings.TrimSpace(l)
		if i == 0 {
			l = strings.TrimPrefix(l, "# --")
		} else {
			l = strings.TrimPrefix(l, "#")
		}
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, " ")
}

func typeOf(x any) string {
	switch x.(type) {
	case string:
		return "string"
	case bool:
		return "bool"
	case int, int64, float64:
		return "int"
	case []any:
		return "list"
	case map[string]any:
		return "object"
	}
	return "any"
}

func valuesTable(values []value) string {
	var b strings.Builder
	b.WriteString(valuesBegin + "\n")
	b.WriteString("| Key | Type | Default | Description |\n|-----|------|---------|-------------|\n")
	for _, v := range values {
		def := strings.ReplaceAll(v.def, "|", "\\|")
		fmt.Fprintf(&b, "| `%s` | %s | `%s` | %s |\n", v.path, v.typ, def, strings.ReplaceAll(v.doc, "|", "\\|"))
	}
	b.WriteString(valuesEnd)
	return b.String()
}

// TestValuesDocumented keeps each chart's README table equal to the commented values.yaml
// (-update rewrites it) and values.schema.json in step with values.yaml.
func TestValuesDocumented(t *testing.T) {
	for _, chart := range []string{"openaaa-operator", "aaacluster"} {
		t.Run(chart, func(t *testing.T) {
			values := documentedValues(t, chart)
			readme := filepath.Join(repoRoot(), "charts", chart, "README.md")
			raw, err := os.ReadFile(readme)
			if err != nil {
				t.Fatal(err)
			}
			s := string(raw)
			i, j := strings.Index(s, valuesBegin), strings.Index(s, valuesEnd)
			if i < 0 || j < i {
				t.Fatalf("%s: no values markers", readme)
			}
			updated := s[:i] + valuesTable(values) + s[j+len(valuesEnd):]
			if *update {
				if err := os.WriteFile(readme, []byte(updated), 0o644); err != nil {
					t.Fatal(err)
				}
			} else if updated != s {
				t.Errorf("%s: the values table is out of date; run go test ./test/charts -update", readme)
			}

			var schema map[string]any
			b, err := os.ReadFile(filepath.Join(repoRoot(), "charts", chart, "values.schema.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &schema); err != nil {
				t.Fatal(err)
			}
			documented := map[string]bool{}
			for _, v := range values {
				documented[v.path] = true
				if schemaAt(schema, v.path) == nil {
					t.Errorf("values.schema.json has no property %s", v.path)
				}
			}
			// every schema property is a value (or inside a documented one)
			var walk func(prefix string, s map[string]any)
			walk = func(prefix string, s map[string]any) {
				props, _ := s["properties"].(map[string]any)
				keys := make([]string, 0, len(props))
				for k := range props {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for _, k := range keys {
					p := prefix + k
					if p == "global" || documented[p] {
						continue
					}
					sub, _ := props[k].(map[string]any)
					if _, nested := sub["properties"]; nested && sub["type"] == "object" {
						walk(p+".", sub)
						continue
					}
					t.Errorf("values.schema.json property %s is not in values.yaml", p)
				}
			}
			walk("", schema)
			if schema["additionalProperties"] != false {
				t.Error("values.schema.json must forbid unknown top-level values (additionalProperties: false)")
			}
		})
	}
}

func schemaAt(s map[string]any, path string) map[string]any {
	for _, k := range strings.Split(path, ".") {
		props, _ := s["properties"].(map[string]any)
		next, ok := props[k].(map[string]any)
		if !ok {
			return nil
		}
		s = next
	}
	return s
}
