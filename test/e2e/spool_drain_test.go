package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"layeh.com/radius"
	"layeh.com/radius/rfc2865"
	"layeh.com/radius/rfc2866"
)

// TestSpoolDeliveredToAnotherDCAtShutdown (issue 13, issue 12 item 4 at process level): a
// policing process of dc1 acknowledges accounting into its spool while no Cassandra node
// answers, and is told to stop (SIGTERM, as the kubelet does when a pod is deleted). Its own
// datacenter stays down; dc2's node comes back during the grace period. The spooled records
// land in dc2 (through session.cassandra.remoteDCs) and the process exits 0 well within the
// grace period — on Kubernetes the spool's emptyDir dies with the pod, so a record still in
// the spool at exit would be lost.
func TestSpoolDeliveredToAnotherDCAtShutdown(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	if !enabled() {
		t.Skip("end-to-end test: `make test-e2e` (OPENAAA_E2E=1) or OPENAAA_INTEGRATION=require runs it")
	}
	const (
		records = 20
		grace   = 150 * time.Second // radius.drainTimeout: the shutdown budget the operator derives from the grace period
	)
	root := repoRoot(t)
	policingBin, _ := buildBinaries(t, root)
	cl := startCluster(t, 2) // node 1 in dc1, node 2 in dc2
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ks := fmt.Sprintf("drain_%d", time.Now().Unix()%1000000)
	out, err := exec.CommandContext(ctx, policingBin, "migrate", "--contact-points", contactPoint(1), "--local-dc", "dc1",
		"--keyspace", ks, "--replication", "dc1:1,dc2:1", "--timeout", "3m").CombinedOutput()
	if err != nil {
		t.Fatalf("policing migrate: %v\n%s", err, out)
	}
	must(t, cl.FlushSchema(2)) // killed, then restarted

	work := t.TempDir()
	secret := "drain-secret"
	must(t, os.WriteFile(filepath.Join(work, "secret"), []byte(secret+"\n"), 0o600))
	must(t, os.WriteFile(filepath.Join(work, "subs.yaml"), []byte("subscribers:\n  - {username: alice, password: pw}\n"), 0o600))
	ports := freePorts(t, 3)
	p := &policing{t: t, bin: policingBin, name: "dc1", config: filepath.Join(work, "policing.yaml"),
		logFile: filepath.Join(work, "policing.log"), auth: ports[0], acct: ports[1], admin: ports[2]}
	must(t, os.WriteFile(p.config, []byte(fmt.Sprintf(`log: {level: info, format: json}
radius: {authAddress: "127.0.0.1:%d", acctAddress: "127.0.0.1:%d", drainTimeout: %s}
clients: [{name: lo, address: 127.0.0.1, secretFile: %s/secret, requireMessageAuthenticator: false}]
subscribers: {source: file, file: %s/subs.yaml}
session:
  store: cassandra
  cassandra:
    contactPoints: ["%s"]
    localDC: dc1
    remoteDCs: [{name: dc2, contactPoints: ["%s"]}]
    keyspace: %s
    timeout: 2s
    connectTimeout: 2s
    spool: {dir: %s/spool, replayInterval: 1s}
admin: {address: "127.0.0.1:%d"}
`, p.auth, p.acct, grace, work, work, contactPoint(1), contactPoint(2), ks, work, p.admin)), 0o600))
	p.start()
	defer func() {
		p.kill()
		if t.Failed() {
			t.Logf("---- policing log tail ----\n%s", p.logTail())
		}
	}()

	// No Cassandra answers: every record is acknowledged from the spool.
	must(t, cl.Kill(2))
	must(t, cl.Kill(1))
	for i := range records {
		sendAcct(t, p.acct, secret, fmt.Sprintf("drain-%02d", i), rfc2866.AcctStatusType_Value_Start)
	}
	if n := p.mustMetric("openaaa_spool_records"); n != records {
		t.Fatalf("spool holds %v records, want %d", n, records)
	}

	// SIGTERM: not ready at once, then dc2 returns while dc1 stays down.
	stopAt := time.Now()
	must(t, p.cmd.Process.Signal(syscall.SIGTERM))
	if err := eventually(ctx, 10*time.Second, 100*time.Millisecond, func() error {
		resp, err := http.Get(p.adminURL("/readyz"))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			return fmt.Errorf("/readyz %d", resp.StatusCode)
		}
		return nil
	}); err != nil {
		t.Fatalf("not unready while draining: %v", err)
	}
	must(t, cl.Restart(2))
	select {
	case <-p.done:
	case <-time.After(grace + 30*time.Second):
		t.Fatalf("policing still running %s after SIGTERM", time.Since(stopAt).Round(time.Second))
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("policing exited %d after SIGTERM, want 0 (everything delivered)", code)
	}
	took := time.Since(stopAt)
	if took >= grace {
		t.Errorf("the drain took %s, more than its budget of %s", took.Round(time.Second), grace)
	}
	t.Logf("drained and exited %s after SIGTERM (dc2's restart included)", took.Round(100*time.Millisecond))

	db := connect(t, 2, "dc2", ks)
	defer db.Close()
	rows := readSessions(t, db, gocql.LocalOne)
	for i := range records {
		id := fmt.Sprintf("drain-%02d", i)
		found := false
		for k, state := range rows {
			if k.ID == id && state == "active" {
				found = true
			}
		}
		if !found {
			t.Errorf("session %s acknowledged before the shutdown is not in dc2's Cassandra", id)
		}
	}
	logText, err := os.ReadFile(p.logFile)
	must(t, err)
	said := false
	for _, line := range strings.Split(string(logText), "\n") {
		if strings.Contains(line, "delivered at shutdown") {
			t.Logf("policing: %s", line)
		}
		if strings.Contains(line, `"msg":"delivered at shutdown","queue":"spool","records":20`) {
			said = true
		}
	}
	if !said {
		t.Errorf("the log does not say that the 20 spooled records were delivered at shutdown:\n%s", p.logTail())
	}
}

// sendAcct sends one Accounting-Request and fails the test without an Accounting-Response.
func sendAcct(t *testing.T, port int, secret, id string, status rfc2866.AcctStatusType) {
	t.Helper()
	pkt := radius.New(radius.CodeAccountingRequest, []byte(secret))
	must(t, rfc2866.AcctStatusType_Set(pkt, status))
	must(t, rfc2866.AcctSessionID_SetString(pkt, id))
	must(t, rfc2865.UserName_SetString(pkt, "alice"))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := radius.Exchange(ctx, pkt, fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil || resp.Code != radius.CodeAccountingResponse {
		t.Fatalf("accounting %s: no Accounting-Response: %v", id, err)
	}
}
