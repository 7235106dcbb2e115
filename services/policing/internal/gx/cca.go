package gx

import (
	"time"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"

	"github.com/openaaa/openaaa/services/policing/internal/diameter"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// AddDecision appends the CCA's policy AVPs to ans (which starts with Session-Id,
// Result-Code, our identity and the CCR's identifiers: ccaHead), pure: from the decision and
// the time only.
func AddDecision(ans *diam.Message, d Decision, now time.Time) {
	c := ccaWriter{msg: ans}
	c.decision(d, now)
}

// decision writes the CCA's policy AVPs. Every AVP comes from the specifications' table
// (avps.go): its flags too.
func (c *ccaWriter) decision(d Decision, now time.Time) {
	if len(d.Remove)+len(d.RemoveBases) > 0 {
		c.begin(avp.ChargingRuleRemove)
		c.names(d.Remove, d.RemoveBases)
		c.end()
	}
	if len(d.Install)+len(d.Bases)+len(d.Dynamic) > 0 {
		c.begin(avp.ChargingRuleInstall)
		c.names(d.Install, d.Bases)
		for _, r := range d.Dynamic {
			c.ruleDefinition(r)
		}
		c.end()
	}
	for _, t := range d.Triggers {
		c.num(avp.EventTrigger, uint64(t))
	}
	if d.QCI != 0 {
		c.begin(avp.DefaultEPSBearerQoS)
		c.num(avp.QoSClassIdentifier, uint64(d.QCI))
		c.arp(d.ARP)
		c.end()
	}
	if d.AMBRUp != 0 || d.AMBRDown != 0 {
		c.begin(avp.QoSInformation)
		c.num(avp.APNAggregateMaxBitrateUL, uint64(d.AMBRUp))
		c.num(avp.APNAggregateMaxBitrateDL, uint64(d.AMBRDown))
		c.end()
	}
	if d.Revalidate != 0 {
		c.time(avp.RevalidationTime, now.Add(time.Duration(d.Revalidate)*time.Second))
	}
	for _, g := range d.Grants {
		if g.Octets == 0 {
			continue
		}
		level := uint64(usageLevelRule)
		if g.SessionKey {
			level = usageLevelSession
		}
		c.begin(avp.UsageMonitoringInformation)
		c.str(avp.MonitoringKey, g.Key)
		c.begin(avp.GrantedServiceUnit)
		c.num(avp.CCTotalOctets, g.Octets)
		c.end()
		c.num(avp.UsageMonitoringLevel, level)
		c.end()
	}
}

// ccaWriter is where a CCA's (or a RAR's) AVPs go: added to a message (msg: ServeDiameter's
// answers, for tests and other front ends, and RARs), or written as its wire form (w: the
// server's answers, diameter.Writer: no AVP objects). One encoding, two outputs, the same bytes
// (TestCCAWriterBytes); each AVP's flags, vendor and type come from the table (avps.go). A
// concrete type, not an interface: the Writer stays on the stack.
type ccaWriter struct {
	wire bool // written by w, else added to msg
	w    diameter.Writer
	msg  *diam.Message
	// open are the grouped AVPs begun on msg and not ended: their codes and AVPs so far.
	open []openGroup
}

type openGroup struct {
	code uint32
	avps []*diam.AVP
}

func (c *ccaWriter) add(a *diam.AVP) {
	if n := len(c.open); n > 0 {
		c.open[n-1].avps = append(c.open[n-1].avps, a)
		return
	}
	c.msg.AddAVP(a)
}

// begin starts a grouped AVP: the AVPs until its end are its own.
func (c *ccaWriter) begin(code uint32) {
	if c.wire {
		r := rowOf(code)
		c.w.Begin(code, r.flags, r.vendor)
		return
	}
	c.open = append(c.open, openGroup{code: code})
}

func (c *ccaWriter) end() {
	if c.wire {
		c.w.End()
		return
	}
	g := c.open[len(c.open)-1]
	c.open = c.open[:len(c.open)-1]
	c.add(group(g.code, g.avps...))
}

// num writes a number AVP of the table's type (Unsigned32, Enumerated, Unsigned64).
func (c *ccaWriter) num(code uint32, v uint64) {
	r := rowOf(code)
	switch {
	case !c.wire:
		c.add(avpOf(code, value(r.typ, v, "")))
	case r.typ == datatype.Unsigned64Type:
		c.w.U64(code, r.flags, r.vendor, v)
	default:
		c.w.U32(code, r.flags, r.vendor, uint32(v))
	}
}

// str writes a string AVP of the table's type (OctetString, UTF8String, IPFilterRule…).
func (c *ccaWriter) str(code uint32, s string) {
	r := rowOf(code)
	if c.wire {
		c.w.String(code, r.flags, r.vendor, s)
		return
	}
	c.add(avpOf(code, value(r.typ, 0, s)))
}

// value is an AVP's value of the type typ: n for a number, else s.
func value(typ datatype.TypeID, n uint64, s string) datatype.Type {
	switch typ {
	case datatype.Unsigned32Type:
		return datatype.Unsigned32(n)
	case datatype.EnumeratedType:
		return datatype.Enumerated(n)
	case datatype.Unsigned64Type:
		return datatype.Unsigned64(n)
	case datatype.UTF8StringType:
		return datatype.UTF8String(s)
	case datatype.DiameterIdentityType:
		return datatype.DiameterIdentity(s)
	case datatype.IPFilterRuleType:
		return datatype.IPFilterRule(s)
	}
	return datatype.OctetString(s)
}

// time writes a Time AVP: seconds since 1900 (RFC 6733 §4.3.1), as datatype.Time serializes.
func (c *ccaWriter) time(code uint32, t time.Time) {
	if c.wire {
		const rfc868 = 2208988800 // 1900 to 1970, datatype's offset
		r := rowOf(code)
		c.w.U32(code, r.flags, r.vendor, uint32(t.Unix())+rfc868)
		return
	}
	c.add(avpOf(code, datatype.Time(t)))
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
func (c *ccaWriter) ccaHead(req *CCR) {
	c.num(avp.AuthApplicationID, diameter.GxApplicationID)
	if req.hasType && int(req.RequestType) < len(requestTypes) && requestTypes[req.RequestType] {
		c.num(avp.CCRequestType, uint64(req.RequestType))
	}
	if req.hasNumber {
		c.num(avp.CCRequestNumber, uint64(req.RequestNumber))
	}
}

// requestTypes are the values of RFC 4006 §8.3's CC-Request-Type enumeration.
var requestTypes = func() (t [5]bool) {
	for v := range t {
		t[v] = Specs[avpKey{avp.CCRequestType, 0}].Enum[uint32(v)] != ""
	}
	return t
}()

// names are Charging-Rule-Name AVPs of rules, then Charging-Rule-Base-Name AVPs of bases.
func (c *ccaWriter) names(rules, bases []string) {
	for _, n := range rules {
		c.str(avp.ChargingRuleName, n)
	}
	for _, n := range bases {
		c.str(avp.ChargingRuleBaseName, n)
	}
}

// Pre-emption-Capability and -Vulnerability values (TS 29.212 §5.3.46, §5.3.47).
const (
	preemptionCapabilityDisabled   = 1
	preemptionVulnerabilityEnabled = 0
)

func (c *ccaWriter) arp(priority uint32) {
	if priority == 0 {
		priority = 15
	}
	c.begin(avp.AllocationRetentionPriority)
	c.num(avp.PriorityLevel, uint64(priority))
	c.num(avp.PreemptionCapability, preemptionCapabilityDisabled)
	c.num(avp.PreemptionVulnerability, preemptionVulnerabilityEnabled)
	c.end()
}

func (c *ccaWriter) ruleDefinition(r subscriber.DynamicRule) {
	c.begin(avp.ChargingRuleDefinition)
	c.str(avp.ChargingRuleName, r.Name)
	for _, f := range r.Flows {
		c.begin(avp.FlowInformation)
		c.str(avp.FlowDescription, f)
		c.end()
	}
	if r.QCI != 0 {
		c.begin(avp.QoSInformation)
		c.num(avp.QoSClassIdentifier, uint64(r.QCI))
		for _, b := range []struct {
			code uint32
			v    uint32
		}{{avp.MaxRequestedBandwidthUL, r.MBRUplink}, {avp.MaxRequestedBandwidthDL, r.MBRDownlink},
			{avp.GuaranteedBitrateUL, r.GBRUplink}, {avp.GuaranteedBitrateDL, r.GBRDownlink}} {
			if b.v != 0 {
				c.num(b.code, uint64(b.v))
			}
		}
		c.arp(0)
		c.end()
	}
	if r.Precedence != 0 {
		c.num(avp.Precedence, uint64(r.Precedence))
	}
	if r.MonitoringKey != "" {
		c.str(avp.MonitoringKey, r.MonitoringKey)
	}
	c.end()
}
