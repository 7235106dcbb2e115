package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/openaaa/openaaa/internal/testenv"
)

// reloadKinds returns the kinds policing's code hands its file watcher: the string literal
// that is the first argument of every call of a method Watch or WatchFunc in the non-test
// files of services/policing (n.Reloader.Watch("certificates", ...)).
func reloadKinds(t *testing.T, root string) []string {
	t.Helper()
	fset := token.NewFileSet()
	var kinds []string
	err := filepath.WalkDir(filepath.Join(root, "services", "policing"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "Watch" && sel.Sel.Name != "WatchFunc") {
				return true
			}
			if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				kind, _ := strconv.Unquote(lit.Value)
				if !slices.Contains(kinds, kind) {
					kinds = append(kinds, kind)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(kinds)
	return kinds
}

// backticked returns the distinct `names` of s, sorted.
func backticked(s string) []string {
	var out []string
	for _, m := range regexp.MustCompile("`([a-z][a-z-]*)`").FindAllStringSubmatch(s, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	slices.Sort(out)
	return out
}

// TestReloadKinds: docs/hot-reload.md's table "What reloads" has a row for each kind the code
// watches, and no other; its metric's `kind` label lists the same kinds.
func TestReloadKinds(t *testing.T) {
	root := testenv.Root(t)
	code := reloadKinds(t, root)
	if len(code) == 0 {
		t.Fatal("no Watch or WatchFunc call with a literal kind found in services/policing")
	}
	raw, err := os.ReadFile(filepath.Join(root, "docs", "hot-reload.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)

	// The table's first cells: "| `clients` | files | on change |"; rows that name no kind in
	// backticks (the LDAP bind password, read anew by each connection) are not kinds.
	section, _, _ := strings.Cut(doc[strings.Index(doc, "## What reloads"):], "\n## ")
	var first strings.Builder
	for _, line := range strings.Split(section, "\n") {
		if cells := strings.Split(line, " | "); strings.HasPrefix(line, "| `") && len(cells) > 1 {
			first.WriteString(cells[0] + "\n")
		}
	}
	if table := backticked(first.String()); !slices.Equal(table, code) {
		t.Errorf("docs/hot-reload.md, What reloads: kinds %v; the code watches %v", table, code)
	}

	var metric string
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "| `openaaa_config_reloads_total") {
			metric = line
		}
	}
	_, labels, ok := strings.Cut(metric, "`kind`:")
	labels, _, _ = strings.Cut(labels, "`result`")
	if got := backticked(labels); !ok || !slices.Equal(got, code) {
		t.Errorf("docs/hot-reload.md, openaaa_config_reloads_total: kind %v; the code watches %v\n%s", got, code, metric)
	}
	t.Logf("reload kinds: %v", code)
}
