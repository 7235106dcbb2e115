package gx

import (
	"slices"
	"time"

	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// Event-Trigger values (TS 29.212 §5.3.7) the policy server subscribes to.
const (
	triggerUsageReport         = 33 // USAGE_REPORT (26 is TAI_CHANGE)
	triggerRevalidationTimeout = 17 // REVALIDATION_TIMEOUT
)

// Decision is what a CCA tells the PCEF, decided from the data policy and the usage so far.
type Decision struct {
	Install []string
	Bases   []string
	Dynamic []subscriber.DynamicRule
	Remove  []string
	// RemoveBases are rule bases to remove (Charging-Rule-Base-Name in Charging-Rule-Remove,
	// TS 29.212 §5.3.3: a PCEF does not remove a base named as a Charging-Rule-Name).
	RemoveBases []string
	QCI         uint32
	ARP         uint32
	AMBRUp      uint32
	AMBRDown    uint32
	Triggers    []uint32
	Grants      []Grant
	Revalidate  uint32
	// Throttled is true once the quota is used: the throttle rule replaced the policy's rules.
	Throttled bool
	// Exhausted are the rule-level keys whose quota this decision found used: their rules
	// are swapped here, once (the session records them: Used.Exhausted).
	Exhausted []string
}

// Grant is octets granted on a Monitoring-Key (Usage-Monitoring-Information).
type Grant struct {
	Key        string
	Octets     uint64
	SessionKey bool // the session-level key (Usage-Monitoring-Level SESSION_LEVEL), else PCC_RULE_LEVEL
}

// Used is the usage a decision weighs.
type Used struct {
	// Octets are the period's octets on the session-level key: the subscriber source's
	// usedOctets and the session's.
	Octets uint64
	// Throttled: the session is on the throttle rule already.
	Throttled bool
	// Keys are the session's octets per rule-level Monitoring-Key (the data policy's
	// monitoring; the source's usedOctets per key are added here, not by the caller), and
	// Exhausted the keys whose rules were swapped already (Decision.Exhausted before).
	Keys      map[string]uint64
	Exhausted []string
	// Failed are the rules the PCEF reported in this CCR as not enforced (Charging-Rule-Report):
	// their fallbacks (dataPolicy.fallbackRules) are installed in the answer.
	Failed []string
}

// Decide is the policy of one CCR, pure: p is the subscriber's data policy, u the usage so
// far, prev the time of the session's last decision (a CCR-U: its rule windows that opened or
// closed since are installed or removed) and now this one's.
func Decide(p *subscriber.DataPolicy, reqType uint32, u Used, prev, now time.Time) Decision {
	var d Decision
	if reqType == Termination || p == nil {
		return d
	}
	exhausted := p.QuotaOctets > 0 && u.Octets >= p.QuotaOctets
	d.Throttled = exhausted
	if reqType == Initial {
		d.QCI, d.ARP, d.AMBRUp, d.AMBRDown = p.QCI, p.ARPPriority, p.AMBRUplink, p.AMBRDownlink
		d.Revalidate = p.RevalidationSeconds
		if p.QuotaOctets > 0 || len(p.Monitoring) > 0 {
			d.Triggers = append(d.Triggers, triggerUsageReport)
		}
		if p.RevalidationSeconds > 0 {
			d.Triggers = append(d.Triggers, triggerRevalidationTimeout)
		}
		if exhausted {
			d.Install = nonEmpty(p.ThrottleRule)
			return d
		}
		d.Install, d.Bases, d.Dynamic = append(slices.Clone(p.Rules), windowRules(p, now)...), p.RuleBases, p.Dynamic
	}
	if exhausted {
		if !u.Throttled { // the change happens once: the rules go, the throttle rule comes
			d.Remove = append(append(slices.Clone(p.Rules), dynamicNames(p.Dynamic)...), windowRules(p, prev)...)
			d.RemoveBases = slices.Clone(p.RuleBases)
			for _, m := range p.Monitoring { // a key used up earlier swapped its rules
				if slices.Contains(u.Exhausted, m.Key) {
					d.Remove = append(without(d.Remove, m.RemoveRules), m.InstallRules...)
				}
			}
			d.Install = nonEmpty(p.ThrottleRule)
		}
		return d
	}
	if reqType == Update {
		d.Install, d.Remove = WindowChanges(p, prev, now)
	}
	if p.QuotaOctets > 0 {
		d.Grants = append(d.Grants, Grant{Key: sessionKey(p), Octets: granted(p.QuotaOctets, u.Octets, p.GrantOctets), SessionKey: true})
	}
	for _, r := range u.Failed {
		if f, ok := p.FallbackRules[r]; ok && !slices.Contains(d.Install, f) {
			d.Install = append(d.Install, f)
		}
	}
	for _, m := range p.Monitoring {
		switch {
		case slices.Contains(u.Exhausted, m.Key): // swapped already
		case !keyUsed(m, u.Keys):
			d.Grants = append(d.Grants, Grant{Key: m.Key, Octets: granted(m.QuotaOctets, m.UsedOctets+u.Keys[m.Key], m.GrantOctets)})
		case reqType == Initial: // used up before the session began
			d.Install = append(without(d.Install, m.RemoveRules), m.InstallRules...)
			d.Exhausted = append(d.Exhausted, m.Key)
		default: // used up since the last decision
			d.Remove = append(d.Remove, m.RemoveRules...)
			d.Install = append(d.Install, m.InstallRules...)
			d.Exhausted = append(d.Exhausted, m.Key)
		}
	}
	return d
}

// keyUsed reports whether a rule-level key's quota is used with the session's octets on it.
func keyUsed(m subscriber.MonitoredKey, keys map[string]uint64) bool {
	return m.UsedOctets+keys[m.Key] >= m.QuotaOctets
}

// granted is what is left of quota after used, at most most (0: no cap).
func granted(quota, used, most uint64) uint64 {
	g := quota - used
	if most > 0 && most < g {
		g = most
	}
	return g
}

// without is rules less those in drop (a new slice).
func without(rules, drop []string) []string {
	return slices.DeleteFunc(slices.Clone(rules), func(r string) bool { return slices.Contains(drop, r) })
}

// windowRules are the rules of p's windows open at t.
func windowRules(p *subscriber.DataPolicy, t time.Time) []string {
	var out []string
	for _, w := range p.Windows {
		if w.Open(t) {
			out = append(out, w.Rules...)
		}
	}
	return out
}

// WindowChanges are the rules of p's windows that opened (install) and closed (remove) between
// prev and now, pure. A window that opened and closed again in between changes nothing.
func WindowChanges(p *subscriber.DataPolicy, prev, now time.Time) (install, remove []string) {
	if p == nil {
		return nil, nil
	}
	for _, w := range p.Windows {
		switch was, is := w.Open(prev), w.Open(now); {
		case is && !was:
			install = append(install, w.Rules...)
		case was && !is:
			remove = append(remove, w.Rules...)
		}
	}
	return install, remove
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

func dynamicNames(rules []subscriber.DynamicRule) []string {
	out := make([]string, 0, len(rules))
	for _, r := range rules {
		out = append(out, r.Name)
	}
	return out
}

// defaultSessionKey is the session-level Monitoring-Key of a data policy with a quota and
// no monitoringKey: an empty key names no monitoring instance a PCEF could report on (tshark
// flags its empty data).
const defaultSessionKey = "session"

func sessionKey(p *subscriber.DataPolicy) string {
	if p.MonitoringKey == "" {
		return defaultSessionKey
	}
	return p.MonitoringKey
}
