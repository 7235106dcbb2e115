package app

import (
	"context"
	"crypto/md5"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"
	"layeh.com/radius/rfc2866"
	"layeh.com/radius/rfc2869"

	"github.com/openaaa/openaaa/internal/radiusx"
	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/apptest"
	"github.com/openaaa/openaaa/services/policing/internal/session"
)

const secret = "s3cr3t-for-tests"

// adminToken is the admin API's bearer token in the nodes tests start (file admin-token).
const adminToken = "admin-token-for-tests-0123456789"

const subscribers = `
profiles:
  gold: {sessionTimeout: 3600, acctInterimInterval: 300, class: gold, rateLimit: "10M/10M",
         replyAttributes: {Framed-MTU: "1492", Service-Type: Framed-User}}
subscribers:
  - {username: alice, password: wonderland, profileName: gold, profile: {framedIPAddress: 10.1.0.1}}
  - {username: bob, password: builder, profile: {framedPool: pool-a}}
  - {username: carol, password: x, disabled: true}
`

// startNode runs a node on loopback with ephemeral ports. Extra lines are --set overrides.
func startNode(t *testing.T, sets ...string) *Node {
	t.Helper()
	return startConfig(t, startNodeConfig(t, sets...), slog.LevelDebug)
}

// startNodeConfig is the configuration startNode runs, its files in a new directory.
func startNodeConfig(t *testing.T, sets ...string) *config.Config {
	t.Helper()
	dir := t.TempDir()
	writeNodeFiles(t, dir, secret, subscribers)
	return loadYAML(t, dir, `
log: {level: debug, format: text}
radius: {authAddress: "127.0.0.1:0", acctAddress: "127.0.0.1:0", workers: 4}
admin: {address: "127.0.0.1:0", tokenFile: {{dir}}/admin-token}
clients:
  - {name: lo, address: 127.0.0.0/8, secretFile: {{dir}}/secret}
subscribers: {source: file, file: {{dir}}/subs.yaml}
session:
  embedded: {snapshotFile: {{dir}}/snap.jsonl}
`, sets...)
}

// exchange is apptest.SendFrom on the test's goroutine: 700 ms for the reply, and a reply
// that does not verify fails the test (only a missing one is the error a test may want).
func exchange(t *testing.T, addr net.Addr, p *radius.Packet, withMA bool) (*radius.Packet, error) {
	t.Helper()
	reply, err := apptest.SendFrom(nil, addr, p, withMA, 700*time.Millisecond)
	if err != nil && !errors.Is(err, apptest.ErrNoReply) {
		t.Fatal(err)
	}
	return reply, err
}

func TestPAPAcceptCarriesProfile(t *testing.T) {
	n := startNode(t)
	reply, err := exchange(t, n.Addr("radius.authAddress"), apptest.PAP(secret, "alice", "wonderland"), true)
	apptest.Check(t, err)
	apptest.WantProfile(t, reply, apptest.Profile{FramedIP: "10.1.0.1", SessionTimeout: 3600, Interim: 300, FramedMTU: 1492, Class: "gold"})
}

func TestPAPRejects(t *testing.T) {
	n := startNode(t)
	for _, tc := range []struct{ user, pass string }{{"alice", "wrong"}, {"nobody", "x"}, {"carol", "x"}} {
		reply, err := exchange(t, n.Addr("radius.authAddress"), apptest.PAP(secret, tc.user, tc.pass), true)
		apptest.Check(t, err)
		if reply.Code != radius.CodeAccessReject {
			t.Errorf("%s/%s: code = %v, want Access-Reject", tc.user, tc.pass, reply.Code)
		}
		if msg := rfc2865.ReplyMessage_GetString(reply); msg == "" {
			t.Errorf("%s: reject without Reply-Message", tc.user)
		}
	}
}

func TestCHAP(t *testing.T) {
	n := startNode(t)
	for _, tc := range []struct {
		pass string
		want radius.Code
	}{{"builder", radius.CodeAccessAccept}, {"nope", radius.CodeAccessReject}} {
		p := radius.New(radius.CodeAccessRequest, []byte(secret))
		rfc2865.UserName_SetString(p, "bob")
		challenge := []byte("0123456789abcdef")
		h := md5.New()
		h.Write([]byte{7})
		h.Write([]byte(tc.pass))
		h.Write(challenge)
		rfc2865.CHAPPassword_Set(p, append([]byte{7}, h.Sum(nil)...))
		rfc2865.CHAPChallenge_Set(p, challenge)
		reply, err := exchange(t, n.Addr("radius.authAddress"), p, true)
		apptest.Check(t, err)
		if reply.Code != tc.want {
			t.Errorf("CHAP %q: code = %v, want %v", tc.pass, reply.Code, tc.want)
		}
		if tc.want == radius.CodeAccessAccept && rfc2869.FramedPool_GetString(reply) != "pool-a" {
			t.Errorf("Framed-Pool missing")
		}
	}
}

func TestMissingMessageAuthenticatorDropped(t *testing.T) {
	n := startNode(t)
	if _, err := exchange(t, n.Addr("radius.authAddress"), apptest.PAP(secret, "alice", "wonderland"), false); err == nil {
		t.Fatal("request without Message-Authenticator was answered")
	}
	// The same client can opt out of the requirement.
	n2 := startNode(t, "clients.0.requireMessageAuthenticator=false")
	reply, err := exchange(t, n2.Addr("radius.authAddress"), apptest.PAP(secret, "alice", "wonderland"), false)
	apptest.Check(t, err)
	if reply.Code != radius.CodeAccessAccept {
		t.Fatalf("code = %v", reply.Code)
	}
}

func TestWrongSecretNotAnswered(t *testing.T) {
	n := startNode(t)
	p := apptest.PAP(secret, "alice", "wonderland")
	p.Secret = []byte("not-the-secret")
	if _, err := exchange(t, n.Addr("radius.authAddress"), p, true); err == nil {
		t.Fatal("request with a wrong secret was answered")
	}
	a := acct(rfc2866.AcctStatusType_Value_Start, "s-wrong", "alice")
	a.Secret = []byte("not-the-secret")
	if _, err := exchange(t, n.Addr("radius.acctAddress"), a, false); err == nil {
		t.Fatal("accounting request with a wrong secret was answered")
	}
}

// acct is an Accounting-Request from the tests' NAS: NAS-IP-Address is its own address,
// the session key (aaa.NASKey).
func acct(status rfc2866.AcctStatusType, id, user string) *radius.Packet {
	return apptest.Acct(secret, status, id, user, net.IPv4(127, 0, 0, 1))
}

// startAliceSession starts alice's session id at her profile's address (10.1.0.1) and
// returns the reply.
func startAliceSession(t *testing.T, n *Node, id string) *radius.Packet {
	t.Helper()
	start := acct(rfc2866.AcctStatusType_Value_Start, id, "alice")
	rfc2865.FramedIPAddress_Set(start, net.IPv4(10, 1, 0, 1))
	reply, err := exchange(t, n.Addr("radius.acctAddress"), start, true)
	apptest.Check(t, err)
	return reply
}

func getJSON(t *testing.T, n *Node, path string, v any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+n.Addr("admin.address").String()+path, nil)
	apptest.Check(t, err)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	apptest.Check(t, err)
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
	apptest.Check(t, json.NewDecoder(resp.Body).Decode(v))
}

func TestAccountingLifecycle(t *testing.T) {
	n := startNode(t)
	if reply := startAliceSession(t, n, "sess-1"); reply.Code != radius.CodeAccountingResponse {
		t.Fatalf("code = %v", reply.Code)
	}
	interim := acct(rfc2866.AcctStatusType_Value_InterimUpdate, "sess-1", "alice")
	rfc2866.AcctInputOctets_Set(interim, 100)
	rfc2869.AcctInputGigawords_Set(interim, 2)
	rfc2866.AcctSessionTime_Set(interim, 60)
	_, err := exchange(t, n.Addr("radius.acctAddress"), interim, false)
	apptest.Check(t, err)

	var byUser struct{ Sessions []session.Session }
	getJSON(t, n, "/api/v1/sessions?user=alice", &byUser)
	if len(byUser.Sessions) != 1 {
		t.Fatalf("sessions of alice = %d, want 1", len(byUser.Sessions))
	}
	s := byUser.Sessions[0]
	if want := uint64(2)<<32 | 100; s.InputOctets != want || s.SessionTime != 60 || s.NAS != "127.0.0.1" {
		t.Errorf("session = %+v, want input octets %d", s, want)
	}
	var byIP struct{ Sessions []session.Session }
	getJSON(t, n, "/api/v1/sessions?framedIp=10.1.0.1", &byIP)
	if len(byIP.Sessions) != 1 || byIP.Sessions[0].ID != "sess-1" {
		t.Fatalf("by framed IP: %+v", byIP.Sessions)
	}

	stop := acct(rfc2866.AcctStatusType_Value_Stop, "sess-1", "alice")
	rfc2866.AcctTerminateCause_Set(stop, rfc2866.AcctTerminateCause_Value_UserRequest)
	_, err = exchange(t, n.Addr("radius.acctAddress"), stop, true)
	apptest.Check(t, err)
	getJSON(t, n, "/api/v1/sessions?framedIp=10.1.0.1", &byIP)
	if len(byIP.Sessions) != 0 {
		t.Errorf("framed IP still held after Stop")
	}
	var hist struct{ Sessions []session.Session }
	getJSON(t, n, "/api/v1/history?user=alice", &hist)
	if len(hist.Sessions) != 1 || hist.Sessions[0].State != session.Stopped || hist.Sessions[0].TerminateCause != 1 {
		t.Errorf("history = %+v", hist.Sessions)
	}
}

func TestInterimWithoutStartCreatesSession(t *testing.T) {
	n := startNode(t)
	_, err := exchange(t, n.Addr("radius.acctAddress"), acct(rfc2866.AcctStatusType_Value_InterimUpdate, "orphan", "bob"), true)
	apptest.Check(t, err)
	var out struct{ Sessions []session.Session }
	getJSON(t, n, "/api/v1/sessions?user=bob", &out)
	if len(out.Sessions) != 1 {
		t.Fatalf("interim without start did not create a session")
	}
	// Accounting-On from that NAS closes it.
	_, err = exchange(t, n.Addr("radius.acctAddress"), acct(rfc2866.AcctStatusType_Value_AccountingOn, "on-1", ""), true)
	apptest.Check(t, err)
	getJSON(t, n, "/api/v1/sessions?nas=127.0.0.1", &out)
	if len(out.Sessions) != 0 {
		t.Fatalf("Accounting-On left %d sessions", len(out.Sessions))
	}
}

func TestRetransmissionAnsweredOnce(t *testing.T) {
	n := startNode(t)
	p := acct(rfc2866.AcctStatusType_Value_Start, "dup-1", "alice")
	b, _ := p.Encode()
	radiusx.SignRequest(b, -1, p.Secret)
	conn, err := net.Dial("udp", n.Addr("radius.acctAddress").String())
	apptest.Check(t, err)
	defer conn.Close()
	var replies [][]byte
	for i := 0; i < 3; i++ {
		_, err := conn.Write(b)
		apptest.Check(t, err)
		_ = conn.SetReadDeadline(time.Now().Add(time.Second))
		buf := make([]byte, 4096)
		k, err := conn.Read(buf)
		apptest.Check(t, err)
		replies = append(replies, buf[:k])
	}
	for _, r := range replies[1:] {
		if string(r) != string(replies[0]) {
			t.Fatalf("retransmission got a different reply")
		}
	}
	s, err := n.Store.Get(context.Background(), session.Key{NAS: "127.0.0.1", ID: "dup-1"})
	apptest.Check(t, err)
	if s.Updates != 1 {
		t.Fatalf("session updated %d times, want 1 (retransmissions must not be processed again)", s.Updates)
	}
}

func TestSnapshotSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	snap := "session.embedded.snapshotFile=" + filepath.Join(dir, "snap.jsonl")
	n := startNode(t, snap)
	_, err := exchange(t, n.Addr("radius.acctAddress"), acct(rfc2866.AcctStatusType_Value_Start, "keep-me", "alice"), true)
	apptest.Check(t, err)
	apptest.Check(t, n.Shutdown(context.Background()))
	n2 := startNode(t, snap)
	if _, err := n2.Store.Get(context.Background(), session.Key{NAS: "127.0.0.1", ID: "keep-me"}); err != nil {
		t.Fatalf("session lost across restart: %v", err)
	}
}

func TestBadConfigNamesKey(t *testing.T) {
	_, err := config.Load("", []string{"radius.workers=0", "clients.x=1"}, nil)
	if err == nil || !strings.Contains(err.Error(), "clients") {
		t.Fatalf("err = %v", err)
	}
}
