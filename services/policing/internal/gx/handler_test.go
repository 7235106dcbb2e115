package gx

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"
	"github.com/fiorix/go-diameter/v4/diam/dict"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/openaaa/openaaa/services/policing/internal/diameter"
	"github.com/openaaa/openaaa/services/policing/internal/diameter/diametertest"
	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/store/embedded"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
	"github.com/openaaa/openaaa/services/policing/internal/testslapd"
)

const subscribersYAML = `
profiles:
  data:
    dataPolicy:
      rules: [internet]
      ruleBases: [base-web]
      dynamic:
        - {name: voice, precedence: 10, qci: 1, mbrUplink: 128000, mbrDownlink: 128000, gbrUplink: 64000, gbrDownlink: 64000, flows: ["permit out 17 from any to any 5060"]}
      qci: 9
      arpPriority: 8
      ambrUplink: 50000000
      ambrDownlink: 100000000
      monitoringKey: mk1
      quotaOctets: 1000
      grantOctets: 500
      throttleRule: throttle-64k
      fallbackRules: {internet: internet-basic}
      revalidationSeconds: 3600
subscribers:
  - {username: "001010000000001", password: x, profileName: data}
`

type rig struct {
	t     *testing.T
	store *embedded.Store
	conn  net.Conn
}

// newServer starts a Gx server on loopback with the embedded store and the subscribers of
// subscribersYAML; peers are allowed by Origin-Host.
func newServer(t *testing.T, peers ...string) (*embedded.Store, net.Addr) {
	t.Helper()
	st, addr, _ := newServerWith(t, nil, subscribersYAML, peers...)
	return st, addr
}

func newServerWith(t testing.TB, hooks Hooks, subscribers string, peers ...string) (*embedded.Store, net.Addr, *Handler) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "subscribers.yaml")
	if err := os.WriteFile(path, []byte(subscribers), 0o600); err != nil {
		t.Fatal(err)
	}
	st, addr, h, _ := newServerOnFile(t, hooks, path, peers...)
	return st, addr, h
}

// newServerOnFile starts a Gx server on the embedded store and the subscriber file at path,
// which the test may rewrite and reload (the returned source).
func newServerOnFile(t testing.TB, hooks Hooks, path string, peers ...string) (*embedded.Store, net.Addr, *Handler, *subscriber.File) {
	t.Helper()
	src, st := openSources(t, path)
	addr, h := serveOn(t, st, src, hooks, "pcrf.test", peers...)
	return st, addr, h, src
}

// openSources opens the subscriber file at path and an embedded store, with the Gx
// dictionary loaded.
func openSources(t testing.TB, path string) (*subscriber.File, *embedded.Store) {
	t.Helper()
	if err := LoadDictionary(); err != nil {
		t.Fatal(err)
	}
	src, err := subscriber.OpenFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := embedded.Open(embedded.Options{Shards: 4, HistorySize: 100, SweepInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	return src, st
}

// serveOn starts a Gx server named host on the store st: two of them on one store are two
// data centers, each with its own connections and duplicate cache.
func serveOn(t testing.TB, st session.Store, src subscriber.Source, hooks Hooks, host string, peers ...string) (net.Addr, *Handler) {
	t.Helper()
	id := diameter.Identity{Host: host, Realm: "test"}
	h := &Handler{Identity: id, Subscribers: src, Store: st, Log: slog.Default(), Hooks: hooks, Metrics: testGxMetrics}
	// Dispatched as diameter.dispatch's auto dispatches on an in-process store and a file:
	// inline, on workers with a Lua policy.
	srv, err := diameter.Listen("127.0.0.1:0", diameter.Options{OriginHost: id.Host, OriginRealm: id.Realm,
		Peers: allowPeers(peers), Apps: map[uint32]diameter.Handler{diameter.GxApplicationID: h}, Inline: hooks == nil,
		Metrics: testDiameterMetrics})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	h.Peers = srv
	return srv.Addr(), h
}

func allowPeers(hosts []string) []diameter.Peer {
	var out []diameter.Peer
	for _, h := range hosts {
		out = append(out, diameter.Peer{OriginHost: h})
	}
	return out
}

func newRig(t *testing.T) *rig {
	t.Helper()
	st, addr := newServer(t, "pgw.test")
	return dialRig(t, st, addr)
}

func dialRig(t *testing.T, st *embedded.Store, addr net.Addr) *rig {
	t.Helper()
	c, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	r := &rig{t: t, store: st, conn: diametertest.Record(t, c)}
	cer := diam.NewRequest(257, 0, dict.Default)
	cer.NewAVP(avp.OriginHost, avp.Mbit, 0, datatype.DiameterIdentity("pgw.test"))
	cer.NewAVP(avp.OriginRealm, avp.Mbit, 0, datatype.DiameterIdentity("test"))
	cer.NewAVP(avp.HostIPAddress, avp.Mbit, 0, datatype.Address(net.IPv4(127, 0, 0, 1)))
	cer.NewAVP(avp.VendorID, avp.Mbit, 0, datatype.Unsigned32(0))
	cer.NewAVP(avp.ProductName, 0, 0, datatype.UTF8String("test"))
	cer.NewAVP(avp.AuthApplicationID, avp.Mbit, 0, datatype.Unsigned32(diameter.GxApplicationID))
	if code := r.code(r.send(cer)); code != diam.Success {
		t.Fatalf("CEA %d", code)
	}
	return r
}

func (r *rig) send(m *diam.Message) *diam.Message {
	r.t.Helper()
	if _, err := m.WriteTo(r.conn); err != nil {
		r.t.Fatal(err)
	}
	a, err := diam.ReadMessage(r.conn, dict.Default)
	if err != nil {
		r.t.Fatal(err)
	}
	return a
}

func (r *rig) code(a *diam.Message) uint32 {
	r.t.Helper()
	rc, err := a.FindAVP(avp.ResultCode, 0)
	if err != nil {
		r.t.Fatalf("no Result-Code: %s", a)
	}
	return uint32(rc.Data.(datatype.Unsigned32))
}

func ccr(sid string, typ, num uint32, extra ...*diam.AVP) *diam.Message {
	m := diam.NewRequest(272, diameter.GxApplicationID, dict.Default)
	m.NewAVP(avp.SessionID, avp.Mbit, 0, datatype.UTF8String(sid))
	m.NewAVP(avp.AuthApplicationID, avp.Mbit, 0, datatype.Unsigned32(diameter.GxApplicationID))
	m.NewAVP(avp.OriginHost, avp.Mbit, 0, datatype.DiameterIdentity("pgw.test"))
	m.NewAVP(avp.OriginRealm, avp.Mbit, 0, datatype.DiameterIdentity("test"))
	m.NewAVP(avp.DestinationRealm, avp.Mbit, 0, datatype.DiameterIdentity("test"))
	m.NewAVP(avp.CCRequestType, avp.Mbit, 0, datatype.Enumerated(typ))
	m.NewAVP(avp.CCRequestNumber, avp.Mbit, 0, datatype.Unsigned32(num))
	for _, a := range extra {
		m.AddAVP(a)
	}
	return m
}

func imsi(id string) *diam.AVP {
	return diam.NewAVP(avp.SubscriptionID, avp.Mbit, 0, &diam.GroupedAVP{AVP: []*diam.AVP{
		diam.NewAVP(avp.SubscriptionIDType, avp.Mbit, 0, datatype.Enumerated(subscriptionIMSI)),
		diam.NewAVP(avp.SubscriptionIDData, avp.Mbit, 0, datatype.UTF8String(id)),
	}})
}

func initialAVPs() []*diam.AVP {
	return []*diam.AVP{
		imsi("001010000000001"),
		diam.NewAVP(avp.FramedIPAddress, avp.Mbit, 0, datatype.OctetString([]byte{10, 0, 0, 7})),
		diam.NewAVP(avp.CalledStationID, avp.Mbit, 0, datatype.UTF8String("internet.apn")),
	}
}

func usedOctets(n uint64) *diam.AVP {
	return diam.NewAVP(avp.UsageMonitoringInformation, mv, Vendor3GPP, &diam.GroupedAVP{AVP: []*diam.AVP{
		diam.NewAVP(avp.MonitoringKey, mv, Vendor3GPP, datatype.OctetString("mk1")),
		diam.NewAVP(avp.UsedServiceUnit, avp.Mbit, 0, &diam.GroupedAVP{AVP: []*diam.AVP{
			diam.NewAVP(avp.CCTotalOctets, avp.Mbit, 0, datatype.Unsigned64(n)),
		}}),
	}})
}

// grant is the CC-Total-Octets granted in a CCA (0: none).
func grant(t *testing.T, a *diam.Message) uint64 {
	t.Helper()
	got := path(a, avp.UsageMonitoringInformation, avp.GrantedServiceUnit, avp.CCTotalOctets)
	if len(got) == 0 {
		return 0
	}
	return uint64(got[0].Data.(datatype.Unsigned64))
}

func ruleNames(t *testing.T, a *diam.Message, group uint32) []string {
	t.Helper()
	got := path(a, group, avp.ChargingRuleName)
	var out []string
	for _, g := range got {
		out = append(out, string(g.Data.(datatype.OctetString)))
	}
	return out
}

// The PCEF's whole session: rules and QoS at CCR-I, usage reports that grant then throttle,
// and CCR-T into the history.
func TestSessionLifecycle(t *testing.T) {
	r := newRig(t)
	sid := "pgw.test;1;1"
	a := r.send(ccr(sid, Initial, 0, initialAVPs()...))
	if code := r.code(a); code != diam.Success {
		t.Fatalf("CCA-I %d: %s", code, a)
	}
	if got := ruleNames(t, a, avp.ChargingRuleInstall); len(got) != 1 || got[0] != "internet" {
		t.Fatalf("installed %v, want [internet]", got)
	}
	if def := path(a, avp.ChargingRuleInstall, avp.ChargingRuleDefinition, avp.QoSInformation, avp.GuaranteedBitrateUL); len(def) != 1 {
		t.Fatalf("dynamic rule voice without its GBR: %s", a)
	}
	if q := path(a, avp.DefaultEPSBearerQoS, avp.QoSClassIdentifier); len(q) != 1 || q[0].Data.(datatype.Enumerated) != 9 {
		t.Fatalf("Default-EPS-Bearer-QoS QCI missing: %s", a)
	}
	if g := grant(t, a); g != 500 {
		t.Fatalf("CCA-I grant %d, want 500", g)
	}
	s, err := r.store.Get(context.Background(), session.Key{NAS: NAS, ID: sid})
	if err != nil {
		t.Fatal(err)
	}
	if s.UserName != "001010000000001" || s.FramedIP != netip.MustParseAddr("10.0.0.7") || s.CalledStationID != "internet.apn" ||
		s.NASIdentifier != "pgw.test" || s.ClientName != "pcrf.test" {
		t.Fatalf("stored session %+v", s)
	}
	if byIP, err := r.store.ByFramedIP(context.Background(), netip.MustParseAddr("10.0.0.7")); err != nil || byIP.ID != sid {
		t.Fatalf("not found by framed IP: %v", err)
	}

	// 600 of 1000 used: the next grant is what is left, 400.
	a = r.send(ccr(sid, Update, 1, usedOctets(600)))
	if code, g := r.code(a), grant(t, a); code != diam.Success || g != 400 {
		t.Fatalf("CCA-U %d grant %d, want 2001 and 400", code, g)
	}
	throttled := testutil.ToFloat64(testGxMetrics.throttles)
	// 1000 used: the rules go, the throttle rule comes, no more grant.
	a = r.send(ccr(sid, Update, 2, usedOctets(400)))
	if code := r.code(a); code != diam.Success {
		t.Fatalf("CCA-U %d", code)
	}
	if got := ruleNames(t, a, avp.ChargingRuleInstall); len(got) != 1 || got[0] != "throttle-64k" {
		t.Fatalf("installed %v after the quota, want [throttle-64k]: %s", got, a)
	}
	if got := ruleNames(t, a, avp.ChargingRuleRemove); len(got) < 2 {
		t.Fatalf("removed %v after the quota, want internet and voice", got)
	}
	if grant(t, a) != 0 || testutil.ToFloat64(testGxMetrics.throttles) != throttled+1 {
		t.Fatal("still granting after the quota, or the throttle not counted")
	}
	if s, _ := r.store.Get(context.Background(), session.Key{NAS: NAS, ID: sid}); !s.GxThrottled || s.DisconnectReason != "" || s.InputOctets+s.OutputOctets != 1000 {
		t.Fatalf("session after the quota: %+v", s)
	}
	// Once throttled, a further report changes nothing.
	if a = r.send(ccr(sid, Update, 3, usedOctets(10))); len(ruleNames(t, a, avp.ChargingRuleInstall)) != 0 {
		t.Fatal("throttle rule installed twice")
	}

	if code := r.code(r.send(ccr(sid, Termination, 4, usedOctets(5)))); code != diam.Success {
		t.Fatalf("CCA-T %d", code)
	}
	if _, err := r.store.Get(context.Background(), session.Key{NAS: NAS, ID: sid}); err != session.ErrNotFound {
		t.Fatalf("session still active after CCR-T: %v", err)
	}
	hist, _ := r.store.History(context.Background(), "001010000000001", 0)
	if len(hist) != 1 || hist[0].InputOctets+hist[0].OutputOctets != 1015 {
		t.Fatalf("history %+v", hist)
	}
}

func TestErrors(t *testing.T) {
	r := newRig(t)
	// CCR-U for a session the store does not have: 5002.
	if code := r.code(r.send(ccr("pgw.test;9;9", Update, 1, usedOctets(1)))); code != diam.UnknownSessionID {
		t.Fatalf("unknown session: %d, want 5002", code)
	}
	// Missing CC-Request-Number: 5005 naming it in Failed-AVP.
	m := ccr("pgw.test;9;10", Initial, 0, initialAVPs()...)
	m.DeleteAVP(avp.CCRequestNumber, 0)
	a := r.send(m)
	if code := r.code(a); code != diam.MissingAVP {
		t.Fatalf("missing AVP: %d, want 5005", code)
	}
	if f := path(a, avp.FailedAVP, avp.CCRequestNumber); len(f) != 1 {
		t.Fatalf("Failed-AVP does not name CC-Request-Number: %s", a)
	}
	// An unknown subscriber: 5030.
	unknown := ccr("pgw.test;9;11", Initial, 0, imsi("999"))
	if code := r.code(r.send(unknown)); code != resultUserUnknown {
		t.Fatalf("unknown subscriber: %d, want 5030", code)
	}
	// A Charging-Rule-Report of a failed rule is decoded (our dictionary), counted, and acted
	// on: its fallback (dataPolicy.fallbackRules) is installed in the answer.
	sid := "pgw.test;9;12"
	r.send(ccr(sid, Initial, 0, initialAVPs()...))
	before := testutil.ToFloat64(testGxMetrics.ruleFailures.WithLabelValues("1"))
	report := diam.NewAVP(1018, mv, Vendor3GPP, &diam.GroupedAVP{AVP: []*diam.AVP{
		diam.NewAVP(avp.ChargingRuleName, mv, Vendor3GPP, datatype.OctetString("internet")),
		diam.NewAVP(1019, mv, Vendor3GPP, datatype.Enumerated(1)),
		diam.NewAVP(1031, mv, Vendor3GPP, datatype.Enumerated(1)),
	}})
	a = r.send(ccr(sid, Update, 1, report))
	if code := r.code(a); code != diam.Success {
		t.Fatalf("CCR-U with a rule report: %d", code)
	}
	if got := ruleNames(t, a, avp.ChargingRuleInstall); !slices.Equal(got, []string{"internet-basic"}) {
		t.Fatalf("CCA-U to the report of internet failing: installs %v, want its fallback [internet-basic]", got)
	}
	if testutil.ToFloat64(testGxMetrics.ruleFailures.WithLabelValues("1")) != before+1 {
		t.Fatal("rule failure not counted")
	}
}

// path returns the AVPs at a path of codes (vendor ignored), through grouped AVPs.
func path(m *diam.Message, codes ...uint32) []*diam.AVP {
	level := m.AVP
	for i, code := range codes {
		var next []*diam.AVP
		for _, a := range level {
			if a.Code != code {
				continue
			}
			if i == len(codes)-1 {
				next = append(next, a)
			} else if g, ok := a.Data.(*diam.GroupedAVP); ok {
				next = append(next, g.AVP...)
			}
		}
		level = next
	}
	return level
}

// lagging is a store whose replicas have not yet received a session another DC wrote: its
// first misses reads of a session find nothing.
type lagging struct {
	session.Store
	misses atomic.Int32
}

func (l *lagging) Get(ctx context.Context, k session.Key) (*session.Session, error) {
	if l.misses.Add(-1) >= 0 {
		return nil, session.ErrNotFound
	}
	return l.Store.Get(ctx, k)
}

// A CCR-U reaching a DC whose replica does not show the session yet waits for it (bounded)
// instead of answering 5002; a session that never appears is 5002 after the wait.
func TestCCRWaitsForTheReplica(t *testing.T) {
	_, _, h := newServerWith(t, nil, subscribersYAML, "pgw.test")
	store := &lagging{Store: h.Store}
	h.Store, h.ReplicaWait = store, 2*time.Second
	peer := diameter.PeerInfo{OriginHost: "pgw.test", OriginRealm: "test"}
	sid := "pgw.test;lag;1"
	if _, code := h.ServeDiameter(diameter.NewRequest(context.Background(), peer, ccr(sid, Initial, 0, initialAVPs()...))); code != diam.Success {
		t.Fatalf("CCA-I %d", code)
	}
	store.misses.Store(3)
	found := testutil.ToFloat64(testGxMetrics.replicaWaits.WithLabelValues("found"))
	if _, code := h.ServeDiameter(diameter.NewRequest(context.Background(), peer, ccr(sid, Update, 1, usedOctets(10)))); code != diam.Success {
		t.Fatalf("CCA-U %d after 3 reads that missed, want 2001", code)
	}
	if testutil.ToFloat64(testGxMetrics.replicaWaits.WithLabelValues("found")) != found+1 {
		t.Fatal("the wait not counted")
	}
	h.ReplicaWait = 100 * time.Millisecond
	if _, code := h.ServeDiameter(diameter.NewRequest(context.Background(), peer, ccr("pgw.test;lag;unknown", Update, 1, usedOctets(10)))); code != diam.UnknownSessionID {
		t.Fatalf("CCA-U %d for a session no store has, want 5002", code)
	}
}

// An IPv6 UE: the PCEF sends Framed-IPv6-Prefix (RFC 7155, the RADIUS encoding) and no
// Framed-IP-Address; the session is found by any address of the prefix, as a fixed BNG's.
func TestIPv6UESessionFoundByAddress(t *testing.T) {
	r := newRig(t)
	sid := "pgw.test;1;v6"
	pfx := diam.NewAVP(avp.FramedIPv6Prefix, avp.Mbit, 0, datatype.OctetString([]byte{0, 64, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 7}))
	a := r.send(ccr(sid, Initial, 0, imsi("001010000000001"), pfx))
	if code := r.code(a); code != diam.Success {
		t.Fatalf("CCA-I %d: %s", code, a)
	}
	s, err := r.store.ByIPv6(context.Background(), netip.MustParsePrefix("2001:db8:0:7::1234/128"))
	if err != nil || s.ID != sid || s.FramedIPv6Prefix != netip.MustParsePrefix("2001:db8:0:7::/64") {
		t.Fatalf("ByIPv6 = %+v, %v; want the Gx session", s, err)
	}
}

// closedElsewhere is a shared store in which another DC has closed the session.
type closedElsewhere struct{ session.Store }

func (closedElsewhere) Get(context.Context, session.Key) (*session.Session, error) {
	return nil, session.ErrNotFound
}

func (closedElsewhere) GetWide(_ context.Context, k session.Key) (*session.Session, error) {
	return &session.Session{Key: k, UserName: "001010000000001", State: session.Stopped}, nil
}

// A CCR-T sent again to this DC after another DC closed the session (its answer was lost)
// is answered 2001, not 5002; a CCR-U for it is 5002.
func TestRepeatedTerminationFromAnotherDC(t *testing.T) {
	_, _, h := newServerWith(t, nil, subscribersYAML, "pgw.test")
	h.Store, h.ReplicaWait = closedElsewhere{h.Store}, time.Second
	peer := diameter.PeerInfo{OriginHost: "pgw.test", OriginRealm: "test"}
	before := testutil.ToFloat64(testGxMetrics.retransmittedTerminations)
	if _, code := h.ServeDiameter(diameter.NewRequest(context.Background(), peer, ccr("pgw.test;t;1", Termination, 2, usedOctets(10)))); code != diam.Success {
		t.Fatalf("CCA-T %d, want 2001", code)
	}
	if testutil.ToFloat64(testGxMetrics.retransmittedTerminations) != before+1 {
		t.Fatal("not counted")
	}
	if _, code := h.ServeDiameter(diameter.NewRequest(context.Background(), peer, ccr("pgw.test;t;1", Update, 1, usedOctets(10)))); code != diam.UnknownSessionID {
		t.Fatalf("CCA-U %d for a closed session, want 5002", code)
	}
}

// A Gx session expires from its Revalidation-Time (the PCEF must come back by then) or, with
// none, after a day of silence — not after RADIUS's interim interval: the store's expiry reads
// the session's interval.
func TestGxSessionIdleInterval(t *testing.T) {
	for _, c := range []struct {
		yaml string
		want uint32
	}{
		{subscribersYAML, 3600},
		{"profiles:\n  data:\n    dataPolicy: {rules: [internet]}\nsubscribers:\n  - {username: \"001010000000001\", password: x, profileName: data}\n", defaultIdleSeconds},
	} {
		st, addr, _ := newServerWith(t, nil, c.yaml, "pgw.test")
		r := dialRig(t, st, addr)
		sid := fmt.Sprintf("pgw.test;idle;%d", c.want)
		if code := r.code(r.send(ccr(sid, Initial, 0, initialAVPs()...))); code != diam.Success {
			t.Fatalf("CCA-I %d", code)
		}
		s, err := st.Get(context.Background(), session.Key{NAS: NAS, ID: sid})
		if err != nil || s.InterimInterval != c.want {
			t.Fatalf("stored interval %+v, %v; want %d s", s, err, c.want)
		}
	}
}

// The CCR's Event-Timestamp, when recent, is the event's time in the store; an absurd one is
// not.
func TestEventTime(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		event, want time.Time
	}{
		{time.Time{}, now},
		{now.Add(-10 * time.Second), now.Add(-10 * time.Second)},
		{now.Add(-2 * time.Hour), now},
		{now.Add(time.Minute), now},
	} {
		if got := eventTime(&CCR{EventTime: c.event}, now); !got.Equal(c.want) {
			t.Errorf("event %v: %v, want %v", c.event, got, c.want)
		}
	}
}

// A PCEF that got no answer sends its CCR-U again to another data center (the same
// CC-Request-Number; the first DC's duplicate cache is its own). The usage it reports counts
// once, and the answer is the one the first gave.
func TestCCRUSentAgainToAnotherDCCountsOnce(t *testing.T) {
	st, addrA, h := newServerWith(t, nil, subscribersYAML, "pgw.test")
	addrB, _ := serveOn(t, st, h.Subscribers, nil, "pcrf-dc2.test", "pgw.test")
	dcA, dcB := dialRig(t, st, addrA), dialRig(t, st, addrB)
	sid := "pgw.test;1;again"
	if code := dcA.code(dcA.send(ccr(sid, Initial, 0, initialAVPs()...))); code != diam.Success {
		t.Fatalf("CCA-I %d", code)
	}
	first := dcA.send(ccr(sid, Update, 1, usedOctets(300)))
	again := dcB.send(ccr(sid, Update, 1, usedOctets(300)))
	if dcA.code(first) != diam.Success || dcB.code(again) != diam.Success {
		t.Fatalf("CCA-U %d and, sent again, %d", dcA.code(first), dcB.code(again))
	}
	s, err := st.Get(context.Background(), session.Key{NAS: NAS, ID: sid})
	if err != nil {
		t.Fatal(err)
	}
	if used := s.InputOctets + s.OutputOctets; used != 300 {
		t.Fatalf("usage %d after one report of 300 sent to two DCs", used)
	}
	if g1, g2 := grant(t, first), grant(t, again); g1 != 500 || g2 != g1 {
		t.Fatalf("grants %d and %d, want 500 both (the grant; 700 of 1000 left)", g1, g2)
	}
	// The next report is new: it counts.
	if code := dcB.code(dcB.send(ccr(sid, Update, 2, usedOctets(100)))); code != diam.Success {
		t.Fatalf("CCA-U 2: %d", code)
	}
	if s, _ = st.Get(context.Background(), session.Key{NAS: NAS, ID: sid}); s.InputOctets+s.OutputOctets != 400 {
		t.Fatalf("usage %d after reports of 300 and 100", s.InputOctets+s.OutputOctets)
	}
}

// A subscriber from LDAP (slapd) whose entry names a profile of the profiles file gets that
// profile's data policy at CCR-I.
func TestDataPolicyFromLDAP(t *testing.T) {
	srv := testslapd.Start(t, 2)
	cfg := srv.Config()
	cfg.ProfilesFile = filepath.Join(t.TempDir(), "profiles.yaml")
	cfg.Attributes.ProfileName = "openaaaClass" // user00001's class is ldap-gold
	if err := os.WriteFile(cfg.ProfilesFile, []byte("profiles:\n  ldap-gold:\n    dataPolicy: {rules: [internet-gold], qci: 8}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := subscriber.OpenLDAP(cfg, nil, slog.Default(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := LoadDictionary(); err != nil {
		t.Fatal(err)
	}
	st, err := embedded.Open(embedded.Options{Shards: 4, HistorySize: 100, SweepInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	addr, _ := serveOn(t, st, src, nil, "pcrf.test", "pgw.test")
	r := dialRig(t, st, addr)
	a := r.send(ccr("pgw.test;1;ldap", Initial, 0, imsi("user00001")))
	if code := r.code(a); code != diam.Success {
		t.Fatalf("CCA-I %d: %s", code, a)
	}
	if got := ruleNames(t, a, avp.ChargingRuleInstall); len(got) != 1 || got[0] != "internet-gold" {
		t.Fatalf("installed %v, want the LDAP profile's [internet-gold]", got)
	}
}

// Flags of the 3GPP AVPs the tests' PCEF sends.
const mv = avp.Mbit | avp.Vbit

// stuck is a store whose writes wait for their context to end: a Cassandra that stopped
// answering. entered receives once per write that started, left the error each returned.
type stuck struct {
	session.Store
	entered chan struct{}
	left    chan error
}

func (s *stuck) Apply(ctx context.Context, _ *session.Update, _ session.WriteOptions) (session.Result, error) {
	s.entered <- struct{}{}
	<-ctx.Done()
	s.left <- ctx.Err()
	return session.Result{}, ctx.Err()
}

// stuckServer serves Gx over the stuck store and returns the server and a connection whose
// CER was accepted.
func stuckServer(t *testing.T, opt diameter.Options) (*diameter.Server, *rig, *stuck) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "subscribers.yaml")
	if err := os.WriteFile(path, []byte(subscribersYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	src, emb := openSources(t, path)
	st := &stuck{Store: emb, entered: make(chan struct{}, 8), left: make(chan error, 8)}
	id := diameter.Identity{Host: "pcrf.test", Realm: "test"}
	h := &Handler{Identity: id, Subscribers: src, Store: st, Log: slog.Default(), Metrics: testGxMetrics}
	opt.OriginHost, opt.OriginRealm = id.Host, id.Realm
	opt.Peers = allowPeers([]string{"pgw.test"})
	opt.Apps = map[uint32]diameter.Handler{diameter.GxApplicationID: h}
	srv, err := diameter.Listen("127.0.0.1:0", opt)
	if err != nil {
		t.Fatal(err)
	}
	return srv, dialRig(t, emb, srv.Addr()), st
}

// sendAsync writes m and returns a channel that gets its answer's Result-Code, or 0 when the
// connection closed without one. The node's own requests meanwhile (the DPR of a stopping
// node) are not the answer: skipped.
func (r *rig) sendAsync(m *diam.Message) <-chan uint32 {
	r.t.Helper()
	if _, err := m.WriteTo(r.conn); err != nil {
		r.t.Fatal(err)
	}
	out := make(chan uint32, 1)
	go func() {
		for {
			a, err := diam.ReadMessage(r.conn, dict.Default)
			if err != nil {
				out <- 0
				return
			}
			if a.Header.CommandFlags&diam.RequestFlag == 0 {
				out <- resultCodeOf(a)
				return
			}
		}
	}()
	return out
}

func resultCodeOf(a *diam.Message) uint32 {
	rc, err := a.FindAVP(avp.ResultCode, 0)
	if err != nil {
		return 0
	}
	v, _ := rc.Data.(datatype.Unsigned32)
	return uint32(v)
}

// A CCR blocked in the store does not hold a shutdown: once the shutdown's budget is spent,
// its context is cancelled, the store gives up, and the PCEF is answered 3004
// DIAMETER_TOO_BUSY (RFC 6733 §7.1.3: it sends the request to another peer) before the
// connection closes. Before, Gx ran on context.Background() and Close waited for it forever.
func TestShutdownCancelsABlockedCCR(t *testing.T) {
	srv, r, st := stuckServer(t, diameter.Options{})
	answered := r.sendAsync(ccr("pgw.test;stuck;1", Initial, 0, initialAVPs()...))
	<-st.entered
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- srv.Shutdown(ctx) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown: %v, want the budget's deadline exceeded", err)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("Shutdown took %s with a budget of 200ms", took)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown still waiting for the blocked CCR after 5s")
	}
	select {
	case code := <-answered:
		if code != diameter.ResultTooBusy {
			t.Errorf("the blocked CCR answered %d, want 3004", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no answer and no close for the blocked CCR")
	}
}

// A CCR is bounded by diameter.requestTimeout even when its store has no deadline of its
// own (the embedded store's StoreTimeout is 0): past it, 3004 DIAMETER_TOO_BUSY, and the
// connection lives on.
func TestCCRRequestTimeout(t *testing.T) {
	_, r, st := stuckServer(t, diameter.Options{RequestTimeout: 300 * time.Millisecond})
	start := time.Now()
	answered := r.sendAsync(ccr("pgw.test;stuck;2", Initial, 0, initialAVPs()...))
	<-st.entered
	select {
	case code := <-answered:
		if code != diameter.ResultTooBusy {
			t.Errorf("answered %d, want 3004", code)
		}
		if took := time.Since(start); took < 300*time.Millisecond {
			t.Errorf("answered after %s, before the request timeout", took)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no answer 5s after the request's deadline")
	}
	dwr := diam.NewRequest(280, 0, dict.Default)
	dwr.NewAVP(avp.OriginHost, avp.Mbit, 0, datatype.DiameterIdentity("pgw.test"))
	dwr.NewAVP(avp.OriginRealm, avp.Mbit, 0, datatype.DiameterIdentity("test"))
	if code := r.code(r.send(dwr)); code != diam.Success {
		t.Fatalf("DWA %d after the timed-out CCR: the connection should live on", code)
	}
}

// A CCR whose peer went away is cancelled: nothing can take its answer.
func TestPeerGoneCancelsItsCCR(t *testing.T) {
	srv, r, st := stuckServer(t, diameter.Options{})
	t.Cleanup(func() { _ = srv.Close() })
	r.sendAsync(ccr("pgw.test;stuck;3", Initial, 0, initialAVPs()...))
	<-st.entered
	_ = r.conn.Close()
	select {
	case err := <-st.left:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the store's write ended with %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the CCR of a peer that went away still runs after 5s")
	}
}
