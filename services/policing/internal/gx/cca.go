package gx

import (
	"time"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"

	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// Flags of the 3GPP AVPs we send: vendor-specific and mandatory.
const mv = avp.Mbit | avp.Vbit

// AddDecision appends the CCA's policy AVPs to ans (which starts with Session-Id,
// Result-Code and our identity), pure: from the decision and the time only.
func AddDecision(ans *diam.Message, req *CCR, d Decision, now time.Time) {
	ans.NewAVP(avp.AuthApplicationID, avp.Mbit, 0, datatype.Unsigned32(16777238))
	ans.NewAVP(avp.CCRequestType, avp.Mbit, 0, datatype.Enumerated(req.RequestType))
	ans.NewAVP(avp.CCRequestNumber, avp.Mbit, 0, datatype.Unsigned32(req.RequestNumber))
	if len(d.Remove) > 0 {
		ans.NewAVP(avp.ChargingRuleRemove, mv, Vendor3GPP, &diam.GroupedAVP{AVP: names(d.Remove, nil)})
	}
	if len(d.Install)+len(d.Bases)+len(d.Dynamic) > 0 {
		in := names(d.Install, d.Bases)
		for _, r := range d.Dynamic {
			in = append(in, diam.NewAVP(avp.ChargingRuleDefinition, mv, Vendor3GPP, ruleDefinition(r)))
		}
		ans.NewAVP(avp.ChargingRuleInstall, mv, Vendor3GPP, &diam.GroupedAVP{AVP: in})
	}
	for _, t := range d.Triggers {
		ans.NewAVP(avp.EventTrigger, mv, Vendor3GPP, datatype.Enumerated(t))
	}
	if d.QCI != 0 {
		ans.NewAVP(avp.DefaultEPSBearerQoS, mv, Vendor3GPP, &diam.GroupedAVP{AVP: []*diam.AVP{
			diam.NewAVP(avp.QoSClassIdentifier, mv, Vendor3GPP, datatype.Enumerated(d.QCI)),
			arp(d.ARP),
		}})
	}
	if d.AMBRUp != 0 || d.AMBRDown != 0 {
		ans.NewAVP(avp.QoSInformation, mv, Vendor3GPP, &diam.GroupedAVP{AVP: []*diam.AVP{
			diam.NewAVP(avp.APNAggregateMaxBitrateUL, mv, Vendor3GPP, datatype.Unsigned32(d.AMBRUp)),
			diam.NewAVP(avp.APNAggregateMaxBitrateDL, mv, Vendor3GPP, datatype.Unsigned32(d.AMBRDown)),
		}})
	}
	if d.Revalidate != 0 {
		ans.NewAVP(avp.RevalidationTime, mv, Vendor3GPP, datatype.Time(now.Add(time.Duration(d.Revalidate)*time.Second)))
	}
	for _, g := range d.Grants {
		if g.Octets == 0 {
			continue
		}
		level := datatype.Enumerated(1) // PCC_RULE_LEVEL
		if g.SessionKey {
			level = 0 // SESSION_LEVEL
		}
		ans.NewAVP(avp.UsageMonitoringInformation, mv, Vendor3GPP, &diam.GroupedAVP{AVP: []*diam.AVP{
			diam.NewAVP(avp.MonitoringKey, mv, Vendor3GPP, datatype.OctetString(g.Key)),
			diam.NewAVP(avp.GrantedServiceUnit, avp.Mbit, 0, &diam.GroupedAVP{AVP: []*diam.AVP{
				diam.NewAVP(avp.CCTotalOctets, avp.Mbit, 0, datatype.Unsigned64(g.Octets)),
			}}),
			diam.NewAVP(avp.UsageMonitoringLevel, mv, Vendor3GPP, level),
		}})
	}
}

func names(rules, bases []string) []*diam.AVP {
	out := make([]*diam.AVP, 0, len(rules)+len(bases))
	for _, n := range rules {
		out = append(out, diam.NewAVP(avp.ChargingRuleName, mv, Vendor3GPP, datatype.OctetString(n)))
	}
	for _, n := range bases {
		out = append(out, diam.NewAVP(avp.ChargingRuleBaseName, mv, Vendor3GPP, datatype.UTF8String(n)))
	}
	return out
}

func arp(priority uint32) *diam.AVP {
	if priority == 0 {
		priority = 15
	}
	return diam.NewAVP(avp.AllocationRetentionPriority, mv, Vendor3GPP, &diam.GroupedAVP{AVP: []*diam.AVP{
		diam.NewAVP(avp.PriorityLevel, mv, Vendor3GPP, datatype.Unsigned32(priority)),
		diam.NewAVP(avp.PreemptionCapability, mv, Vendor3GPP, datatype.Enumerated(1)),    // disabled
		diam.NewAVP(avp.PreemptionVulnerability, mv, Vendor3GPP, datatype.Enumerated(0)), // enabled
	}})
}

func ruleDefinition(r subscriber.DynamicRule) *diam.GroupedAVP {
	g := &diam.GroupedAVP{AVP: []*diam.AVP{
		diam.NewAVP(avp.ChargingRuleName, mv, Vendor3GPP, datatype.OctetString(r.Name)),
	}}
	for _, f := range r.Flows {
		g.AddAVP(diam.NewAVP(avp.FlowInformation, mv, Vendor3GPP, &diam.GroupedAVP{AVP: []*diam.AVP{
			diam.NewAVP(avp.FlowDescription, mv, Vendor3GPP, datatype.IPFilterRule(f)),
		}}))
	}
	if r.QCI != 0 {
		q := &diam.GroupedAVP{AVP: []*diam.AVP{diam.NewAVP(avp.QoSClassIdentifier, mv, Vendor3GPP, datatype.Enumerated(r.QCI))}}
		for _, b := range []struct {
			code uint32
			v    uint32
		}{{avp.MaxRequestedBandwidthUL, r.MBRUplink}, {avp.MaxRequestedBandwidthDL, r.MBRDownlink},
			{avp.GuaranteedBitrateUL, r.GBRUplink}, {avp.GuaranteedBitrateDL, r.GBRDownlink}} {
			if b.v != 0 {
				q.AddAVP(diam.NewAVP(b.code, mv, Vendor3GPP, datatype.Unsigned32(b.v)))
			}
		}
		q.AddAVP(arp(0))
		g.AddAVP(diam.NewAVP(avp.QoSInformation, mv, Vendor3GPP, q))
	}
	if r.Precedence != 0 {
		g.AddAVP(diam.NewAVP(avp.Precedence, mv, Vendor3GPP, datatype.Unsigned32(r.Precedence)))
	}
	if r.MonitoringKey != "" {
		g.AddAVP(diam.NewAVP(avp.MonitoringKey, mv, Vendor3GPP, datatype.OctetString(r.MonitoringKey)))
	}
	return g
}
