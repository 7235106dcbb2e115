// Package docs checks the documentation against the code without a cluster: every block marked
// for a test is found, and every make target they run exists; the Quick start's `make demo`
// runs (quickstart_test.go; not the whole block: `make test` inside `make test` would recurse,
// `make cluster-demo`'s steps are the cluster tests'); README.md's loopback
// recipe runs (loopback_test.go); docs/hot-reload.md names the reload kinds the code watches
// (reload_test.go); docs/security.md's ports are the operator's defaults (ports_test.go).
// policing's own defaults and samples are checked beside its config package
// (services/policing/config/docs_test.go). The cluster blocks run on the local
// cluster in test/cluster (docs_test.go) and test/cluster/lifecycle.
package docs

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/openaaa/openaaa/internal/testenv"
)

// The marked blocks: file, tag, how many.
var marked = []struct {
	file, tag string
	n         int
}{
	{"README.md", "quickstart", 1},
	{"docs/kubernetes.md", "cluster-doc", 1},
	{"README.md", "loopback", 2},
	{"docs/local-cluster.md", "cluster-lifecycle", 1},
	{"docs/local-cluster.md", "cluster-doc", 1},
	{"docs/argocd.md", "argocd-health", 1},
}

// TestDocBlocksMakeTargets: the Quick start's commands, and those of the blocks the cluster
// tests run, are make targets — `make -n TARGET` knows them — and the Quick start's are in
// `make help` (documented with ##).
func TestDocBlocksMakeTargets(t *testing.T) {
	root := testenv.Root(t)
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	help, err := exec.Command("make", "-C", root, "--no-print-directory", "help").CombinedOutput()
	if err != nil {
		t.Fatalf("make help: %v\n%s", err, help)
	}
	// make help colours the names: \033[36mNAME\033[0m.
	plain := regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(string(help), "")
	checked := map[string]bool{}
	for _, m := range marked {
		found := 0
		for _, b := range markedBlocks(t, root, m.file, m.tag) {
			targets := testenv.MakeTargets(b.Body)
			found += len(targets)
			for _, target := range targets {
				if m.tag == "quickstart" && !regexp.MustCompile(`(?m)^\s+`+regexp.QuoteMeta(target)+`\s`).MatchString(plain) {
					t.Errorf("%s: make %s is not in `make help` (a target with a ## comment)", b.Name(), target)
				}
				if checked[target] {
					continue
				}
				checked[target] = true
				// -n: print the recipes, run none.
				out, err := exec.Command("make", "-C", root, "--no-print-directory", "-n", target).CombinedOutput()
				if err != nil || strings.Contains(string(out), "No rule to make target") {
					t.Errorf("%s: make %s: %v\n%s", b.Name(), target, err, out)
				}
			}
		}
		if found == 0 {
			t.Errorf("%s, blocks marked <!-- test: %s -->: no make command found", m.file, m.tag)
		}
	}
	t.Logf("make targets of the marked blocks: %d", len(checked))
}

// TestDocBlocksParse: every marked block is valid bash (bash -n), as the tests run them.
func TestDocBlocksParse(t *testing.T) {
	root := testenv.Root(t)
	for _, m := range marked {
		for _, b := range markedBlocks(t, root, m.file, m.tag) {
			cmd := exec.Command("bash", "-n")
			cmd.Stdin = strings.NewReader(b.Body)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s: bash -n: %v\n%s", b.Name(), err, out)
			}
		}
	}
}
