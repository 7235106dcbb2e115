package docs

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/openaaa/openaaa/internal/testenv"
)

// loopbackSample is the configuration README.md's "Run policing on this machine" starts.
const loopbackSample = "config/samples/policing/loopback.yaml"

// TestLoopbackRecipe runs README.md's two blocks marked `<!-- test: loopback -->` with bash, as
// a reader would from the repository's root: the first writes the files the loopback sample
// names, checks the configuration and starts policing in the background; the second sends an
// Access-Request and an Accounting-Start with radclient, reads the session back from the admin
// API and stops policing. Three things differ from a reader's run: `make build` is left out
// (the test builds bin/policing itself, with the suite's build flags), the blocks run in a
// directory of their own (config/ linked to the repository's, so tmp/ and bin/ are the test's),
// and the sample's addresses become free ports (POLICING_* variables for serve, the same
// addresses replaced in the blocks): another process on this machine may hold 1812 or 9812.
func TestLoopbackRecipe(t *testing.T) {
	root := testenv.Root(t)
	blocks := markedBlocks(t, root, "README.md", "loopback")
	start, try := blocks[0].Body, blocks[1].Body
	if testing.Short() && !testenv.Required() {
		t.Skip("-short: the README's loopback blocks build and start policing")
	}
	testenv.LookPath(t, "radclient", "FreeRADIUS's freeradius-utils: make provision")
	testenv.LookPath(t, "curl", "apt-get install curl")

	// The addresses the sample listens on, which the blocks must name as they are.
	raw, err := os.ReadFile(filepath.Join(root, loopbackSample))
	if err != nil {
		t.Fatal(err)
	}
	var sample struct {
		Radius struct{ AuthAddress, AcctAddress string }
		Admin  struct{ Address string }
	}
	if err := yaml.Unmarshal(raw, &sample); err != nil {
		t.Fatalf("%s: %v", loopbackSample, err)
	}
	if !strings.Contains(start, loopbackSample) {
		t.Fatalf("%s does not start policing with %s:\n%s", blocks[0].Name(), loopbackSample, start)
	}
	if !strings.Contains(start, "make build") {
		t.Fatalf("%s: no `make build` (the test stands in for it):\n%s", blocks[0].Name(), start)
	}

	work := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(work, "bin", "policing"), "./services/policing")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build policing: %v\n%s", err, out)
	}
	if err := os.Symlink(filepath.Join(root, "config"), filepath.Join(work, "config")); err != nil {
		t.Fatal(err)
	}

	free := map[string]string{ // the sample's address → a free one on loopback
		sample.Radius.AuthAddress: "127.0.0.1:" + strconv.Itoa(testenv.FreeUDPPort(t)),
		sample.Radius.AcctAddress: "127.0.0.1:" + strconv.Itoa(testenv.FreeUDPPort(t)),
		sample.Admin.Address:      "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t)),
	}
	for from, to := range free {
		if !strings.Contains(try, from) {
			t.Fatalf("%s does not name %s, where %s listens:\n%s", blocks[1].Name(), from, loopbackSample, try)
		}
		try = strings.ReplaceAll(try, from, to)
	}
	var lines []string
	for _, l := range strings.Split(start, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "make ") {
			lines = append(lines, l)
		}
	}
	script := strings.Join(lines, "\n") + "policing=$!\n" +
		"for _ in $(seq 1 100); do curl -fs http://" + free[sample.Admin.Address] + "/readyz >/dev/null && break; sleep 0.1; done\n" +
		try +
		"wait $policing\n" // policing's exit status, 0 after a clean drain (by PID: the job may be gone)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := testenv.RunBash(ctx, t, work, append(os.Environ(),
		"POLICING_RADIUS_AUTHADDRESS="+free[sample.Radius.AuthAddress],
		"POLICING_RADIUS_ACCTADDRESS="+free[sample.Radius.AcctAddress],
		"POLICING_ADMIN_ADDRESS="+free[sample.Admin.Address]), script)
	if err != nil {
		t.Fatalf("the README's loopback blocks failed: %v\n%s", err, out)
	}
	for _, want := range []string{"Received Access-Accept", "Received Accounting-Response", `"userName": "alice"`, `"state": "active"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q (what the README says the blocks show):\n%s", want, out)
		}
	}
}

// markedBlocks returns the blocks of file marked `<!-- test: tag -->`, as many as the marked
// table says, or fails t.
func markedBlocks(t *testing.T, root, file, tag string) []testenv.DocBlock {
	t.Helper()
	blocks, err := testenv.DocBlocks(filepath.Join(root, file), file, tag)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range marked {
		if m.file == file && m.tag == tag {
			if len(blocks) != m.n {
				t.Fatalf("%s: %d blocks marked <!-- test: %s -->, want %d", file, len(blocks), tag, m.n)
			}
			return blocks
		}
	}
	t.Fatalf("%s <!-- test: %s -->: not in the marked table", file, tag)
	return nil
}
