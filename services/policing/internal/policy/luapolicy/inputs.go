package luapolicy

import (
	"fmt"
	"hash/maphash"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
	"layeh.com/radius"

	"github.com/openaaa/openaaa/services/policing/internal/dict"
	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// scope is where a value comes from: the request, the subscriber, the session, the clock.
type scope uint8

const (
	scopeReq scope = iota
	scopeSub
	scopeSession
	scopeClock
)

var scopeNames = [...]string{scopeReq: "req", scopeSub: "sub", scopeSession: "session", scopeClock: "clock"}

// val is one value a script can read, kept out of Lua's interface values so that hashing
// the inputs of a memoized hook allocates nothing.
type val struct {
	kind byte // 0: nil, 's': string, 'n': number, 'b': boolean
	s    string
	n    float64
}

func str(s string) val {
	if s == "" {
		return val{}
	}
	return val{kind: 's', s: s}
}
func num[T uint32 | uint64 | int](n T) val { return val{kind: 'n', n: float64(n)} }
func boolean(b bool) val {
	if b {
		return val{kind: 'b', n: 1}
	}
	return val{kind: 'b'}
}

func (v val) lua() lua.LValue {
	switch v.kind {
	case 's':
		return lua.LString(v.s)
	case 'n':
		return lua.LNumber(v.n)
	case 'b':
		return lua.LBool(v.n != 0)
	}
	return lua.LNil
}

// input is one declared input of a hook: "req.<Attribute-Name>", "sub.<field>",
// "session.<field>", "hour" or "weekday".
type input struct {
	scope scope
	name  string
	attr  *dict.Attr // scopeReq
	// The field's reader, resolved at load (nil for a replyAttributes entry): a memoized
	// decision hashes every declared input, and a lookup by name per input was most of it.
	sub  func(*subscriber.Subscriber) val
	sess func(*session.Update, *subscriber.Subscriber) val
}

func (in input) String() string {
	if in.scope == scopeClock {
		return in.name
	}
	return scopeNames[in.scope] + "." + in.name
}

// parseInput checks a declared input against the dictionary and the known fields.
func parseInput(d *dict.Dict, s string) (input, error) {
	if s == "hour" || s == "weekday" {
		return input{scope: scopeClock, name: s}, nil
	}
	sc, name, ok := strings.Cut(s, ".")
	switch {
	case !ok || name == "":
	case sc == "req":
		a, ok := d.Lookup(name)
		if !ok {
			return input{}, fmt.Errorf("input %q: no attribute %q in the dictionary", s, name)
		}
		return input{scope: scopeReq, name: name, attr: a}, nil
	case sc == "sub":
		if !subField(name) {
			return input{}, fmt.Errorf("input %q: no subscriber field %q", s, name)
		}
		return input{scope: scopeSub, name: name, sub: subFields[name]}, nil
	case sc == "session":
		f, ok := sessionFields[name]
		if !ok {
			return input{}, fmt.Errorf("input %q: no session field %q", s, name)
		}
		return input{scope: scopeSession, name: name, sess: f}, nil
	}
	return input{}, fmt.Errorf("input %q: want req.<Attribute>, sub.<field>, session.<field>, hour or weekday", s)
}

// reqValue reads an attribute of a request by dictionary attribute.
func reqValue(attrs radius.Attributes, a *dict.Attr) val {
	raw, ok := a.Find(attrs)
	if !ok {
		return val{}
	}
	v, ok := a.Decode(raw)
	if !ok {
		return val{}
	}
	if v.IsNum {
		return num(v.Num)
	}
	return val{kind: 's', s: v.Str}
}

// subFields are the subscriber's fields by name (the subscriber file's names); a
// replyAttributes entry is read by its attribute name (which has a '-').
var subFields = map[string]func(*subscriber.Subscriber) val{
	"username":            func(s *subscriber.Subscriber) val { return str(s.Username) },
	"profile":             func(s *subscriber.Subscriber) val { return str(s.ProfileName) },
	"disabled":            func(s *subscriber.Subscriber) val { return boolean(s.Disabled) },
	"framedIPAddress":     func(s *subscriber.Subscriber) val { return str(s.Profile.FramedIPAddress) },
	"framedPool":          func(s *subscriber.Subscriber) val { return str(s.Profile.FramedPool) },
	"framedIPv6Address":   func(s *subscriber.Subscriber) val { return str(s.Profile.FramedIPv6Address) },
	"framedIPv6Prefix":    func(s *subscriber.Subscriber) val { return str(s.Profile.FramedIPv6Prefix) },
	"delegatedIPv6Prefix": func(s *subscriber.Subscriber) val { return str(s.Profile.DelegatedIPv6Prefix) },
	"framedIPv6Pool":      func(s *subscriber.Subscriber) val { return str(s.Profile.FramedIPv6Pool) },
	"sessionTimeout":      func(s *subscriber.Subscriber) val { return num(s.Profile.SessionTimeout) },
	"idleTimeout":         func(s *subscriber.Subscriber) val { return num(s.Profile.IdleTimeout) },
	"acctInterimInterval": func(s *subscriber.Subscriber) val { return num(s.Profile.AcctInterimInterval) },
	"class":               func(s *subscriber.Subscriber) val { return str(s.Profile.Class) },
	"filterId":            func(s *subscriber.Subscriber) val { return str(s.Profile.FilterID) },
	"rateLimit":           func(s *subscriber.Subscriber) val { return str(s.Profile.RateLimit) },
	"quotaOctets":         func(s *subscriber.Subscriber) val { return num(s.Profile.QuotaOctets) },
	"usedOctets":          func(s *subscriber.Subscriber) val { return num(s.Profile.UsedOctets) },
}

func subField(name string) bool {
	_, ok := subFields[name]
	return ok || strings.Contains(name, "-")
}

func subValue(s *subscriber.Subscriber, name string) (val, bool) {
	if f, ok := subFields[name]; ok {
		return f(s), true
	}
	if strings.Contains(name, "-") {
		return replyAttr(s, name), true
	}
	return val{}, false
}

// replyAttr reads a replyAttributes entry of the profile (its first value) by attribute name.
func replyAttr(s *subscriber.Subscriber, name string) val {
	return str(s.Profile.ReplyAttributes[name].First())
}

const gib = 1 << 30

// sessionFields are the session's fields as the accounting request carries them (counters
// absolute, Gigawords included); octetsGiB, octetsMiB and quotaPercent change seldom, so a
// hook that declares them instead of octets is re-run only when a boundary is crossed.
var sessionFields = map[string]func(*session.Update, *subscriber.Subscriber) val{
	"kind":             func(u *session.Update, _ *subscriber.Subscriber) val { return str(u.Kind.String()) },
	"userName":         func(u *session.Update, _ *subscriber.Subscriber) val { return str(u.Session.UserName) },
	"nas":              func(u *session.Update, _ *subscriber.Subscriber) val { return str(u.Session.NAS) },
	"acctSessionId":    func(u *session.Update, _ *subscriber.Subscriber) val { return str(u.Session.ID) },
	"nasIdentifier":    func(u *session.Update, _ *subscriber.Subscriber) val { return str(u.Session.NASIdentifier) },
	"callingStationId": func(u *session.Update, _ *subscriber.Subscriber) val { return str(u.Session.CallingStationID) },
	"calledStationId":  func(u *session.Update, _ *subscriber.Subscriber) val { return str(u.Session.CalledStationID) },
	"framedIpAddress": func(u *session.Update, _ *subscriber.Subscriber) val {
		if !u.Session.FramedIP.IsValid() {
			return val{}
		}
		return str(u.Session.FramedIP.String())
	},
	"sessionTime":  func(u *session.Update, _ *subscriber.Subscriber) val { return num(u.Session.SessionTime) },
	"inputOctets":  func(u *session.Update, _ *subscriber.Subscriber) val { return num(u.Session.InputOctets) },
	"outputOctets": func(u *session.Update, _ *subscriber.Subscriber) val { return num(u.Session.OutputOctets) },
	"octets": func(u *session.Update, _ *subscriber.Subscriber) val {
		return num(u.Session.InputOctets + u.Session.OutputOctets)
	},
	"octetsGiB": func(u *session.Update, _ *subscriber.Subscriber) val {
		return num((u.Session.InputOctets + u.Session.OutputOctets) / gib)
	},
	"octetsMiB": func(u *session.Update, _ *subscriber.Subscriber) val {
		return num((u.Session.InputOctets + u.Session.OutputOctets) >> 20)
	},
	"inputPackets":  func(u *session.Update, _ *subscriber.Subscriber) val { return num(u.Session.InputPackets) },
	"outputPackets": func(u *session.Update, _ *subscriber.Subscriber) val { return num(u.Session.OutputPackets) },
	// quotaPercent: the period's octets (the profile's usedOctets and this session's) as a
	// whole percentage of the profile's quotaOctets, nil without a quota; a quota check that
	// declares it runs again only when a percent is crossed.
	"quotaPercent": func(u *session.Update, s *subscriber.Subscriber) val {
		if s == nil || s.Profile.QuotaOctets == 0 {
			return val{}
		}
		used := s.Profile.UsedOctets + u.Session.InputOctets + u.Session.OutputOctets
		q := s.Profile.QuotaOctets
		return num(used/q*100 + used%q*100/q) // no overflow of used*100
	},
	// The IPv6 side as text (2001:db8:1::/56), nil when the message does not carry it; the
	// script tests them with ip_in (state.go).
	"framedIpv6Prefix":    func(u *session.Update, _ *subscriber.Subscriber) val { return prefixVal(u.Session.FramedIPv6Prefix) },
	"delegatedIpv6Prefix": func(u *session.Update, _ *subscriber.Subscriber) val { return prefixVal(u.Session.DelegatedIPv6Prefix) },
	"framedIpv6Address":   func(u *session.Update, _ *subscriber.Subscriber) val { return addrVal(u.Session.FramedIPv6Address) },
	"framedInterfaceId":   func(u *session.Update, _ *subscriber.Subscriber) val { return str(u.Session.FramedInterfaceID) },
	"nasIpv6Address":      func(u *session.Update, _ *subscriber.Subscriber) val { return addrVal(u.Session.NASIPv6Address) },
}

func prefixVal(p netip.Prefix) val {
	if !p.IsValid() {
		return val{}
	}
	return str(p.String())
}

func addrVal(a netip.Addr) val {
	if !a.IsValid() {
		return val{}
	}
	return str(a.String())
}

func sessionValue(u *session.Update, sub *subscriber.Subscriber, name string) (val, bool) {
	f, ok := sessionFields[name]
	if !ok {
		return val{}, false
	}
	return f(u, sub), true
}

func clockValue(now time.Time, name string) val {
	if name == "weekday" {
		return num(int(now.Weekday()))
	}
	return num(now.Hour())
}

// args are the values a hook call may read.
type args struct {
	req  radius.Attributes
	sub  *subscriber.Subscriber
	sess *session.Update
	// clock is read only by a hook that reads hour() or weekday() (or declares them): a
	// clock read is a noticeable part of a short decision.
	clock func() time.Time
}

// now is the call's clock; outside a call (the script's top level, selftest() around its
// checks) the zero time, as before.
func (a *args) now() time.Time {
	if a.clock == nil {
		return time.Time{}
	}
	return a.clock()
}

// value reads a declared input.
func (a *args) value(in input) val {
	switch in.scope {
	case scopeReq:
		return reqValue(a.req, in.attr)
	case scopeSub:
		if a.sub == nil {
			return val{}
		}
		if in.sub == nil {
			return replyAttr(a.sub, in.name)
		}
		return in.sub(a.sub)
	case scopeSession:
		if a.sess == nil {
			return val{}
		}
		return in.sess(a.sess, a.sub)
	}
	return clockValue(a.now(), in.name)
}

// sum hashes the values of a hook's declared inputs: what the memo compares. A value is
// one 64-bit word (a number's bits, a string's maphash with the memo's seed) folded in by a
// bijective mix, so two lists whose words differ in one place never hash alike; no
// allocation and no per-byte loop (byte-wise FNV-1a was most of a memoized decision's cost).
func (a *args) sum(seed maphash.Seed, ins []input) uint64 {
	h := uint64(len(ins))
	for _, in := range ins {
		var kind byte
		var x uint64
		if in.scope == scopeReq {
			// The attribute's bytes, not its decoded value: equal bytes decode alike, and no
			// string is copied out of the packet (an undecodable value, nil to the script,
			// differs here from an absent one: a run more at most).
			if raw, ok := in.attr.Find(a.req); ok {
				kind, x = 'r', maphash.Bytes(seed, raw)
			}
		} else {
			v := a.value(in)
			kind, x = v.kind, math.Float64bits(v.n)
			if v.kind == 's' {
				x = maphash.String(seed, v.s)
			}
		}
		h = mix(mix(h^uint64(kind)) ^ x)
	}
	return h
}

// mix is SplitMix64's finalizer: a bijection of 64-bit words in which every input bit
// changes about half of the output's.
func mix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// text turns a Lua value given to the decision API into the text form the dictionary
// encodes (numbers as integers).
func text(v lua.LValue) (string, bool) {
	switch x := v.(type) {
	case lua.LString:
		return string(x), true
	case lua.LNumber:
		f := float64(x)
		if f != math.Trunc(f) || f < 0 || f > math.MaxUint32 {
			return "", false
		}
		return strconv.FormatUint(uint64(f), 10), true
	}
	return "", false
}
