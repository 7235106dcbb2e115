// Package subscriber defines where subscriber credentials and profiles come from. The
// embedded source is a file (file.go); LDAP implements the same Source.
package subscriber

import (
	"context"
	"encoding/hex"
	"errors"
)

// Profile is what the network is told about a subscriber on Access-Accept.
type Profile struct {
	// FramedIPAddress is a fixed address: IPv4 (Framed-IP-Address), or IPv6 for an IPv6-only
	// subscriber (Framed-IPv6-Address); FramedPool names a NAS-side pool instead.
	FramedIPAddress     string `json:"framedIPAddress,omitempty"`
	FramedPool          string `json:"framedPool,omitempty"`
	SessionTimeout      uint32 `json:"sessionTimeout,omitempty"`
	IdleTimeout         uint32 `json:"idleTimeout,omitempty"`
	AcctInterimInterval uint32 `json:"acctInterimInterval,omitempty"`
	Class               string `json:"class,omitempty"`
	FilterID            string `json:"filterId,omitempty"`
	// RateLimit is sent in the attribute named by policy.rateLimitAttribute.
	RateLimit string `json:"rateLimit,omitempty"`
	// QuotaOctets (input+output) after which the policy marks the session for disconnect.
	QuotaOctets uint64 `json:"quotaOctets,omitempty"`
	// UsedOctets (input+output) the subscriber used earlier in the billing period, as the
	// billing system keeps it in the profile (the file, or an LDAP attribute it writes): the
	// quota counts them with the session's own, so a quota spans the period, not a session.
	UsedOctets uint64 `json:"usedOctets,omitempty"`
	// ReplyAttributes are extra reply attributes by dictionary name (e.g. "Framed-MTU": "1492",
	// "Cisco-AVPair": ["a", "b"]); attributes.go.
	ReplyAttributes ReplyAttributes `json:"replyAttributes,omitempty"`
	// DataPolicy is the subscriber's Gx policy (datapolicy.go); nil: no Gx sessions.
	DataPolicy *DataPolicy `json:"dataPolicy,omitempty"`

	// The IPv6 side of a dual-stack subscriber (RFC 3162, 4818, 6911): a fixed address, the
	// access link's prefix, the prefix delegated by DHCPv6-PD, or NAS-side pools for either,
	// and DNS servers (one Access-Accept attribute each, in order).
	FramedIPv6Address       string   `json:"framedIPv6Address,omitempty"`
	FramedIPv6Prefix        string   `json:"framedIPv6Prefix,omitempty"`
	DelegatedIPv6Prefix     string   `json:"delegatedIPv6Prefix,omitempty"`
	FramedIPv6Pool          string   `json:"framedIPv6Pool,omitempty"`
	DelegatedIPv6PrefixPool string   `json:"delegatedIPv6PrefixPool,omitempty"`
	DNSServerIPv6Addresses  []string `json:"dnsServerIPv6Addresses,omitempty"`
}

// Subscriber is one subscriber's credentials and profile.
type Subscriber struct {
	Username string `json:"username"`
	// Password in clear text: CHAP needs it (RFC 1994); the file is mounted from a Secret.
	Password string `json:"password"`
	// NTPassword is the password's NT hash (32 hex digits: MD4 of its UTF-16LE form), as
	// FreeRADIUS's NT-Password: enough for PAP and MS-CHAPv2, so the clear text need not be
	// stored (CHAP still needs it). Used when Password is empty.
	NTPassword string `json:"ntPassword,omitempty"`
	Disabled   bool   `json:"disabled,omitempty"`
	// The USIM's secrets for EAP-AKA and EAP-AKA' (aka.go): Ki, and OPc or OP, 32 hex digits
	// each; AMF (4 hex digits, default 8000) and SQN, the last sequence number the card
	// accepted (12 hex digits, default 0): the server's SQN starts past it. Never logged.
	Ki  string `json:"ki,omitempty"`
	OPc string `json:"opc,omitempty"`
	OP  string `json:"op,omitempty"`
	AMF string `json:"amf,omitempty"`
	SQN string `json:"sqn,omitempty"`
	// ProfileName refers to a named profile; Profile fields set here override it.
	ProfileName string  `json:"profileName,omitempty"`
	Profile     Profile `json:"profile,omitzero"`
}

// NTHash decodes an NTPassword: 16 bytes from 32 hex digits, or ok false.
func NTHash(text string) (hash []byte, ok bool) {
	b, err := hex.DecodeString(text)
	return b, err == nil && len(b) == 16
}

// ErrNotFound is returned when the subscriber does not exist.
var ErrNotFound = errors.New("subscriber not found")

// ErrUnavailable wraps failures to reach the source (e.g. LDAP down) so that the auth path
// can tell "no such user" from "cannot tell now".
var ErrUnavailable = errors.New("subscriber source unavailable")

// Source finds subscribers by user name. Implementations must be safe for concurrent use
// and must not block longer than their configured timeout.
type Source interface {
	Lookup(ctx context.Context, username string) (*Subscriber, error)
}

// CachedSource is implemented by sources whose lookups may wait on a remote system (LDAP):
// CachedLookup answers from local memory only and never blocks, for the accounting path.
type CachedSource interface {
	CachedLookup(username string) (*Subscriber, bool)
}
