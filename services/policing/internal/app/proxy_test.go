package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/services/policing/internal/apptest"
)

const edgeSubs = `
subscribers:
  - {username: alice, password: wonderland, profile: {framedIPAddress: 10.9.0.1}}
  - {username: bob, password: builder}
  - {username: quota, password: x, profile: {quotaOctets: 1000}}
`

// proxyNode starts a node whose accounting proxy points at the given upstreams.
func proxyNode(t *testing.T, mode, strategy string, upstreams ...*freeRADIUS) (*Node, string) {
	t.Helper()
	dir := t.TempDir()
	var ups strings.Builder
	for i, u := range upstreams {
		fmt.Fprintf(&ups, "    - {name: up%d, address: %q, secretFile: {{dir}}/secret}\n", i+1, u.addr())
	}
	n := edgeNode(t, dir, `
log: {level: debug, format: text}
radius: {authAddress: "127.0.0.1:0", acctAddress: "127.0.0.1:0", workers: 8}
admin: {address: "127.0.0.1:0"}
clients:
  - {name: lo, address: 127.0.0.1, secretFile: {{dir}}/secret}
subscribers: {source: file, file: {{dir}}/subs.yaml}
proxy:
  mode: `+mode+`
  strategy: `+strategy+`
  timeout: 300ms
  maxTimeout: 600ms
  retries: 1
  syncTimeout: 2s
  statusInterval: 500ms
  queue: {dir: {{dir}}/queue, replayInterval: 200ms}
  upstreams:
`+ups.String(), edgeSubs)
	return n, dir
}

func acctLinesFor(status, id, user string, extra ...string) []string {
	return append([]string{"Acct-Status-Type = " + status, `Acct-Session-Id = "` + id + `"`, `User-Name = "` + user + `"`,
		"NAS-IP-Address = 127.0.0.1", "NAS-Port = 7", "Message-Authenticator = 0x00"}, extra...)
}

// recordsFor returns the detail records of an upstream that carry Acct-Session-Id id.
func recordsFor(f *freeRADIUS, id string) []string {
	var out []string
	for _, r := range detailRecords(f.detail()) {
		if strings.Contains(r, `Acct-Session-Id = "`+id+`"`) {
			out = append(out, r)
		}
	}
	return out
}

func TestProxyQueueFailoverAndRecovery(t *testing.T) {
	up1 := newFreeRADIUS(t, "up1", "--role", "acct", "--secret", radclientSecret)
	up2 := newFreeRADIUS(t, "up2", "--role", "acct", "--secret", radclientSecret)
	n, _ := proxyNode(t, "queue", "failover", up1, up2)
	acctAddr := n.Addr("radius.acctAddress").String()
	send := func(lines ...string) {
		t.Helper()
		out := apptest.Radclient(t, acctAddr, "acct", radclientSecret, 1, 2, lines...)
		if !strings.Contains(out, "Received Accounting-Response") {
			t.Fatalf("no local Accounting-Response:\n%s", out)
		}
	}

	// 1. Healthy pool: everything reaches the first upstream, with the NAS's attributes.
	send(acctLinesFor("Start", "P-1", "alice", "Framed-IP-Address = 10.9.0.1", "Calling-Station-Id = \"02-00-00-00-00-01\"")...)
	send(acctLinesFor("Interim-Update", "P-1", "alice", "Acct-Input-Octets = 1000", "Acct-Output-Octets = 5000", "Acct-Session-Time = 60")...)
	send(acctLinesFor("Stop", "P-1", "alice", "Acct-Session-Time = 120", "Acct-Terminate-Cause = User-Request")...)
	testenv.Eventually(t, 20*time.Second, "3 records of P-1 at up1", func() bool { return len(recordsFor(up1, "P-1")) == 3 })
	recs := recordsFor(up1, "P-1")
	for i, want := range [][]string{
		{"Acct-Status-Type = Start", `User-Name = "alice"`, "Framed-IP-Address = 10.9.0.1", `Calling-Station-Id = "02-00-00-00-00-01"`, "NAS-IP-Address = 127.0.0.1", "NAS-Port = 7"},
		{"Acct-Status-Type = Interim-Update", "Acct-Input-Octets = 1000", "Acct-Output-Octets = 5000", "Acct-Session-Time = 60"},
		{"Acct-Status-Type = Stop", "Acct-Session-Time = 120", "Acct-Terminate-Cause = User-Request"},
	} {
		for _, w := range want {
			if !strings.Contains(recs[i], w) {
				t.Errorf("record %d at the upstream lacks %q:\n%s", i, w, recs[i])
			}
		}
		if c := strings.Count(recs[i], "Proxy-State"); c != 1 {
			t.Errorf("record %d carries %d Proxy-State, want exactly ours:\n%s", i, c, recs[i])
		}
	}
	if len(recordsFor(up2, "P-1")) != 0 {
		t.Errorf("failover mode sent to the second upstream while the first was alive")
	}

	// 2. The first upstream stops: requests fail over to the second.
	up1.stop()
	send(acctLinesFor("Start", "P-2", "bob")...)
	testenv.Eventually(t, 30*time.Second, "P-2 at up2", func() bool { return len(recordsFor(up2, "P-2")) == 1 })
	testenv.Eventually(t, 10*time.Second, "up1 marked dead", func() bool { return Metric(t, n, `openaaa_proxy_upstream_up{upstream="up1"}`) == 0 })

	// 3. Both stopped: local answers stay fast, requests wait in the durable queue.
	up2.stop()
	for i := range 5 {
		start := time.Now()
		send(acctLinesFor("Interim-Update", "P-3", "bob", fmt.Sprintf("Acct-Session-Time = %d", 10*(i+1)))...)
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("local answer took %v with the upstreams down", d)
		}
	}
	testenv.Eventually(t, 20*time.Second, "requests queued", func() bool { return n.Proxy.Pending() >= 1 })
	if entries, _ := os.ReadDir(filepath.Join(n.Config.Proxy.Queue.Dir)); len(entries) == 0 {
		t.Errorf("queue directory is empty")
	}

	// 4. Recovery: the first upstream answers Status-Server again and the queue drains to it.
	up1.start()
	testenv.Eventually(t, 60*time.Second, "5 queued interims of P-3 delivered to up1", func() bool { return len(recordsFor(up1, "P-3")) >= 5 })
	testenv.Eventually(t, 10*time.Second, "queue empty", func() bool { return n.Proxy.Pending() == 0 })
	got := recordsFor(up1, "P-3")
	for i, r := range got[:5] {
		if !strings.Contains(r, fmt.Sprintf("Acct-Session-Time = %d", 10*(i+1))) {
			t.Errorf("queued record %d out of order:\n%s", i, r)
		}
	}
	if v := Metric(t, n, `openaaa_transactions_total{kind="proxy"}`); v < 9 {
		t.Errorf("proxy transactions = %v, want >= 9", v)
	}
	if v := Metric(t, n, `openaaa_proxy_status_checks_total{result="ok",upstream="up1"}`); v < 1 {
		t.Errorf("no successful Status-Server to up1 counted")
	}
}

func TestProxyLoadBalance(t *testing.T) {
	up1 := newFreeRADIUS(t, "lb1", "--role", "acct", "--secret", radclientSecret)
	up2 := newFreeRADIUS(t, "lb2", "--role", "acct", "--secret", radclientSecret)
	n, _ := proxyNode(t, "queue", "loadbalance", up1, up2)
	for i := range 8 {
		out := apptest.Radclient(t, n.Addr("radius.acctAddress").String(), "acct", radclientSecret, 1, 2, acctLinesFor("Start", fmt.Sprintf("LB-%d", i), "bob")...)
		if !strings.Contains(out, "Received Accounting-Response") {
			t.Fatalf("no reply:\n%s", out)
		}
	}
	testenv.Eventually(t, 20*time.Second, "8 records over both upstreams", func() bool {
		return len(detailRecords(up1.detail()))+len(detailRecords(up2.detail())) == 8
	})
	if a, b := len(detailRecords(up1.detail())), len(detailRecords(up2.detail())); a == 0 || b == 0 {
		t.Errorf("load balance sent %d and %d records: one upstream got nothing", a, b)
	}
}

func TestProxySyncMode(t *testing.T) {
	up := newFreeRADIUS(t, "sync1", "--role", "acct", "--secret", radclientSecret)
	n, _ := proxyNode(t, "sync", "failover", up)
	out := apptest.Radclient(t, n.Addr("radius.acctAddress").String(), "acct", radclientSecret, 1, 2, acctLinesFor("Start", "SY-1", "alice")...)
	if !strings.Contains(out, "Received Accounting-Response") {
		t.Fatalf("no reply in sync mode:\n%s", out)
	}
	// In sync mode the record is at the upstream by the time the NAS has its answer.
	if len(recordsFor(up, "SY-1")) != 1 {
		t.Fatalf("sync mode answered before the upstream had the record:\n%s", up.detail())
	}
	// Upstream down: the NAS gets no answer (it will retransmit); the local store has it.
	up.stop()
	out = apptest.Radclient(t, n.Addr("radius.acctAddress").String(), "acct", radclientSecret, 1, 2, acctLinesFor("Start", "SY-2", "alice")...)
	if strings.Contains(out, "Received Accounting-Response") {
		t.Fatalf("sync mode answered although no upstream took the request:\n%s", out)
	}
	if v := Metric(t, n, `openaaa_proxy_forwarded_total{mode="sync",result="failed"}`); v < 1 {
		t.Errorf("failed sync forward not counted")
	}
}
