package gx

import (
	"encoding/binary"
	"maps"
	"net"
	"net/netip"
	"sync/atomic"
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
	// FeaturesRequired are the bits of Features announced in a Supported-Features with the M bit
	// set: features the PCEF requires (TS 29.229 §7.2.1). Read, not acted on (features.go).
	FeaturesRequired uint32
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
func DecodeCCR(m *diam.Message) CCR { return decodeCCR(fields{tree: m.AVP}) }

// decodeLean reads a CCR from its bytes (a lean request: diameter.LeanHandler), as DecodeCCR
// reads the message the bytes decode to. A Session-Id or Origin-Host equal to one of known is
// that string, not a copy: the request head's Session-Id, the peer's Origin-Host.
func decodeLean(avps diameter.AVPs, known [2]string) CCR {
	return decodeCCR(fields{raw: avps, isRaw: true, known: known})
}

func decodeCCR(l fields) CCR {
	var r CCR
	var seen [7]bool
	var a field
	for l.next(&a) {
		switch a.code() {
		case avp.SessionID:
			r.SessionID, seen[0] = l.text(&a), true
		case avp.AuthApplicationID:
			seen[1] = true
		case avp.OriginHost:
			r.OriginHost, seen[2] = l.text(&a), true
		case avp.OriginRealm:
			seen[3] = true
		case avp.DestinationRealm:
			seen[4] = true
		case avp.CCRequestType:
			r.RequestType, seen[5] = a.u32(), true
		case avp.CCRequestNumber:
			r.RequestNumber, seen[6] = a.u32(), true
		case avp.SubscriptionID:
			typ, data := subscription(&a)
			switch typ {
			case subscriptionIMSI:
				r.IMSI = data
			case subscriptionE164:
				r.MSISDN = data
			}
		case avp.FramedIPAddress:
			r.FramedIP = a.ipv4()
		case avp.FramedIPv6Prefix:
			if b := a.octets(); b != nil {
				r.FramedIPv6Prefix, _ = radiusx.IPv6Prefix(b)
			}
		case avp.CalledStationID:
			r.APN = a.str()
		case avp.EventTrigger:
			r.EventTriggers = append(r.EventTriggers, a.u32())
		case avp.EventTimestamp:
			if t, ok := a.time(); ok {
				r.EventTime = t
			}
		case avp.UsageMonitoringInformation:
			r.Usage = append(r.Usage, usage(&a))
		case 1018: // Charging-Rule-Report (our dictionary)
			r.RuleReports = append(r.RuleReports, ruleReport(&a))
		case avp.SupportedFeatures:
			list := features(&a)
			r.Features |= list
			if a.mandatory() {
				r.FeaturesRequired |= list
			}
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

func subscription(a *field) (typ uint32, data string) {
	typ = ^uint32(0)
	var c field
	for l := a.children(); ; {
		if !l.next(&c) {
			return typ, data
		}
		switch c.code() {
		case avp.SubscriptionIDType:
			typ = c.u32()
		case avp.SubscriptionIDData:
			data = c.str()
		}
	}
}

func usage(a *field) Usage {
	var u Usage
	var c field
	for l := a.children(); ; {
		if !l.next(&c) {
			return u
		}
		switch c.code() {
		case avp.MonitoringKey:
			u.MonitoringKey = c.keyText()
		case avp.UsedServiceUnit:
			var o field
			for ol := c.children(); ol.next(&o); {
				switch o.code() {
				case avp.CCTotalOctets:
					u.Total += o.u64()
				case avp.CCInputOctets:
					u.Input += o.u64()
				case avp.CCOutputOctets:
					u.Output += o.u64()
				}
			}
		}
	}
}

func ruleReport(a *field) RuleReport {
	var r RuleReport
	var c field
	for l := a.children(); ; {
		if !l.next(&c) {
			return r
		}
		switch c.code() {
		case avp.ChargingRuleName, avp.ChargingRuleBaseName:
			r.Rules = append(r.Rules, c.str())
		case 1019: // PCC-Rule-Status
			r.Status = c.u32()
		case 1031: // Rule-Failure-Code
			r.FailureCode = c.u32()
		}
	}
}

// fields are AVPs as the CCR's decoding reads them: those of a message go-diameter's decoding
// built (tree), or a lean request's bytes (raw, diameter.LeanHandler). One decoder reads both,
// so both give the same CCR (FuzzDecodeLean checks it). Concrete types, not an interface or
// iterator functions: a CCR's values stay on the stack.
type fields struct {
	tree  []*diam.AVP
	raw   diameter.AVPs
	isRaw bool
	known [2]string // raw: decodeLean's
}

// field is one of fields: tree, else raw, read as go-diameter decodes its type
// (diameter.DecodeLean lets through only types whose values the reads below take as
// go-diameter's decoders do).
type field struct {
	tree *diam.AVP
	raw  diameter.RawAVP
}

// next reads the next AVP into a (its memory, not a copy returned: this runs for every AVP of
// every CCR); false when there are no more.
func (l *fields) next(a *field) bool {
	if l.isRaw {
		a.tree = nil
		return l.raw.Next(&a.raw)
	}
	if len(l.tree) == 0 {
		return false
	}
	a.tree = l.tree[0]
	l.tree = l.tree[1:]
	return true
}

func (a *field) code() uint32 {
	if a.tree != nil {
		return a.tree.Code
	}
	return a.raw.Code
}

func (a *field) mandatory() bool {
	if a.tree != nil {
		return a.tree.Flags&avp.Mbit != 0
	}
	return a.raw.Flags&avp.Mbit != 0
}

func (a *field) children() fields {
	if a.tree == nil {
		if a.raw.Type() == datatype.GroupedType {
			return fields{raw: a.raw.Group(), isRaw: true}
		}
		return fields{}
	}
	if g, ok := a.tree.Data.(*diam.GroupedAVP); ok {
		return fields{tree: g.AVP}
	}
	return fields{}
}

// text is a.str(), or the string of l.known it equals.
func (l *fields) text(a *field) string {
	if a.tree == nil {
		for _, k := range l.known {
			if string(a.raw.Data) == k && diameter.StringType(a.raw.Type()) {
				return k
			}
		}
	}
	return a.str()
}

// keyText is str() for a Monitoring-Key: a policy has a few, which every CCR-U repeats; from
// the bytes, their strings are kept (keyTexts) rather than copied from each request.
func (a *field) keyText() string {
	if a.tree != nil || !diameter.StringType(a.raw.Type()) {
		return a.str()
	}
	if s, ok := keyTexts.load(string(a.raw.Data)); ok {
		return s
	}
	s := string(a.raw.Data)
	keyTexts.store(s, s)
	return s
}

var keyTexts memo[string]

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

// str is the text of a string-like AVP.
func (a *field) str() string {
	if a.tree != nil {
		return diameter.String(a.tree)
	}
	if diameter.StringType(a.raw.Type()) {
		return string(a.raw.Data)
	}
	return ""
}

func (a *field) u32() uint32 {
	if a.tree != nil {
		switch v := a.tree.Data.(type) {
		case datatype.Unsigned32:
			return uint32(v)
		case datatype.Enumerated:
			return uint32(v)
		case datatype.Integer32:
			return uint32(v)
		}
		return 0
	}
	switch a.raw.Type() {
	case datatype.Unsigned32Type, datatype.EnumeratedType, datatype.Integer32Type:
		return binary.BigEndian.Uint32(a.raw.Data)
	}
	return 0
}

func (a *field) u64() uint64 {
	if a.tree != nil {
		switch v := a.tree.Data.(type) {
		case datatype.Unsigned64:
			return uint64(v)
		case datatype.Unsigned32:
			return uint64(v)
		}
		return 0
	}
	switch a.raw.Type() {
	case datatype.Unsigned64Type:
		return binary.BigEndian.Uint64(a.raw.Data)
	case datatype.Unsigned32Type:
		return uint64(binary.BigEndian.Uint32(a.raw.Data))
	}
	return 0
}

// octets are an OctetString's bytes, nil for another type.
func (a *field) octets() []byte {
	if a.tree != nil {
		if b, ok := a.tree.Data.(datatype.OctetString); ok {
			return []byte(b)
		}
		return nil
	}
	if a.raw.Type() == datatype.OctetStringType {
		return a.raw.Data
	}
	return nil
}

// time is a Time AVP's value; raw, as datatype.DecodeTime computes it (RFC 5905's eras: a
// value with its top bit clear is past 2036).
func (a *field) time() (time.Time, bool) {
	if a.tree != nil {
		t, ok := a.tree.Data.(datatype.Time)
		return time.Time(t), ok
	}
	if a.raw.Type() != datatype.TimeType {
		return time.Time{}, false
	}
	const rfc868, rfc2030 = 2208988800, 1<<32 - 2208988800 // datatype's offsets
	v := int64(binary.BigEndian.Uint32(a.raw.Data))
	if v>>31 == 0 {
		return time.Unix(v+rfc2030, 0), true
	}
	return time.Unix(v-rfc868, 0), true
}

func (a *field) ipv4() netip.Addr {
	var b []byte
	if a.tree != nil {
		switch v := a.tree.Data.(type) {
		case datatype.OctetString:
			b = []byte(v)
		case datatype.Address:
			b = []byte(v)
		case datatype.IPv4:
			b = []byte(v)
		}
	} else {
		switch a.raw.Type() {
		case datatype.OctetStringType:
			b = a.raw.Data
		case datatype.AddressType:
			b = a.raw.Data[2:] // the family (1 or 2: diameter.DecodeLean), then the address
		}
	}
	if ip := net.IP(b).To4(); ip != nil {
		return netip.AddrFrom4([4]byte(ip))
	}
	return netip.Addr{}
}
