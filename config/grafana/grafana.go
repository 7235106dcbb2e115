// Package grafana embeds the Grafana dashboards of OpenAAA (openaaa-*.json), so that Go code
// (the operator's spec.monitoring.grafanaDashboards, tests) ships exactly the files in this
// directory. The openaaa-operator chart ships copies of them (charts/openaaa-operator/files/
// dashboards, kept in step by test/charts).
package grafana

import (
	"embed"
	"io/fs"
	"sort"
)

//go:embed openaaa-*.json
var files embed.FS

// Dashboards returns the dashboards by file name (e.g. openaaa-policing.json).
func Dashboards() map[string][]byte {
	out := map[string][]byte{}
	names, _ := fs.Glob(files, "openaaa-*.json")
	sort.Strings(names)
	for _, n := range names {
		b, err := files.ReadFile(n)
		if err != nil {
			panic(err) // embedded: cannot happen
		}
		out[n] = b
	}
	return out
}

// VariableQuery is the query of a template variable: its "query" field, a string in older
// dashboards, an object with a "query" string in newer ones.
func VariableQuery(query any) string {
	switch q := query.(type) {
	case string:
		return q
	case map[string]any:
		s, _ := q["query"].(string)
		return s
	}
	return ""
}
