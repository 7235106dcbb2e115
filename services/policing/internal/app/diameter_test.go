package app

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"
	"github.com/fiorix/go-diameter/v4/diam/dict"

	"github.com/openaaa/openaaa/internal/testpki"
	"github.com/openaaa/openaaa/services/policing/internal/apptest"
	"github.com/openaaa/openaaa/services/policing/internal/diameter/diametertest"
)

// The diameter section starts a Gx listener on the node's store and subscribers: a CER is
// accepted, a CCR-I for a subscriber without a data policy is answered 2001, and a CCR-U for
// a session no store has is 5002.
var diameterSets = []string{"diameter.enabled=true", "diameter.address=127.0.0.1:0",
	"diameter.originHost=pcrf.node.test", "diameter.originRealm=test",
	`diameter.peers=[{originRealm: test, address: 127.0.0.1}]`}

// pcef is a Diameter connection to a node's Gx listener, past CER.
type pcef struct {
	t *testing.T
	c net.Conn
}

func dialPCEF(t *testing.T, n *Node) *pcef {
	t.Helper()
	if n.Addr("diameter.address") == nil {
		t.Fatal("no Diameter listener")
	}
	c, err := net.Dial("tcp", n.Addr("diameter.address").String())
	apptest.Check(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	p := &pcef{t: t, c: diametertest.Record(t, c)} // tshark decodes what was said
	cer := diam.NewRequest(257, 0, dict.Default)
	cer.NewAVP(avp.AuthApplicationID, avp.Mbit, 0, datatype.Unsigned32(16777238))
	if code := p.send(cer); code != 2001 {
		t.Fatalf("CEA %d", code)
	}
	return p
}

func (p *pcef) send(m *diam.Message) uint32 {
	p.t.Helper()
	m.NewAVP(avp.OriginHost, avp.Mbit, 0, datatype.DiameterIdentity("pgw.test"))
	m.NewAVP(avp.OriginRealm, avp.Mbit, 0, datatype.DiameterIdentity("test"))
	_, err := m.WriteTo(p.c)
	apptest.Check(p.t, err)
	a, err := diam.ReadMessage(p.c, dict.Default)
	apptest.Check(p.t, err)
	rc, err := a.FindAVP(avp.ResultCode, 0)
	apptest.Check(p.t, err)
	return uint32(rc.Data.(datatype.Unsigned32))
}

func ccr(typ uint32, sid string) *diam.Message {
	m := diam.NewRequest(272, 16777238, dict.Default)
	m.NewAVP(avp.SessionID, avp.Mbit, 0, datatype.UTF8String(sid))
	m.NewAVP(avp.AuthApplicationID, avp.Mbit, 0, datatype.Unsigned32(16777238))
	m.NewAVP(avp.DestinationRealm, avp.Mbit, 0, datatype.DiameterIdentity("test")) // RFC 4006 §3.1
	m.NewAVP(avp.CCRequestType, avp.Mbit, 0, datatype.Enumerated(typ))
	m.NewAVP(avp.CCRequestNumber, avp.Mbit, 0, datatype.Unsigned32(0))
	m.NewAVP(avp.SubscriptionID, avp.Mbit, 0, &diam.GroupedAVP{AVP: []*diam.AVP{
		diam.NewAVP(avp.SubscriptionIDType, avp.Mbit, 0, datatype.Enumerated(1)),
		diam.NewAVP(avp.SubscriptionIDData, avp.Mbit, 0, datatype.UTF8String("alice")),
	}})
	return m
}

// A CCR-U after the node restarted (embedded store, snapshot) finds its session: never a 5002
// because of a restart.
func TestGxSessionSurvivesRestart(t *testing.T) {
	sets := append([]string{"session.embedded.snapshotFile=" + filepath.Join(t.TempDir(), "snap.jsonl")}, diameterSets...)
	n := startNode(t, sets...)
	p := dialPCEF(t, n)
	if code := p.send(ccr(1, "pgw.test;restart;1")); code != 2001 {
		t.Fatalf("CCA-I %d", code)
	}
	_ = p.c.Close() // gone before the stop: it would not answer the node's DPR (diameter.dprTimeout)
	apptest.Check(t, n.Shutdown(context.Background()))
	n2 := startNode(t, sets...)
	if code := dialPCEF(t, n2).send(ccr(2, "pgw.test;restart;1")); code != 2001 {
		t.Fatalf("CCA-U after a restart: %d, want 2001", code)
	}
}

func TestDiameterFromConfig(t *testing.T) {
	n := startNode(t, diameterSets...)
	p := dialPCEF(t, n)
	c, send := p.c, p.send
	if code := send(ccr(1, "pgw.test;app;1")); code != 2001 {
		t.Fatalf("CCA-I %d", code)
	}
	if code := send(ccr(2, "pgw.test;app;none")); code != 5002 {
		t.Fatalf("CCA-U for an unknown session %d, want 5002", code)
	}

	// A RAR from the admin API (authenticated) reaches the PCEF over its connection.
	post := func(token string) *http.Response {
		req, err := http.NewRequest(http.MethodPost, "http://"+n.Addr("admin.address").String()+"/api/v1/gx/rar",
			strings.NewReader(`{"sessionId": "pgw.test;app;1", "install": ["boost"]}`))
		apptest.Check(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		apptest.Check(t, err)
		return resp
	}
	resp := post("wrong")
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Fatal("RAR accepted without the admin token")
	}
	type reply struct {
		status int
		body   map[string]uint32
	}
	done := make(chan reply, 1)
	go func() {
		resp := post(adminToken)
		defer resp.Body.Close()
		var b map[string]uint32
		_ = json.NewDecoder(resp.Body).Decode(&b)
		done <- reply{resp.StatusCode, b}
	}()
	rar, err := diam.ReadMessage(c, dict.Default)
	apptest.Check(t, err)
	if rar.Header.CommandCode != diam.ReAuth {
		t.Fatalf("got %s, want a RAR", rar)
	}
	raa := diam.NewMessage(rar.Header.CommandCode, rar.Header.CommandFlags&^diam.RequestFlag, rar.Header.ApplicationID,
		rar.Header.HopByHopID, rar.Header.EndToEndID, dict.Default)
	raa.NewAVP(avp.SessionID, avp.Mbit, 0, datatype.UTF8String("pgw.test;app;1"))
	raa.NewAVP(avp.ResultCode, avp.Mbit, 0, datatype.Unsigned32(2001))
	_, err = raa.WriteTo(c)
	apptest.Check(t, err)
	if r := <-done; r.status != http.StatusOK || r.body["resultCode"] != 2001 {
		t.Fatalf("POST /api/v1/gx/rar: %d %v", r.status, r.body)
	}
}

// diameter.rarTimeout bounds the wait for a RAA: a PCEF that takes the RAR and never answers
// costs the admin API's caller the configured 300 ms, then a 504 (it was a hard-coded 5 s).
func TestRARTimeoutFromConfig(t *testing.T) {
	n := startNode(t, append([]string{"diameter.rarTimeout=300ms"}, diameterSets...)...)
	if code := dialPCEF(t, n).send(ccr(1, "pgw.test;rar;1")); code != 2001 {
		t.Fatalf("CCA-I %d", code)
	}
	start := time.Now()
	code, body := adminCall(t, n, http.MethodPost, "/api/v1/gx/rar", adminToken, `{"sessionId": "pgw.test;rar;1", "install": ["boost"]}`)
	took := time.Since(start)
	if code != http.StatusGatewayTimeout {
		t.Fatalf("POST /api/v1/gx/rar to a PCEF that never answers: %d %s, want 504", code, body)
	}
	t.Logf("504 after %v", took.Round(time.Millisecond))
	if took < 250*time.Millisecond || took > 2500*time.Millisecond {
		t.Errorf("504 after %v, want about diameter.rarTimeout (300ms)", took)
	}
}

// diameter.dprTimeout bounds a stopping node's wait for the DPA to its DPR: a PCEF that takes
// the DPR and never answers holds the shutdown the configured 300 ms (not the default 5 s),
// then its connection closes.
func TestDPRTimeoutFromConfig(t *testing.T) {
	n := startNode(t, append([]string{"diameter.dprTimeout=300ms"}, diameterSets...)...)
	p := dialPCEF(t, n)
	start := time.Now()
	apptest.Check(t, n.Shutdown(context.Background()))
	took := time.Since(start)
	t.Logf("Shutdown returned after %v", took.Round(time.Millisecond))
	if took < 250*time.Millisecond || took > 2500*time.Millisecond {
		t.Errorf("Shutdown returned after %v, want about diameter.dprTimeout (300ms)", took)
	}
	m, err := diam.ReadMessage(p.c, dict.Default)
	if err != nil || m.Header.CommandCode != 282 {
		t.Fatalf("the PCEF got %v (%v), want the node's DPR", m, err)
	}
	if _, err := diam.ReadMessage(p.c, dict.Default); err == nil {
		t.Error("the connection is still open after Shutdown")
	}
}

// diameter.tls.handshakeTimeout bounds the TLS handshake: a peer that connects to the TLS
// port and says nothing is let go after the configured 300 ms (it was a hard-coded 10 s).
func TestDiameterHandshakeTimeoutFromConfig(t *testing.T) {
	dir := serverPKI(t, "pcrf.node.test")
	n := startNode(t, append([]string{"diameter.tls.address=127.0.0.1:0", "diameter.tls.handshakeTimeout=300ms",
		"diameter.tls.certFile=" + filepath.Join(dir, "server.pem"), "diameter.tls.keyFile=" + filepath.Join(dir, "server.key"),
		"diameter.tls.caFile=" + filepath.Join(dir, "ca.pem")}, diameterSets...)...)
	wantSilentPeerLetGo(t, n.Addr("diameter.tls.address"), 300*time.Millisecond)
}

// serverPKI writes a new directory's ca.pem and a server certificate of it for name
// (server.pem, server.key), and returns the directory.
func serverPKI(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	ca := testpki.New(t, "OpenAAA test CA")
	apptest.Check(t, os.WriteFile(filepath.Join(dir, "ca.pem"), ca.PEM, 0o600))
	cert, key := ca.Issue(t, name, 2)
	writePEM(t, dir, "server", cert, key)
	return dir
}

// wantSilentPeerLetGo connects to a TLS listener, sends nothing, and wants the connection
// closed after about bound (the handshake timeout in force).
func wantSilentPeerLetGo(t *testing.T, addr net.Addr, bound time.Duration) {
	t.Helper()
	c, err := net.Dial("tcp", addr.String())
	apptest.Check(t, err)
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
	start := time.Now()
	_, err = c.Read(make([]byte, 1))
	took := time.Since(start)
	if err == nil {
		t.Fatal("the server spoke before the peer's ClientHello")
	}
	t.Logf("closed after %v (%v)", took.Round(time.Millisecond), err)
	if took < bound*5/6 || took > bound+2700*time.Millisecond {
		t.Errorf("a silent peer was let go after %v, want about the handshake timeout (%v)", took, bound)
	}
}
