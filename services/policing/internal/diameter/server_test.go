package diameter

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"
	"github.com/fiorix/go-diameter/v4/diam/dict"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/openaaa/openaaa/services/policing/internal/diameter/diametertest"
)

// echoApp answers every Gx request 2001 and counts them.
type echoApp struct{ calls *atomic.Int64 }

func (e echoApp) ServeDiameter(r *Request) (*diam.Message, uint32) {
	m := r.Message
	e.calls.Add(1)
	return Identity{Host: "pcrf.test", Realm: "test"}.Answer(m, diam.Success), diam.Success
}

func startServer(t *testing.T) (*Server, *atomic.Int64) {
	t.Helper()
	calls := new(atomic.Int64)
	return startServerWith(t, Options{Apps: map[uint32]Handler{GxApplicationID: echoApp{calls}}}), calls
}

// startServerWith serves opt as pcrf.test@test to pcef.test@test on loopback (the identity
// and the peer table are set here), closed when the test ends.
func startServerWith(t *testing.T, opt Options) *Server {
	t.Helper()
	_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
	opt.OriginHost, opt.OriginRealm = "pcrf.test", "test"
	opt.Peers = []Peer{{OriginHost: "pcef.test", OriginRealm: "test", Network: loopback}}
	s, err := Listen("127.0.0.1:0", opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// dialAccepted is a recorded connection of pcef.test to s, past a successful CER.
func dialAccepted(t *testing.T, s *Server) net.Conn {
	t.Helper()
	c := dialPeer(t, s)
	if code := resultCode(t, exchange(t, c, cer("pcef.test", GxApplicationID))); code != diam.Success {
		t.Fatalf("CEA %d", code)
	}
	return c
}

func dialPeer(t *testing.T, s *Server) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return diametertest.Record(t, c)
}

func request(cmd, app uint32, host string, avps ...*diam.AVP) *diam.Message {
	m := diam.NewRequest(cmd, app, dict.Default)
	m.NewAVP(avp.OriginHost, avp.Mbit, 0, datatype.DiameterIdentity(host))
	m.NewAVP(avp.OriginRealm, avp.Mbit, 0, datatype.DiameterIdentity("test"))
	for _, a := range avps {
		m.AddAVP(a)
	}
	return m
}

func cer(host string, app uint32) *diam.Message {
	return request(cmdCER, 0, host,
		diam.NewAVP(avp.HostIPAddress, avp.Mbit, 0, datatype.Address(net.IPv4(127, 0, 0, 1))),
		diam.NewAVP(avp.VendorID, avp.Mbit, 0, datatype.Unsigned32(Vendor3GPP)),
		diam.NewAVP(avp.ProductName, 0, 0, datatype.UTF8String("test")),
		diam.NewAVP(avp.AuthApplicationID, avp.Mbit, 0, datatype.Unsigned32(app)))
}

func exchange(t *testing.T, c net.Conn, m *diam.Message) *diam.Message {
	t.Helper()
	if _, err := m.WriteTo(c); err != nil {
		t.Fatal(err)
	}
	a, err := diam.ReadMessage(c, dict.Default)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	if a.Header.HopByHopID != m.Header.HopByHopID || a.Header.EndToEndID != m.Header.EndToEndID {
		t.Fatalf("answer identifiers %d/%d, want %d/%d", a.Header.HopByHopID, a.Header.EndToEndID, m.Header.HopByHopID, m.Header.EndToEndID)
	}
	return a
}

func resultCode(t *testing.T, a *diam.Message) uint32 {
	t.Helper()
	rc, err := a.FindAVP(avp.ResultCode, 0)
	if err != nil {
		t.Fatalf("no Result-Code in %s", a)
	}
	return uint32(rc.Data.(datatype.Unsigned32))
}

func wantClosed(t *testing.T, c net.Conn) {
	t.Helper()
	// EOF, or a reset when the server closed with bytes left unread.
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("connection still open after refusal (read: %v)", err)
	}
}

func TestCapabilitiesWatchdogDisconnect(t *testing.T) {
	s, _ := startServer(t)
	c := dialPeer(t, s)
	up := testutil.ToFloat64(s.opt.Metrics.peersUp)
	a := exchange(t, c, cer("pcef.test", GxApplicationID))
	if got := resultCode(t, a); got != diam.Success {
		t.Fatalf("CEA Result-Code %d, want 2001", got)
	}
	if a.Header.CommandFlags&diam.RequestFlag != 0 {
		t.Fatal("CEA has the R flag")
	}
	apps, _ := a.FindAVPs(avp.AuthApplicationID, 0)
	if len(apps) == 0 || apps[0].Data.(datatype.Unsigned32) != GxApplicationID {
		t.Fatalf("CEA does not advertise Gx: %s", a)
	}
	if testutil.ToFloat64(s.opt.Metrics.peersUp) != up+1 {
		t.Fatalf("peers_up %v, want %v", testutil.ToFloat64(s.opt.Metrics.peersUp), up+1)
	}
	if got := resultCode(t, exchange(t, c, request(cmdDWR, 0, "pcef.test"))); got != diam.Success {
		t.Fatalf("DWA Result-Code %d", got)
	}
	// An application the server does not serve: 3007 with the E bit, connection kept.
	unknown := request(272, 4, "pcef.test", diam.NewAVP(avp.SessionID, avp.Mbit, 0, datatype.UTF8String("s;1")))
	a = exchange(t, c, unknown)
	if got := resultCode(t, a); got != diam.ApplicationUnsupported || a.Header.CommandFlags&diam.ErrorFlag == 0 {
		t.Fatalf("unknown application: Result-Code %d flags %#x, want 3007 with E", got, a.Header.CommandFlags)
	}
	if sid, _ := a.FindAVP(avp.SessionID, 0); sid == nil || a.AVP[0].Code != avp.SessionID {
		t.Fatal("answer does not start with the request's Session-Id")
	}
	gx := request(272, GxApplicationID, "pcef.test", diam.NewAVP(avp.SessionID, avp.Mbit, 0, datatype.UTF8String("s;2")))
	if got := resultCode(t, exchange(t, c, gx)); got != diam.Success {
		t.Fatalf("Gx request after CER: %d", got)
	}
	if got := resultCode(t, exchange(t, c, request(cmdDPR, 0, "pcef.test",
		diam.NewAVP(avp.DisconnectCause, avp.Mbit, 0, datatype.Enumerated(0))))); got != diam.Success {
		t.Fatalf("DPA Result-Code %d", got)
	}
	wantClosed(t, c)
}

func TestUnknownPeerRefused(t *testing.T) {
	s, _ := startServer(t)
	for _, tc := range []struct {
		name string
		m    *diam.Message
		code uint32
	}{
		{"unknown Origin-Host", cer("intruder.test", GxApplicationID), ResultUnknownPeer},
		{"no common application", cer("pcef.test", 4), diam.NoCommonApplication},
		{"watchdog before CER", request(cmdDWR, 0, "pcef.test"), ResultUnknownPeer},
		{"Gx before CER", request(272, GxApplicationID, "pcef.test"), ResultUnknownPeer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := testutil.ToFloat64(s.opt.Metrics.peersRefused.WithLabelValues(refusedUnknownPeer)) +
				testutil.ToFloat64(s.opt.Metrics.peersRefused.WithLabelValues(refusedNoCommonApp)) +
				testutil.ToFloat64(s.opt.Metrics.peersRefused.WithLabelValues(refusedBeforeCER))
			c := dialPeer(t, s)
			if got := resultCode(t, exchange(t, c, tc.m)); got != tc.code {
				t.Fatalf("Result-Code %d, want %d", got, tc.code)
			}
			wantClosed(t, c)
			after := testutil.ToFloat64(s.opt.Metrics.peersRefused.WithLabelValues(refusedUnknownPeer)) +
				testutil.ToFloat64(s.opt.Metrics.peersRefused.WithLabelValues(refusedNoCommonApp)) +
				testutil.ToFloat64(s.opt.Metrics.peersRefused.WithLabelValues(refusedBeforeCER))
			if after != before+1 {
				t.Fatalf("refusals counted %v → %v", before, after)
			}
		})
	}
}

func TestPeerTable(t *testing.T) {
	_, lan, _ := net.ParseCIDR("10.0.0.0/8")
	table := []Peer{{OriginRealm: "EPC.example"}, {OriginHost: "pgw1", Network: lan}, {}}
	for _, tc := range []struct {
		host, realm, ip string
		want            bool
	}{
		{"any", "epc.example", "192.0.2.1", true},
		{"pgw1", "other", "10.1.2.3", true},
		{"pgw1", "other", "192.0.2.1", false},
		{"pgw2", "other", "10.1.2.3", false},
	} {
		if got := allowed(table, tc.host, tc.realm, net.ParseIP(tc.ip)); got != tc.want {
			t.Errorf("allowed(%s, %s, %s) = %v", tc.host, tc.realm, tc.ip, got)
		}
	}
}

// A retransmission (T flag, same End-to-End-Id, new Hop-by-Hop-Id) gets the first answer,
// and the application processes the request once.
func TestRetransmissionAnsweredOnce(t *testing.T) {
	s, calls := startServer(t)
	c := dialPeer(t, s)
	exchange(t, c, cer("pcef.test", GxApplicationID))
	dups := testutil.ToFloat64(s.opt.Metrics.duplicates)
	first := request(272, GxApplicationID, "pcef.test", diam.NewAVP(avp.SessionID, avp.Mbit, 0, datatype.UTF8String("s;r")))
	a1 := exchange(t, c, first)
	again := request(272, GxApplicationID, "pcef.test", diam.NewAVP(avp.SessionID, avp.Mbit, 0, datatype.UTF8String("s;r")))
	again.Header.EndToEndID = first.Header.EndToEndID
	again.Header.HopByHopID = first.Header.HopByHopID + 1000
	again.Header.CommandFlags |= diam.RetransmittedFlag
	a2 := exchange(t, c, again)
	if calls.Load() != 1 {
		t.Fatalf("application ran %d times, want 1", calls.Load())
	}
	if testutil.ToFloat64(s.opt.Metrics.duplicates) != dups+1 {
		t.Fatal("duplicate not counted")
	}
	b1, _ := a1.Serialize()
	b2, _ := a2.Serialize()
	if !bytes.Equal(b1[16:], b2[16:]) {
		t.Fatal("the retransmission got a different answer")
	}
}

// Two different requests that happen to carry the same End-to-End-Id — a PCEF (or go-diameter's
// diam.NewRequest) drawing it at random repeats one every few hundred thousand requests —
// are both processed, each answered for its own session: a cached answer goes only to a
// request of the same session. Before, the second got the first's answer (another session's
// CCA) unprocessed, and its session was never opened: its CCR-U/T were answered 5002.
func TestSameEndToEndIdOtherSessionIsNotADuplicate(t *testing.T) {
	s, calls := startServer(t)
	c := dialPeer(t, s)
	exchange(t, c, cer("pcef.test", GxApplicationID))
	dups := testutil.ToFloat64(s.opt.Metrics.duplicates)
	first := request(272, GxApplicationID, "pcef.test", diam.NewAVP(avp.SessionID, avp.Mbit, 0, datatype.UTF8String("s;one")))
	exchange(t, c, first)
	other := request(272, GxApplicationID, "pcef.test", diam.NewAVP(avp.SessionID, avp.Mbit, 0, datatype.UTF8String("s;two")))
	other.Header.EndToEndID = first.Header.EndToEndID
	a := exchange(t, c, other)
	if calls.Load() != 2 {
		t.Fatalf("application ran %d times for two requests of two sessions, want 2", calls.Load())
	}
	if sid, err := a.FindAVP(avp.SessionID, 0); err != nil || string(sid.Data.(datatype.UTF8String)) != "s;two" {
		t.Fatalf("the second request was answered for session %v, want s;two", sid)
	}
	if testutil.ToFloat64(s.opt.Metrics.duplicates) != dups {
		t.Fatal("counted as a duplicate")
	}
}

// A retransmission sent the moment the answer arrives is answered from the cache: the answer
// must be cached before it leaves, or the peer can be faster than the cache and have its
// request processed twice. Many rounds on one connection, since one round rarely loses.
func TestRetransmissionRightAfterTheAnswer(t *testing.T) {
	s, calls := startServer(t)
	c := dialPeer(t, s)
	exchange(t, c, cer("pcef.test", GxApplicationID))
	const rounds = 300
	for i := range rounds {
		id := datatype.UTF8String(fmt.Sprintf("s;fast;%d", i))
		first := request(272, GxApplicationID, "pcef.test", diam.NewAVP(avp.SessionID, avp.Mbit, 0, id))
		exchange(t, c, first)
		again := request(272, GxApplicationID, "pcef.test", diam.NewAVP(avp.SessionID, avp.Mbit, 0, id))
		again.Header.EndToEndID = first.Header.EndToEndID
		again.Header.CommandFlags |= diam.RetransmittedFlag
		exchange(t, c, again)
	}
	if got := calls.Load(); got != rounds {
		t.Fatalf("the application ran %d times for %d requests and their retransmissions; want %d", got, rounds, rounds)
	}
}

// Every Diameter request a node answers is one of the field's transactions
// (openaaa_transactions_total{kind="diameter"}), as every RADIUS request is; a retransmission
// answered from the cache is not processed, so it is not one (as for RADIUS).
func TestRequestsAreTransactions(t *testing.T) {
	s, _ := startServer(t)
	c := dialPeer(t, s)
	counted := func() float64 { return testutil.ToFloat64(s.opt.Metrics.transactions) }
	before := counted()
	exchange(t, c, cer("pcef.test", GxApplicationID))
	ccr := request(272, GxApplicationID, "pcef.test", diam.NewAVP(avp.SessionID, avp.Mbit, 0, datatype.UTF8String("s;tx")))
	exchange(t, c, ccr)
	again := request(272, GxApplicationID, "pcef.test", diam.NewAVP(avp.SessionID, avp.Mbit, 0, datatype.UTF8String("s;tx")))
	again.Header.EndToEndID = ccr.Header.EndToEndID
	again.Header.CommandFlags |= diam.RetransmittedFlag
	exchange(t, c, again)
	exchange(t, c, request(cmdDWR, 0, "pcef.test"))
	if got := counted() - before; got != 3 {
		t.Fatalf("%v transactions of kind diameter for CER, CCR, its retransmission and DWR; want 3", got)
	}
}

// A framed request whose AVP does not decode (a 3-byte Address; go-diameter v4.3.0
// alone panics on it) is answered 5004 and counted, and the connection keeps working;
// a broken header closes it.
func TestMalformed(t *testing.T) {
	s, _ := startServer(t)
	c := dialPeer(t, s)
	exchange(t, c, cer("pcef.test", GxApplicationID))
	before := testutil.ToFloat64(s.opt.Metrics.malformed)
	avpBytes := []byte{0, 0, 1, 1, 0x40, 0, 0, 11, 0, 1, 2, 0} // Host-IP-Address of 3 bytes, padded
	frame := make([]byte, 20+len(avpBytes))
	binary.BigEndian.PutUint32(frame[0:4], uint32(len(frame)))
	frame[0] = 1
	binary.BigEndian.PutUint32(frame[4:8], 272)
	frame[4] = diam.RequestFlag
	binary.BigEndian.PutUint32(frame[8:12], GxApplicationID)
	binary.BigEndian.PutUint32(frame[12:16], 77)
	binary.BigEndian.PutUint32(frame[16:20], 78)
	copy(frame[20:], avpBytes)
	if _, err := c.Write(frame); err != nil {
		t.Fatal(err)
	}
	a, err := diam.ReadMessage(c, dict.Default)
	if err != nil {
		t.Fatal(err)
	}
	// RFC 6733 §7.1.5: an IPv4 Address of another length than 2 + 4 octets.
	if got := resultCode(t, a); got != 5014 || a.Header.HopByHopID != 77 {
		t.Fatalf("answer %d (hop-by-hop %d), want 5014 to 77", got, a.Header.HopByHopID)
	}
	if f := failedAVPs(a); len(f) != 1 || f[0].Code != 257 {
		t.Fatalf("Failed-AVP %v, want Host-IP-Address", f)
	}
	if testutil.ToFloat64(s.opt.Metrics.malformed) != before+1 {
		t.Fatal("malformed message not counted")
	}
	if got := resultCode(t, exchange(t, c, request(cmdDWR, 0, "pcef.test"))); got != diam.Success {
		t.Fatalf("connection unusable after a malformed message: DWA %d", got)
	}
	if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	wantClosed(t, c)
	if testutil.ToFloat64(s.opt.Metrics.malformed) != before+2 {
		t.Fatal("lost framing not counted")
	}
}

// slowConn is a connection whose writes take a while and are recorded.
type slowConn struct {
	net.Conn
	mu     sync.Mutex
	writes [][]byte
}

func (c *slowConn) Close() error { return nil }

func (c *slowConn) Write(b []byte) (int, error) {
	time.Sleep(time.Millisecond)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = append(c.writes, append([]byte(nil), b...))
	return len(b), nil
}

// Answers written at once are coalesced into fewer socket writes, each message whole and
// none lost, the writes of one writer in their order; Close sends what is queued first.
func TestWritesCoalesced(t *testing.T) {
	sc := &slowConn{}
	c := newPeerConn(sc, time.Second)
	const writers, each = 16, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				msg := []byte(fmt.Sprintf("<%02d:%03d>", w, i))
				if _, err := c.Write(msg); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	_ = c.Close() // sends what is queued first
	all := bytes.Join(sc.writes, nil)
	next := make([]int, writers)
	for len(all) > 0 {
		var w, i int
		if _, err := fmt.Sscanf(string(all[:8]), "<%02d:%03d>", &w, &i); err != nil {
			t.Fatalf("a message torn apart: %q", all[:8])
		}
		if i != next[w] {
			t.Fatalf("writer %d: message %d after %d", w, i, next[w]-1)
		}
		next[w]++
		all = all[8:]
	}
	for w, n := range next {
		if n != each {
			t.Fatalf("writer %d: %d of %d messages arrived", w, n, each)
		}
	}
	if len(sc.writes) >= writers*each {
		t.Fatalf("%d socket writes for %d messages: not coalesced", len(sc.writes), writers*each)
	}
	t.Logf("%d messages in %d socket writes", writers*each, len(sc.writes))
}

// Serve, as radiusd's: it accepts peers on a listener the caller opened until Shutdown,
// returns ErrServerClosed then, and at once when the server is shut down already.
func TestServeUntilShutdown(t *testing.T) {
	_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
	s, err := New(Options{OriginHost: "pcrf.test", OriginRealm: "test",
		Peers: []Peer{{OriginHost: "pcef.test", Network: loopback}},
		Apps:  map[uint32]Handler{GxApplicationID: echoApp{new(atomic.Int64)}}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if code := resultCode(t, exchange(t, c, cer("pcef.test", GxApplicationID))); code != diam.Success {
		t.Fatalf("CEA %d", code)
	}
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	answerDPR(t, c, readDPR(t, c, 3*time.Second))
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
	if err := <-served; !errors.Is(err, ErrServerClosed) { // Shutdown waited for its accept loop
		t.Fatalf("Serve returned %v, want ErrServerClosed", err)
	}
	if _, err := diam.ReadMessage(c, dict.Default); err == nil {
		t.Fatal("the peer's connection is still open after Shutdown")
	}
	late, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Serve(late); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve after Shutdown returned %v, want ErrServerClosed", err)
	}
}

// stuckApp is a handler that ignores its request's cancellation until released; with held
// set, only the request of that Session-Id waits (the others are answered at once).
type stuckApp struct {
	started, release chan struct{}
	held             string
}

func (a stuckApp) ServeDiameter(r *Request) (*diam.Message, uint32) {
	if a.held == "" || sessionID(r.Message) == a.held {
		a.started <- struct{}{}
		<-a.release
	}
	return Identity{Host: "pcrf.test", Realm: "test"}.Answer(r.Message, diam.Success), diam.Success
}

// Options.FlushTimeout (diameter.flushTimeout) is how long a shutdown whose budget is spent
// waits for the cancelled requests' answers before it closes the connections: a handler that
// ignores its cancellation holds a shutdown the configured 2.5 s (a WAN's slower answers),
// not the 1 s that was hard-coded.
func TestShutdownWaitsFlushTimeout(t *testing.T) {
	app := stuckApp{started: make(chan struct{}, 1), release: make(chan struct{})}
	defer close(app.release)
	s := startServerWith(t, Options{FlushTimeout: 2500 * time.Millisecond, Apps: map[uint32]Handler{GxApplicationID: app}})
	c := dialAccepted(t, s)
	gx := request(272, GxApplicationID, "pcef.test", diam.NewAVP(avp.SessionID, avp.Mbit, 0, datatype.UTF8String("s;stuck")))
	if _, err := gx.WriteTo(c); err != nil {
		t.Fatal(err)
	}
	<-app.started
	spent, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	_ = s.Shutdown(spent)
	took := time.Since(start)
	t.Logf("Shutdown returned after %v", took.Round(time.Millisecond))
	if took < 2*time.Second || took > 6*time.Second {
		t.Errorf("Shutdown returned after %v, want about the flush timeout (2.5s)", took)
	}
	readDPR(t, c, time.Second) // sent even when the budget is spent: the peer learns why
	wantClosed(t, c)
}
