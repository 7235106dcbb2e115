package app

// Helpers for the tests against real FreeRADIUS peers (proxy_test.go, coa_test.go,
// radsec_test.go): FreeRADIUS instances through hack/freeradius.sh and a node
// started from a YAML text.

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

// frScript finds hack/freeradius.sh from the package directory.
func frScript(t *testing.T) string {
	t.Helper()
	dir, _ := os.Getwd()
	for range 8 {
		p := filepath.Join(dir, "hack", "freeradius.sh")
		if _, err := os.Stat(p); err == nil {
			return p
		}
		dir = filepath.Dir(dir)
	}
	t.Fatal("hack/freeradius.sh not found")
	return ""
}

// freeRADIUS is one instance of hack/freeradius.sh in a test directory.
type freeRADIUS struct {
	t      *testing.T
	script string
	home   string
	name   string
	port   int
}

func needFreeRADIUS(t *testing.T) {
	t.Helper()
	_, err := os.Stat("/usr/sbin/freeradius")
	testenv.Need(t, err == nil, "FreeRADIUS (hack/freeradius.sh install)")
	testenv.LookPath(t, "radclient", "Debian freeradius-utils: hack/freeradius.sh install")
}

// newFreeRADIUS writes the config of an instance (role and options as the script takes them)
// on a free port, starts it and stops it at the end of the test.
func newFreeRADIUS(t *testing.T, name string, opts ...string) *freeRADIUS {
	t.Helper()
	needFreeRADIUS(t)
	f := &freeRADIUS{t: t, script: frScript(t), home: t.TempDir(), name: name, port: testenv.FreeUDPPorts(t, 2)}
	f.run("config", append([]string{name, "--port", fmt.Sprint(f.port)}, opts...)...)
	f.start()
	t.Cleanup(f.stop)
	return f
}

func (f *freeRADIUS) run(cmd string, args ...string) string {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, "bash", append([]string{f.script, cmd}, args...)...)
	c.Env = append(os.Environ(), "FREERADIUS_HOME="+f.home)
	out, err := c.CombinedOutput()
	if err != nil {
		f.t.Fatalf("freeradius.sh %s %v: %v\n%s", cmd, args, err, out)
	}
	return string(out)
}

func (f *freeRADIUS) start()      { f.t.Helper(); f.run("start", f.name) }
func (f *freeRADIUS) stop()       { f.run("stop", f.name) }
func (f *freeRADIUS) dir() string { return filepath.Join(f.home, f.name) }
func (f *freeRADIUS) addr() string {
	return fmt.Sprintf("127.0.0.1:%d", f.port)
}

// detail returns the concatenated detail files of the instance (accounting or CoA).
func (f *freeRADIUS) detail() string {
	var b strings.Builder
	_ = filepath.Walk(filepath.Join(f.dir(), "radacct"), func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			raw, _ := os.ReadFile(p)
			b.Write(raw)
		}
		return nil
	})
	return b.String()
}

// detailRecords splits a detail file into records (blank-line separated).
func detailRecords(text string) []string {
	var out []string
	for _, r := range strings.Split(text, "\n\n") {
		if strings.TrimSpace(r) != "" {
			out = append(out, r)
		}
	}
	return out
}

// edgeNode starts a node from a YAML text in which {{dir}} is the test directory; the
// secret file "secret" holds radclientSecret, "subs.yaml" the subscribers.
const radclientSecret = "testing123"

func edgeNode(t *testing.T, dir, cfgText string, subs string) *Node {
	t.Helper()
	writeNodeFiles(t, dir, radclientSecret, subs)
	return StartYAML(t, dir, cfgText)
}

// metricSum sums a series over nodes: each node's /metrics counts only what it did.
func metricSum(t *testing.T, nodes []*Node, series string) float64 {
	t.Helper()
	var sum float64
	for _, n := range nodes {
		sum += Metric(t, n, series)
	}
	return sum
}
