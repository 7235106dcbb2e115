package app

import (
	"strings"
	"testing"
	"time"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"

	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/services/policing/internal/apptest"
	"github.com/openaaa/openaaa/services/policing/internal/gx"
)

// A converged subscriber: RADIUS sessions (fixed line, Wi-Fi) and a Gx session of the same
// subscriber, one monthly quota. When the usage the PCEF reports on Gx uses the quota, the
// Gx session gets the throttle rule and every RADIUS session of the subscriber a CoA-Request
// with the data policy's throttleAttributes, at the NAS that holds it (FreeRADIUS as the
// CoA receiver); another subscriber's session gets nothing, and the throttle happens once.
const gxCoASubs = `
subscribers:
  - {username: alice, password: x, profile: {dataPolicy: {rules: [internet], monitoringKey: mk1, quotaOctets: 1000,
      throttleRule: throttle-64k, throttleAttributes: {Filter-Id: throttle-64k, Session-Timeout: "600"}}}}
  - {username: bob, password: x, profile: {dataPolicy: {rules: [internet]}}}
`

func TestGxQuotaSendsCoAToRADIUSSessions(t *testing.T) {
	nas := newFreeRADIUS(t, "nasgx", "--role", "coa", "--secret", radclientSecret)
	n := coaNodeWith(t, t.TempDir(), nas, `
diameter:
  enabled: true
  address: 127.0.0.1:0
  originHost: pcrf.node.test
  originRealm: test
  peers: [{originRealm: test, address: 127.0.0.1}]
`, gxCoASubs)
	acctAddr := n.Addr("radius.acctAddress").String()
	for _, lines := range [][]string{
		acctLinesFor("Start", "FIX-1", "alice", "Framed-IP-Address = 10.9.0.1"),
		acctLinesFor("Start", "WIFI-1", "alice"),
		acctLinesFor("Start", "FIX-2", "bob"),
	} {
		if out := apptest.Radclient(t, acctAddr, "acct", radclientSecret, 1, 2, lines...); !strings.Contains(out, "Received Accounting-Response") {
			t.Fatalf("no Accounting-Response:\n%s", out)
		}
	}

	p := dialPCEF(t, n)
	const sid = "pgw.test;gx;1"
	if code := p.send(ccr(gx.Initial, sid)); code != 2001 {
		t.Fatalf("CCA-I %d", code)
	}
	update := func(octets uint64) uint32 {
		_ = p.c.SetDeadline(time.Now().Add(10 * time.Second))
		m := ccr(gx.Update, sid)
		m.AddAVP(diam.NewAVP(avp.UsageMonitoringInformation, avp.Mbit|avp.Vbit, gx.Vendor3GPP, &diam.GroupedAVP{AVP: []*diam.AVP{
			diam.NewAVP(avp.MonitoringKey, avp.Mbit|avp.Vbit, gx.Vendor3GPP, datatype.OctetString("mk1")),
			diam.NewAVP(avp.UsedServiceUnit, avp.Mbit, 0, &diam.GroupedAVP{AVP: []*diam.AVP{
				diam.NewAVP(avp.CCTotalOctets, avp.Mbit, 0, datatype.Unsigned64(octets)),
			}}),
		}}))
		return p.send(m)
	}
	// Under the quota: no CoA.
	if code := update(400); code != 2001 {
		t.Fatalf("CCA-U %d", code)
	}
	time.Sleep(500 * time.Millisecond)
	if d := nas.detail(); strings.Contains(d, "CoA-Request") {
		t.Fatalf("a CoA-Request under the quota:\n%s", d)
	}
	// The quota used: both of alice's RADIUS sessions get the throttle attributes.
	if code := update(700); code != 2001 {
		t.Fatalf("CCA-U %d", code)
	}
	testenv.Eventually(t, 10*time.Second, "CoA-Requests for both RADIUS sessions of alice", func() bool {
		d := nas.detail()
		return strings.Contains(d, `Acct-Session-Id = "FIX-1"`) && strings.Contains(d, `Acct-Session-Id = "WIFI-1"`)
	})
	// More usage after the throttle: no new request.
	if code := update(100); code != 2001 {
		t.Fatalf("CCA-U %d", code)
	}
	testenv.Eventually(t, 10*time.Second, "the Gx-triggered CoAs counted", func() bool {
		return Metric(t, n, `openaaa_coa_requests_total{kind="coa",result="ack",trigger="gx_quota"}`) >= 2
	})
	time.Sleep(time.Second)
	records := detailRecords(nas.detail())
	if len(records) != 2 {
		t.Fatalf("%d requests at the NAS, want 2 (one a RADIUS session of alice):\n%s", len(records), nas.detail())
	}
	for _, r := range records {
		for _, w := range []string{"Packet-Type = CoA-Request", `User-Name = "alice"`, `Filter-Id = "throttle-64k"`, "Session-Timeout = 600", "NAS-IP-Address = 127.0.0.1"} {
			if !strings.Contains(r, w) {
				t.Errorf("CoA-Request lacks %q:\n%s", w, r)
			}
		}
		if strings.Contains(r, "FIX-2") {
			t.Errorf("bob's session got alice's throttle:\n%s", r)
		}
	}
}
