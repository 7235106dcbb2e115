package aaa

import (
	"context"
	"crypto/md5"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"layeh.com/radius"
	"layeh.com/radius/rfc2865"
	"layeh.com/radius/rfc2866"
	"layeh.com/radius/rfc2869"
	"layeh.com/radius/rfc3162"
	"layeh.com/radius/rfc4818"
	"layeh.com/radius/rfc6911"

	"github.com/openaaa/openaaa/services/policing/internal/dict"
	"github.com/openaaa/openaaa/services/policing/internal/eap"
	"github.com/openaaa/openaaa/services/policing/internal/eapforward"
	"github.com/openaaa/openaaa/services/policing/internal/metrics"
	"github.com/openaaa/openaaa/services/policing/internal/nas"
	"github.com/openaaa/openaaa/services/policing/internal/policy"
	"github.com/openaaa/openaaa/services/policing/internal/radiusd"
	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

var secret = []byte("aaa-test-secret")

// testMetrics are the metrics of the handlers and auth logs these tests build, on a
// registry of their own: tests read their differences.
var testMetrics = func() *Metrics {
	reg := prometheus.NewRegistry()
	return NewMetrics(metrics.With(reg), metrics.New(metrics.With(reg)), eap.NewMetrics(metrics.With(reg)), eapforward.NewMetrics(metrics.With(reg)))
}()

func quiet() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// fakeSource is a map of subscribers; err, when set, is returned for every lookup.
type fakeSource struct {
	subs  map[string]*subscriber.Subscriber
	err   error
	block bool // wait for the context to end
	ctxOK bool // the context had a deadline
}

func (s *fakeSource) Lookup(ctx context.Context, user string) (*subscriber.Subscriber, error) {
	_, s.ctxOK = ctx.Deadline()
	if s.block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if s.err != nil {
		return nil, s.err
	}
	if sub, ok := s.subs[user]; ok {
		return sub, nil
	}
	return nil, subscriber.ErrNotFound
}

// fakeStore records writes and fails on demand.
type fakeStore struct {
	mu      sync.Mutex
	fail    error
	updates []*session.Update
	options []session.WriteOptions // of each update
	closed  []closeCall
}

type closeCall struct {
	nas   string
	at    time.Time
	cause uint32
}

func (s *fakeStore) Apply(_ context.Context, u *session.Update, o session.WriteOptions) (session.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return session.Result{}, s.fail
	}
	s.updates = append(s.updates, u)
	s.options = append(s.options, o)
	return session.Result{}, nil
}

func (s *fakeStore) CloseNAS(_ context.Context, nas string, at time.Time, cause uint32) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return 0, s.fail
	}
	s.closed = append(s.closed, closeCall{nas, at, cause})
	return 2, nil
}

func (s *fakeStore) Get(context.Context, session.Key) (*session.Session, error) {
	return nil, session.ErrNotFound
}
func (s *fakeStore) ByUser(context.Context, string) ([]*session.Session, error) { return nil, nil }
func (s *fakeStore) ByFramedIP(context.Context, netip.Addr) (*session.Session, error) {
	return nil, session.ErrNotFound
}
func (s *fakeStore) ByIPv6(context.Context, netip.Prefix) (*session.Session, error) {
	return nil, session.ErrNotFound
}
func (s *fakeStore) ByNAS(context.Context, string) ([]*session.Session, error) { return nil, nil }
func (s *fakeStore) ByCallingStation(context.Context, string) ([]*session.Session, error) {
	return nil, nil
}
func (s *fakeStore) History(context.Context, string, int) ([]*session.Session, error) {
	return nil, nil
}
func (s *fakeStore) Ready(context.Context) error { return nil }
func (s *fakeStore) Close(context.Context) error { return nil }

// recWriter records the reply.
type recWriter struct {
	replies []*radius.Packet
	err     error
}

func (w *recWriter) Write(p *radius.Packet) error {
	w.replies = append(w.replies, p)
	return w.err
}

var (
	received = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	// client is the NAS of the requests below; 198.51.100.0/24, the NAS-IP-Address they
	// carry, is its own (NASKey).
	client = nas.NewTable(&nas.Client{Name: "bng", Prefix: netip.MustParsePrefix("198.51.100.0/24"), Secret: secret}).All()[0]
)

func newRequest(code radius.Code, build func(p *radius.Packet)) *radiusd.Request {
	p := radius.New(code, secret)
	if build != nil {
		build(p)
	}
	// Round-trip through the wire form, as the server hands it over.
	b, err := p.Encode()
	if err != nil {
		panic(err)
	}
	q, err := radius.Parse(b, secret)
	if err != nil {
		panic(err)
	}
	return &radiusd.Request{Packet: q, Client: client, RemoteAddr: netip.MustParseAddrPort("[::ffff:192.0.2.9]:40000"), Received: received}
}

func chapResponse(id byte, password string, challenge []byte) []byte {
	h := md5.New()
	h.Write([]byte{id})
	h.Write([]byte(password))
	h.Write(challenge)
	return append([]byte{id}, h.Sum(nil)...)
}

func TestCheckPassword(t *testing.T) {
	long := strings.Repeat("p", 40) // three 16-octet blocks
	cases := []struct {
		name   string
		stored string
		build  func(p *radius.Packet)
		want   string
	}{
		{"PAP right", "wonderland", func(p *radius.Packet) { _ = rfc2865.UserPassword_SetString(p, "wonderland") }, ""},
		{"PAP wrong", "wonderland", func(p *radius.Packet) { _ = rfc2865.UserPassword_SetString(p, "wonderlan") }, reasonBadPassword},
		{"PAP prefix of stored", "wonderland", func(p *radius.Packet) { _ = rfc2865.UserPassword_SetString(p, "wonder") }, reasonBadPassword},
		{"PAP longer than stored", "wonder", func(p *radius.Packet) { _ = rfc2865.UserPassword_SetString(p, "wonderland") }, reasonBadPassword},
		{"PAP multi-block", long, func(p *radius.Packet) { _ = rfc2865.UserPassword_SetString(p, long) }, ""},
		{"PAP exactly 16", "0123456789abcdef", func(p *radius.Packet) { _ = rfc2865.UserPassword_SetString(p, "0123456789abcdef") }, ""},
		{"PAP bad length", "x", func(p *radius.Packet) { p.Add(rfc2865.UserPassword_Type, radius.Attribute("short")) }, reasonBadPassword},
		{"CHAP with authenticator as challenge", "builder", func(p *radius.Packet) {
			_ = rfc2865.CHAPPassword_Set(p, chapResponse(7, "builder", p.Authenticator[:]))
		}, ""},
		{"CHAP with CHAP-Challenge", "builder", func(p *radius.Packet) {
			ch := []byte("a-longer-challenge-of-24b")
			_ = rfc2865.CHAPChallenge_Set(p, ch)
			_ = rfc2865.CHAPPassword_Set(p, chapResponse(9, "builder", ch))
		}, ""},
		{"CHAP ignoring CHAP-Challenge is wrong", "builder", func(p *radius.Packet) {
			_ = rfc2865.CHAPChallenge_Set(p, []byte("0123456789abcdef"))
			_ = rfc2865.CHAPPassword_Set(p, chapResponse(9, "builder", p.Authenticator[:]))
		}, reasonBadPassword},
		{"CHAP wrong password", "builder", func(p *radius.Packet) {
			_ = rfc2865.CHAPPassword_Set(p, chapResponse(7, "bulider", p.Authenticator[:]))
		}, reasonBadPassword},
		{"CHAP wrong ident", "builder", func(p *radius.Packet) {
			r := chapResponse(7, "builder", p.Authenticator[:])
			r[0] = 8
			_ = rfc2865.CHAPPassword_Set(p, r)
		}, reasonBadPassword},
		{"CHAP short", "builder", func(p *radius.Packet) { _ = rfc2865.CHAPPassword_Set(p, make([]byte, 16)) }, reasonBadPassword},
		{"no password", "builder", nil, reasonNoPassword},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRequest(radius.CodeAccessRequest, c.build)
			if got := checkPassword(r.Packet, &subscriber.Subscriber{Password: c.stored}); got != c.want {
				t.Fatalf("checkPassword = %q, want %q", got, c.want)
			}
		})
	}
}

func authHandler(src subscriber.Source) *Auth {
	pol := &policy.Default{Dict: dict.Builtin, RateLimitAttribute: "Mikrotik-Rate-Limit", RejectMessage: "Authentication failed"}
	return &Auth{Subscribers: src, Policy: pol, Log: quiet(), LookupTimeout: time.Second, Metrics: testMetrics}
}

func TestAuthServe(t *testing.T) {
	src := &fakeSource{subs: map[string]*subscriber.Subscriber{
		"alice": {Username: "alice", Password: "wonderland", Profile: subscriber.Profile{FramedIPAddress: "10.1.0.1", SessionTimeout: 3600, RateLimit: "10M/10M"}},
		"carol": {Username: "carol", Password: "x", Disabled: true},
	}}
	h := authHandler(src)
	pap := func(user, pass string) func(p *radius.Packet) {
		return func(p *radius.Packet) {
			if user != "" {
				rfc2865.UserName_SetString(p, user)
			}
			_ = rfc2865.UserPassword_SetString(p, pass)
		}
	}
	cases := []struct {
		name  string
		build func(p *radius.Packet)
		code  radius.Code
	}{
		{"accept", pap("alice", "wonderland"), radius.CodeAccessAccept},
		{"wrong password", pap("alice", "alice"), radius.CodeAccessReject},
		{"unknown user", pap("mallory", "wonderland"), radius.CodeAccessReject},
		{"no user name", pap("", "wonderland"), radius.CodeAccessReject},
		{"disabled", pap("carol", "x"), radius.CodeAccessReject},
		// RFC 2865 §5.44 note 1: never both, even when the PAP password is right.
		{"both User-Password and CHAP-Password", func(p *radius.Packet) {
			pap("alice", "wonderland")(p)
			_ = rfc2865.CHAPPassword_Set(p, chapResponse(7, "wonderland", p.Authenticator[:]))
		}, radius.CodeAccessReject},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			result := "reject"
			if c.code == radius.CodeAccessAccept {
				result = "accept"
			}
			before := testutil.ToFloat64(testMetrics.shared.Requests.WithLabelValues("auth", result))
			r := newRequest(radius.CodeAccessRequest, c.build)
			w := &recWriter{}
			h.ServeRADIUS(w, r)
			if len(w.replies) != 1 {
				t.Fatalf("%d replies", len(w.replies))
			}
			reply := w.replies[0]
			if reply.Code != c.code || reply.Identifier != r.Identifier || reply.Authenticator != r.Authenticator {
				t.Fatalf("reply code %v id %d", reply.Code, reply.Identifier)
			}
			if c.code == radius.CodeAccessReject {
				if msg := rfc2865.ReplyMessage_GetString(reply); msg != "Authentication failed" {
					t.Fatalf("Reply-Message %q", msg)
				}
				if _, ok := reply.Lookup(rfc2865.FramedIPAddress_Type); ok {
					t.Fatal("reject carries profile attributes")
				}
			} else {
				if ip := rfc2865.FramedIPAddress_Get(reply); !ip.Equal(net.IPv4(10, 1, 0, 1)) {
					t.Fatalf("Framed-IP-Address %v", ip)
				}
				if rfc2865.SessionTimeout_Get(reply) != 3600 {
					t.Fatal("Session-Timeout")
				}
				if _, ok := reply.Lookup(26); !ok {
					t.Fatal("rate limit VSA missing")
				}
			}
			if d := testutil.ToFloat64(testMetrics.shared.Requests.WithLabelValues("auth", result)) - before; d != 1 {
				t.Fatalf("requests{auth,%s} delta %v", result, d)
			}
		})
	}
}

func TestAuthSourceFailureRejects(t *testing.T) {
	src := &fakeSource{err: errors.Join(subscriber.ErrUnavailable, errors.New("ldap down"))}
	h := authHandler(src)
	w := &recWriter{}
	h.ServeRADIUS(w, newRequest(radius.CodeAccessRequest, func(p *radius.Packet) {
		rfc2865.UserName_SetString(p, "alice")
		_ = rfc2865.UserPassword_SetString(p, "wonderland")
	}))
	if len(w.replies) != 1 || w.replies[0].Code != radius.CodeAccessReject {
		t.Fatal("source failure must reject")
	}
	if d := h.decide(newRequest(radius.CodeAccessRequest, func(p *radius.Packet) { rfc2865.UserName_SetString(p, "alice") })); d.Reason != reasonUnavailable {
		t.Fatalf("reason %q", d.Reason)
	}
}

// The lookup is bounded by LookupTimeout: a hung source yields a reject, not a hung worker.
func TestAuthLookupTimeout(t *testing.T) {
	src := &fakeSource{block: true}
	h := authHandler(src)
	h.LookupTimeout = 20 * time.Millisecond
	w := &recWriter{}
	done := make(chan struct{})
	go func() {
		h.ServeRADIUS(w, newRequest(radius.CodeAccessRequest, func(p *radius.Packet) {
			rfc2865.UserName_SetString(p, "alice")
			_ = rfc2865.UserPassword_SetString(p, "x")
		}))
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("auth hung on a blocked subscriber source")
	}
	if !src.ctxOK || len(w.replies) != 1 || w.replies[0].Code != radius.CodeAccessReject {
		t.Fatalf("deadline=%v replies=%d", src.ctxOK, len(w.replies))
	}
}

func TestAuthWriteErrorCounted(t *testing.T) {
	h := authHandler(&fakeSource{})
	before := testutil.ToFloat64(testMetrics.shared.Requests.WithLabelValues("auth", "error"))
	h.ServeRADIUS(&recWriter{err: errors.New("socket closed")}, newRequest(radius.CodeAccessRequest, nil))
	if d := testutil.ToFloat64(testMetrics.shared.Requests.WithLabelValues("auth", "error")) - before; d != 1 {
		t.Fatalf("error delta %v", d)
	}
}

func TestNASKey(t *testing.T) {
	withIP := func(p *radius.Packet) { _ = rfc2865.NASIPAddress_Set(p, net.IPv4(198, 51, 100, 7)) }
	r := newRequest(radius.CodeAccountingRequest, withIP)
	if k := NASKey(r); k != "198.51.100.7" {
		t.Fatalf("NAS-IP-Address key %q", k)
	}
	r = newRequest(radius.CodeAccountingRequest, nil)
	if k := NASKey(r); k != "192.0.2.9" {
		t.Fatalf("source address key %q (IPv4-mapped must be unmapped)", k)
	}
	// An address that is not the client's own is qualified by the client's name: another
	// client's address, or one no client has (a NAS behind NAT or a proxy).
	other := &nas.Client{Name: "other", Prefix: netip.MustParsePrefix("203.0.113.5/32"), Secret: secret}
	mine := &nas.Client{Name: "mine", Prefix: netip.MustParsePrefix("203.0.113.0/24"), Secret: secret}
	nas.NewTable(other, mine)
	for ip, want := range map[string]string{"203.0.113.5": "203.0.113.5@mine", "203.0.113.6": "203.0.113.6", "192.0.2.77": "192.0.2.77@mine"} {
		r = newRequest(radius.CodeAccountingRequest, func(p *radius.Packet) { _ = rfc2865.NASIPAddress_Set(p, net.ParseIP(ip)) })
		r.Client = mine
		if k := NASKey(r); k != want {
			t.Errorf("NAS-IP-Address %s from client mine: key %q, want %q", ip, k, want)
		}
	}
	r = newRequest(radius.CodeAccountingRequest, withIP)
	r.Client = &nas.Client{Name: "loose", Secret: secret} // in no table: owns nothing
	if k := NASKey(r); k != "198.51.100.7@loose" {
		t.Errorf("client outside a table: key %q", k)
	}
	r = newRequest(radius.CodeAccountingRequest, func(p *radius.Packet) {
		withIP(p)
		rfc2865.NASIdentifier_SetString(p, "spoofed")
	})
	r.Client = &nas.Client{Name: "nat", NASIdentifier: "bng-7", Secret: secret}
	if k := NASKey(r); k != "bng-7" {
		t.Fatalf("configured NAS-Identifier key %q", k)
	}
}

func acctHandler(st session.Store, src subscriber.Source) *Acct {
	pol := &policy.Default{Dict: dict.Builtin, RateLimitAttribute: "Mikrotik-Rate-Limit"}
	return &Acct{Store: st, Subscribers: src, Policy: pol, Log: quiet(), StoreTimeout: time.Second, Metrics: testMetrics,
		Now: func() time.Time { return received.Add(time.Minute) }}
}

func acctRequest(status rfc2866.AcctStatusType, id string, more func(p *radius.Packet)) *radiusd.Request {
	return newRequest(radius.CodeAccountingRequest, func(p *radius.Packet) {
		_ = rfc2866.AcctStatusType_Set(p, status)
		if id != "" {
			_ = rfc2866.AcctSessionID_SetString(p, id)
		}
		rfc2865.UserName_SetString(p, "alice")
		_ = rfc2865.NASIPAddress_Set(p, net.IPv4(198, 51, 100, 7))
		if more != nil {
			more(p)
		}
	})
}

func TestAcctDecode(t *testing.T) {
	st := &fakeStore{}
	h := acctHandler(st, &fakeSource{})
	_, pfx, _ := net.ParseCIDR("2001:db8:1::/48")
	w := &recWriter{}
	h.ServeRADIUS(w, acctRequest(rfc2866.AcctStatusType_Value_InterimUpdate, "sess-1", func(p *radius.Packet) {
		_ = rfc2865.FramedIPAddress_Set(p, net.IPv4(10, 1, 0, 1))
		_ = rfc3162.FramedIPv6Prefix_Set(p, pfx)
		_, pd, _ := net.ParseCIDR("2001:db8:100:ab00::/56")
		_ = rfc4818.DelegatedIPv6Prefix_Set(p, pd)
		_ = rfc6911.FramedIPv6Address_Set(p, net.ParseIP("2001:db8:1::99"))
		_ = rfc3162.FramedInterfaceID_Set(p, net.HardwareAddr{0, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55})
		_ = rfc3162.NASIPv6Address_Set(p, net.ParseIP("2001:db8:ffff::7"))
		rfc2865.NASIdentifier_SetString(p, "bng-1")
		_ = rfc2865.NASPort_Set(p, 42)
		_ = rfc2869.NASPortID_SetString(p, "ge-0/0/1.100")
		_ = rfc2865.NASPortType_Set(p, rfc2865.NASPortType_Value_Ethernet)
		_ = rfc2865.ServiceType_Set(p, rfc2865.ServiceType_Value_FramedUser)
		_ = rfc2865.FramedProtocol_Set(p, rfc2865.FramedProtocol_Value_PPP)
		rfc2865.CallingStationID_SetString(p, "00:11:22:33:44:55")
		rfc2865.CalledStationID_SetString(p, "bras")
		_ = rfc2866.AcctMultiSessionID_SetString(p, "multi")
		_ = rfc2865.Class_Set(p, []byte("gold"))
		_ = rfc2866.AcctSessionTime_Set(p, 600)
		_ = rfc2866.AcctInputOctets_Set(p, 5)
		_ = rfc2869.AcctInputGigawords_Set(p, 2)
		_ = rfc2866.AcctOutputOctets_Set(p, 0xffffffff)
		_ = rfc2869.AcctOutputGigawords_Set(p, 1)
		_ = rfc2866.AcctInputPackets_Set(p, 11)
		_ = rfc2866.AcctOutputPackets_Set(p, 12)
		_ = rfc2866.AcctDelayTime_Set(p, 5)
	}))
	if len(w.replies) != 1 || w.replies[0].Code != radius.CodeAccountingResponse {
		t.Fatalf("replies %v", w.replies)
	}
	if len(st.updates) != 1 {
		t.Fatalf("%d updates", len(st.updates))
	}
	u := st.updates[0]
	s := u.Session
	if u.Kind != session.KindInterim {
		t.Fatalf("kind %v", u.Kind)
	}
	want := session.Key{NAS: "198.51.100.7", ID: "sess-1"}
	if s.Key != want {
		t.Fatalf("key %+v", s.Key)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"InputOctets (Gigawords)", s.InputOctets, uint64(2)<<32 | 5},
		{"OutputOctets (Gigawords)", s.OutputOctets, uint64(1)<<32 | 0xffffffff},
		{"InputPackets", s.InputPackets, uint64(11)},
		{"OutputPackets", s.OutputPackets, uint64(12)},
		{"SessionTime", s.SessionTime, uint32(600)},
		{"FramedIP", s.FramedIP, netip.MustParseAddr("10.1.0.1")},
		{"FramedIPv6Prefix", s.FramedIPv6Prefix, netip.MustParsePrefix("2001:db8:1::/48")},
		{"DelegatedIPv6Prefix", s.DelegatedIPv6Prefix, netip.MustParsePrefix("2001:db8:100:ab00::/56")},
		{"FramedIPv6Address", s.FramedIPv6Address, netip.MustParseAddr("2001:db8:1::99")},
		{"FramedInterfaceID", s.FramedInterfaceID, "0011:22ff:fe33:4455"},
		{"NASIPv6Address", s.NASIPv6Address, netip.MustParseAddr("2001:db8:ffff::7")},
		{"NASIPAddress", s.NASIPAddress, netip.MustParseAddr("198.51.100.7")},
		{"NASIdentifier", s.NASIdentifier, "bng-1"},
		{"NASPort", s.NASPort, uint32(42)},
		{"NASPortID", s.NASPortID, "ge-0/0/1.100"},
		{"NASPortType", s.NASPortType, uint32(rfc2865.NASPortType_Value_Ethernet)},
		{"ServiceType", s.ServiceType, uint32(2)},
		{"FramedProtocol", s.FramedProtocol, uint32(1)},
		{"CallingStationID", s.CallingStationID, "00:11:22:33:44:55"},
		{"CalledStationID", s.CalledStationID, "bras"},
		{"AcctMultiSessionID", s.AcctMultiSessionID, "multi"},
		{"Class", string(s.Class), "gold"},
		{"UserName", s.UserName, "alice"},
		{"ClientName", s.ClientName, "bng"},
		// No Event-Timestamp: arrival time less Acct-Delay-Time.
		{"LastSeen", s.LastSeen, received.Add(-5 * time.Second)},
		{"StartTime (not a Start)", s.StartTime.IsZero(), true},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

// Event-Timestamp is the time of the event on the NAS (RFC 2869 §5.3); Acct-Delay-Time is
// how long the NAS has been trying to send, to be subtracted from the arrival time only
// (RFC 2866 §5.2). With both present the event time is Event-Timestamp.
func TestAcctEventTime(t *testing.T) {
	event := time.Date(2025, 3, 1, 11, 58, 0, 0, time.UTC)
	cases := []struct {
		name  string
		ts    bool
		delay uint32
		want  time.Time
	}{
		{"neither", false, 0, received},
		{"delay only", false, 30, received.Add(-30 * time.Second)},
		{"timestamp only", true, 0, event},
		{"timestamp and delay", true, 30, event},
		// An absurd delay is clamped to a day (and counted).
		{"delay of ten days", false, 10 * 86400, received.Add(-24 * time.Hour)},
		{"delay of 136 years", false, 0xffffffff, received.Add(-24 * time.Hour)},
		{"delay of a day", false, 86400, received.Add(-24 * time.Hour)},
		{"timestamp and absurd delay", true, 0xffffffff, event},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := &fakeStore{}
			h := acctHandler(st, &fakeSource{})
			clamped := testutil.ToFloat64(testMetrics.shared.AcctDelayClamped)
			h.ServeRADIUS(&recWriter{}, acctRequest(rfc2866.AcctStatusType_Value_Start, "s", func(p *radius.Packet) {
				if c.ts {
					_ = rfc2869.EventTimestamp_Set(p, event)
				}
				if c.delay > 0 {
					_ = rfc2866.AcctDelayTime_Set(p, rfc2866.AcctDelayTime(c.delay))
				}
			}))
			if len(st.updates) != 1 {
				t.Fatal("not stored")
			}
			s := st.updates[0].Session
			if !s.LastSeen.Equal(c.want) || !s.StartTime.Equal(c.want) {
				t.Fatalf("LastSeen %v StartTime %v, want %v", s.LastSeen, s.StartTime, c.want)
			}
			want := 0.0
			if !c.ts && c.delay > 86400 {
				want = 1
			}
			if d := testutil.ToFloat64(testMetrics.shared.AcctDelayClamped) - clamped; d != want {
				t.Fatalf("acct_delay_clamped_total delta %v, want %v", d, want)
			}
		})
	}
}

func TestAcctKinds(t *testing.T) {
	for _, c := range []struct {
		status rfc2866.AcctStatusType
		kind   session.Kind
	}{
		{rfc2866.AcctStatusType_Value_Start, session.KindStart},
		{rfc2866.AcctStatusType_Value_InterimUpdate, session.KindInterim},
		{rfc2866.AcctStatusType_Value_Stop, session.KindStop},
	} {
		st := &fakeStore{}
		h := acctHandler(st, &fakeSource{})
		w := &recWriter{}
		h.ServeRADIUS(w, acctRequest(c.status, "s", func(p *radius.Packet) {
			_ = rfc2866.AcctTerminateCause_Set(p, rfc2866.AcctTerminateCause_Value_UserRequest)
		}))
		if len(st.updates) != 1 || st.updates[0].Kind != c.kind || len(w.replies) != 1 {
			t.Fatalf("%v: updates %d replies %d", c.status, len(st.updates), len(w.replies))
		}
		if st.updates[0].Session.TerminateCause != 1 {
			t.Fatalf("terminate cause %d", st.updates[0].Session.TerminateCause)
		}
	}
}

// What cannot be recorded is not acknowledged: no reply, counted by reason.
func TestAcctNotAcknowledged(t *testing.T) {
	storeDown := errors.New("store down")
	cases := []struct {
		name   string
		fail   error
		req    *radiusd.Request
		reason string
	}{
		{"missing Acct-Session-Id", nil, acctRequest(rfc2866.AcctStatusType_Value_Start, "", nil), metrics.DropMalformed},
		{"missing Acct-Status-Type", nil, newRequest(radius.CodeAccountingRequest, func(p *radius.Packet) {
			_ = rfc2866.AcctSessionID_SetString(p, "s")
		}), metrics.DropMalformed},
		{"store error on Interim", storeDown, acctRequest(rfc2866.AcctStatusType_Value_InterimUpdate, "s", nil), metrics.DropStoreError},
		{"store error on Accounting-On", storeDown, acctRequest(rfc2866.AcctStatusType_Value_AccountingOn, "", nil), metrics.DropStoreError},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := &fakeStore{fail: c.fail}
			h := acctHandler(st, &fakeSource{})
			before := testutil.ToFloat64(testMetrics.shared.Dropped.WithLabelValues(c.reason))
			errBefore := testutil.ToFloat64(testMetrics.shared.Requests.WithLabelValues("acct", "error"))
			w := &recWriter{}
			h.ServeRADIUS(w, c.req)
			if len(w.replies) != 0 {
				t.Fatal("acknowledged a request that was not recorded")
			}
			if len(st.updates) != 0 {
				t.Fatal("stored")
			}
			if d := testutil.ToFloat64(testMetrics.shared.Dropped.WithLabelValues(c.reason)) - before; d != 1 {
				t.Fatalf("dropped{%s} delta %v", c.reason, d)
			}
			if d := testutil.ToFloat64(testMetrics.shared.Requests.WithLabelValues("acct", "error")) - errBefore; d != 1 {
				t.Fatalf("requests{acct,error} delta %v", d)
			}
		})
	}
}

func TestAcctUnknownStatusAcknowledged(t *testing.T) {
	st := &fakeStore{}
	h := acctHandler(st, &fakeSource{})
	before := testutil.ToFloat64(testMetrics.shared.AccountingRequests.WithLabelValues("other"))
	w := &recWriter{}
	h.ServeRADIUS(w, acctRequest(15, "s", nil)) // Failed
	if len(w.replies) != 1 || w.replies[0].Code != radius.CodeAccountingResponse {
		t.Fatal("unknown Acct-Status-Type must be acknowledged")
	}
	if len(st.updates) != 0 || len(st.closed) != 0 {
		t.Fatal("unknown Acct-Status-Type must not be stored")
	}
	if d := testutil.ToFloat64(testMetrics.shared.AccountingRequests.WithLabelValues("other")) - before; d != 1 {
		t.Fatalf("accounting_requests{other} delta %v", d)
	}
}

func TestAcctOnOffClosesNAS(t *testing.T) {
	for _, c := range []struct {
		status rfc2866.AcctStatusType
		cause  uint32
	}{
		{rfc2866.AcctStatusType_Value_AccountingOn, causeNASReboot},
		{rfc2866.AcctStatusType_Value_AccountingOff, causeNASRequest},
	} {
		st := &fakeStore{}
		h := acctHandler(st, &fakeSource{})
		w := &recWriter{}
		h.ServeRADIUS(w, acctRequest(c.status, "", nil))
		if len(w.replies) != 1 {
			t.Fatalf("%v not acknowledged", c.status)
		}
		want := closeCall{nas: "198.51.100.7", at: received.Add(time.Minute), cause: c.cause}
		if len(st.closed) != 1 || st.closed[0] != want {
			t.Fatalf("%v: CloseNAS calls %+v, want %+v", c.status, st.closed, want)
		}
	}
}

// The policy sees the decoded counters with the subscriber's profile and may mark the
// session for disconnect before it is stored; an unknown subscriber is not an error.
func TestAcctQuotaMark(t *testing.T) {
	src := &fakeSource{subs: map[string]*subscriber.Subscriber{
		"alice": {Username: "alice", Profile: subscriber.Profile{QuotaOctets: 1000}},
	}}
	st := &fakeStore{}
	h := acctHandler(st, src)
	for _, in := range []uint32{999, 1000} {
		h.ServeRADIUS(&recWriter{}, acctRequest(rfc2866.AcctStatusType_Value_InterimUpdate, "s", func(p *radius.Packet) {
			_ = rfc2866.AcctInputOctets_Set(p, rfc2866.AcctInputOctets(in))
		}))
	}
	if len(st.updates) != 2 {
		t.Fatal("not stored")
	}
	if r := st.options[0].DisconnectReason; r != "" {
		t.Fatalf("below quota marked %q", r)
	}
	if r := st.options[1].DisconnectReason; r != policy.QuotaReason {
		t.Fatalf("at quota: %q", r)
	}
	for _, u := range st.updates {
		if u.Session.DisconnectReason != "" {
			t.Fatalf("the policy wrote into the update: %q", u.Session.DisconnectReason)
		}
	}
	src.err = subscriber.ErrNotFound
	w := &recWriter{}
	h.ServeRADIUS(w, acctRequest(rfc2866.AcctStatusType_Value_InterimUpdate, "s", nil))
	if len(w.replies) != 1 {
		t.Fatal("accounting for an unknown subscriber must still be acknowledged")
	}
}

func TestU32(t *testing.T) {
	p := radius.New(radius.CodeAccountingRequest, secret)
	p.Add(rfc2866.AcctSessionTime_Type, radius.Attribute{0, 0, 1})
	p.Add(rfc2866.AcctInputOctets_Type, radius.NewInteger(77))
	if u32(p, rfc2866.AcctSessionTime_Type) != 0 {
		t.Fatal("3-octet integer must read as 0")
	}
	if u32(p, rfc2866.AcctInputOctets_Type) != 77 || u32(p, rfc2866.AcctOutputOctets_Type) != 0 {
		t.Fatal("u32")
	}
}

// The step after the store write (the policy's Disconnect, coa.PolicyTrigger) sees only
// updates the store accepted, once it accepted them.
func TestAcctStoredStepRunsAfterTheWrite(t *testing.T) {
	st := &fakeStore{}
	h := acctHandler(st, &fakeSource{})
	var seen []*session.Update
	h.Stored = func(u *session.Update, _ policy.Actions) {
		st.mu.Lock()
		defer st.mu.Unlock()
		if !slices.Contains(st.updates, u) {
			t.Errorf("Stored ran before the store had the update %+v", u.Session.Key)
		}
		seen = append(seen, u)
	}
	w := &recWriter{}
	h.ServeRADIUS(w, acctRequest(rfc2866.AcctStatusType_Value_InterimUpdate, "s", nil))
	if len(seen) != 1 || len(w.replies) != 1 {
		t.Fatalf("accepted write: Stored ran %d times, %d replies", len(seen), len(w.replies))
	}
	st.fail = errors.New("store down")
	h.ServeRADIUS(w, acctRequest(rfc2866.AcctStatusType_Value_InterimUpdate, "s", nil))
	if len(seen) != 1 {
		t.Fatal("Stored ran for an update the store refused")
	}
}
