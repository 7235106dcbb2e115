package app

// Helpers for the tests against real FreeRADIUS peers (proxy_test.go, coa_test.go,
// radsec_test.go): FreeRADIUS instances through hack/freeradius.sh, radclient, a node
// started from a YAML text.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/services/policing/config"
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

func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// radclient sends one request and returns radclient's output (-x: attributes shown).
func radclientSend(t *testing.T, server, command, secret string, tries int, attrs ...string) string {
	t.Helper()
	bin := testenv.LookPath(t, "radclient", "Debian freeradius-utils")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-x", "-r", fmt.Sprint(tries), "-t", "2", server, command, secret)
	cmd.Stdin = strings.NewReader(strings.Join(attrs, "\n") + "\n")
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// edgeNode starts a node from a YAML text in which {{dir}} is the test directory; the
// secret file "secret" holds radclientSecret, "subs.yaml" the subscribers.
const radclientSecret = "testing123"

func edgeNode(t *testing.T, dir, cfgText string, subs string) *Node {
	t.Helper()
	must(t, os.WriteFile(filepath.Join(dir, "secret"), []byte(radclientSecret+"\n"), 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "subs.yaml"), []byte(subs), 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "admin-token"), []byte(adminToken+"\n"), 0o600))
	cfgText = strings.ReplaceAll(cfgText, "{{dir}}", dir)
	must(t, os.WriteFile(filepath.Join(dir, "policing.yaml"), []byte(cfgText), 0o600))
	cfg, err := config.Load(filepath.Join(dir, "policing.yaml"), nil, nil)
	must(t, err)
	level := new(slog.LevelVar)
	var log *slog.Logger
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	} else {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	n, err := Start(context.Background(), cfg, log, level)
	must(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = n.Shutdown(ctx)
	})
	return n
}

// eventually polls cond every 100 ms until it holds or the (generous) deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// metricValue reads one series from the node's /metrics.
func metricValue(t *testing.T, n *Node, series string) float64 {
	t.Helper()
	return testenv.Metric(t, n.Addr("admin.address").String(), series)
}

// metricSum sums a series over nodes: each node's /metrics counts only what it did.
func metricSum(t *testing.T, nodes []*Node, series string) float64 {
	t.Helper()
	var sum float64
	for _, n := range nodes {
		sum += metricValue(t, n, series)
	}
	return sum
}

// writeAtomically replaces a file the way a Secret volume update does (write + rename).
func writeAtomically(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	must(t, os.WriteFile(tmp, data, 0o600))
	must(t, os.Rename(tmp, path))
}
