package gx

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"
	"github.com/fiorix/go-diameter/v4/diam/dict"

	"github.com/openaaa/openaaa/services/policing/internal/diameter"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// TestCCAWriterBytes: a CCA written as bytes (diameter.Writer: a lean request's answer) is,
// byte for byte, the CCA built as a message and serialized by go-diameter, for generated
// requests, Result-Codes and decisions (every AVP a decision can carry, strings of every
// padding, numbers past 32 bits).
func TestCCAWriterBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(34, 1))
	str := func(max int) string { return strings.Repeat("x", rng.IntN(max+1)) + string(rune('a'+rng.IntN(26))) }
	maybe := func() string { // absent half the time
		if rng.IntN(2) == 0 {
			return ""
		}
		return str(7)
	}
	strs := func() []string {
		var l []string
		for range rng.IntN(3) {
			l = append(l, str(9))
		}
		return l
	}
	long := 0 // answers past the Writer's first bytes (its array), written on the heap
	b := ccaWriter{wire: true}
	for i := range 2000 {
		id := diameter.Identity{Host: str(12), Realm: str(12)}
		req := diam.NewRequest(272, diameter.GxApplicationID, dict.Default)
		if rng.IntN(2) == 0 {
			req.Header.CommandFlags |= diam.ProxiableFlag
		}
		if rng.IntN(8) != 0 { // a Session-Id, sent back as received or with the M bit alone
			req.NewAVP(avp.SessionID, []uint8{avp.Mbit, avp.Mbit | 0x20}[rng.IntN(2)], 0, datatype.UTF8String(str(30)))
		}
		for range rng.IntN(2) {
			req.NewAVP(avp.ProxyInfo, avp.Mbit, 0, &diam.GroupedAVP{AVP: []*diam.AVP{
				diam.NewAVP(avp.ProxyHost, avp.Mbit, 0, datatype.DiameterIdentity(str(10))),
				diam.NewAVP(avp.ProxyState, avp.Mbit, 0, datatype.OctetString(str(5))),
			}})
		}
		r := CCR{RequestType: uint32(rng.IntN(6)), RequestNumber: rng.Uint32() >> rng.IntN(32), Features: rng.Uint32() & 0xff,
			hasType: rng.IntN(8) != 0, hasNumber: rng.IntN(8) != 0}
		code := []uint32{diam.Success, diam.Success, resultUserUnknown, diam.UnknownSessionID, diameter.ResultTooBusy}[rng.IntN(5)]
		d := Decision{Install: strs(), Bases: strs(), Remove: strs(), RemoveBases: strs(),
			QCI: uint32(rng.IntN(3) * 9), ARP: uint32(rng.IntN(16)), AMBRUp: rng.Uint32() >> rng.IntN(32), AMBRDown: rng.Uint32() >> rng.IntN(32),
			Revalidate: uint32(rng.IntN(3) * 1800)}
		for range rng.IntN(3) {
			d.Triggers = append(d.Triggers, uint32(rng.IntN(48)))
		}
		for range rng.IntN(3) {
			d.Grants = append(d.Grants, Grant{Key: str(6), Octets: rng.Uint64() >> rng.IntN(64), SessionKey: rng.IntN(2) == 0})
		}
		for range rng.IntN(3) {
			d.Dynamic = append(d.Dynamic, subscriber.DynamicRule{Name: str(8), Flows: strs(), QCI: uint32(rng.IntN(2) * 5),
				MBRUplink: uint32(rng.IntN(2) * 1000), MBRDownlink: uint32(rng.IntN(2) * 2000), GBRUplink: uint32(rng.IntN(2) * 300),
				GBRDownlink: uint32(rng.IntN(2) * 400), Precedence: uint32(rng.IntN(3)), MonitoringKey: maybe()})
		}
		now := time.Unix(1800000000+rng.Int64N(1<<30), rng.Int64N(1e9))

		m := ccaWriter{msg: id.Answer(req, code)}
		m.cca(&r, d, code, now)
		want, err := m.msg.Serialize()
		if err != nil {
			t.Fatal(err)
		}
		id.WriteAnswer(&b.w, req, code) // one Writer for all: written over, what is left over must not show
		b.cca(&r, d, code, now)
		if got := b.w.Bytes(); !bytes.Equal(got, want) {
			t.Fatalf("case %d: written\n%x\nserialized\n%x\nfrom %s", i, got, want, m.msg)
		}
		if len(want) > 512 {
			long++
		}
	}
	if long < 100 {
		t.Fatalf("%d answers past 512 bytes", long)
	}
}

// TestCCAOfARequestNotLean: a CCR that is not lean (a Proxy-Info) is decoded whole and its CCA
// written as bytes too (diameter.WireHandler): 2001, the Proxy-Info echoed after our identity
// (RFC 6733 §6.2), the decision's AVPs, every AVP as the spec table says (and tshark, recording
// the connection, decodes it).
func TestCCAOfARequestNotLean(t *testing.T) {
	r := newRig(t)
	proxy := diam.NewAVP(avp.ProxyInfo, avp.Mbit, 0, &diam.GroupedAVP{AVP: []*diam.AVP{
		diam.NewAVP(avp.ProxyHost, avp.Mbit, 0, datatype.DiameterIdentity("dra.test")),
		diam.NewAVP(avp.ProxyState, avp.Mbit, 0, datatype.OctetString("state-1")),
	}})
	sid := "pgw.test;proxied;1"
	for _, c := range []struct {
		m    *diam.Message
		want uint32 // an AVP of the decision
	}{
		{ccr(sid, Initial, 0, append(initialAVPs(), proxy)...), avp.ChargingRuleInstall},
		{ccr(sid, Update, 1, usedOctets(10), proxy), avp.UsageMonitoringInformation},
	} {
		if head, _ := diameter.DecodeLean(mustSerialize(t, c.m), nil); head != nil {
			t.Fatal("the request is lean: the test does not test what it says")
		}
		a := r.send(c.m)
		if code := r.code(a); code != diam.Success {
			t.Fatalf("%d: %s", code, a)
		}
		if len(a.AVP) < 5 || a.AVP[4].Code != avp.ProxyInfo || a.AVP[4].Len() != proxy.Len() {
			t.Fatalf("Proxy-Info not echoed after Origin-Realm: %s", a)
		}
		if got, err := a.FindAVP(c.want, Vendor3GPP); err != nil || got == nil {
			t.Fatalf("no AVP %d in %s", c.want, a)
		}
		sent, _ := c.m.FindAVP(avp.CCRequestNumber, 0)
		if got, err := a.FindAVP(avp.CCRequestNumber, 0); err != nil || got.Data != sent.Data {
			t.Fatalf("CC-Request-Number %v, the CCR's %v (RFC 4006 §3.2)", got, sent)
		}
		checkAVPs(t, "CCA", a)
	}
}

func mustSerialize(t *testing.T, m *diam.Message) []byte {
	t.Helper()
	b, err := m.Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
