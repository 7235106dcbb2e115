// Package testslapd runs a real OpenLDAP slapd on loopback for tests, through
// hack/slapd.sh (hand-written slapd.conf, back_mdb, subscribers loaded with ldapadd). Each
// server lives in the test's temporary directory and is stopped by PID when the test ends.
// When slapd is not installed the test skips, or fails under OPENAAA_INTEGRATION=require.
package testslapd

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/services/policing/config"
)

// Server is one running slapd.
type Server struct {
	Dir      string // instance directory (slapd.conf, data, tls/)
	URL      string // ldap://127.0.0.1:PORT (plain and StartTLS)
	LDAPSURL string // ldaps://127.0.0.1:PORT
	BaseDN   string // where subscribers are
	BindDN   string // the service account
	// BindPasswordFile and CAFile are the files a policing config points at.
	BindPasswordFile string
	CAFile           string

	script string
	env    []string
}

// Suffix of the test directory.
const Suffix = "dc=openaaa,dc=test"

// Start configures and starts slapd and loads subscribers user00001..userN (password
// pwNNNNN; see hack/slapd.sh for their profiles).
func Start(t testing.TB, subscribers int) *Server {
	t.Helper()
	_, err := os.Stat("/usr/sbin/slapd")
	_, err2 := exec.LookPath("ldapadd")
	testenv.Need(t, err == nil && err2 == nil, "OpenLDAP slapd and ldap-utils (hack/slapd.sh install)")
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	s := &Server{script: filepath.Join(root, "hack", "slapd.sh"), env: append(os.Environ(), "SLAPD_HOME="+home),
		Dir: filepath.Join(home, "t"), BaseDN: "ou=subscribers," + Suffix, BindDN: "cn=policing,ou=services," + Suffix}
	port, ldaps := testenv.FreePort(t), testenv.FreePort(t)
	s.URL = fmt.Sprintf("ldap://127.0.0.1:%d", port)
	s.LDAPSURL = fmt.Sprintf("ldaps://127.0.0.1:%d", ldaps)
	s.BindPasswordFile = filepath.Join(s.Dir, "bind-password")
	s.CAFile = filepath.Join(s.Dir, "tls", "ca.crt")
	s.run(t, "config", "t", "--port", strconv.Itoa(port), "--ldaps-port", strconv.Itoa(ldaps))
	t.Cleanup(func() { _, _ = s.exec("stop", "t") })
	s.Start(t)
	s.run(t, "load", "t", strconv.Itoa(subscribers))
	return s
}

// Start (re)starts a stopped server on the same ports and data.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	s.run(t, "start", "t")
}

// Stop stops slapd (SIGTERM by PID, then SIGKILL after 10 s).
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	s.run(t, "stop", "t")
}

// PID of the running slapd.
func (s *Server) PID(t testing.TB) int {
	t.Helper()
	out := s.run(t, "pid", "t")
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("slapd pid %q: %v", out, err)
	}
	return pid
}

// Pause freezes slapd (SIGSTOP): connections stay open, nothing is answered. Resume undoes it.
func (s *Server) Pause(t testing.TB) {
	t.Helper()
	pid := s.PID(t)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// The stop is asynchronous: wait until every thread is stopped (state T).
	deadline := time.Now().Add(2 * time.Second)
	for !allStopped(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("slapd %d not stopped after SIGSTOP", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func allStopped(pid int) bool {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			return false
		}
		// pid (comm) STATE ...: comm may hold spaces, so look after the last ')'.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 || i+2 >= len(b) || (b[i+2] != 'T' && b[i+2] != 't') {
			return false
		}
	}
	return true
}

// Resume continues a paused slapd (SIGCONT).
func (s *Server) Resume(t testing.TB) {
	t.Helper()
	if err := syscall.Kill(s.PID(t), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}

// Config returns the policing LDAP configuration for this server (defaults otherwise).
func (s *Server) Config() config.LDAP {
	c := config.Default().Subscribers.LDAP
	c.URLs = []string{s.URL}
	c.BindDN = s.BindDN
	c.BindPasswordFile = s.BindPasswordFile
	c.BaseDN = s.BaseDN
	c.CAFile = s.CAFile
	return c
}

func (s *Server) exec(args ...string) (string, error) {
	cmd := exec.Command(s.script, args...)
	cmd.Env = s.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (s *Server) run(t testing.TB, args ...string) string {
	t.Helper()
	start := time.Now()
	out, err := s.exec(args...)
	if err != nil {
		t.Fatalf("hack/slapd.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("hack/slapd.sh %s (%s): %s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond), strings.TrimSpace(out))
	return out
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "slapd.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("hack/slapd.sh not found above the working directory")
		}
		dir = parent
	}
}
