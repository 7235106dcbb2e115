package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/openaaa/openaaa/controllers"
	"github.com/openaaa/openaaa/internal/testenv"
)

// crdDefault returns the schema default of a dotted field path (spec.radius.authPort) of the
// AAACluster CRD, and whether it has one.
func crdDefault(t *testing.T, root, path string) (any, bool) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "config", "crd", "bases", "aaa.openaaa.io_aaaclusters.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &crd); err != nil || len(crd.Spec.Versions) == 0 {
		t.Fatalf("the AAACluster CRD: %v", err)
	}
	node := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	for _, name := range strings.Split(path, ".") {
		props, _ := node["properties"].(map[string]any)
		next, ok := props[name].(map[string]any)
		if !ok {
			return nil, false
		}
		node = next
	}
	d, ok := node["default"]
	return d, ok
}

// TestOperatorPorts: each row of docs/security.md's port tables that names an AAACluster field
// (`spec.radius.authPort`) gives that field's schema default; the rows of the ports the
// operator fixes in code (the admin port, EAP forwarding) give the operator's constants.
func TestOperatorPorts(t *testing.T) {
	root := testenv.Root(t)
	raw, err := os.ReadFile(filepath.Join(root, "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	// "| 1812/UDP (`spec.radius.authPort`) |", "| 9812/TCP (admin) |".
	row := regexp.MustCompile("(?m)^\\| ([0-9]+)/(?:UDP|TCP) \\(([^)]*)\\)")
	fixed := map[string]int32{"admin": controllers.AdminPort, "`eap-forward`": controllers.EAPForwardPort}
	spec := regexp.MustCompile("^`(spec\\.[A-Za-z.]+)`")
	checked := 0
	for _, m := range row.FindAllStringSubmatch(string(raw), -1) {
		port, what := m[1], m[2]
		if sm := spec.FindStringSubmatch(what); sm != nil {
			checked++
			d, ok := crdDefault(t, root, sm[1])
			if !ok {
				t.Errorf("docs/security.md: port %s: %s has no default in the AAACluster CRD", port, sm[1])
			} else if strconv.FormatFloat(d.(float64), 'f', -1, 64) != port {
				t.Errorf("docs/security.md: port %s for %s, whose default is %v", port, sm[1], d)
			}
			continue
		}
		for prefix, want := range fixed {
			if strings.HasPrefix(what, prefix) {
				checked++
				if strconv.Itoa(int(want)) != port {
					t.Errorf("docs/security.md: port %s for %s; the operator uses %d", port, prefix, want)
				}
			}
		}
	}
	// authPort, acctPort, radsec, diameter, diameter TLS, EAP forwarding, admin twice.
	if checked < 8 {
		t.Errorf("docs/security.md: %d port rows checked, want at least 8 (the table's format changed?)", checked)
	}
}
