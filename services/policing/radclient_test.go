package main_test

// Integration tests of the real policing binary against FreeRADIUS's radclient, a RADIUS
// client no one here wrote (Debian freeradius-utils, installed by `make provision`).

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/openaaa/openaaa/internal/testenv"
)

const testSecret = "radclient-secret"

// testAdminToken is the admin API bearer token of the nodes these tests start.
const testAdminToken = "radclient-admin-token-0123456789"

var policingBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "policing-bin")
	if err != nil {
		panic(err)
	}
	policingBin = filepath.Join(dir, "policing")
	out, err := exec.Command("go", "build", "-o", policingBin, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build policing: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type node struct {
	cmd             *exec.Cmd
	auth, acct, adm string
	dir             string
	log             *strings.Builder
}

const defaultSubscribers = `
profiles:
  basic: {sessionTimeout: 7200, acctInterimInterval: 600}
subscribers:
  - {username: alice, password: wonderland, profileName: basic, profile: {framedIPAddress: 10.9.0.1}}
  - {username: bob, password: builder, profileName: basic}
`

// startPolicing runs the binary with a config on loopback and waits for /readyz.
func startPolicing(t *testing.T, dir string, extra ...string) *node {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("secret", testSecret+"\n")
	write("admin-token", testAdminToken+"\n")
	if _, err := os.Stat(filepath.Join(dir, "subscribers.yaml")); err != nil { // unless the test wrote its own
		write("subscribers.yaml", defaultSubscribers)
	}
	n := &node{dir: dir, log: &strings.Builder{},
		auth: fmt.Sprintf("127.0.0.1:%d", testenv.FreeUDPPort(t)),
		acct: fmt.Sprintf("127.0.0.1:%d", testenv.FreeUDPPort(t)),
		adm:  fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))}
	write("policing.yaml", fmt.Sprintf(`
log: {level: info}
radius: {authAddress: %q, acctAddress: %q}
admin: {address: %q, tokenFile: %s/admin-token}
clients:
  - {name: loopback, address: 127.0.0.1, secretFile: %s/secret}
subscribers: {source: file, file: %s/subscribers.yaml}
session:
  embedded: {snapshotFile: %s/sessions.jsonl}
`, n.auth, n.acct, n.adm, dir, dir, dir, dir))
	args := append([]string{"serve", "--config", filepath.Join(dir, "policing.yaml")}, extra...)
	n.cmd = exec.Command(policingBin, args...)
	pr, pw := io.Pipe()
	n.cmd.Stderr = pw
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			n.log.WriteString(sc.Text() + "\n")
		}
	}()
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if n.cmd.ProcessState == nil {
			_ = n.cmd.Process.Kill()
			_, _ = n.cmd.Process.Wait()
		}
		pw.Close()
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + n.adm + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return n
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("policing not ready: %v\n%s", err, n.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (n *node) stop(t *testing.T) {
	t.Helper()
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- n.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("policing exited with %v\n%s", err, n.log.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("policing did not stop on SIGTERM")
	}
}

// radclient sends one request (attribute lines) and returns radclient's output.
func radclient(t *testing.T, server, command, secret string, attrs ...string) string {
	t.Helper()
	bin := testenv.LookPath(t, "radclient", "Debian freeradius-utils: hack/freeradius.sh install")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-x", "-r", "1", "-t", "1", server, command, secret)
	cmd.Stdin = strings.NewReader(strings.Join(attrs, "\n") + "\n")
	out, _ := cmd.CombinedOutput() // radclient exits non-zero on reject and timeout; the text tells
	return string(out)
}

func mustContain(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Fatalf("radclient output lacks %q:\n%s", w, out)
		}
	}
}

func mustNotContain(t *testing.T, out string, bad string) {
	t.Helper()
	if strings.Contains(out, bad) {
		t.Fatalf("radclient output has %q:\n%s", bad, out)
	}
}

const ma = "Message-Authenticator = 0x00"

func TestRadclientPAP(t *testing.T) {
	n := startPolicing(t, "")
	out := radclient(t, n.auth, "auth", testSecret, `User-Name = "alice"`, `User-Password = "wonderland"`, ma)
	mustContain(t, out, "Received Access-Accept", "Framed-IP-Address = 10.9.0.1", "Session-Timeout = 7200", "Message-Authenticator")
	out = radclient(t, n.auth, "auth", testSecret, `User-Name = "alice"`, `User-Password = "guess"`, ma)
	mustContain(t, out, "Received Access-Reject", "Reply-Message")
	out = radclient(t, n.auth, "auth", testSecret, `User-Name = "mallory"`, `User-Password = "x"`, ma)
	mustContain(t, out, "Received Access-Reject")
}

func TestRadclientCHAP(t *testing.T) {
	n := startPolicing(t, "")
	out := radclient(t, n.auth, "auth", testSecret, `User-Name = "bob"`, `CHAP-Password = "builder"`, ma)
	mustContain(t, out, "Received Access-Accept", "Acct-Interim-Interval = 600")
	out = radclient(t, n.auth, "auth", testSecret, `User-Name = "bob"`, `CHAP-Password = "wrong"`, ma)
	mustContain(t, out, "Received Access-Reject")
}

func TestRadclientWrongSecretIsNotAnswered(t *testing.T) {
	n := startPolicing(t, "")
	out := radclient(t, n.auth, "auth", "not-the-secret", `User-Name = "alice"`, `User-Password = "wonderland"`, ma)
	mustNotContain(t, out, "Received Access")
	out = radclient(t, n.acct, "acct", "not-the-secret", `Acct-Status-Type = Start`, `Acct-Session-Id = "w1"`, `User-Name = "alice"`)
	mustNotContain(t, out, "Received Accounting-Response")
	if got := metric(t, n, `openaaa_radius_requests_dropped_total{reason="bad_message_authenticator"}`); got < 1 {
		t.Errorf("bad Message-Authenticator drop not counted")
	}
	if got := metric(t, n, `openaaa_radius_requests_dropped_total{reason="bad_authenticator"}`); got < 1 {
		t.Errorf("bad accounting authenticator drop not counted")
	}
}

func TestRadclientMissingMessageAuthenticatorIsDropped(t *testing.T) {
	n := startPolicing(t, "")
	out := radclient(t, n.auth, "auth", testSecret, `User-Name = "alice"`, `User-Password = "wonderland"`)
	mustNotContain(t, out, "Received Access")
	if got := metric(t, n, `openaaa_radius_requests_dropped_total{reason="missing_message_authenticator"}`); got < 1 {
		t.Errorf("missing Message-Authenticator drop not counted")
	}
	// A client configured not to require it is answered.
	n2 := startPolicing(t, "", "--set", "clients.0.requireMessageAuthenticator=false")
	out = radclient(t, n2.auth, "auth", testSecret, `User-Name = "alice"`, `User-Password = "wonderland"`)
	mustContain(t, out, "Received Access-Accept")
}

type sessionsReply struct {
	Sessions []struct {
		NAS            string `json:"nas"`
		ID             string `json:"acctSessionId"`
		UserName       string `json:"userName"`
		State          string `json:"state"`
		FramedIP       string `json:"framedIpAddress"`
		InputOctets    uint64 `json:"inputOctets"`
		OutputOctets   uint64 `json:"outputOctets"`
		SessionTime    uint32 `json:"sessionTime"`
		TerminateCause uint32 `json:"terminateCause"`
		Updates        int    `json:"updates"`
	} `json:"sessions"`
}

func lookup(t *testing.T, n *node, path string) sessionsReply {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+n.adm+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testAdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
	var r sessionsReply
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	return r
}

func metric(t *testing.T, n *node, series string) float64 {
	t.Helper()
	return testenv.Metric(t, n.adm, series)
}

func acctLines(status, id string, extra ...string) []string {
	return append([]string{"Acct-Status-Type = " + status, `Acct-Session-Id = "` + id + `"`, `User-Name = "alice"`,
		"NAS-IP-Address = 192.0.2.10", "NAS-Port = 7", ma}, extra...)
}

func TestRadclientAccountingLifecycle(t *testing.T) {
	n := startPolicing(t, "")
	out := radclient(t, n.acct, "acct", testSecret, acctLines("Start", "S-1", "Framed-IP-Address = 10.9.0.1")...)
	mustContain(t, out, "Received Accounting-Response")
	radclient(t, n.acct, "acct", testSecret, acctLines("Start", "S-2", "Framed-IP-Address = 10.9.0.2")...)
	out = radclient(t, n.acct, "acct", testSecret, acctLines("Interim-Update", "S-1",
		"Acct-Input-Octets = 1000", "Acct-Input-Gigawords = 1", "Acct-Output-Octets = 5000", "Acct-Session-Time = 300")...)
	mustContain(t, out, "Received Accounting-Response")

	got := lookup(t, n, "/api/v1/sessions?user=alice")
	if len(got.Sessions) != 2 {
		t.Fatalf("alice has %d sessions, want 2: %+v", len(got.Sessions), got)
	}
	byIP := lookup(t, n, "/api/v1/sessions?framedIp=10.9.0.1")
	if len(byIP.Sessions) != 1 {
		t.Fatalf("framed IP lookup: %+v", byIP)
	}
	s := byIP.Sessions[0]
	// 192.0.2.10 is not the client's own address (it sends from 127.0.0.1): the NAS part of
	// the key is qualified by the client, so that no client reaches another's sessions.
	if s.ID != "S-1" || s.NAS != "192.0.2.10@loopback" || s.InputOctets != 1<<32+1000 || s.OutputOctets != 5000 || s.SessionTime != 300 {
		t.Fatalf("session after interim: %+v", s)
	}

	out = radclient(t, n.acct, "acct", testSecret, acctLines("Stop", "S-1", "Acct-Terminate-Cause = User-Request", "Acct-Session-Time = 400")...)
	mustContain(t, out, "Received Accounting-Response")
	if r := lookup(t, n, "/api/v1/sessions?framedIp=10.9.0.1"); len(r.Sessions) != 0 {
		t.Fatalf("framed IP not freed by Stop: %+v", r)
	}
	hist := lookup(t, n, "/api/v1/history?user=alice")
	if len(hist.Sessions) != 1 || hist.Sessions[0].State != "stopped" || hist.Sessions[0].SessionTime != 400 || hist.Sessions[0].TerminateCause != 1 {
		t.Fatalf("history: %+v", hist)
	}

	// Accounting-On: the NAS rebooted, every session it had is closed.
	out = radclient(t, n.acct, "acct", testSecret, "Acct-Status-Type = Accounting-On", `Acct-Session-Id = "on"`, "NAS-IP-Address = 192.0.2.10", ma)
	mustContain(t, out, "Received Accounting-Response")
	if r := lookup(t, n, "/api/v1/sessions?nas=192.0.2.10@loopback"); len(r.Sessions) != 0 {
		t.Fatalf("Accounting-On left sessions: %+v", r)
	}
	if r := lookup(t, n, "/api/v1/history?user=alice"); len(r.Sessions) != 2 || r.Sessions[0].TerminateCause != 11 {
		t.Fatalf("history after Accounting-On: %+v", r)
	}
}

// relay sits between radclient and policing and swallows the first reply, so radclient
// retransmits the very same packet (same identifier and authenticator), as a NAS does.
func relay(t *testing.T, upstream string) string {
	t.Helper()
	front, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	back, err := net.Dial("udp", upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { front.Close(); back.Close() })
	var client atomic.Value
	var replies atomic.Int32
	go func() {
		buf := make([]byte, 4096)
		for {
			n, from, err := front.ReadFrom(buf)
			if err != nil {
				return
			}
			client.Store(from)
			_, _ = back.Write(buf[:n])
		}
	}()
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := back.Read(buf)
			if err != nil {
				return
			}
			if replies.Add(1) == 1 {
				continue // lost reply: the client retransmits
			}
			if to, ok := client.Load().(net.Addr); ok {
				_, _ = front.WriteTo(buf[:n], to)
			}
		}
	}()
	return front.LocalAddr().String()
}

func TestRadclientRetransmissionAnsweredOnce(t *testing.T) {
	n := startPolicing(t, "")
	via := relay(t, n.acct)
	bin := testenv.LookPath(t, "radclient", "Debian freeradius-utils")
	cmd := exec.Command(bin, "-x", "-r", "3", "-t", "1", via, "acct", testSecret)
	cmd.Stdin = strings.NewReader(strings.Join(acctLines("Interim-Update", "R-1", "Acct-Session-Time = 60"), "\n") + "\n")
	out, _ := cmd.CombinedOutput()
	mustContain(t, string(out), "Received Accounting-Response")
	r := lookup(t, n, "/api/v1/sessions?user=alice")
	if len(r.Sessions) != 1 || r.Sessions[0].Updates != 1 {
		t.Fatalf("retransmitted interim processed more than once: %+v", r)
	}
	if got := metric(t, n, "openaaa_radius_duplicates_answered_total"); got < 1 {
		t.Fatalf("duplicates_answered_total = %v, want >= 1", got)
	}
}

func TestSIGTERMKeepsSessions(t *testing.T) {
	dir := t.TempDir()
	n := startPolicing(t, dir)
	mustContain(t, radclient(t, n.acct, "acct", testSecret, acctLines("Start", "K-1")...), "Received Accounting-Response")
	n.stop(t)
	n2 := startPolicing(t, dir)
	if r := lookup(t, n2, "/api/v1/sessions?user=alice"); len(r.Sessions) != 1 || r.Sessions[0].ID != "K-1" {
		t.Fatalf("session lost across a restart: %+v", r)
	}
	n2.stop(t)
}

func TestBadConfigExitsNamingTheKey(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "bad.yaml")
	_ = os.WriteFile(cfg, []byte("radius: {workers: -1}\nclients: [{name: x, address: not-an-ip, secretFile: /nonexistent}]\nsubscribers: {file: /x}\n"), 0o600)
	out, err := exec.Command(policingBin, "serve", "--config", cfg).CombinedOutput()
	if err == nil {
		t.Fatal("policing started with a bad config")
	}
	for _, key := range []string{"radius.workers", "clients[0].address"} {
		if !strings.Contains(string(out), key) {
			t.Errorf("error does not name %s:\n%s", key, out)
		}
	}
}
