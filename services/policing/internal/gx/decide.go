package gx

import (
	"slices"
	"time"

	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// Event-Trigger values (TS 29.212 §5.3.7) the policy server subscribes to.
const (
	triggerUsageReport         = 26
	triggerRevalidationTimeout = 17
)

// Decision is what a CCA tells the PCEF, decided from the data policy and the usage so far.
type Decision struct {
	Install    []string
	Bases      []string
	Dynamic    []subscriber.DynamicRule
	Remove     []string
	QCI        uint32
	ARP        uint32
	AMBRUp     uint32
	AMBRDown   uint32
	Triggers   []uint32
	GrantKey   string
	Grant      uint64 // octets granted on GrantKey (0: none)
	Revalidate uint32
	// Throttled is true once the quota is used: the throttle rule replaced the policy's rules.
	Throttled bool
}

// Decide is the policy of one CCR, pure: p is the subscriber's data policy, used the octets
// used in the period so far (the profile's and this session's), throttled whether the
// session is already throttled, prev the time of the session's last decision (a CCR-U: its
// rule windows that opened or closed since are installed or removed) and now this one's.
func Decide(p *subscriber.DataPolicy, reqType uint32, used uint64, throttled bool, prev, now time.Time) Decision {
	var d Decision
	if reqType == Termination || p == nil {
		return d
	}
	exhausted := p.QuotaOctets > 0 && used >= p.QuotaOctets
	d.Throttled = exhausted
	if reqType == Initial {
		d.QCI, d.ARP, d.AMBRUp, d.AMBRDown = p.QCI, p.ARPPriority, p.AMBRUplink, p.AMBRDownlink
		d.Revalidate = p.RevalidationSeconds
		if p.QuotaOctets > 0 {
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
		if !throttled { // the change happens once: the rules go, the throttle rule comes
			d.Remove = append(append(append(slices.Clone(p.Rules), p.RuleBases...), dynamicNames(p.Dynamic)...), windowRules(p, prev)...)
			d.Install = nonEmpty(p.ThrottleRule)
		}
		return d
	}
	if reqType == Update {
		d.Install, d.Remove = WindowChanges(p, prev, now)
	}
	if p.QuotaOctets > 0 {
		d.GrantKey = p.MonitoringKey
		d.Grant = p.QuotaOctets - used
		if p.GrantOctets > 0 && p.GrantOctets < d.Grant {
			d.Grant = p.GrantOctets
		}
	}
	return d
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
