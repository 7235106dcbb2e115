package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openaaa/openaaa/internal/cassandratest"
	"github.com/openaaa/openaaa/internal/testenv"
)

func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// buildBinaries builds policing and aaa-loadgen from this tree into a temporary directory.
func buildBinaries(t *testing.T, root string) (policing, loadgen string) {
	t.Helper()
	dir := t.TempDir()
	for _, b := range []struct{ out, pkg string }{{"policing", "./services/policing"}, {"aaa-loadgen", "./services/loadgen"}} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, b.out), b.pkg)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b.pkg, err, out)
		}
	}
	return filepath.Join(dir, "policing"), filepath.Join(dir, "aaa-loadgen")
}

// cassandraSubnet: the package's nodes listen on 127.0.<cassandraSubnet>.i, with a lock of
// their own: this package, the longest of `make test`, does not queue behind the single-node
// packages on 127.0.0.1 (internal/cassandratest StartOn).
const cassandraSubnet = 1

// startCluster starts n Cassandra nodes (node i on 127.0.<cassandraSubnet>.i, dc<i>) through
// internal/cassandratest: its ports and its lock, and acknowledged writes on disk (the test
// SIGKILLs a node).
func startCluster(t *testing.T, n int) *cassandratest.Cluster {
	t.Helper()
	testenv.Need(t, cassandratest.Available() == nil, "Java 17 and the Cassandra jars (make cassandra-jars)")
	start := time.Now()
	c, err := cassandratest.StartOn(cassandraSubnet, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping the cluster: %v", err)
		}
	})
	t.Logf("cassandra: %d nodes up in %s (lock wait included)", n, time.Since(start).Round(100*time.Millisecond))
	return c
}

func contactPoint(i int) string {
	return fmt.Sprintf("127.0.%d.%d:%d", cassandraSubnet, i, cassandratest.CQLPort)
}

// freePorts returns n loopback ports that were free a moment ago (UDP and TCP).
func freePorts(t *testing.T, n int) []int { return testenv.FreeTCPUDPPorts(t, n) }

// policing is one policing process (one DC).
type policing struct {
	t          *testing.T
	bin        string
	name       string
	config     string
	logFile    string
	auth, acct int
	admin      int
	diameter   int
	cmd        *exec.Cmd
	done       chan struct{}
}

func (p *policing) target() string {
	return fmt.Sprintf("%s=127.0.0.1:%d/%d", p.name, p.auth, p.acct)
}

// e2eAdminToken is the admin API bearer token of the policing processes these tests run.
const e2eAdminToken = "e2e-admin-token-0123456789abcdef"

func (p *policing) adminURL(path string) string {
	return fmt.Sprintf("http://127.0.0.1:%d%s", p.admin, path)
}

// call calls policing's admin API with the test token; body (when not nil) is sent as JSON,
// out (when not nil) gets the JSON answer. It returns the HTTP status.
func (p *policing) call(method, path string, body any, out any) int {
	p.t.Helper()
	var rd io.Reader = http.NoBody
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			p.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, p.adminURL(path), rd)
	if err != nil {
		p.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e2eAdminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil && resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			p.t.Fatalf("%s %s %s: the answer is not JSON: %v", p.name, method, path, err)
		}
	}
	return resp.StatusCode
}

func (p *policing) start() {
	p.t.Helper()
	logf, err := os.OpenFile(p.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	cmd := exec.Command(p.bin, "serve", "--config", p.config)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		p.t.Fatal(err)
	}
	p.cmd = cmd
	p.done = make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(p.done) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(p.adminURL("/readyz"))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-p.done:
			p.t.Fatalf("%s exited while starting:\n%s", p.name, p.logTail())
		default:
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s not ready after 60 s:\n%s", p.name, p.logTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (p *policing) running() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill SIGKILLs the process (a lost DC).
func (p *policing) kill() {
	if p.running() {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
	}
}

// stop drains it (SIGTERM), SIGKILL after 30 s.
func (p *policing) stop() {
	if !p.running() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.t.Errorf("%s did not stop on SIGTERM within 30 s", p.name)
		p.kill()
	}
}

func (p *policing) logTail() string {
	b, _ := os.ReadFile(p.logFile)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

// metric sums the samples of a metric family on the admin port (0 when absent).
func (p *policing) metric(name string) (float64, error) {
	c := &http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get(p.adminURL("/metrics"))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		if !strings.HasPrefix(rest, " ") && !strings.HasPrefix(rest, "{") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			sum += v
		}
	}
	return sum, sc.Err()
}

func (p *policing) mustMetric(name string) float64 {
	p.t.Helper()
	v, err := p.metric(name)
	if err != nil {
		p.t.Fatalf("%s %s: %v", p.name, name, err)
	}
	return v
}

// loadReport holds the fields of `aaa-loadgen run --json` the test reads.
type loadReport struct {
	Seconds       float64           `json:"seconds"`
	IncomingTPS   float64           `json:"incomingTPS"`
	AvgAuthMs     float64           `json:"avgAuthMs"`
	AvgAcctMs     float64           `json:"avgAcctMs"`
	Sent          uint64            `json:"sent"`
	Answered      uint64            `json:"answered"`
	Accepts       uint64            `json:"accepts"`
	Rejects       uint64            `json:"rejects"`
	AcctResponses uint64            `json:"acctResponses"`
	Timeouts      uint64            `json:"timeouts"`
	Retransmits   uint64            `json:"retransmissions"`
	Errors        uint64            `json:"errors"`
	Aborted       uint64            `json:"aborted"`
	Sessions      uint64            `json:"sessions"`
	SessionsDone  uint64            `json:"sessionsCompleted"`
	PerTarget     []uint64          `json:"perTarget"`
	ErrorSamples  map[string]uint64 `json:"errorSamples"`
}

// loadgenRun is a running aaa-loadgen.
type loadgenRun struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan error
}

func startLoadgen(t *testing.T, bin string, args ...string) *loadgenRun {
	t.Helper()
	return startLoadgenCommand(t, bin, "run", args...)
}

// startLoadgenCommand starts `aaa-loadgen COMMAND --json ARGS…` (run, gx).
func startLoadgenCommand(t *testing.T, bin, command string, args ...string) *loadgenRun {
	t.Helper()
	l := &loadgenRun{done: make(chan error, 1)}
	l.cmd = exec.Command(bin, append([]string{command, "--json"}, args...)...)
	l.cmd.Stdout, l.cmd.Stderr = &l.stdout, &l.stderr
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { l.done <- l.cmd.Wait() }()
	t.Cleanup(func() {
		if l.cmd.ProcessState == nil {
			_ = l.cmd.Process.Kill()
		}
	})
	return l
}

// wait waits for the report; interrupt first ends the run early (SIGINT: the loadgen
// reports what it counted).
func (l *loadgenRun) wait(t *testing.T, interrupt bool, limit time.Duration) *loadReport {
	t.Helper()
	var r loadReport
	l.waitJSON(t, interrupt, limit, &r)
	return &r
}

// waitJSON is wait for any command's JSON report.
func (l *loadgenRun) waitJSON(t *testing.T, interrupt bool, limit time.Duration, report any) {
	t.Helper()
	if interrupt {
		_ = l.cmd.Process.Signal(os.Interrupt)
	}
	select {
	case err := <-l.done:
		if err != nil {
			t.Fatalf("aaa-loadgen: %v\n%s", err, l.stderr.String())
		}
	case <-time.After(limit):
		_ = l.cmd.Process.Kill()
		<-l.done
		t.Fatalf("aaa-loadgen still running after %s", limit)
	}
	if err := json.Unmarshal(l.stdout.Bytes(), report); err != nil {
		t.Fatalf("aaa-loadgen report: %v\n%s", err, l.stdout.String())
	}
}

// eventually polls f until it returns nil or the time is up.
func eventually(ctx context.Context, limit time.Duration, every time.Duration, f func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(every)
	}
}
