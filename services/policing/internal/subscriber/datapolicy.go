package subscriber

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
	// (0: no usage monitoring) and GrantOctets the most granted at once.
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
