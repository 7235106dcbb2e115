package radiusd_test

import (
	"context"
	"crypto/md5"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"layeh.com/radius"
	"layeh.com/radius/rfc2865"
	"layeh.com/radius/rfc2866"
	"layeh.com/radius/rfc2869"

	"github.com/openaaa/openaaa/internal/radiusx"
	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/aaa"
	"github.com/openaaa/openaaa/services/policing/internal/dict"
	"github.com/openaaa/openaaa/services/policing/internal/eap"
	"github.com/openaaa/openaaa/services/policing/internal/eapforward"
	"github.com/openaaa/openaaa/services/policing/internal/metrics"
	"github.com/openaaa/openaaa/services/policing/internal/nas"
	"github.com/openaaa/openaaa/services/policing/internal/policy"
	"github.com/openaaa/openaaa/services/policing/internal/radiusd"
	"github.com/openaaa/openaaa/services/policing/internal/store/embedded"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

const fuzzSecret = "fuzz-secret"

var allReasons = []string{metrics.DropUnknownClient, metrics.DropBadAuthenticator, metrics.DropMissingMA, metrics.DropBadMA,
	metrics.DropMalformed, metrics.DropDuplicate, metrics.DropOverload, metrics.DropUnsupported, metrics.DropStoreError,
	metrics.DropProxyStateWithoutMA, metrics.DropReplyTooLarge}

func (e *fuzzEnv) totalDrops() float64 {
	var n float64
	for _, r := range allReasons {
		n += testutil.ToFloat64(e.m.Dropped.WithLabelValues(r))
	}
	return n
}

// writeCounter wraps a handler and reports whether it answered (a reply too large to send
// is a drop, not an answer).
type writeCounter struct {
	h     radiusd.Handler
	wrote int
}

type countingWriter struct {
	w radiusd.ResponseWriter
	c *writeCounter
}

func (cw countingWriter) Write(p *radius.Packet) error {
	err := cw.w.Write(p)
	if err == nil {
		cw.c.wrote++
	}
	return err
}

func (c *writeCounter) ServeRADIUS(w radiusd.ResponseWriter, r *radiusd.Request) {
	c.h.ServeRADIUS(countingWriter{w, c}, r)
}

type fuzzEnv struct {
	s          *radiusd.Server
	m          *metrics.Metrics
	conn       *net.UDPConn
	from       netip.AddrPort
	auth, acct *writeCounter
}

func newFuzzEnv(f *testing.F) *fuzzEnv {
	dir := f.TempDir()
	sec := filepath.Join(dir, "secret")
	subs := filepath.Join(dir, "subs.yaml")
	if err := os.WriteFile(sec, []byte(fuzzSecret), 0o600); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(subs, []byte(`
profiles:
  gold: {sessionTimeout: 3600, rateLimit: "10M/10M", quotaOctets: 1000, replyAttributes: {Framed-MTU: "1492", Tunnel-Private-Group-Id: "100"}}
subscribers:
  - {username: alice, password: wonderland, profileName: gold, profile: {framedIPAddress: 10.1.0.1}}
  - {username: bob, password: builder}
`), 0o600); err != nil {
		f.Fatal(err)
	}
	no := false
	tab, err := nas.Build([]config.Client{
		{Name: "lo", Address: "127.0.0.0/8", SecretFile: sec, RequireMessageAuthenticator: &no},
		{Name: "natted", Address: "127.0.0.1", NASIdentifier: "bng-7", SecretFile: sec},
	})
	if err != nil {
		f.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug}))
	pol := &policy.Default{Dict: dict.Builtin, RateLimitAttribute: "Mikrotik-Rate-Limit", RejectMessage: "no"}
	src, err := subscriber.OpenFile(subs, pol.CheckProfile)
	if err != nil {
		f.Fatal(err)
	}
	st, err := embedded.Open(embedded.Options{Shards: 4, HistorySize: 16, Log: log})
	if err != nil {
		f.Fatal(err)
	}
	m := metrics.New(metrics.With(prometheus.NewRegistry()))
	s := radiusd.New(radiusd.Options{Workers: 1, DuplicateWindow: time.Second, Log: log, Metrics: m}, tab)
	// Replies go from conn to a sink that discards them.
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		f.Fatal(err)
	}
	sink, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		f.Fatal(err)
	}
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, _, err := sink.ReadFrom(buf); err != nil {
				return
			}
		}
	}()
	f.Cleanup(func() {
		_ = s.Shutdown(context.Background())
		_ = st.Close(context.Background())
		_ = conn.Close()
		_ = sink.Close()
	})
	am := aaa.NewMetrics(metrics.Factory{}, m, eap.NewMetrics(metrics.Factory{}), eapforward.NewMetrics(metrics.Factory{}))
	return &fuzzEnv{s: s, m: m, conn: conn, from: sink.LocalAddr().(*net.UDPAddr).AddrPort(),
		auth: &writeCounter{h: &aaa.Auth{Subscribers: src, Policy: pol, Log: log, LookupTimeout: time.Second, Metrics: am}},
		acct: &writeCounter{h: &aaa.Acct{Store: st, Subscribers: src, Policy: pol, Log: log, StoreTimeout: time.Second, Metrics: am}}}
}

// serve runs one datagram and checks it had exactly one outcome: a reply by the handler,
// a cached reply, a Status-Server answer, or a drop counted by reason.
func (e *fuzzEnv) serve(t *testing.T, b []byte, kind radiusd.Kind) {
	h := e.auth
	if kind == radiusd.Acct {
		h = e.acct
	}
	h.wrote = 0
	drops, dups := e.totalDrops(), testutil.ToFloat64(e.m.DuplicatesAnswered)
	e.s.ServePacket(b, e.from, e.conn, kind, h)
	outcomes := (e.totalDrops() - drops) + (testutil.ToFloat64(e.m.DuplicatesAnswered) - dups) + float64(h.wrote)
	statusServer := len(b) > 0 && radius.Code(b[0]) == radius.CodeStatusServer
	if outcomes != 1 && !(statusServer && outcomes == 0) {
		t.Fatalf("%s packet % x: %v outcomes (drops %v, handler writes %d), want exactly one",
			kind, b, outcomes, e.totalDrops()-drops, h.wrote)
	}
}

// resign makes b authentic for fuzzSecret when its framing allows, so that mutated
// attributes get past the checks into parsing and the handlers.
func resign(b []byte) []byte {
	n, err := radiusx.PacketLen(b)
	if err != nil {
		return nil
	}
	pkt := append([]byte(nil), b[:n]...)
	off, l, err := radiusx.FindAttr(pkt, radiusx.TypeMessageAuthenticator)
	if err != nil {
		return nil
	}
	if off >= 0 && l != 16 {
		off = -1
	}
	radiusx.SignRequest(pkt, off, []byte(fuzzSecret))
	return pkt
}

func seedPackets(f *testing.F) [][]byte {
	sec := []byte(fuzzSecret)
	enc := func(p *radius.Packet, ma bool) []byte {
		b, err := p.MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		off := -1
		if ma {
			b, off = radiusx.AppendMessageAuthenticator(b)
		}
		radiusx.SignRequest(b, off, sec)
		return b
	}
	var out [][]byte
	pap := radius.New(radius.CodeAccessRequest, sec)
	rfc2865.UserName_SetString(pap, "alice")
	_ = rfc2865.UserPassword_SetString(pap, "wonderland")
	out = append(out, enc(pap, true), enc(pap, false))

	chap := radius.New(radius.CodeAccessRequest, sec)
	rfc2865.UserName_SetString(chap, "bob")
	h := md5.New()
	h.Write([]byte{5})
	h.Write([]byte("builder"))
	h.Write(chap.Authenticator[:])
	rfc2865.CHAPPassword_Set(chap, append([]byte{5}, h.Sum(nil)...))
	rfc2865.NASIdentifier_SetString(chap, "bng-7")
	out = append(out, enc(chap, true))

	for _, st := range []rfc2866.AcctStatusType{rfc2866.AcctStatusType_Value_Start, rfc2866.AcctStatusType_Value_InterimUpdate,
		rfc2866.AcctStatusType_Value_Stop, rfc2866.AcctStatusType_Value_AccountingOn, 15} {
		p := radius.New(radius.CodeAccountingRequest, sec)
		_ = rfc2866.AcctStatusType_Set(p, st)
		rfc2865.UserName_SetString(p, "alice")
		_ = rfc2866.AcctSessionID_SetString(p, "sess-1")
		_ = rfc2865.NASIPAddress_Set(p, net.IPv4(192, 0, 2, 1))
		_ = rfc2865.FramedIPAddress_Set(p, net.IPv4(10, 1, 0, 1))
		_ = rfc2866.AcctInputOctets_Set(p, 1234)
		_ = rfc2869.AcctInputGigawords_Set(p, 1)
		_ = rfc2869.EventTimestamp_Set(p, time.Unix(1700000000, 0))
		_ = rfc2866.AcctDelayTime_Set(p, 3)
		out = append(out, enc(p, st == rfc2866.AcctStatusType_Value_Stop))
	}
	ss := radius.New(radius.CodeStatusServer, sec)
	out = append(out, enc(ss, true))
	n := len(out)
	for _, b := range out[:n] {
		out = append(out, b[:len(b)/2], b[:20], b[:19])
	}
	return out
}

// FuzzServePacket feeds arbitrary datagrams through the server's check, parse and dispatch
// path with the real handlers: nothing may panic, and each datagram is either answered or
// dropped and counted, exactly once. Each input also goes through re-signed so that
// mutations reach the parser and the handlers.
func FuzzServePacket(f *testing.F) {
	env := newFuzzEnv(f)
	for _, b := range seedPackets(f) {
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add(make([]byte, 4200))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, k := range []radiusd.Kind{radiusd.Auth, radiusd.Acct} {
			env.serve(t, b, k)
			if s := resign(b); s != nil {
				env.serve(t, s, k)
			}
		}
	})
}
