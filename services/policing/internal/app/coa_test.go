package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/services/policing/internal/admin"
	"github.com/openaaa/openaaa/services/policing/internal/apptest"
	"github.com/openaaa/openaaa/services/policing/internal/ctl"
)

// coaNode starts a node whose only client (127.0.0.1) has its CoA port on the receiver.
func coaNode(t *testing.T, receiver *freeRADIUS) *Node {
	t.Helper()
	return coaNodeIn(t, t.TempDir(), receiver, "")
}

// coaNodeIn is coaNode with its files in dir and extra configuration appended.
func coaNodeIn(t *testing.T, dir string, receiver *freeRADIUS, extra string) *Node {
	t.Helper()
	return coaNodeWith(t, dir, receiver, extra, edgeSubs)
}

// coaNodeWith is coaNodeIn with the subscriber file subs.
func coaNodeWith(t *testing.T, dir string, receiver *freeRADIUS, extra, subs string) *Node {
	t.Helper()
	return coaNodeAt(t, dir, receiver.port, "coa: {timeout: 500ms, retries: 2, resendAfter: 1m}\n"+extra, subs)
}

// coaNodeAt starts a node whose only client (127.0.0.1) has its CoA port at port, with the
// coa section and anything else in extra.
func coaNodeAt(t *testing.T, dir string, port int, extra, subs string) *Node {
	t.Helper()
	return edgeNode(t, dir, fmt.Sprintf(`
log: {level: debug, format: text}
radius: {authAddress: "127.0.0.1:0", acctAddress: "127.0.0.1:0", workers: 8}
admin: {address: "127.0.0.1:0", tokenFile: {{dir}}/admin-token}
clients:
  - {name: nas1, address: 127.0.0.1, secretFile: {{dir}}/secret, coaPort: %d}
subscribers: {source: file, file: {{dir}}/subs.yaml}
`, port)+extra, subs)
}

// silentNAS is a loopback UDP port that takes CoA and Disconnect requests and never answers
// (a NAS gone away).
func silentNAS(t *testing.T) int {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	apptest.Check(t, err)
	t.Cleanup(func() { _ = pc.Close() })
	return pc.LocalAddr().(*net.UDPAddr).Port
}

// crossQuota sends with radclient the accounting of a session of the subscriber quota
// (edgeSubs: 1000 octets): a Start, an Interim-Update under the quota (under octets in),
// then one over it, which must be answered.
func crossQuota(t *testing.T, acctAddr, id string, under int) {
	t.Helper()
	apptest.Radclient(t, acctAddr, "acct", radclientSecret, 1, 2, acctLinesFor("Start", id, "quota")...)
	apptest.Radclient(t, acctAddr, "acct", radclientSecret, 1, 2, acctLinesFor("Interim-Update", id, "quota", fmt.Sprintf("Acct-Input-Octets = %d", under))...)
	out := apptest.Radclient(t, acctAddr, "acct", radclientSecret, 1, 2, acctLinesFor("Interim-Update", id, "quota", "Acct-Input-Octets = 900", "Acct-Output-Octets = 300")...)
	if !strings.Contains(out, "Received Accounting-Response") {
		t.Fatalf("no Accounting-Response:\n%s", out)
	}
}

func postCoA(t *testing.T, n *Node, path string) (int, admin.CoAReply) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+n.Addr("admin.address").String()+path, nil)
	apptest.Check(t, err)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	apptest.Check(t, err)
	defer resp.Body.Close()
	var r admin.CoAReply
	_ = json.NewDecoder(resp.Body).Decode(&r)
	return resp.StatusCode, r
}

func TestDisconnectWithFreeRADIUSReceiver(t *testing.T) {
	// The NAS side knows sessions S-*; anything else is NAKed with Session-Context-Not-Found.
	nas := newFreeRADIUS(t, "nas", "--role", "coa", "--secret", radclientSecret, "--coa-sessions", "^S-")
	n := coaNode(t, nas)
	acctAddr := n.Addr("radius.acctAddress").String()
	for _, lines := range [][]string{
		acctLinesFor("Start", "S-1", "alice", "Framed-IP-Address = 10.9.0.1"),
		acctLinesFor("Start", "X-1", "bob"),
		acctLinesFor("Start", "S-2", "carol", "Framed-IP-Address = 10.9.0.7"),
	} {
		if out := apptest.Radclient(t, acctAddr, "acct", radclientSecret, 1, 2, lines...); !strings.Contains(out, "Received Accounting-Response") {
			t.Fatalf("no Accounting-Response:\n%s", out)
		}
	}

	// By user: ACK.
	code, r := postCoA(t, n, "/api/v1/disconnect?user=alice")
	if code != 200 || len(r.Results) != 1 || r.Results[0].Result != "ack" || r.ACKed != 1 {
		t.Fatalf("disconnect alice: %d %+v", code, r)
	}
	testenv.Eventually(t, 10*time.Second, "Disconnect-Request in the receiver's detail", func() bool {
		return strings.Contains(nas.detail(), `Acct-Session-Id = "S-1"`)
	})
	d := nas.detail()
	for _, w := range []string{"Packet-Type = Disconnect-Request", `User-Name = "alice"`, "Framed-IP-Address = 10.9.0.1", "NAS-IP-Address = 127.0.0.1", "Message-Authenticator"} {
		if !strings.Contains(d, w) {
			t.Errorf("receiver's record lacks %q:\n%s", w, d)
		}
	}

	// A session the NAS does not know: NAK with its Error-Cause, reported.
	code, r = postCoA(t, n, "/api/v1/disconnect?user=bob")
	if code != 200 || len(r.Results) != 1 || r.Results[0].Result != "nak" || r.Results[0].ErrorCause != 503 ||
		r.Results[0].ErrorCauseName != "Session-Context-Not-Found" || r.NAKed != 1 {
		t.Fatalf("disconnect bob: %d %+v", code, r)
	}
	// No such session in the store: 404, counted.
	if code, _ := postCoA(t, n, "/api/v1/disconnect?user=nobody"); code != 404 {
		t.Fatalf("disconnect of an unknown user: HTTP %d, want 404", code)
	}

	// The CLI, by framed IP and by session: exit 0 on ACK, 3 when nothing matches, 1 on NAK.
	adminURL := "http://" + n.Addr("admin.address").String()
	runCtl := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		rc := ctl.Main(context.Background(), append(args, "--admin", adminURL, "--token-file", n.Config.Admin.TokenFile), &out, &errb)
		return rc, out.String() + errb.String()
	}
	if rc, out := runCtl("disconnect", "--framed-ip", "10.9.0.7"); rc != 0 || !strings.Contains(out, `"ack"`) {
		t.Fatalf("ctl disconnect --framed-ip: rc %d\n%s", rc, out)
	}
	if rc, out := runCtl("disconnect", "--session", "127.0.0.1/X-1"); rc != 1 || !strings.Contains(out, "Session-Context-Not-Found") {
		t.Fatalf("ctl disconnect --session (NAK): rc %d\n%s", rc, out)
	}
	if rc, out := runCtl("disconnect", "--user", "nobody"); rc != 3 {
		t.Fatalf("ctl disconnect --user nobody: rc %d\n%s", rc, out)
	}
	// CoA-Request with attributes.
	if rc, out := runCtl("coa", "--user", "alice", "--attr", "Session-Timeout=600"); rc != 0 {
		t.Fatalf("ctl coa: rc %d\n%s", rc, out)
	}
	testenv.Eventually(t, 10*time.Second, "CoA-Request in the receiver's detail", func() bool {
		return strings.Contains(nas.detail(), "Session-Timeout = 600")
	})

	for series, min := range map[string]float64{
		`openaaa_coa_requests_total{kind="disconnect",result="ack",trigger="api"}`:                      2,
		`openaaa_coa_requests_total{kind="disconnect",result="nak",trigger="api"}`:                      2,
		`openaaa_coa_requests_total{kind="disconnect",result="no_session",trigger="api"}`:               2,
		`openaaa_coa_requests_total{kind="coa",result="ack",trigger="api"}`:                             1,
		`openaaa_coa_nak_error_causes_total{error_cause="Session-Context-Not-Found",kind="disconnect"}`: 2,
		`openaaa_transactions_total{kind="coa"}`:                                                        5,
	} {
		if v := Metric(t, n, series); v < min {
			t.Errorf("%s = %v, want >= %v", series, v, min)
		}
	}
}

func TestPolicyDisconnectOnQuota(t *testing.T) {
	nas := newFreeRADIUS(t, "nasq", "--role", "coa", "--secret", radclientSecret)
	n := coaNode(t, nas)
	acctAddr := n.Addr("radius.acctAddress").String()
	// Under quota: nothing. Over quota: the policy marks the session and a Disconnect goes out.
	crossQuota(t, acctAddr, "Q-1", 100)
	testenv.Eventually(t, 20*time.Second, "policy Disconnect-Request at the NAS", func() bool {
		return strings.Contains(nas.detail(), `Acct-Session-Id = "Q-1"`)
	})
	// A second interim within resendAfter does not send again.
	apptest.Radclient(t, acctAddr, "acct", radclientSecret, 1, 2, acctLinesFor("Interim-Update", "Q-1", "quota", "Acct-Input-Octets = 1900")...)
	testenv.Eventually(t, 10*time.Second, "policy disconnect counted", func() bool {
		return Metric(t, n, `openaaa_coa_requests_total{kind="disconnect",result="ack",trigger="policy"}`) >= 1
	})
	time.Sleep(time.Second)
	if c := strings.Count(nas.detail(), "Disconnect-Request"); c != 1 {
		t.Errorf("%d Disconnect-Requests for one over-quota session, want 1:\n%s", c, nas.detail())
	}
}

// coa.apiTimeout bounds an admin API Disconnect: to a NAS that never answers, with
// retransmissions that would take 63 s (coa.timeout 1s doubling, 5 retries), the API answers
// after the configured 300 ms, the session reported error (it was a hard-coded 60 s).
func TestCoAAPITimeoutFromConfig(t *testing.T) {
	n := coaNodeAt(t, t.TempDir(), silentNAS(t), "coa: {timeout: 1s, retries: 5, apiTimeout: 300ms}\n", edgeSubs)
	out := apptest.Radclient(t, n.Addr("radius.acctAddress").String(), "acct", radclientSecret, 1, 2, acctLinesFor("Start", "T-1", "alice")...)
	if !strings.Contains(out, "Received Accounting-Response") {
		t.Fatalf("no Accounting-Response:\n%s", out)
	}
	start := time.Now()
	code, r := postCoA(t, n, "/api/v1/disconnect?user=alice")
	took := time.Since(start)
	t.Logf("answered after %v: %d %+v", took.Round(time.Millisecond), code, r)
	if code != http.StatusOK || len(r.Results) != 1 || r.Results[0].Result != "error" {
		t.Errorf("disconnect to a silent NAS: %d %+v, want 200 and the session's result error", code, r)
	}
	if took < 250*time.Millisecond || took > 2500*time.Millisecond {
		t.Errorf("answered after %v, want about coa.apiTimeout (300ms)", took)
	}
}

// coa.policyTimeout bounds a policy request: the over-quota session's Disconnect-Request to
// a NAS that never answers ends after the configured 300 ms, counted as an error, not after
// the retransmissions' 63 s cut at a hard-coded 30 s.
func TestCoAPolicyTimeoutFromConfig(t *testing.T) {
	n := coaNodeAt(t, t.TempDir(), silentNAS(t), "coa: {timeout: 1s, retries: 5, policyTimeout: 300ms}\n", edgeSubs)
	acct := n.Addr("radius.acctAddress").String()
	apptest.Radclient(t, acct, "acct", radclientSecret, 1, 2, acctLinesFor("Start", "TQ-1", "quota")...)
	const failed = `openaaa_coa_requests_total{kind="disconnect",result="error",trigger="policy"}`
	before := Metric(t, n, failed)
	start := time.Now()
	out := apptest.Radclient(t, acct, "acct", radclientSecret, 1, 2, acctLinesFor("Interim-Update", "TQ-1", "quota", "Acct-Input-Octets = 2000")...)
	if !strings.Contains(out, "Received Accounting-Response") {
		t.Fatalf("no Accounting-Response:\n%s", out)
	}
	testenv.Eventually(t, 5*time.Second, "the policy disconnect given up", func() bool { return Metric(t, n, failed) > before })
	took := time.Since(start)
	t.Logf("given up after %v", took.Round(time.Millisecond))
	if took > 2500*time.Millisecond {
		t.Errorf("given up after %v, want about coa.policyTimeout (300ms)", took)
	}
}
