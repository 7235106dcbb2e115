package config

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/go-ldap/ldap/v3"
)

// LDAP configures the LDAP subscriber source (subscribers.source: ldap; docs/ldap.md).
type LDAP struct {
	// URLs are ldap://host:port or ldaps://host:port servers, tried in order on connect
	// (the first that answers serves the pool's new connections).
	URLs []string `json:"urls,omitempty"`
	// StartTLS upgrades ldap:// connections with the StartTLS extended operation.
	StartTLS bool `json:"startTLS"`
	// CAFile verifies the server certificate (LDAPS and StartTLS); empty: system roots.
	CAFile string `json:"caFile,omitempty"`
	// ServerName overrides the name checked in the server certificate (default: the URL host).
	ServerName string `json:"serverName,omitempty"`
	// BindDN and BindPasswordFile (a mounted Secret; trailing newlines ignored) authenticate
	// the pool's connections. Empty BindDN: anonymous.
	BindDN           string `json:"bindDN,omitempty"`
	BindPasswordFile string `json:"bindPasswordFile,omitempty"`
	// BaseDN is where subscribers are searched.
	BaseDN string `json:"baseDN,omitempty"`
	// Scope of the search: sub, one or base.
	Scope string `json:"scope"`
	// Filter is the search filter; {username} is replaced by the RFC 4515-escaped User-Name.
	Filter string `json:"filter"`
	// Attributes maps profile fields to LDAP attribute names ("" leaves a field unmapped).
	Attributes LDAPAttributes `json:"attributes"`
	// ProfilesFile holds named profiles in the subscriber file's format (its profiles: only):
	// an entry names one in attributes.profileName and gets it as its base — a Gx data
	// policy, RADIUS defaults — under what its own attributes set. Read at start.
	ProfilesFile string `json:"profilesFile,omitempty"`
	// PoolSize is the number of LDAP connections (each carries many requests at once).
	PoolSize int `json:"poolSize"`
	// ConnectTimeout bounds dial, TLS handshake and bind of one connection.
	ConnectTimeout Duration `json:"connectTimeout"`
	// Timeout bounds one search (auth's own deadline may be shorter).
	Timeout Duration `json:"timeout"`
	// LookupTimeout bounds an auth's whole lookup: the wait for a pooled connection, the
	// search, a retry on a new connection. Past it auth answers from the cache or rejects.
	LookupTimeout Duration `json:"lookupTimeout"`
	// RetryInterval: after LDAP failed to connect, lookups fail fast (cache or reject)
	// for this long before a new connection is tried.
	RetryInterval Duration `json:"retryInterval"`
	// Cache is the local profile cache.
	Cache LDAPCache `json:"cache"`
}

// LDAPAttributes names the LDAP attribute of each profile field.
type LDAPAttributes struct {
	// Password is the clear-text password attribute (CHAP needs clear text).
	Password string `json:"password"`
	// NTPassword is an attribute holding the password's NT hash in hex (Samba's
	// sambaNTPassword), used when Password is empty or absent: PAP and MS-CHAPv2 work
	// without the clear text. Empty: not read.
	NTPassword string `json:"ntPassword,omitempty"`
	// Ki, OPc, OP, AMF and SQN are a USIM's secrets for EAP-SIM, AKA and AKA' (hex, as in the
	// subscriber file). Empty: not read.
	Ki  string `json:"ki,omitempty"`
	OPc string `json:"opc,omitempty"`
	OP  string `json:"op,omitempty"`
	AMF string `json:"amf,omitempty"`
	SQN string `json:"sqn,omitempty"`
	// Disabled is a boolean attribute (TRUE: reject).
	Disabled            string `json:"disabled"`
	FramedIPAddress     string `json:"framedIPAddress"`
	FramedPool          string `json:"framedPool"`
	SessionTimeout      string `json:"sessionTimeout"`
	IdleTimeout         string `json:"idleTimeout"`
	AcctInterimInterval string `json:"acctInterimInterval"`
	Class               string `json:"class"`
	FilterID            string `json:"filterId"`
	RateLimit           string `json:"rateLimit"`
	QuotaOctets         string `json:"quotaOctets"`
	// UsedOctets: the billing period's usage so far, written by the billing system (no
	// default: our schema has no such attribute).
	UsedOctets string `json:"usedOctets,omitempty"`
	// ReplyAttributes is multi-valued, each value "Attribute-Name=value".
	ReplyAttributes string `json:"replyAttributes"`
	// ProfileName names a profile of profilesFile (e.g. a service class: "gold"); required
	// with profilesFile. Empty: not read.
	ProfileName string `json:"profileName,omitempty"`
}

// LDAPCache tunes the profile cache: accounting reads only the cache, auth reads LDAP when
// the cached profile is older than TTL.
type LDAPCache struct {
	// TTL is how long a profile is fresh.
	TTL Duration `json:"ttl"`
	// NegativeTTL is how long "no such user" is remembered (0: not remembered).
	NegativeTTL Duration `json:"negativeTTL"`
	// Size bounds the number of cached profiles (least recently used go first).
	Size int `json:"size"`
	// ServeStale lets auth use an expired profile while LDAP is unavailable; else reject.
	ServeStale bool `json:"serveStale"`
	// MaxStale is how far past its TTL a profile may still be served stale (0: no limit).
	MaxStale Duration `json:"maxStale"`
}

// LDAPUsernamePlaceholder is replaced in LDAP.Filter by the escaped user name.
const LDAPUsernamePlaceholder = "{username}"

func defaultLDAP() LDAP {
	return LDAP{
		Scope:  "sub",
		Filter: "(uid={username})",
		Attributes: LDAPAttributes{
			Password:            "userPassword",
			Disabled:            "openaaaDisabled",
			FramedIPAddress:     "openaaaFramedIPAddress",
			FramedPool:          "openaaaFramedPool",
			SessionTimeout:      "openaaaSessionTimeout",
			IdleTimeout:         "openaaaIdleTimeout",
			AcctInterimInterval: "openaaaAcctInterimInterval",
			Class:               "openaaaClass",
			FilterID:            "openaaaFilterId",
			RateLimit:           "openaaaRateLimit",
			QuotaOctets:         "openaaaQuotaOctets",
			ReplyAttributes:     "openaaaReplyAttribute",
		},
		PoolSize:       8,
		ConnectTimeout: Duration(2 * time.Second),
		Timeout:        Duration(time.Second),
		LookupTimeout:  Duration(2 * time.Second),
		RetryInterval:  Duration(2 * time.Second),
		Cache: LDAPCache{
			TTL:         Duration(5 * time.Minute),
			NegativeTTL: Duration(30 * time.Second),
			Size:        100000,
			MaxStale:    Duration(24 * time.Hour),
		},
	}
}

// Names lists the mapped LDAP attributes (the search asks for these only).
func (a LDAPAttributes) Names() []string {
	var out []string
	for _, n := range []string{a.Password, a.NTPassword, a.Ki, a.OPc, a.OP, a.AMF, a.SQN, a.Disabled, a.FramedIPAddress, a.FramedPool, a.SessionTimeout,
		a.IdleTimeout, a.AcctInterimInterval, a.Class, a.FilterID, a.RateLimit, a.QuotaOctets, a.UsedOctets, a.ReplyAttributes,
		a.ProfileName} {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}

func (l LDAP) validate(key string) []error {
	var errs []error
	bad := keyed(key, &errs)
	if len(l.URLs) == 0 {
		bad("urls", "at least one ldap:// or ldaps:// URL is required")
	}
	for i, s := range l.URLs {
		u, err := url.Parse(s)
		switch {
		case err != nil:
			bad(fmt.Sprintf("urls[%d]", i), "%q: %v", s, err)
		case u.Scheme != "ldap" && u.Scheme != "ldaps":
			bad(fmt.Sprintf("urls[%d]", i), "%q: scheme must be ldap or ldaps", s)
		case u.Host == "":
			bad(fmt.Sprintf("urls[%d]", i), "%q: no host", s)
		case l.StartTLS && u.Scheme == "ldaps":
			bad(fmt.Sprintf("urls[%d]", i), "%q: startTLS applies to ldap:// URLs, not ldaps://", s)
		}
	}
	if (l.BindDN == "") != (l.BindPasswordFile == "") {
		bad("bindPasswordFile", "bindDN and bindPasswordFile go together (both empty: anonymous bind)")
	}
	if l.BindDN != "" {
		if _, err := ldap.ParseDN(l.BindDN); err != nil {
			bad("bindDN", "%q is not a DN: %v", l.BindDN, err)
		}
	}
	if l.BaseDN == "" {
		bad("baseDN", "required")
	} else if _, err := ldap.ParseDN(l.BaseDN); err != nil {
		bad("baseDN", "%q is not a DN: %v", l.BaseDN, err)
	}
	switch l.Scope {
	case "sub", "one", "base":
	default:
		bad("scope", "%q is not one of sub, one, base", l.Scope)
	}
	if !strings.Contains(l.Filter, LDAPUsernamePlaceholder) {
		bad("filter", "%q does not contain %s", l.Filter, LDAPUsernamePlaceholder)
	} else if _, err := ldap.CompileFilter(strings.ReplaceAll(l.Filter, LDAPUsernamePlaceholder, "x")); err != nil {
		bad("filter", "%q: %v", l.Filter, err)
	}
	if l.Attributes.Password == "" && l.Attributes.NTPassword == "" && l.Attributes.Ki == "" {
		bad("attributes.password", "required (or attributes.ntPassword, or attributes.ki)")
	}
	if (l.ProfilesFile == "") != (l.Attributes.ProfileName == "") {
		bad("profilesFile", "profilesFile and attributes.profileName go together")
	}
	if l.PoolSize < 1 || l.PoolSize > 256 {
		bad("poolSize", "must be between 1 and 256, got %d", l.PoolSize)
	}
	positive(bad, "connectTimeout", l.ConnectTimeout)
	positive(bad, "timeout", l.Timeout)
	positive(bad, "lookupTimeout", l.LookupTimeout)
	notNegative(bad, "retryInterval", l.RetryInterval, "")
	if l.Cache.TTL <= 0 {
		bad("cache.ttl", "must be positive (accounting reads profiles from the cache only)")
	}
	notNegative(bad, "cache.negativeTTL", l.Cache.NegativeTTL, "0: unknown users are not remembered")
	if l.Cache.Size < 1 {
		bad("cache.size", "must be at least 1, got %d", l.Cache.Size)
	}
	notNegative(bad, "cache.maxStale", l.Cache.MaxStale, "0: no limit")
	return errs
}
