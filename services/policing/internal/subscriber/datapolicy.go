package subscriber

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// DataPolicy is what the Gx policy server (internal/gx, docs/diameter-gx.md) gives a
// subscriber's data sessions: PCC rules, the default bearer's QoS, the APN-AMBR and a quota
// per billing period on one Monitoring-Key, after which ThrottleRule replaces Rules.
type DataPolicy struct {
	// Rules are predefined rule names installed at the PCEF (Charging-Rule-Name).
	Rules []string `json:"rules,omitempty"`
	// RuleBases are predefined rule bases (Charging-Rule-Base-Name).
	RuleBases []string `json:"ruleBases,omitempty"`
	// Dynamic are rules defined here and sent whole (Charging-Rule-Definition).
	Dynamic []DynamicRule `json:"dynamic,omitempty"`
	// QCI and ARPPriority are the default bearer's QoS class and priority level (1..15).
	QCI         uint32 `json:"qci,omitempty"`
	ARPPriority uint32 `json:"arpPriority,omitempty"`
	// AMBRUplink and AMBRDownlink are the APN-AMBR in bit/s.
	AMBRUplink   uint32 `json:"ambrUplink,omitempty"`
	AMBRDownlink uint32 `json:"ambrDownlink,omitempty"`
	// MonitoringKey names the usage the PCEF reports; QuotaOctets is the period's quota on it
	// (0: no usage monitoring) and GrantOctets the most granted at once. Without a
	// MonitoringKey, the Gx grants name the key "session".
	MonitoringKey string `json:"monitoringKey,omitempty"`
	QuotaOctets   uint64 `json:"quotaOctets,omitempty"`
	GrantOctets   uint64 `json:"grantOctets,omitempty"`
	// ThrottleRule is the predefined rule installed, in place of Rules, once the quota is used.
	ThrottleRule string `json:"throttleRule,omitempty"`
	// ThrottleAttributes are RADIUS attributes (dictionary names, as a profile's
	// replyAttributes) that a CoA-Request carries to the subscriber's RADIUS sessions when a
	// Gx session of theirs uses the quota: a converged plan slows the fixed or Wi-Fi access
	// too (docs/diameter-gx.md).
	ThrottleAttributes ReplyAttributes `json:"throttleAttributes,omitempty"`
	// RevalidationSeconds asks the PCEF to come back (Revalidation-Time) after this long.
	RevalidationSeconds uint32 `json:"revalidationSeconds,omitempty"`
	// Monitoring are further Monitoring-Keys, each with a quota of its own at the PCC rule
	// level: a video or social bundle whose rules carry the key (a dynamic rule's
	// monitoringKey, or a predefined rule so configured at the PCEF). Their usage is counted
	// apart from MonitoringKey's, which stays the session-level key of QuotaOctets.
	Monitoring []MonitoredKey `json:"monitoring,omitempty"`
	// FallbackRules name, for a rule the PCEF reports it could not enforce (a
	// Charging-Rule-Report with PCC-Rule-Status INACTIVE or TEMPORARILY_INACTIVE, e.g.
	// RESOURCE_ALLOCATION_FAILURE), the rule installed in its place in the answer to that
	// report (e.g. video-hd → video-sd).
	FallbackRules map[string]string `json:"fallbackRules,omitempty"`
	// Windows are predefined rules in force only at certain hours (a night boost, an
	// off-peak bundle): installed while a window is open, removed when it closes — in the
	// CCAs, and by a RAR for a session whose window opens or closes between its CCRs
	// (internal/gx, schedule.go). Not while the quota is used up.
	Windows []RuleWindow `json:"windows,omitempty"`
}

// MonitoredKey is a PCC-rule-level Monitoring-Key with its quota (docs/diameter-gx.md
// "Several Monitoring-Keys").
type MonitoredKey struct {
	Key string `json:"key"`
	// QuotaOctets is the period's quota on the key; UsedOctets what the subscriber used on it
	// earlier in the period (written by a billing system, like the profile's usedOctets);
	// GrantOctets the most granted at once (0: the rest of the quota).
	QuotaOctets uint64 `json:"quotaOctets"`
	UsedOctets  uint64 `json:"usedOctets,omitempty"`
	GrantOctets uint64 `json:"grantOctets,omitempty"`
	// RemoveRules are removed, and InstallRules installed, once the key's quota is used
	// (e.g. remove "video-hd", install "video-sd").
	RemoveRules  []string `json:"removeRules,omitempty"`
	InstallRules []string `json:"installRules,omitempty"`
}

// RuleWindow is a daily time window of extra predefined rules.
type RuleWindow struct {
	// From and To are the local times ("HH:MM") the window opens and closes; To before From
	// spans midnight ("22:00" to "06:00").
	From string `json:"from"`
	To   string `json:"to"`
	// TimeZone is an IANA zone, e.g. Europe/Paris. Default UTC.
	TimeZone string `json:"timeZone,omitempty"`
	// Rules are the predefined rule names (Charging-Rule-Name) of the window.
	Rules []string `json:"rules"`
}

// Check validates the windows and the monitoring keys; errors name the field.
func (p *DataPolicy) Check() error {
	var errs []error
	seen := map[string]bool{p.MonitoringKey: p.MonitoringKey != ""}
	for i, m := range p.Monitoring {
		switch {
		case m.Key == "":
			errs = append(errs, fmt.Errorf("dataPolicy.monitoring[%d].key: required", i))
		case seen[m.Key]:
			errs = append(errs, fmt.Errorf("dataPolicy.monitoring[%d].key: %q is used twice (monitoringKey is the session-level key)", i, m.Key))
		case m.QuotaOctets == 0:
			errs = append(errs, fmt.Errorf("dataPolicy.monitoring[%d].quotaOctets: required (more than 0)", i))
		}
		seen[m.Key] = true
	}
	for rule, fallback := range p.FallbackRules {
		if fallback == "" || fallback == rule {
			errs = append(errs, fmt.Errorf("dataPolicy.fallbackRules.%s: %q is not another rule", rule, fallback))
		}
	}
	for i, w := range p.Windows {
		if _, _, _, err := w.parse(); err != nil {
			errs = append(errs, fmt.Errorf("dataPolicy.windows[%d]: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

// Open reports whether the window is open at t (false for an invalid window: Check refuses it).
func (w RuleWindow) Open(t time.Time) bool {
	from, to, loc, err := w.parse()
	if err != nil {
		return false
	}
	lt := t.In(loc)
	m := lt.Hour()*60 + lt.Minute()
	if from < to {
		return m >= from && m < to
	}
	return m >= from || m < to // spans midnight
}

// parse returns from and to in minutes after midnight and the zone.
func (w RuleWindow) parse() (from, to int, loc *time.Location, err error) {
	minutes := func(field, s string) (int, error) {
		t, err := time.Parse("15:04", s)
		if err != nil {
			return 0, fmt.Errorf("%s: %q is not HH:MM", field, s)
		}
		return t.Hour()*60 + t.Minute(), nil
	}
	if from, err = minutes("from", w.From); err != nil {
		return
	}
	if to, err = minutes("to", w.To); err != nil {
		return
	}
	if from == to {
		return 0, 0, nil, fmt.Errorf("from and to are both %s: the window would never close", w.From)
	}
	if len(w.Rules) == 0 {
		return 0, 0, nil, errors.New("rules: at least one rule name")
	}
	if loc, err = zone(w.TimeZone); err != nil {
		return 0, 0, nil, fmt.Errorf("timeZone: %q is not an IANA time zone", w.TimeZone)
	}
	return from, to, loc, nil
}

// zones caches loaded time zones: time.LoadLocation reads the zone database each time, and a
// window is evaluated on every CCR. The database is compiled into policing (time/tzdata): its
// image has no /usr/share/zoneinfo.
var zones sync.Map // name → *time.Location

func zone(name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	if l, ok := zones.Load(name); ok {
		return l.(*time.Location), nil
	}
	l, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	zones.Store(name, l)
	return l, nil
}

// DynamicRule is one Charging-Rule-Definition.
type DynamicRule struct {
	Name          string   `json:"name"`
	Precedence    uint32   `json:"precedence,omitempty"`
	QCI           uint32   `json:"qci,omitempty"`
	MBRUplink     uint32   `json:"mbrUplink,omitempty"`
	MBRDownlink   uint32   `json:"mbrDownlink,omitempty"`
	GBRUplink     uint32   `json:"gbrUplink,omitempty"`
	GBRDownlink   uint32   `json:"gbrDownlink,omitempty"`
	MonitoringKey string   `json:"monitoringKey,omitempty"`
	Flows         []string `json:"flows,omitempty"` // IPFilterRule, e.g. "permit out ip from any to any"
}
