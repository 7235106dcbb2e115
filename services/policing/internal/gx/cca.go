package gx

import (
	"maps"
	"sync/atomic"
	"time"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"

	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// AddDecision appends the CCA's policy AVPs to ans (which starts with Session-Id,
// Result-Code, our identity and the CCR's identifiers: ccaHead), pure: from the decision and
// the time only. Every AVP comes from the specifications' table (avps.go): its flags too.
func AddDecision(ans *diam.Message, d Decision, now time.Time) {
	if len(d.Remove)+len(d.RemoveBases) > 0 {
		ans.AddAVP(group(avp.ChargingRuleRemove, names(d.Remove, d.RemoveBases)...))
	}
	if len(d.Install)+len(d.Bases)+len(d.Dynamic) > 0 {
		in := names(d.Install, d.Bases)
		for _, r := range d.Dynamic {
			in = append(in, avpOf(avp.ChargingRuleDefinition, ruleDefinition(r)))
		}
		ans.AddAVP(group(avp.ChargingRuleInstall, in...))
	}
	for _, t := range d.Triggers {
		ans.AddAVP(avpOf(avp.EventTrigger, datatype.Enumerated(t)))
	}
	if d.QCI != 0 {
		ans.AddAVP(group(avp.DefaultEPSBearerQoS,
			avpOf(avp.QoSClassIdentifier, datatype.Enumerated(d.QCI)),
			arp(d.ARP)))
	}
	if d.AMBRUp != 0 || d.AMBRDown != 0 {
		ans.AddAVP(group(avp.QoSInformation,
			avpOf(avp.APNAggregateMaxBitrateUL, datatype.Unsigned32(d.AMBRUp)),
			avpOf(avp.APNAggregateMaxBitrateDL, datatype.Unsigned32(d.AMBRDown))))
	}
	if d.Revalidate != 0 {
		ans.AddAVP(avpOf(avp.RevalidationTime, datatype.Time(now.Add(time.Duration(d.Revalidate)*time.Second))))
	}
	for _, g := range d.Grants {
		if g.Octets == 0 {
			continue
		}
		level := datatype.Enumerated(usageLevelRule)
		if g.SessionKey {
			level = usageLevelSession
		}
		ans.AddAVP(grantAVP(g.Key, g.Octets, level))
	}
}

// grantAVP is a Usage-Monitoring-Information granting octets on key: its five AVPs, two
// groups and their lists in one allocation (a CCA-U carries one or more; built AVP by AVP
// they were a dozen allocations), flags from the table as avpOf's.
func grantAVP(key string, octets uint64, level datatype.Enumerated) *diam.AVP {
	x := &struct {
		umi, key, gsu, total, level diam.AVP
		umiG, gsuG                  diam.GroupedAVP
		umiL                        [3]*diam.AVP
		gsuL                        [1]*diam.AVP
	}{}
	set := func(a *diam.AVP, code uint32, data datatype.Type) *diam.AVP {
		b := byCode[code]
		a.Code, a.Flags, a.VendorID, a.Data = code, b.flags, b.vendor, data
		a.Length = 8 + data.Len() // as diam.NewAVP sets it: the header and the data, no padding
		if a.VendorID != 0 {
			a.Length += 4
			a.Flags |= avp.Vbit
		}
		return a
	}
	x.gsuL[0] = set(&x.total, avp.CCTotalOctets, datatype.Unsigned64(octets))
	x.gsuG.AVP = x.gsuL[:]
	x.umiL = [3]*diam.AVP{set(&x.key, avp.MonitoringKey, monitoringKey(key)), set(&x.gsu, avp.GrantedServiceUnit, &x.gsuG),
		set(&x.level, avp.UsageMonitoringLevel, level)}
	x.umiG.AVP = x.umiL[:]
	return set(&x.umi, avp.UsageMonitoringInformation, &x.umiG)
}

// monitoringKey is the Monitoring-Key value of key, made once per key (a policy has a few):
// an answer's AVPs are only read.
func monitoringKey(key string) datatype.Type {
	if v, ok := monitoringKeys.load(key); ok {
		return v
	}
	v := datatype.Type(datatype.OctetString(key))
	monitoringKeys.store(key, v)
	return v
}

var monitoringKeys memo[datatype.Type]

// memo holds values made once per key, for keys of which there are few (a policy's
// Monitoring-Keys): a map copied on write, read without a lock; past memoMax keys, new ones are
// not kept.
type memo[V any] struct{ m atomic.Pointer[map[string]V] }

const memoMax = 1024

func (c *memo[V]) load(key string) (V, bool) {
	if m := c.m.Load(); m != nil {
		v, ok := (*m)[key]
		return v, ok
	}
	var zero V
	return zero, false
}

func (c *memo[V]) store(key string, v V) {
	old := c.m.Load()
	if old == nil || len(*old) < memoMax {
		next := make(map[string]V, 8)
		if old != nil {
			maps.Copy(next, *old)
		}
		next[key] = v
		c.m.CompareAndSwap(old, &next)
	}
}

// Usage-Monitoring-Level values (TS 29.212 §5.3.61).
const (
	usageLevelSession = 0 // SESSION_LEVEL
	usageLevelRule    = 1 // PCC_RULE_LEVEL
)

// ccaHead adds what every CCA carries after Result-Code and our identity, whatever its
// Result-Code (RFC 4006 §3.2, TS 29.212 §5.6.3): Auth-Application-Id, CC-Request-Type and
// CC-Request-Number, the last two echoing the CCR's when it had them (a CC-Request-Type
// outside RFC 4006 §8.3's enumeration is not echoed: the 5004's Failed-AVP carries it).
func ccaHead(ans *diam.Message, req *CCR) {
	ans.AddAVP(authApplicationID)
	if req.hasType && int(req.RequestType) < len(requestTypes) && requestTypes[req.RequestType] != nil {
		ans.AddAVP(requestTypes[req.RequestType])
	}
	if req.hasNumber {
		if int(req.RequestNumber) < len(requestNumbers) {
			ans.AddAVP(requestNumbers[req.RequestNumber])
		} else {
			ans.AddAVP(avpOf(avp.CCRequestNumber, datatype.Unsigned32(req.RequestNumber)))
		}
	}
}

// AVPs every CCA carries, built once (an answer's AVPs are only read: serialized).
var (
	authApplicationID = avpOf(avp.AuthApplicationID, datatype.Unsigned32(16777238))
	// requestTypes are the CC-Request-Type AVPs of RFC 4006 §8.3's enumeration, by value.
	requestTypes = func() (t [5]*diam.AVP) {
		for v := range t {
			if Specs[avpKey{avp.CCRequestType, 0}].Enum[uint32(v)] != "" {
				t[v] = avpOf(avp.CCRequestType, datatype.Enumerated(v))
			}
		}
		return t
	}()
	// requestNumbers are the CC-Request-Number AVPs of a session's first requests (numbered from
	// 0, RFC 4006 §8.2; a PCEF's session sends a few): one allocation less per CCA.
	requestNumbers = func() (t [256]*diam.AVP) {
		for v := range t {
			t[v] = avpOf(avp.CCRequestNumber, datatype.Unsigned32(v))
		}
		return t
	}()
)

// names are Charging-Rule-Name AVPs of rules, then Charging-Rule-Base-Name AVPs of bases.
func names(rules, bases []string) []*diam.AVP {
	out := make([]*diam.AVP, 0, len(rules)+len(bases))
	for _, n := range rules {
		out = append(out, avpOf(avp.ChargingRuleName, datatype.OctetString(n)))
	}
	for _, n := range bases {
		out = append(out, avpOf(avp.ChargingRuleBaseName, datatype.UTF8String(n)))
	}
	return out
}

// Pre-emption-Capability and -Vulnerability values (TS 29.212 §5.3.46, §5.3.47).
const (
	preemptionCapabilityDisabled   = 1
	preemptionVulnerabilityEnabled = 0
)

func arp(priority uint32) *diam.AVP {
	if priority == 0 {
		priority = 15
	}
	return group(avp.AllocationRetentionPriority,
		avpOf(avp.PriorityLevel, datatype.Unsigned32(priority)),
		avpOf(avp.PreemptionCapability, datatype.Enumerated(preemptionCapabilityDisabled)),
		avpOf(avp.PreemptionVulnerability, datatype.Enumerated(preemptionVulnerabilityEnabled)))
}

func ruleDefinition(r subscriber.DynamicRule) *diam.GroupedAVP {
	g := &diam.GroupedAVP{AVP: []*diam.AVP{
		avpOf(avp.ChargingRuleName, datatype.OctetString(r.Name)),
	}}
	for _, f := range r.Flows {
		g.AddAVP(group(avp.FlowInformation, avpOf(avp.FlowDescription, datatype.IPFilterRule(f))))
	}
	if r.QCI != 0 {
		q := &diam.GroupedAVP{AVP: []*diam.AVP{avpOf(avp.QoSClassIdentifier, datatype.Enumerated(r.QCI))}}
		for _, b := range []struct {
			code uint32
			v    uint32
		}{{avp.MaxRequestedBandwidthUL, r.MBRUplink}, {avp.MaxRequestedBandwidthDL, r.MBRDownlink},
			{avp.GuaranteedBitrateUL, r.GBRUplink}, {avp.GuaranteedBitrateDL, r.GBRDownlink}} {
			if b.v != 0 {
				q.AddAVP(avpOf(b.code, datatype.Unsigned32(b.v)))
			}
		}
		q.AddAVP(arp(0))
		g.AddAVP(avpOf(avp.QoSInformation, q))
	}
	if r.Precedence != 0 {
		g.AddAVP(avpOf(avp.Precedence, datatype.Unsigned32(r.Precedence)))
	}
	if r.MonitoringKey != "" {
		g.AddAVP(avpOf(avp.MonitoringKey, datatype.OctetString(r.MonitoringKey)))
	}
	return g
}
