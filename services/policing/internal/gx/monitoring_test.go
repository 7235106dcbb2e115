package gx

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"

	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

const bundleYAML = `
profiles:
  bundle:
    dataPolicy:
      rules: [internet, video-hd]
      monitoringKey: mk-total
      quotaOctets: 100000
      throttleRule: slow
      monitoring:
        - {key: mk-video, quotaOctets: 1000, grantOctets: 600, removeRules: [video-hd], installRules: [video-sd]}
subscribers:
  - {username: "001010000000001", password: x, profileName: bundle}
  - username: "001010000000002"
    password: x
    profileName: bundle
    profile:
      dataPolicy:
        rules: [internet, video-hd]
        monitoring:
          - {key: mk-video, quotaOctets: 1000, usedOctets: 1000, removeRules: [video-hd], installRules: [video-sd]}
`

// usedOn is a Usage-Monitoring-Information report of n octets on key.
func usedOn(key string, n uint64) *diam.AVP {
	return diam.NewAVP(avp.UsageMonitoringInformation, mv, Vendor3GPP, &diam.GroupedAVP{AVP: []*diam.AVP{
		diam.NewAVP(avp.MonitoringKey, mv, Vendor3GPP, datatype.OctetString(key)),
		diam.NewAVP(avp.UsedServiceUnit, avp.Mbit, 0, &diam.GroupedAVP{AVP: []*diam.AVP{
			diam.NewAVP(avp.CCTotalOctets, avp.Mbit, 0, datatype.Unsigned64(n)),
		}}),
	}})
}

// grants are a CCA's grants: "key=octets/level" (level 0 session, 1 PCC rule), sorted.
func grants(a *diam.Message) []string {
	var out []string
	for _, umi := range path(a, avp.UsageMonitoringInformation) {
		var key string
		var octets uint64
		var level datatype.Enumerated
		for _, c := range umi.Data.(*diam.GroupedAVP).AVP {
			switch c.Code {
			case avp.MonitoringKey:
				key = string(c.Data.(datatype.OctetString))
			case avp.GrantedServiceUnit:
				for _, o := range c.Data.(*diam.GroupedAVP).AVP {
					if o.Code == avp.CCTotalOctets {
						octets = uint64(o.Data.(datatype.Unsigned64))
					}
				}
			case avp.UsageMonitoringLevel:
				level = c.Data.(datatype.Enumerated)
			}
		}
		out = append(out, fmt.Sprintf("%s=%d/%d", key, octets, level))
	}
	slices.Sort(out)
	return out
}

// Several Monitoring-Keys: a rule-level key (video) has its own quota and grants beside the
// session-level key's; its reports do not count in the session's totals; when its quota is
// used its rules are swapped once; the session-level quota then throttles the rules in force
// (the swapped-in one, not the one already removed). Stored per key in the session.
func TestSeveralMonitoringKeys(t *testing.T) {
	st, addr, _ := newServerWith(t, nil, bundleYAML, "pgw.test")
	r := dialRig(t, st, addr)
	sid := "pgw.test;bundle;1"
	step := func(name string, a *diam.Message, install, remove, wantGrants []string) {
		t.Helper()
		if code := r.code(a); code != diam.Success {
			t.Fatalf("%s: %d", name, code)
		}
		gotIn, gotOut, gotGrants := ruleNames(t, a, avp.ChargingRuleInstall), ruleNames(t, a, avp.ChargingRuleRemove), grants(a)
		if !slices.Equal(gotIn, install) || !slices.Equal(gotOut, remove) || !slices.Equal(gotGrants, wantGrants) {
			t.Fatalf("%s: +%v -%v grants %v; want +%v -%v grants %v", name, gotIn, gotOut, gotGrants, install, remove, wantGrants)
		}
	}
	step("CCA-I", r.send(ccr(sid, Initial, 0, initialAVPs()...)),
		[]string{"internet", "video-hd"}, nil, []string{"mk-total=100000/0", "mk-video=600/1"})
	step("CCA-U under both quotas", r.send(ccr(sid, Update, 1, usedOn("mk-total", 800), usedOn("mk-video", 500))),
		nil, nil, []string{"mk-total=99200/0", "mk-video=500/1"})
	step("CCA-U using the video quota", r.send(ccr(sid, Update, 2, usedOn("mk-video", 600))),
		[]string{"video-sd"}, []string{"video-hd"}, []string{"mk-total=99200/0"})
	step("CCA-U after", r.send(ccr(sid, Update, 3, usedOn("mk-video", 10))),
		nil, nil, []string{"mk-total=99200/0"})
	step("CCA-U using the session quota", r.send(ccr(sid, Update, 4, usedOn("mk-total", 99200))),
		[]string{"slow"}, []string{"internet", "video-sd"}, nil)
	s, err := st.Get(context.Background(), session.Key{NAS: NAS, ID: sid})
	if err != nil {
		t.Fatal(err)
	}
	if s.OutputOctets != 100000 || s.MonitoringUsage["mk-video"] != 1110 || !slices.Equal(s.MonitoringExhausted, []string{"mk-video"}) {
		t.Fatalf("session: %d octets, per key %v, exhausted %v; want 100000, mk-video 1110, [mk-video]",
			s.OutputOctets, s.MonitoringUsage, s.MonitoringExhausted)
	}

	// A subscriber whose source says the video quota is used already starts on video-sd.
	other := ccr("pgw.test;bundle;2", Initial, 0, imsi("001010000000002"))
	step("CCA-I, video used up before", r.send(other), []string{"internet", "video-sd"}, nil, nil)
}

func TestMonitoringKeysChecked(t *testing.T) {
	for _, tc := range []struct {
		p    subscriber.DataPolicy
		want string
	}{
		{subscriber.DataPolicy{Monitoring: []subscriber.MonitoredKey{{QuotaOctets: 1}}}, "dataPolicy.monitoring[0].key: required"},
		{subscriber.DataPolicy{MonitoringKey: "a", Monitoring: []subscriber.MonitoredKey{{Key: "a", QuotaOctets: 1}}}, "dataPolicy.monitoring[0].key: \"a\" is used twice"},
		{subscriber.DataPolicy{Monitoring: []subscriber.MonitoredKey{{Key: "b"}}}, "dataPolicy.monitoring[0].quotaOctets: required"},
		{subscriber.DataPolicy{FallbackRules: map[string]string{"video": "video"}}, "dataPolicy.fallbackRules.video"},
	} {
		if err := tc.p.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.p, err, tc.want)
		}
	}
}
