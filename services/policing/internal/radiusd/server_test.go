package radiusd

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"layeh.com/radius"
	"layeh.com/radius/rfc2865"
	"layeh.com/radius/rfc2866"

	"github.com/openaaa/openaaa/internal/radiusx"
	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/metrics"
	"github.com/openaaa/openaaa/services/policing/internal/nas"
)

const secret = "radiusd-test-secret"

// testMetrics are the metrics of the servers start builds: tests read their differences.
var testMetrics = metrics.New(metrics.With(prometheus.NewRegistry()))

func dropped(reason string) float64 {
	return testutil.ToFloat64(testMetrics.Dropped.WithLabelValues(reason))
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	// Generous: with 5 s, TestOverloadQueueWait's "request queued" timed out once in a cold
	// make test's busiest minutes (2026-11-29, load average 12-77 on 2 cores; cause not
	// found). A condition that holds ends the wait at once, so passing runs lose nothing.
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitDrop waits until the drop counter of reason reached before+delta.
func waitDrop(t *testing.T, reason string, before, delta float64) {
	t.Helper()
	waitFor(t, reason+" drop", func() bool { return dropped(reason) >= before+delta })
}

func quietLog() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func clientTable(t *testing.T, cs ...config.Client) *nas.Table {
	t.Helper()
	dir := t.TempDir()
	for i := range cs {
		if cs[i].SecretFile == "" {
			f := filepath.Join(dir, cs[i].Name)
			if err := os.WriteFile(f, []byte(secret+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			cs[i].SecretFile = f
		}
	}
	tab, err := nas.Build(cs)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// bothDispatches runs a test with the worker pool and with inline readers.
func bothDispatches(t *testing.T, test func(t *testing.T, inline bool)) {
	for _, inline := range []bool{false, true} {
		name := "workers"
		if inline {
			name = "inline"
		}
		t.Run(name, func(t *testing.T) { test(t, inline) })
	}
}

func loopbackClient() config.Client {
	return config.Client{Name: "lo", Address: "127.0.0.1"}
}

type fixture struct {
	s          *Server
	auth, acct *net.UDPConn
}

func start(t *testing.T, opt Options, tab *nas.Table, authH, acctH Handler) *fixture {
	t.Helper()
	if opt.Log == nil {
		opt.Log = quietLog()
	}
	if opt.Readers == 0 {
		opt.Readers = 1
	}
	if opt.Metrics == nil {
		opt.Metrics = testMetrics
	}
	s := New(opt, tab)
	f := &fixture{s: s}
	var err error
	if f.auth, err = s.Listen("127.0.0.1:0", Auth, authH); err != nil {
		t.Fatal(err)
	}
	if f.acct, err = s.Listen("127.0.0.1:0", Acct, acctH); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return f
}

// recorder is a handler that counts its calls, can be held, and answers with code.
type recorder struct {
	code      radius.Code
	calls     atomic.Int32
	writeErrs atomic.Int32
	entered   chan *Request
	release   chan struct{} // nil: do not wait
	silent    bool          // write no reply
}

func newRecorder(code radius.Code) *recorder {
	return &recorder{code: code, entered: make(chan *Request, 64)}
}

func (h *recorder) ServeRADIUS(w ResponseWriter, r *Request) {
	h.calls.Add(1)
	h.entered <- r
	if h.release != nil {
		<-h.release
	}
	if h.silent {
		return
	}
	reply := r.Response(h.code)
	rfc2865.ReplyMessage_SetString(reply, "ok")
	if err := w.Write(reply); err != nil {
		h.writeErrs.Add(1) // e.g. the socket closed by a hard shutdown
		return
	}
	if err := w.Write(reply); err == nil {
		panic("second Write succeeded")
	}
}

type reqOpt struct {
	code        radius.Code
	secret      string
	withMA      bool
	nasID       string
	mutateMA    bool
	proxyStates []string
	attrs       radius.Attributes // more attributes, before Message-Authenticator
}

// request encodes a signed request.
func request(t *testing.T, o reqOpt) []byte {
	t.Helper()
	if o.secret == "" {
		o.secret = secret
	}
	p := radius.New(o.code, []byte(o.secret))
	rfc2865.UserName_SetString(p, "alice")
	if o.nasID != "" {
		rfc2865.NASIdentifier_SetString(p, o.nasID)
	}
	if o.code == radius.CodeAccountingRequest {
		_ = rfc2866.AcctStatusType_Set(p, rfc2866.AcctStatusType_Value_Start)
		_ = rfc2866.AcctSessionID_SetString(p, "s1")
	}
	for _, ps := range o.proxyStates {
		p.Add(radiusx.TypeProxyState, radius.Attribute(ps))
	}
	p.Attributes = append(p.Attributes, o.attrs...)
	b, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	off := -1
	if o.withMA {
		b, off = radiusx.AppendMessageAuthenticator(b)
	}
	radiusx.SignRequest(b, off, []byte(o.secret))
	if o.mutateMA {
		b[off] ^= 0xff
	}
	return b
}

func dial(t *testing.T, c *net.UDPConn) *net.UDPConn {
	t.Helper()
	conn, err := net.DialUDP("udp", nil, c.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func readReply(conn *net.UDPConn, timeout time.Duration) ([]byte, error) {
	buf := make([]byte, 4096)
	_ = conn.SetReadDeadline(time.Now().Add(timeout))
	n, err := conn.Read(buf)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// roundTrip sends b and returns the verified reply.
func roundTrip(t *testing.T, conn *net.UDPConn, b []byte) *radius.Packet {
	t.Helper()
	p, err := radius.Parse(roundTripRaw(t, conn, b), []byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// roundTripRaw sends b and returns the verified reply as it was on the wire.
func roundTripRaw(t *testing.T, conn *net.UDPConn, b []byte) []byte {
	t.Helper()
	if _, err := conn.Write(b); err != nil {
		t.Fatal(err)
	}
	r, err := readReply(conn, 3*time.Second)
	if err != nil {
		t.Fatalf("no reply: %v", err)
	}
	if err := radiusx.VerifyResponse(r, b[4:20], []byte(secret), true); err != nil {
		t.Fatalf("reply does not verify (Message-Authenticator is mandatory on replies): %v", err)
	}
	if r[1] != b[1] {
		t.Fatalf("reply identifier %d, request %d", r[1], b[1])
	}
	return r
}

// expectNoReply checks nothing came back (call after the drop was counted).
func expectNoReply(t *testing.T, conn *net.UDPConn) {
	t.Helper()
	if r, err := readReply(conn, 30*time.Millisecond); err == nil {
		t.Fatalf("unexpected reply code %d", r[0])
	}
}

func TestAnsweredRequestsCarryMessageAuthenticator(t *testing.T) {
	bothDispatches(t, func(t *testing.T, inline bool) {
		auth, acct := newRecorder(radius.CodeAccessAccept), newRecorder(radius.CodeAccountingResponse)
		f := start(t, Options{Inline: inline, Workers: 2, DuplicateWindow: time.Second}, clientTable(t, loopbackClient()), auth, acct)
		p := roundTrip(t, dial(t, f.auth), request(t, reqOpt{code: radius.CodeAccessRequest, withMA: true}))
		if p.Code != radius.CodeAccessAccept || rfc2865.ReplyMessage_GetString(p) != "ok" {
			t.Fatalf("reply %v %q", p.Code, rfc2865.ReplyMessage_GetString(p))
		}
		// Accounting without Message-Authenticator is fine (request authenticator protects it).
		q := roundTrip(t, dial(t, f.acct), request(t, reqOpt{code: radius.CodeAccountingRequest}))
		if q.Code != radius.CodeAccountingResponse {
			t.Fatalf("reply %v", q.Code)
		}
		r := <-auth.entered
		if r.Client == nil || r.Client.Name != "lo" || !r.RemoteAddr.Addr().IsLoopback() || r.Received.IsZero() {
			t.Fatalf("request fields: %+v", r)
		}
		if r.Context() == nil || r.Context().Err() != nil {
			t.Fatal("request context must be live while serving")
		}
		if auth.calls.Load() != 1 || acct.calls.Load() != 1 {
			t.Fatalf("calls auth=%d acct=%d", auth.calls.Load(), acct.calls.Load())
		}
	})
}

func TestOptionalMessageAuthenticator(t *testing.T) {
	auth := newRecorder(radius.CodeAccessReject)
	f := start(t, Options{Workers: 1}, clientTable(t, laxClient()), auth, newRecorder(radius.CodeAccountingResponse))
	p := roundTrip(t, dial(t, f.auth), request(t, reqOpt{code: radius.CodeAccessRequest}))
	if p.Code != radius.CodeAccessReject {
		t.Fatalf("code %v", p.Code)
	}
	// Present but wrong still drops.
	before := dropped(metrics.DropBadMA)
	conn := dial(t, f.auth)
	_, _ = conn.Write(request(t, reqOpt{code: radius.CodeAccessRequest, withMA: true, mutateMA: true}))
	waitDrop(t, metrics.DropBadMA, before, 1)
	expectNoReply(t, conn)
}

// Each malformed, forged or unknown packet is dropped with its reason and never reaches
// the handler.
func TestDropReasons(t *testing.T) {
	bothDispatches(t, func(t *testing.T, inline bool) {
		auth, acct := newRecorder(radius.CodeAccessAccept), newRecorder(radius.CodeAccountingResponse)
		strict := config.Client{Name: "natted", Address: "127.0.0.2", NASIdentifier: "bng-7"}
		f := start(t, Options{Inline: inline, Workers: 2, DuplicateWindow: time.Second}, clientTable(t, loopbackClient(), strict), auth, acct)

		badFraming := request(t, reqOpt{code: radius.CodeAccessRequest, withMA: true})
		badFraming = append(badFraming, 1, 9, 'x') // attribute overruns the packet
		badFraming[3] += 3
		cases := []struct {
			name   string
			port   *net.UDPConn
			pkt    []byte
			reason string
		}{
			{"short datagram", f.auth, []byte{1, 2, 0, 20, 0}, metrics.DropMalformed},
			{"length beyond datagram", f.auth, func() []byte {
				b := request(t, reqOpt{code: radius.CodeAccessRequest, withMA: true})
				return b[:len(b)-1]
			}(), metrics.DropMalformed},
			{"attribute framing", f.auth, badFraming, metrics.DropMalformed},
			{"accounting on auth port", f.auth, request(t, reqOpt{code: radius.CodeAccountingRequest}), metrics.DropUnsupported},
			{"access on acct port", f.acct, request(t, reqOpt{code: radius.CodeAccessRequest, withMA: true}), metrics.DropUnsupported},
			{"reply code", f.auth, request(t, reqOpt{code: radius.CodeAccessAccept}), metrics.DropUnsupported},
			{"CoA on auth port", f.auth, request(t, reqOpt{code: radius.CodeCoARequest}), metrics.DropUnsupported},
			{"missing MA", f.auth, request(t, reqOpt{code: radius.CodeAccessRequest}), metrics.DropMissingMA},
			{"Status-Server without MA", f.acct, request(t, reqOpt{code: radius.CodeStatusServer}), metrics.DropMissingMA},
			{"forged MA", f.auth, request(t, reqOpt{code: radius.CodeAccessRequest, withMA: true, mutateMA: true}), metrics.DropBadMA},
			{"MA with wrong secret", f.auth, request(t, reqOpt{code: radius.CodeAccessRequest, withMA: true, secret: "guess"}), metrics.DropBadMA},
			{"accounting MA with wrong secret", f.acct, request(t, reqOpt{code: radius.CodeAccountingRequest, withMA: true, secret: "guess"}), metrics.DropBadMA},
			{"accounting authenticator wrong secret", f.acct, request(t, reqOpt{code: radius.CodeAccountingRequest, secret: "guess"}), metrics.DropBadAuthenticator},
			{"attribute type 0", f.auth, request(t, reqOpt{code: radius.CodeAccessRequest, withMA: true,
				attrs: radius.Attributes{{Type: 0, Attribute: radius.Attribute("x")}}}), metrics.DropMalformed},
			{"accounting attribute type 0", f.acct, request(t, reqOpt{code: radius.CodeAccountingRequest,
				attrs: radius.Attributes{{Type: 0, Attribute: radius.Attribute("x")}}}), metrics.DropMalformed},
			{"two MA", f.auth, func() []byte {
				b := request(t, reqOpt{code: radius.CodeAccessRequest, withMA: true})
				b, _ = radiusx.AppendMessageAuthenticator(b)
				return b
			}(), metrics.DropBadMA},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				before := dropped(c.reason)
				conn := dial(t, c.port)
				if _, err := conn.Write(c.pkt); err != nil {
					t.Fatal(err)
				}
				waitDrop(t, c.reason, before, 1)
				expectNoReply(t, conn)
			})
		}
		if n := auth.calls.Load() + acct.calls.Load(); n != 0 {
			t.Fatalf("handlers called %d times for dropped packets", n)
		}
	})
}

func TestUnknownClient(t *testing.T) {
	auth := newRecorder(radius.CodeAccessAccept)
	other := config.Client{Name: "far", Address: "192.0.2.0/24"}
	strict := config.Client{Name: "natted", Address: "127.0.0.1", NASIdentifier: "bng-7"}
	f := start(t, Options{Workers: 1}, clientTable(t, other, strict), auth, newRecorder(radius.CodeAccountingResponse))
	for _, nasID := range []string{"", "bng-8"} {
		before := dropped(metrics.DropUnknownClient)
		conn := dial(t, f.auth)
		_, _ = conn.Write(request(t, reqOpt{code: radius.CodeAccessRequest, withMA: true, nasID: nasID}))
		waitDrop(t, metrics.DropUnknownClient, before, 1)
		expectNoReply(t, conn)
	}
	// The NAS-Identifier the client is configured with makes it known.
	p := roundTrip(t, dial(t, f.auth), request(t, reqOpt{code: radius.CodeAccessRequest, withMA: true, nasID: "bng-7"}))
	if p.Code != radius.CodeAccessAccept {
		t.Fatalf("code %v", p.Code)
	}
	if r := <-auth.entered; r.Client.Name != "natted" {
		t.Fatalf("client %q", r.Client.Name)
	}
	// Hot reload: a table without the client makes it unknown again.
	f.s.SetClients(clientTable(t, other))
	if f.s.Clients().Match(f.auth.LocalAddr().(*net.UDPAddr).AddrPort().Addr(), nil) != nil {
		t.Fatal("new table not in force")
	}
	before := dropped(metrics.DropUnknownClient)
	_, _ = dial(t, f.auth).Write(request(t, reqOpt{code: radius.CodeAccessRequest, withMA: true, nasID: "bng-7"}))
	waitDrop(t, metrics.DropUnknownClient, before, 1)
}

// RFC 5997: Status-Server is answered by the server itself on both ports, with
// Message-Authenticator, without reaching the handlers.
func TestStatusServer(t *testing.T) {
	auth, acct := newRecorder(radius.CodeAccessReject), newRecorder(radius.CodeAccountingResponse)
	f := start(t, Options{Workers: 1, DuplicateWindow: time.Second}, clientTable(t, loopbackClient()), auth, acct)
	for _, c := range []struct {
		port *net.UDPConn
		want radius.Code
	}{{f.auth, radius.CodeAccessAccept}, {f.acct, radius.CodeAccountingResponse}} {
		p := roundTrip(t, dial(t, c.port), request(t, reqOpt{code: radius.CodeStatusServer, withMA: true}))
		if p.Code != c.want {
			t.Fatalf("Status-Server answered %v, want %v", p.Code, c.want)
		}
	}
	if n := auth.calls.Load() + acct.calls.Load(); n != 0 {
		t.Fatalf("handlers saw Status-Server %d times", n)
	}
}

// RFC 5080: a copy that arrives while the original is in flight is dropped as duplicate; a
// copy after the answer gets the cached reply, and the handler runs once.
func TestDuplicates(t *testing.T) {
	bothDispatches(t, func(t *testing.T, inline bool) {
		auth := newRecorder(radius.CodeAccessAccept)
		auth.release = make(chan struct{})
		f := start(t, Options{Inline: inline, Readers: 2, Workers: 4, DuplicateWindow: time.Minute}, clientTable(t, loopbackClient()), auth, newRecorder(radius.CodeAccountingResponse))
		conn := dial(t, f.auth)
		b := request(t, reqOpt{code: radius.CodeAccessRequest, withMA: true})
		_, _ = conn.Write(b)
		<-auth.entered // in flight
		before := dropped(metrics.DropDuplicate)
		_, _ = conn.Write(b)
		waitDrop(t, metrics.DropDuplicate, before, 1)
		close(auth.release)
		first, err := readReply(conn, 3*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		answered := testutil.ToFloat64(testMetrics.DuplicatesAnswered)
		_, _ = conn.Write(b)
		again, err := readReply(conn, 3*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != string(first) {
			t.Fatal("retransmission got a different reply")
		}
		if d := testutil.ToFloat64(testMetrics.DuplicatesAnswered) - answered; d != 1 {
			t.Fatalf("duplicates answered delta %v", d)
		}
		// A new request (new authenticator, same identifier) is processed.
		b2 := request(t, reqOpt{code: radius.CodeAccessRequest, withMA: true})
		b2[1] = b[1]
		radiusx.SignRequest(b2, len(b2)-16, []byte(secret))
		roundTrip(t, conn, b2)
		// Another source port with the same bytes is another request.
		roundTrip(t, dial(t, f.auth), b)
		if n := auth.calls.Load(); n != 3 {
			t.Fatalf("handler ran %d times, want 3", n)
		}
	})
}

// A request the handler did not answer (e.g. the store failed) must be processed again
// when the NAS retransmits it.
func TestUnansweredRetransmissionIsProcessedAgain(t *testing.T) {
	acct := newRecorder(radius.CodeAccountingResponse)
	acct.silent = true
	f := start(t, Options{Workers: 1, DuplicateWindow: time.Minute}, clientTable(t, loopbackClient()), newRecorder(radius.CodeAccessAccept), acct)
	conn := dial(t, f.acct)
	b := request(t, reqOpt{code: radius.CodeAccountingRequest})
	for i := 1; i <= 3; i++ {
		_, _ = conn.Write(b)
		<-acct.entered
		waitFor(t, "handler return", func() bool { return acct.calls.Load() == int32(i) })
	}
	expectNoReply(t, conn)
}

func TestDuplicateDetectionOff(t *testing.T) {
	auth := newRecorder(radius.CodeAccessAccept)
	f := start(t, Options{Workers: 1}, clientTable(t, loopbackClient()), auth, newRecorder(radius.CodeAccountingResponse))
	conn := dial(t, f.auth)
	b := request(t, reqOpt{code: radius.CodeAccessRequest, withMA: true})
	roundTrip(t, conn, b)
	roundTrip(t, conn, b)
	if n := auth.calls.Load(); n != 2 {
		t.Fatalf("without a duplicate window each copy is processed: %d", n)
	}
}

// Overload: a burst that finds the worker busy and the queue full goes stale and is dropped
// as overload, counted, never served late; once the worker is free the server answers again.
func TestOverloadQueueFull(t *testing.T) {
	bothDispatches(t, func(t *testing.T, inline bool) {
		// The reader waits for room in the queue, so the burst stays in the socket buffer;
		// older than MaxQueueWait (by its kernel arrival time) when read, it is dropped.
		auth := newRecorder(radius.CodeAccessAccept)
		auth.release = make(chan struct{})
		const wait = 100 * time.Millisecond
		f := start(t, Options{Inline: inline, Workers: 1, QueueSize: 1, MaxQueueWait: wait}, clientTable(t, loopbackClient()), auth, newRecorder(radius.CodeAccountingResponse))
		conn := dial(t, f.auth)
		for entered := false; !entered; { // on a loaded machine the first may itself go stale
			_, _ = conn.Write(request(t, reqOpt{code: radius.CodeAccessRequest, withMA: true}))
			select {
			case <-auth.entered:
				entered = true
			case <-time.After(time.Second):
			}
		}
		before := dropped(metrics.DropOverload)
		const burst = 20
		for i := 0; i < burst; i++ {
			_, _ = conn.Write(request(t, reqOpt{code: radius.CodeAccessRequest, withMA: true}))
		}
		time.Sleep(3 * wait)
		close(auth.release)
		// One may have fitted in the queue and one in the reader's hands; the rest went stale.
		waitDrop(t, metrics.DropOverload, before, burst-3)
		// Serving again. On a loaded machine this request too may wait in the socket buffer
		// past MaxQueueWait and be dropped, as designed: it is sent again, as a NAS would.
		after := dial(t, f.auth)
		var reply []byte
		for try := 0; try < 5 && reply == nil; try++ {
			_, _ = after.Write(request(t, reqOpt{code: radius.CodeAccessRequest, withMA: true}))
			reply, _ = readReply(after, time.Second)
		}
		if p, err := radius.Parse(reply, []byte(secret)); err != nil || p.Code != radius.CodeAccessAccept {
			t.Fatalf("not serving after overload: %v", err)
		}
		if got := auth.calls.Load(); got > 4 {
			t.Fatalf("handler ran %d times; stale requests must not be served", got)
		}
	})
}

// What the kernel drops because the socket buffer is full (we stopped reading while every
// worker was busy) is counted from SO_RXQ_OVFL as socket_buffer_full.
func TestSocketBufferDropsCounted(t *testing.T) {
	bothDispatches(t, func(t *testing.T, inline bool) {
		auth := newRecorder(radius.CodeAccessAccept)
		auth.release = make(chan struct{})
		// The kernel rounds a tiny buffer up to a few datagrams' worth.
		f := start(t, Options{Inline: inline, Workers: 1, QueueSize: 1, MaxQueueWait: time.Minute, SocketBuffer: 1}, clientTable(t, loopbackClient()), auth, newRecorder(radius.CodeAccountingResponse))
		conn := dial(t, f.auth)
		_, _ = conn.Write(request(t, reqOpt{code: radius.CodeAccessRequest, withMA: true}))
		<-auth.entered
		before := dropped(metrics.DropSocketBuffer)
		for i := 0; i < 200; i++ {
			_, _ = conn.Write(request(t, reqOpt{code: radius.CodeAccessRequest, withMA: true}))
		}
		close(auth.release)
		// The count arrives with the next datagram read after the drops.
		waitFor(t, "socket buffer drops counted", func() bool {
			_, _ = conn.Write(request(t, reqOpt{code: radius.CodeAccessRequest, withMA: true}))
			return dropped(metrics.DropSocketBuffer) >= before+100
		})
	})
}

// Shutdown must keep its deadline even when a reader is waiting for a worker that hangs.
func TestShutdownWithReaderWaitingForAWorker(t *testing.T) {
	auth := newRecorder(radius.CodeAccessAccept)
	auth.release = make(chan struct{})
	defer close(auth.release)
	f := start(t, Options{Workers: 1, QueueSize: 1, MaxQueueWait: time.Minute}, clientTable(t, loopbackClient()), auth, newRecorder(radius.CodeAccountingResponse))
	conn := dial(t, f.auth)
	_, _ = conn.Write(request(t, reqOpt{code: radius.CodeAccessRequest, withMA: true}))
	<-auth.entered
	depth := testutil.ToFloat64(testMetrics.QueueDepth)
	for i := 0; i < 3; i++ { // one queued, one held by the reader, one in the socket
		_, _ = conn.Write(request(t, reqOpt{code: radius.CodeAccessRequest, withMA: true}))
	}
	waitFor(t, "queue full", func() bool { return testutil.ToFloat64(testMetrics.QueueDepth) >= depth+1 })
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- f.s.Shutdown(ctx) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown = %v, want deadline exceeded (the worker hangs)", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown hung on a reader waiting for a worker")
	}
}

// A request that waited in the queue longer than MaxQueueWait is dropped as overload
// instead of answered late.
func TestOverloadQueueWait(t *testing.T) {
	auth := newRecorder(radius.CodeAccessAccept)
	auth.release = make(chan struct{})
	const wait = 50 * time.Millisecond
	f := start(t, Options{Workers: 1, QueueSize: 8, MaxQueueWait: wait}, clientTable(t, loopbackClient()), auth, newRecorder(radius.CodeAccountingResponse))
	conn := dial(t, f.auth)
	// Occupy the worker (on a loaded machine the first request may itself wait too long:
	// send again until one is served).
	for entered := false; !entered; {
		_, _ = conn.Write(request(t, reqOpt{code: radius.CodeAccessRequest, withMA: true}))
		select {
		case <-auth.entered:
			entered = true
		case <-time.After(time.Second):
		}
	}
	depth := testutil.ToFloat64(testMetrics.QueueDepth)
	late := dial(t, f.auth)
	_, _ = late.Write(request(t, reqOpt{code: radius.CodeAccessRequest, withMA: true}))
	waitFor(t, "request queued", func() bool { return testutil.ToFloat64(testMetrics.QueueDepth) >= depth+1 })
	before := dropped(metrics.DropOverload)
	time.Sleep(2 * wait)
	close(auth.release)
	waitDrop(t, metrics.DropOverload, before, 1)
	expectNoReply(t, late)
	if n := auth.calls.Load(); n != 1 {
		t.Fatalf("stale request served (%d calls)", n)
	}
}

// Shutdown stops reading but answers everything queued and in flight.
func TestShutdownDrains(t *testing.T) {
	auth := newRecorder(radius.CodeAccessAccept)
	auth.release = make(chan struct{})
	f := start(t, Options{Workers: 1, QueueSize: 16}, clientTable(t, loopbackClient()), auth, newRecorder(radius.CodeAccountingResponse))
	var conns []*net.UDPConn
	var reqs [][]byte
	depth := testutil.ToFloat64(testMetrics.QueueDepth) // shared by the tests' servers: compare with the start
	for i := 0; i < 3; i++ {
		c := dial(t, f.auth)
		b := request(t, reqOpt{code: radius.CodeAccessRequest, withMA: true})
		_, _ = c.Write(b)
		conns, reqs = append(conns, c), append(reqs, b)
		if i == 0 {
			<-auth.entered
		}
	}
	waitFor(t, "two queued", func() bool { return testutil.ToFloat64(testMetrics.QueueDepth) >= depth+2 })
	drainWhileServing(t, f.s, auth)
	for i, c := range conns {
		r, err := readReply(c, time.Second)
		if err != nil {
			t.Fatalf("request %d not answered during drain: %v", i, err)
		}
		if err := radiusx.VerifyResponse(r, reqs[i][4:20], []byte(secret), true); err != nil {
			t.Fatal(err)
		}
	}
	if n := auth.calls.Load(); n != 3 {
		t.Fatalf("handler ran %d times", n)
	}
	// Shutdown is idempotent and the sockets are closed.
	if err := f.s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := f.auth.WriteToUDPAddrPort([]byte{0}, conns[0].LocalAddr().(*net.UDPAddr).AddrPort()); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("socket still open after Shutdown: %v", err)
	}
}

// When the drain deadline passes, Shutdown gives up, reports it and cancels the requests'
// context so that handlers stop.
func TestShutdownDeadline(t *testing.T) {
	bothDispatches(t, func(t *testing.T, inline bool) {
		auth := newRecorder(radius.CodeAccessAccept)
		auth.release = make(chan struct{})
		f := start(t, Options{Inline: inline, Workers: 1}, clientTable(t, loopbackClient()), auth, newRecorder(radius.CodeAccountingResponse))
		_, _ = dial(t, f.auth).Write(request(t, reqOpt{code: radius.CodeAccessRequest, withMA: true}))
		r := <-auth.entered
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		err := f.s.Shutdown(ctx)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown = %v, want deadline exceeded", err)
		}
		if r.Context().Err() == nil {
			t.Fatal("request context not cancelled after a hard shutdown")
		}
		close(auth.release)
		waitFor(t, "handler to finish", func() bool { return auth.writeErrs.Load() == 1 })
	})
}

func TestListenErrors(t *testing.T) {
	s := New(Options{Workers: 1, Log: quietLog()}, clientTable(t, loopbackClient()))
	defer s.Shutdown(context.Background())
	if _, err := s.Listen("not an address", Auth, newRecorder(radius.CodeAccessAccept)); err == nil {
		t.Fatal("bad address accepted")
	}
	c, err := s.Listen("127.0.0.1:0", Auth, newRecorder(radius.CodeAccessAccept))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Listen(c.LocalAddr().String(), Acct, newRecorder(radius.CodeAccessAccept)); err == nil {
		t.Fatal("port in use accepted")
	}
	if Auth.String() != "auth" || Acct.String() != "acct" {
		t.Fatal("kind names")
	}
}

func TestAccepts(t *testing.T) {
	cases := []struct {
		k    Kind
		c    radius.Code
		want bool
	}{
		{Auth, radius.CodeAccessRequest, true},
		{Auth, radius.CodeAccountingRequest, false},
		{Auth, radius.CodeStatusServer, true},
		{Acct, radius.CodeAccountingRequest, true},
		{Acct, radius.CodeAccessRequest, false},
		{Acct, radius.CodeStatusServer, true},
		{Auth, radius.CodeAccessAccept, false},
		{Acct, radius.CodeDisconnectRequest, false},
		{Auth, radius.Code(0), false},
	}
	for _, c := range cases {
		if got := accepts(c.k, c.c); got != c.want {
			t.Errorf("accepts(%v, %v) = %v", c.k, c.c, got)
		}
	}
}

func TestRateLimiter(t *testing.T) {
	var r rateLimiter
	// Within one second only the first of a burst is allowed; the test retries if it
	// straddled a second boundary.
	for attempt := 0; attempt < 3; attempt++ {
		sec := time.Now().Unix()
		first, second := r.allow("x"), r.allow("x")
		other := r.allow("y")
		if time.Now().Unix() != sec {
			continue
		}
		if !first && attempt == 0 || second || !other && attempt == 0 {
			t.Fatalf("allow: first=%v second=%v other=%v", first, second, other)
		}
		return
	}
}

// Inline readers serve what they read: the worker gauge counts them, and Shutdown answers
// the request being served before it returns.
func TestInlineShutdownFinishesInFlight(t *testing.T) {
	auth := newRecorder(radius.CodeAccessAccept)
	auth.release = make(chan struct{})
	f := start(t, Options{Inline: true, Readers: 2}, clientTable(t, loopbackClient()), auth, newRecorder(radius.CodeAccountingResponse))
	if got := testutil.ToFloat64(testMetrics.Workers); got != 4 {
		t.Fatalf("openaaa_radius_workers = %v, want 4 (2 readers × 2 listeners)", got)
	}
	c := dial(t, f.auth)
	b := request(t, reqOpt{code: radius.CodeAccessRequest, withMA: true})
	_, _ = c.Write(b)
	<-auth.entered
	if got := testutil.ToFloat64(testMetrics.WorkersBusy); got < 1 {
		t.Fatalf("openaaa_radius_workers_busy = %v while a reader serves", got)
	}
	drainWhileServing(t, f.s, auth)
	r, err := readReply(c, time.Second)
	if err != nil {
		t.Fatalf("request not answered during drain: %v", err)
	}
	if err := radiusx.VerifyResponse(r, b[4:20], []byte(secret), true); err != nil {
		t.Fatal(err)
	}
}

// A server behind a proxy copies the request's Proxy-State attributes into its reply,
// unmodified and in order (RFC 2865 §5.33): the proxy finds its request by them.
func TestProxyStateEchoed(t *testing.T) {
	bothDispatches(t, func(t *testing.T, inline bool) {
		f := start(t, Options{Inline: inline, Workers: 2}, clientTable(t, loopbackClient()),
			newRecorder(radius.CodeAccessAccept), newRecorder(radius.CodeAccountingResponse))
		for _, c := range []struct {
			code radius.Code
			conn *net.UDPConn
		}{{radius.CodeAccessRequest, f.auth}, {radius.CodeAccountingRequest, f.acct}} {
			b := request(t, reqOpt{code: c.code, withMA: true, proxyStates: []string{"hop-1", "hop-2"}})
			raw := roundTrip(t, dial(t, c.conn), b)
			var got []string
			for _, a := range raw.Attributes {
				if a.Type == radiusx.TypeProxyState {
					got = append(got, string(a.Attribute))
				}
			}
			if strings.Join(got, ",") != "hop-1,hop-2" {
				t.Fatalf("%v reply Proxy-State = %q, want [hop-1 hop-2]", c.code, got)
			}
		}
	})
}

// drainWhileServing shuts s down while auth holds a request: Shutdown must wait for it,
// then return once auth is released.
func drainWhileServing(t *testing.T, s *Server, auth *recorder) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(context.Background()) }()
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned before the request being served was answered: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(auth.release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown did not return")
	}
}

// Serve, as layeh/radius's PacketServer.Serve: it serves a socket the caller opened until
// Shutdown, returns ErrServerClosed then, and at once when the server is shut down already.
func TestServeUntilShutdown(t *testing.T) {
	s := New(Options{Workers: 1, Readers: 1, Log: quietLog()}, clientTable(t, loopbackClient()))
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(conn, Auth, newRecorder(radius.CodeAccessAccept)) }()
	p := roundTrip(t, dial(t, conn), request(t, reqOpt{code: radius.CodeStatusServer, withMA: true}))
	if p.Code != radius.CodeAccessAccept {
		t.Fatalf("Status-Server answered %v", p.Code)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-served:
		if !errors.Is(err, ErrServerClosed) {
			t.Fatalf("Serve returned %v, want ErrServerClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve still serving after Shutdown")
	}
	late, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Serve(late, Auth, newRecorder(radius.CodeAccessAccept)); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve after Shutdown returned %v, want ErrServerClosed", err)
	}
}
