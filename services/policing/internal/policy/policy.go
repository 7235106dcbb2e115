// Package policy is the decision step between a parsed request and the store: on auth it
// turns a subscriber's profile into reply attributes (or a reject), on accounting it may
// mark a session for disconnect or CoA. The built-in policy lives here; Lua policies
// (policy/luapolicy, docs/policy.md) implement the same interface.
package policy

import (
	"context"

	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"layeh.com/radius"
	"layeh.com/radius/rfc2865"
	"layeh.com/radius/rfc2869"
	"layeh.com/radius/rfc6911"

	"github.com/openaaa/openaaa/services/policing/internal/dict"
	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// AuthDecision is the outcome of Authorize.
type AuthDecision struct {
	Accept bool
	// Reply holds the attributes of the Access-Accept, or the Reply-Message of a reject.
	Reply radius.Attributes
	// Reason is logged and counted for rejects (never sent: it may reveal too much).
	Reason string
}

// Policy decides.
type Policy interface {
	// Authorize runs after the credentials checked out.
	Authorize(ctx context.Context, req *radius.Packet, sub *subscriber.Subscriber) AuthDecision
	// Reject builds the reply for a failed authentication.
	Reject(reason string) AuthDecision
	// Accounting decides on an accounting update, which it only reads, what to do once the
	// store took it (a Disconnect-Request, a CoA-Request); it must not block on remote
	// systems. req is the Accounting-Request.
	Accounting(ctx context.Context, req *radius.Packet, u *session.Update, sub *subscriber.Subscriber) Actions
}

// Actions are what the policy decided on an accounting update: the step after the store's
// carries them out (coa.PolicyTrigger), once the store accepted the update.
type Actions struct {
	// Disconnect, when set, is why the session is to be disconnected (a Disconnect-Request
	// to its NAS); the store records it in the row (session.WriteOptions.DisconnectReason).
	Disconnect string
	// CoA are the attributes of a CoA-Request to the session's NAS (e.g. a throttled rate);
	// read-only.
	CoA radius.Attributes
}

// Default is the built-in policy.
type Default struct {
	Dict               *dict.Dict
	RateLimitAttribute string
	RejectMessage      string
	// Disconnects counts the sessions marked for disconnect (the node's
	// metrics.PolicyDisconnects); nil: not counted.
	Disconnects *prometheus.CounterVec
}

// Reject implements Policy.
func (d *Default) Reject(reason string) AuthDecision {
	var attrs radius.Attributes
	if d.RejectMessage != "" {
		attrs.Add(rfc2865.ReplyMessage_Type, radius.Attribute(d.RejectMessage))
	}
	return AuthDecision{Accept: false, Reply: attrs, Reason: reason}
}

// Authorize implements Policy: the profile becomes reply attributes.
func (d *Default) Authorize(_ context.Context, _ *radius.Packet, sub *subscriber.Subscriber) AuthDecision {
	if sub.Disabled {
		return d.Reject("subscriber disabled")
	}
	attrs, err := d.ReplyAttributes(&sub.Profile)
	if err != nil {
		// The profile was checked at load; this only happens if the dictionary changed.
		return d.Reject(err.Error())
	}
	return AuthDecision{Accept: true, Reply: attrs}
}

// ReplyAttributes encodes a profile. It is also the check run on every profile at load,
// so a bad profile is refused before any subscriber depends on it.
func (d *Default) ReplyAttributes(p *subscriber.Profile) (radius.Attributes, error) {
	var a radius.Attributes
	if p.FramedIPAddress != "" {
		ip, err := netip.ParseAddr(p.FramedIPAddress)
		switch {
		case err != nil || ip.Zone() != "":
			return nil, fmt.Errorf("framedIPAddress: %q is not an IP address", p.FramedIPAddress)
		case ip.Is4() || ip.Is4In6():
			b := ip.Unmap().As4()
			a.Add(rfc2865.FramedIPAddress_Type, b[:])
		default: // an IPv6-only subscriber: Framed-IP-Address is IPv4 by definition
			b := ip.As16()
			a.Add(rfc6911.FramedIPv6Address_Type, b[:])
		}
	}
	if p.FramedPool != "" {
		a.Add(rfc2869.FramedPool_Type, radius.Attribute(p.FramedPool))
	}
	if err := d.addIPv6(&a, p); err != nil {
		return nil, err
	}
	addU32 := func(t radius.Type, v uint32) {
		if v != 0 {
			a.Add(t, radius.NewInteger(v))
		}
	}
	addU32(rfc2865.SessionTimeout_Type, p.SessionTimeout)
	addU32(rfc2865.IdleTimeout_Type, p.IdleTimeout)
	addU32(rfc2869.AcctInterimInterval_Type, p.AcctInterimInterval)
	if p.Class != "" {
		a.Add(rfc2865.Class_Type, radius.Attribute(p.Class))
	}
	if p.FilterID != "" {
		a.Add(rfc2865.FilterID_Type, radius.Attribute(p.FilterID))
	}
	if p.RateLimit != "" {
		if err := d.addNamed(&a, d.RateLimitAttribute, p.RateLimit); err != nil {
			return nil, fmt.Errorf("rateLimit: %w", err)
		}
	}
	named, err := d.named("replyAttributes", p.ReplyAttributes)
	if err != nil {
		return nil, err
	}
	return append(a, named...), nil
}

// ThrottleAttributes encodes the data policy's throttleAttributes: what a CoA-Request carries
// to the subscriber's RADIUS sessions when a Gx session uses the quota (nil when none).
func (d *Default) ThrottleAttributes(p *subscriber.Profile) (radius.Attributes, error) {
	if p.DataPolicy == nil {
		return nil, nil
	}
	return d.named("dataPolicy.throttleAttributes", p.DataPolicy.ThrottleAttributes)
}

// named encodes attributes by dictionary name, sorted by name (stable packets), several
// values of one name repeated in order; errors name field and attribute.
func (d *Default) named(field string, r subscriber.ReplyAttributes) (radius.Attributes, error) {
	var a radius.Attributes
	names := make([]string, 0, len(r))
	for n := range r {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		vs := r[n]
		for i, v := range vs { // several values: repeated attributes, in order
			if err := d.addNamed(&a, n, v); err != nil {
				if len(vs) > 1 {
					return nil, fmt.Errorf("%s.%s[%d]: %w", field, n, i, err)
				}
				return nil, fmt.Errorf("%s.%s: %w", field, n, err)
			}
		}
	}
	return a, nil
}

// addIPv6 encodes the profile's IPv6 fields through the dictionary, which checks each value
// against its attribute's type (an address, a prefix); errors name the field.
func (d *Default) addIPv6(a *radius.Attributes, p *subscriber.Profile) error {
	fields := []struct{ field, attr, value string }{
		{"framedIPv6Address", "Framed-IPv6-Address", p.FramedIPv6Address},
		{"framedIPv6Prefix", "Framed-IPv6-Prefix", p.FramedIPv6Prefix},
		{"delegatedIPv6Prefix", "Delegated-IPv6-Prefix", p.DelegatedIPv6Prefix},
		{"framedIPv6Pool", "Framed-IPv6-Pool", p.FramedIPv6Pool},
		{"delegatedIPv6PrefixPool", "Delegated-IPv6-Prefix-Pool", p.DelegatedIPv6PrefixPool},
	}
	for i, v := range p.DNSServerIPv6Addresses {
		fields = append(fields, struct{ field, attr, value string }{fmt.Sprintf("dnsServerIPv6Addresses[%d]", i), "DNS-Server-IPv6-Address", v})
	}
	for _, f := range fields {
		if f.value == "" {
			continue
		}
		if err := d.addNamed(a, f.attr, f.value); err != nil {
			return fmt.Errorf("%s: %w", f.field, err)
		}
	}
	return nil
}

func (d *Default) addNamed(a *radius.Attributes, name, value string) error {
	name, tag := splitTag(name)
	attr, ok := d.Dict.Lookup(name)
	if !ok {
		return fmt.Errorf("no attribute %q in the dictionary", name)
	}
	enc, err := attr.EncodeTag(value, tag)
	if err != nil {
		return err
	}
	a.Add(enc.Type, enc.Value)
	return nil
}

// splitTag reads FreeRADIUS's Name:tag (ERX-Service-Activate:1, RFC 2868 tags 1-31);
// attribute names have no colon.
func splitTag(name string) (string, int) {
	i := strings.LastIndexByte(name, ':')
	if i < 0 {
		return name, 0
	}
	tag, err := strconv.Atoi(name[i+1:])
	if err != nil || tag < 0 || tag > 0xff {
		return name, 0 // not a tag: "no attribute" names it whole
	}
	return name[:i], tag
}

// CheckRateLimitAttribute says whether the dictionary has policy.rateLimitAttribute.
func (d *Default) CheckRateLimitAttribute() error {
	if _, ok := d.Dict.Lookup(d.RateLimitAttribute); !ok && d.RateLimitAttribute != "" {
		return fmt.Errorf("policy.rateLimitAttribute: no attribute %q in the dictionary", d.RateLimitAttribute)
	}
	return nil
}

// CheckProfile validates a profile (used when a subscriber file is loaded).
func (d *Default) CheckProfile(p *subscriber.Profile) error {
	if _, err := d.ReplyAttributes(p); err != nil {
		return err
	}
	if _, err := d.ThrottleAttributes(p); err != nil {
		return err
	}
	if p.DataPolicy != nil {
		return p.DataPolicy.Check()
	}
	return nil
}

// QuotaReason is the Disconnect reason of a session that used its quota.
const QuotaReason = "quota"

// Accounting implements Policy: a session past its profile's octet quota (counting the
// period's usage before it, UsedOctets) is to be disconnected.
func (d *Default) Accounting(_ context.Context, _ *radius.Packet, u *session.Update, sub *subscriber.Subscriber) Actions {
	if sub == nil || u.Kind == session.KindStop || sub.Profile.QuotaOctets == 0 {
		return Actions{}
	}
	if sub.Profile.UsedOctets+u.Session.InputOctets+u.Session.OutputOctets >= sub.Profile.QuotaOctets {
		if d.Disconnects != nil {
			d.Disconnects.WithLabelValues(QuotaReason).Inc()
		}
		return Actions{Disconnect: QuotaReason}
	}
	return Actions{}
}
