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

// TestQuickStartDemo runs README.md's Quick start commands `make demo` and `make demo
// STORE=cassandra` as a reader does from the repository's root: each must end with status 0
// (hack/demo.sh fails on any step that does not end as it says) and show what the README
// promises — the load report, the admin API refusing a request without its token, and a line
// per EAP method. Two things differ from a reader's run: the binaries go to a directory of
// the test's (BIN: the suite's other tests may be running bin/policing), and the ports are
// free ones (another process on this machine may hold the demo's, or its Cassandra's).
// `make cluster-demo` is not run here: its steps are the cluster tests' (and test/clusterdemo
// checks its script against stand-ins).
func TestQuickStartDemo(t *testing.T) {
	root := testenv.Root(t)
	body := markedBlocks(t, root, "README.md", "quickstart")[0].Body
	if testing.Short() && !testenv.Required() {
		t.Skip("-short: make demo builds and runs policing, aaa-loadgen, eapol_test and radclient")
	}
	testenv.LookPath(t, "eapol_test", "wpa_supplicant's eapol_test: make provision")
	testenv.LookPath(t, "radclient", "FreeRADIUS's freeradius-utils: make provision")
	testenv.LookPath(t, "curl", "apt-get install curl")
	bin := t.TempDir()
	for _, c := range []struct {
		command string
		env     []string
		want    []string
	}{
		{"make demo", nil, []string{"==> starting policing (embedded store)"}},
		{"make demo STORE=cassandra", []string{
			fmt.Sprintf("CASSANDRA_CQL_PORT=%d", testenv.FreePort(t)), fmt.Sprintf("CASSANDRA_STORAGE_PORT=%d", testenv.FreePort(t)),
			fmt.Sprintf("CASSANDRA_JMX_PORT=%d", testenv.FreePort(t))},
			[]string{"==> starting one Cassandra node", "==> starting policing (cassandra store)"}},
	} {
		t.Run(c.command, func(t *testing.T) {
			if !strings.Contains(body, c.command+" ") {
				t.Fatalf("README.md's Quick start does not run `%s`:\n%s", c.command, body)
			}
			auth := testenv.FreeUDPPorts(t, 2)
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
			defer cancel()
			// The README's words after `make`, then the test's BIN.
			args := append([]string{"-C", root, "--no-print-directory"}, strings.Fields(strings.TrimPrefix(c.command, "make "))...)
			cmd := exec.CommandContext(ctx, "make", append(args, "BIN="+bin)...)
			cmd.Env = append(append(os.Environ(), c.env...), fmt.Sprintf("AUTH_PORT=%d", auth), fmt.Sprintf("ACCT_PORT=%d", auth+1),
				fmt.Sprintf("ADMIN_PORT=%d", testenv.FreePort(t)))
			start := time.Now()
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v after %s\n%s", c.command, err, time.Since(start).Round(time.Second), out)
			}
			t.Logf("%s: %s", c.command, time.Since(start).Round(time.Second))
			for _, want := range append(c.want, "==> driving 300 sessions", "==> the admin API without its token: refused", "HTTP 401",
				"==> EAP with eapol_test", "EAP-TLS", "EAP-AKA'", "MS-CHAPv2") {
				if !strings.Contains(string(out), want) {
					t.Errorf("%s: the output lacks %q:\n%s", c.command, want, out)
				}
			}
			if _, err := os.Stat(filepath.Join(bin, "policing")); err != nil {
				t.Errorf("%s did not build into BIN: %v", c.command, err)
			}
		})
	}
}
