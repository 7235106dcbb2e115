package docs

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openaaa/openaaa/internal/testenv"
)

// TestQuickStartDemo runs README.md's first Quick start command, `make demo`, as a reader
// does from the repository's root: it must end with status 0 (hack/demo.sh fails on any step
// that does not end as it says) and show what the README promises — the load report, the
// admin API refusing a request without its token, and a line per EAP method. Two things
// differ from a reader's run: the binaries go to a directory of the test's (BIN: the suite's
// other tests may be running bin/policing), and the ports are free ones (another process on
// this machine may hold the demo's). `make demo STORE=cassandra` and `make cluster-demo` are
// not run here: their steps are the Cassandra and cluster tests' (test/clusterdemo checks the
// cluster demo's script against stand-ins).
func TestQuickStartDemo(t *testing.T) {
	root := testenv.Root(t)
	body := markedBlocks(t, root, "README.md", "quickstart")[0].Body
	if !strings.Contains(body, "make demo ") {
		t.Fatalf("README.md's Quick start does not run `make demo`:\n%s", body)
	}
	if testing.Short() && !testenv.Required() {
		t.Skip("-short: make demo builds and runs policing, aaa-loadgen, eapol_test and radclient")
	}
	testenv.LookPath(t, "eapol_test", "wpa_supplicant's eapol_test: make provision")
	testenv.LookPath(t, "radclient", "FreeRADIUS's freeradius-utils: make provision")
	testenv.LookPath(t, "curl", "apt-get install curl")

	auth := testenv.FreeUDPPorts(t, 2)
	bin := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "-C", root, "--no-print-directory", "demo", "BIN="+bin)
	cmd.Env = append(os.Environ(), fmt.Sprintf("AUTH_PORT=%d", auth), fmt.Sprintf("ACCT_PORT=%d", auth+1),
		fmt.Sprintf("ADMIN_PORT=%d", testenv.FreePort(t)))
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make demo: %v after %s\n%s", err, time.Since(start).Round(time.Second), out)
	}
	t.Logf("make demo: %s", time.Since(start).Round(time.Second))
	for _, want := range []string{
		"==> driving 300 sessions", "==> the admin API without its token: refused", "HTTP 401",
		"==> EAP with eapol_test", "EAP-TLS", "EAP-AKA'", "MS-CHAPv2",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("make demo's output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(bin, "policing")); err != nil {
		t.Errorf("make demo did not build into BIN: %v", err)
	}
}
