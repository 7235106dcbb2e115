package gx

import (
	"net"
	"net/netip"
	"time"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"

	"github.com/openaaa/openaaa/internal/radiusx"
	"github.com/openaaa/openaaa/services/policing/internal/diameter"
)

// CC-Request-Type values (RFC 4006 §8.3).
const (
	Initial     = 1
	Update      = 2
	Termination = 3
)

// Subscription-Id-Type values (RFC 4006 §8.47).
const (
	subscriptionE164 = 0
	subscriptionIMSI = 1
)

// Vendor3GPP is the Vendor-Id of the 3GPP AVPs.
const Vendor3GPP = 10415

// CCR is what the policy server reads of a Credit-Control-Request: only the fields it uses
// (field notes: parse only what a component needs).
type CCR struct {
	SessionID     string
	OriginHost    string
	RequestType   uint32
	RequestNumber uint32
	IMSI          string
	MSISDN        string
	FramedIP      netip.Addr
	// FramedIPv6Prefix is an IPv6 UE's prefix (RFC 7155 Framed-IPv6-Prefix, the RADIUS
	// encoding): its session is found by any address inside (Store.ByIPv6).
	FramedIPv6Prefix netip.Prefix
	APN              string
	EventTriggers    []uint32
	// EventTime is the CCR's Event-Timestamp (RFC 4006 §8.38; zero when absent): when the
	// PCEF saw the event, the same on every copy of a request it sent again elsewhere.
	EventTime   time.Time
	Usage       []Usage
	RuleReports []RuleReport
	// Features is the Feature-List of the PCEF's Supported-Features for Gx's Feature-List-ID 1
	// (features.go; 0: none announced, a Rel-7 PCEF).
	Features uint32
	// Missing is the code of the first mandatory AVP absent (0: none), for 5005.
	Missing uint32
	// hasType and hasNumber: the CCR had CC-Request-Type and CC-Request-Number (the CCA
	// echoes them, RFC 4006 §3.2).
	hasType, hasNumber bool
}

// Usage is one Usage-Monitoring-Information report: octets used since the last report.
type Usage struct {
	MonitoringKey string
	Input, Output uint64
	Total         uint64
}

// Octets is the total used: CC-Total-Octets, else input + output.
func (u Usage) Octets() uint64 {
	if u.Total != 0 {
		return u.Total
	}
	return u.Input + u.Output
}

// RuleReport is one Charging-Rule-Report: rules the PCEF could not (or no longer) enforce.
type RuleReport struct {
	Rules       []string
	Status      uint32 // PCC-Rule-Status: 0 active, 1 inactive, 2 temporarily inactive
	FailureCode uint32 // Rule-Failure-Code
}

// Subscriber is the key the subscriber source is asked with: the IMSI, else the MSISDN.
func (r *CCR) Subscriber() string {
	if r.IMSI != "" {
		return r.IMSI
	}
	return r.MSISDN
}

// DecodeCCR reads a CCR. Mandatory AVPs (RFC 4006 §3.1, TS 29.212 §5.6.2), in their ABNF's
// order: Session-Id, Auth-Application-Id, Origin-Host, Origin-Realm, Destination-Realm,
// CC-Request-Type, CC-Request-Number. A value, not a pointer: the handler keeps it on its
// stack (one allocation per CCR less).
func DecodeCCR(m *diam.Message) CCR {
	var r CCR
	var seen [7]bool
	for _, a := range m.AVP {
		switch a.Code {
		case avp.SessionID:
			r.SessionID, seen[0] = str(a), true
		case avp.AuthApplicationID:
			seen[1] = true
		case avp.OriginHost:
			r.OriginHost, seen[2] = str(a), true
		case avp.OriginRealm:
			seen[3] = true
		case avp.DestinationRealm:
			seen[4] = true
		case avp.CCRequestType:
			r.RequestType, seen[5] = u32(a), true
		case avp.CCRequestNumber:
			r.RequestNumber, seen[6] = u32(a), true
		case avp.SubscriptionID:
			typ, data := subscription(a)
			switch typ {
			case subscriptionIMSI:
				r.IMSI = data
			case subscriptionE164:
				r.MSISDN = data
			}
		case avp.FramedIPAddress:
			r.FramedIP = ipv4(a)
		case avp.FramedIPv6Prefix:
			if b, ok := a.Data.(datatype.OctetString); ok {
				r.FramedIPv6Prefix, _ = radiusx.IPv6Prefix([]byte(b))
			}
		case avp.CalledStationID:
			r.APN = str(a)
		case avp.EventTrigger:
			r.EventTriggers = append(r.EventTriggers, u32(a))
		case avp.EventTimestamp:
			if t, ok := a.Data.(datatype.Time); ok {
				r.EventTime = time.Time(t)
			}
		case avp.UsageMonitoringInformation:
			r.Usage = append(r.Usage, usage(a))
		case 1018: // Charging-Rule-Report (our dictionary)
			r.RuleReports = append(r.RuleReports, ruleReport(a))
		case avp.SupportedFeatures:
			r.Features |= features(a)
		}
	}
	r.hasType, r.hasNumber = seen[5], seen[6]
	for i, code := range []uint32{avp.SessionID, avp.AuthApplicationID, avp.OriginHost, avp.OriginRealm, avp.DestinationRealm, avp.CCRequestType, avp.CCRequestNumber} {
		if !seen[i] {
			r.Missing = code
			break
		}
	}
	return r
}

func children(a *diam.AVP) []*diam.AVP {
	if g, ok := a.Data.(*diam.GroupedAVP); ok {
		return g.AVP
	}
	return nil
}

func subscription(a *diam.AVP) (typ uint32, data string) {
	typ = ^uint32(0)
	for _, c := range children(a) {
		switch c.Code {
		case avp.SubscriptionIDType:
			typ = u32(c)
		case avp.SubscriptionIDData:
			data = str(c)
		}
	}
	return typ, data
}

func usage(a *diam.AVP) Usage {
	var u Usage
	for _, c := range children(a) {
		switch c.Code {
		case avp.MonitoringKey:
			u.MonitoringKey = str(c)
		case avp.UsedServiceUnit:
			for _, o := range children(c) {
				switch o.Code {
				case avp.CCTotalOctets:
					u.Total += u64(o)
				case avp.CCInputOctets:
					u.Input += u64(o)
				case avp.CCOutputOctets:
					u.Output += u64(o)
				}
			}
		}
	}
	return u
}

func ruleReport(a *diam.AVP) RuleReport {
	var r RuleReport
	for _, c := range children(a) {
		switch c.Code {
		case avp.ChargingRuleName, avp.ChargingRuleBaseName:
			r.Rules = append(r.Rules, str(c))
		case 1019: // PCC-Rule-Status
			r.Status = u32(c)
		case 1031: // Rule-Failure-Code
			r.FailureCode = u32(c)
		}
	}
	return r
}

// str is the text of a string-like AVP.
func str(a *diam.AVP) string { return diameter.String(a) }

func u32(a *diam.AVP) uint32 {
	switch v := a.Data.(type) {
	case datatype.Unsigned32:
		return uint32(v)
	case datatype.Enumerated:
		return uint32(v)
	case datatype.Integer32:
		return uint32(v)
	}
	return 0
}

func u64(a *diam.AVP) uint64 {
	switch v := a.Data.(type) {
	case datatype.Unsigned64:
		return uint64(v)
	case datatype.Unsigned32:
		return uint64(v)
	}
	return 0
}

func ipv4(a *diam.AVP) netip.Addr {
	var b []byte
	switch v := a.Data.(type) {
	case datatype.OctetString:
		b = []byte(v)
	case datatype.Address:
		b = []byte(v)
	case datatype.IPv4:
		b = []byte(v)
	}
	if ip := net.IP(b).To4(); ip != nil {
		return netip.AddrFrom4([4]byte(ip))
	}
	return netip.Addr{}
}
